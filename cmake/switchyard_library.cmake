# switchyard_library(NAME source...): the static library switchyard_NAME and
# its alias switchyard::NAME, with the public headers of the calling folder
# (include/, installed from there by switchyard_install.cmake) and the warnings
# every library compiles with. Links and private include paths stay with the
# caller.
function(switchyard_library name)
  add_library(switchyard_${name} STATIC ${ARGN})
  add_library(switchyard::${name} ALIAS switchyard_${name})
  target_include_directories(switchyard_${name}
                             PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_options(switchyard_${name} PRIVATE -Wall -Wextra -Wpedantic)
endfunction()
