# The installed headers: those under <folder>/include/ of SWITCHYARD_HEADER_FOLDERS
# (the folders switchyard_install.cmake installs). Two rules, checked here:
#  * no installed header includes a switchyard header that is not installed
#    (a private one under some src/): checked on every configuration, so that
#    such an include fails the configuration instead of the consumer's build;
#  * every installed header compiles on its own (switchyard_header_check, an
#    object library of one source per header, built with the tests).

function(switchyard_installed_headers out)
  set(headers "")
  foreach(folder IN LISTS SWITCHYARD_HEADER_FOLDERS)
    file(GLOB_RECURSE found RELATIVE ${PROJECT_SOURCE_DIR}/${folder}/include
         ${PROJECT_SOURCE_DIR}/${folder}/include/switchyard/*.hpp)
    list(APPEND headers ${found})
  endforeach()
  list(SORT headers)
  set(${out} ${headers} PARENT_SCOPE)
endfunction()

function(switchyard_check_installed_includes)
  switchyard_installed_headers(installed)
  foreach(folder IN LISTS SWITCHYARD_HEADER_FOLDERS)
    file(GLOB_RECURSE files ${PROJECT_SOURCE_DIR}/${folder}/include/switchyard/*.hpp)
    foreach(file IN LISTS files)
      # Every quoted include, and every <switchyard/...> one.
      file(STRINGS ${file} includes REGEX "^#include (\"|<switchyard/)")
      foreach(line IN LISTS includes)
        string(REGEX REPLACE "^#include [\"<]([^\">]+)[\">].*$" "\\1" included "${line}")
        if(NOT included IN_LIST installed)
          message(FATAL_ERROR "${file} is installed but includes ${included}, which is not: "
                              "move it under an include/ folder, or keep the include in a source file")
        endif()
      endforeach()
    endforeach()
  endforeach()
endfunction()

# switchyard_header_check_target(): one source per installed header, which
# includes it first and alone, compiled against switchyard::switchyard (no MPI).
function(switchyard_header_check_target)
  switchyard_installed_headers(installed)
  set(sources "")
  foreach(header IN LISTS installed)
    string(MAKE_C_IDENTIFIER "${header}" name)
    set(source ${PROJECT_BINARY_DIR}/header_check/${name}.cpp)
    set(text "#include \"${header}\"  // first and alone: it must compile on its own\n")
    if(EXISTS ${source})
      file(READ ${source} old)
    else()
      set(old "")
    endif()
    if(NOT old STREQUAL text)
      file(WRITE ${source} "${text}")
    endif()
    list(APPEND sources ${source})
  endforeach()
  add_library(switchyard_header_check OBJECT ${sources})
  target_link_libraries(switchyard_header_check PRIVATE switchyard::switchyard)
  target_compile_options(switchyard_header_check PRIVATE -Wall -Wextra -Wpedantic -O0)
  # The deprecated forwarding headers (deprecated/) warn when included, on purpose.
  target_compile_definitions(switchyard_header_check PRIVATE SWITCHYARD_QUIET_DEPRECATED_HEADERS)
endfunction()
