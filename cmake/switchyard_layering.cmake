# The layering of the tree, as one table: each library folder and the folders
# whose headers its sources and headers may include (base is open to all).
# Checked on every configuration: an include that points back up (model
# including the runtime, the transport including the runtime) fails it,
# naming the file and the include. The programs (apps, bench, examples,
# tests) sit on top and may include everything.
#
#   folder                      target(s)                               may include
set(SWITCHYARD_LAYERS
  "base"                        # switchyard::base                       -
  "transport:base"              # switchyard::transport
  "transport/mpi:transport"     # switchyard::transport_mpi (headers private: see switchyard_check_no_mpi)
  "runtime:transport"           # switchyard::runtime
  "model/core"                  # switchyard::model_core (pure)
  "schedulers/core:model/core"  # switchyard::schedulers_core (pure)
  "schedulers/runtime:schedulers/core,model/core,runtime"  # switchyard::schedulers
  "schedulers/redistribution:schedulers/runtime,schedulers/core,runtime"  # switchyard::schedulers_redistribution
  "model/calibration:model/core,schedulers/runtime,schedulers/core,runtime,transport"  # switchyard::model_calibration
  "model/collectives:model/core,schedulers/runtime,runtime"  # switchyard::model_collectives
  "primitives/core"             # switchyard::primitives_core (pure)
  "primitives/runtime:primitives/core,schedulers/runtime,schedulers/core,runtime"  # switchyard::primitives
  "dynamic/core:primitives/core"  # switchyard::dynamic_core (pure)
  "dynamic/runtime:dynamic/core,primitives/runtime,primitives/core,schedulers/runtime,runtime"  # switchyard::dynamic
  "halo:schedulers/runtime,schedulers/core,runtime"  # switchyard::halo
  "contention:schedulers/runtime,schedulers/core,runtime"  # switchyard::contention
  "deprecated:model/calibration,model/collectives,runtime")  # forwarding headers of earlier include paths

function(switchyard_check_layering)
  # Which folder's include/ each public header comes from.
  set(folders "")
  foreach(entry IN LISTS SWITCHYARD_LAYERS)
    string(REPLACE ":" ";" parts "${entry}")
    list(GET parts 0 folder)
    list(APPEND folders ${folder})
    file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR}/${folder}/include
         ${PROJECT_SOURCE_DIR}/${folder}/include/switchyard/*.hpp)
    foreach(header IN LISTS headers)
      set(owner_${header} ${folder})
    endforeach()
  endforeach()
  foreach(entry IN LISTS SWITCHYARD_LAYERS)
    string(FIND "${entry}" ":" colon)
    if(colon EQUAL -1)
      set(folder ${entry})
      set(allowed "")
    else()
      string(SUBSTRING "${entry}" 0 ${colon} folder)
      math(EXPR after "${colon} + 1")
      string(SUBSTRING "${entry}" ${after} -1 allowed)
      string(REPLACE "," ";" allowed "${allowed}")
    endif()
    list(APPEND allowed ${folder} base)
    file(GLOB_RECURSE files ${PROJECT_SOURCE_DIR}/${folder}/*.hpp ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
    foreach(file IN LISTS files)
      # A nested folder of the table (schedulers/core inside schedulers) is checked as itself.
      file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${file})
      set(deepest ${folder})
      foreach(other IN LISTS folders)
        string(LENGTH "${other}" other_length)
        string(LENGTH "${deepest}" deepest_length)
        if(relative MATCHES "^${other}/" AND other_length GREATER deepest_length)
          set(deepest ${other})
        endif()
      endforeach()
      if(NOT deepest STREQUAL folder)
        continue()
      endif()
      file(STRINGS ${file} includes REGEX "^#include [\"<]switchyard/")
      foreach(line IN LISTS includes)
        string(REGEX REPLACE "^#include [\"<](switchyard/[^\">]+)[\">].*$" "\\1" included "${line}")
        set(owner "${owner_${included}}")
        if(owner AND NOT owner IN_LIST allowed)
          message(FATAL_ERROR "${relative} includes ${included} (${owner}/), which ${folder}/ may not: "
                              "see the layering table in cmake/switchyard_layering.cmake")
        endif()
      endforeach()
    endforeach()
  endforeach()
endfunction()

# switchyard_check_no_mpi(<folder>...): no source or header of these folders
# (transport/mpi itself excepted) includes MPI's own header (mpi.h) or a header
# of the MPI transport (transport/mpi/, by path or by name): the runtime and
# the libraries reach other nodes through the transport's interfaces alone
# (network_session.hpp, network_transport.hpp), which switchyard::transport_mpi
# implements behind its factory.
function(switchyard_check_no_mpi)
  set(refused mpi.h)
  file(GLOB_RECURSE mpi_headers ${PROJECT_SOURCE_DIR}/transport/mpi/*.hpp)
  foreach(header IN LISTS mpi_headers)
    get_filename_component(name ${header} NAME)
    list(APPEND refused ${name})
  endforeach()
  foreach(folder IN LISTS ARGN)
    file(GLOB_RECURSE files ${PROJECT_SOURCE_DIR}/${folder}/*.hpp ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
    foreach(file IN LISTS files)
      file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${file})
      if(relative MATCHES "^transport/mpi/")
        continue()
      endif()
      file(STRINGS ${file} includes REGEX "^#include [\"<]")
      foreach(line IN LISTS includes)
        string(REGEX REPLACE "^#include [\"<]([^\">]+)[\">].*$" "\\1" included "${line}")
        get_filename_component(name "${included}" NAME)
        if(name IN_LIST refused OR included MATCHES "(^|/)transport/mpi/")
          message(FATAL_ERROR "${relative} includes ${included}: only the MPI transport (transport/mpi/, "
                              "switchyard::transport_mpi) may; reach other nodes through "
                              "switchyard/transport/network_session.hpp and network_transport.hpp")
        endif()
      endforeach()
    endforeach()
  endforeach()
endfunction()

# switchyard_check_names(<page>): the table of folders, targets, include
# prefixes and namespaces in <page> (docs/layout.md) is the tree's. Every
# library folder of SWITCHYARD_LAYERS has its row (deprecated/ excepted); each
# row's target is defined in its folder; each public header lies under the
# row's prefix (directly, or under detail/); and each header and source opens
# namespaces only within the row's or enclosing it (forward declarations,
# deprecated aliases).
function(switchyard_check_names page)
  file(STRINGS ${PROJECT_SOURCE_DIR}/${page} rows REGEX "^\\| `[a-z_/]+/` \\|")
  set(listed "")
  foreach(row IN LISTS rows)
    string(REGEX MATCH "^\\| `([a-z_/]+)/` \\| `([a-z_:]+)` \\| ([^|]+) \\| `([a-z_:]+)` \\|$" matched "${row}")
    if(NOT matched)
      message(FATAL_ERROR "${page}: a row of the names table is not `folder/` | `target` | `prefix/` or none | `namespace`: ${row}")
    endif()
    set(folder ${CMAKE_MATCH_1})
    set(target ${CMAKE_MATCH_2})
    string(STRIP "${CMAKE_MATCH_3}" prefix)
    set(namespace ${CMAKE_MATCH_4})
    list(APPEND listed ${folder})
    switchyard_check_name_row(${page} ${folder} ${target} "${prefix}" ${namespace})
  endforeach()
  foreach(entry IN LISTS SWITCHYARD_LAYERS)
    string(REGEX REPLACE ":.*" "" folder "${entry}")
    if(NOT folder STREQUAL "deprecated" AND NOT folder IN_LIST listed)
      message(FATAL_ERROR "${page}: the library folder ${folder}/ has no row in the names table")
    endif()
  endforeach()
endfunction()

function(switchyard_check_name_row page folder target prefix namespace)
  set(where "${page}, row ${folder}/")
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${where}: no target ${target}")
  endif()
  get_target_property(real ${target} ALIASED_TARGET)
  get_target_property(defined_in ${real} SOURCE_DIR)
  if(NOT defined_in STREQUAL "${PROJECT_SOURCE_DIR}/${folder}")
    message(FATAL_ERROR "${where}: ${target} is defined in ${defined_in}, not in ${folder}/")
  endif()
  file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR}/${folder}/include ${PROJECT_SOURCE_DIR}/${folder}/include/*)
  if(prefix STREQUAL "none (private)")
    if(headers)
      message(FATAL_ERROR "${where}: no public header, but ${folder}/include/ holds ${headers}")
    endif()
  else()
    string(REGEX REPLACE "^`(.*)`$" "\\1" prefix "${prefix}")
    foreach(header IN LISTS headers)
      string(FIND "${header}" "${prefix}" at)
      string(LENGTH "${prefix}" length)
      string(SUBSTRING "${header}" ${length} -1 rest)
      if(NOT at EQUAL 0 OR (rest MATCHES "/" AND NOT rest MATCHES "^detail/"))
        message(FATAL_ERROR "${where}: ${folder}/include/${header} is not directly under the prefix ${prefix}")
      endif()
    endforeach()
  endif()
  # Each namespace opened: the row's, one inside it, or one enclosing it.
  string(REPLACE "::" "\\:\\:" escaped "${namespace}")
  file(GLOB_RECURSE files ${PROJECT_SOURCE_DIR}/${folder}/*.hpp ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${file})
    if(NOT relative MATCHES "^${folder}/(include|src)/")
      continue()  # a nested library folder (schedulers/core inside schedulers) has its own row
    endif()
    file(STRINGS ${file} opened REGEX "^namespace switchyard[a-z_:]* {")
    foreach(line IN LISTS opened)
      string(REGEX REPLACE "^namespace ([a-z_:]+) {.*$" "\\1" name "${line}")
      string(FIND "${namespace}::" "${name}::" enclosing)
      if(NOT enclosing EQUAL 0 AND NOT name MATCHES "^${escaped}::")
        message(FATAL_ERROR "${relative} opens namespace ${name}, outside ${namespace} (${where})")
      endif()
    endforeach()
  endforeach()
endfunction()
