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
  "model"                       # switchyard::model (pure)
  "schedulers/core:model"       # switchyard::schedulers_core (pure)
  "schedulers/execution:schedulers/core,model,runtime"  # switchyard::schedulers
  "schedulers/redistribution:schedulers/execution,schedulers/core,runtime"  # switchyard::redistribution
  "model_calibration:model,schedulers/execution,schedulers/core,runtime,transport"  # switchyard::model_calibration
  "model_collectives:model,schedulers/execution,runtime"  # switchyard::model_collectives, collective_timing
  "primitives/core"             # switchyard::primitives_core (pure)
  "primitives/runtime:primitives/core,schedulers/execution,schedulers/core,runtime"  # switchyard::primitives
  "dynamic/core:primitives/core"  # switchyard::dynamic_core (pure)
  "dynamic/runtime:dynamic/core,primitives/runtime,primitives/core,schedulers/execution,runtime"  # switchyard::dynamic
  "halo:schedulers/execution,schedulers/core,runtime"  # switchyard::halo
  "contention:schedulers/execution,schedulers/core,runtime")  # switchyard::contention

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
