# cmake -DBUILD_DIR=<switchyard build> -DSOURCE_DIR=<this folder> -DEXAMPLE=<examples/exchange_plan.cpp>
#       -DWORK_DIR=<scratch> -DGENERATOR=<generator> -DCXX=<compiler> [-DLAUNCHER=<ccache>] [-DCONFIG=<config>]
#       [-DSANITIZE_FLAGS=<flags>] [-DCLI=ON] [-DMPIEXEC=<mpiexec>] -P install_and_build.cmake
# Installs the already built tree into a fresh prefix (nothing is rebuilt),
# configures tests/consumer against that prefix alone, builds it and runs it,
# MPI nowhere in its link; with MPIEXEC, builds it again linking
# switchyard::transport_mpi and runs it on 2 MPI nodes; then builds and runs
# the same program with pkg-config's flags alone.
foreach(var BUILD_DIR SOURCE_DIR EXAMPLE WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_and_build.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (${code}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})

set(config_args "")
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} ${config_args})

set(installed include/switchyard/runtime.hpp include/switchyard/types.hpp
              include/switchyard/schedulers/exchange_plan.hpp)
if(CLI)
  list(APPEND installed bin/switchyard)
endif()
foreach(file IN LISTS installed)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file}")
  endif()
endforeach()
foreach(file cmake/switchyard/switchyardConfig.cmake cmake/switchyard/switchyardConfigVersion.cmake
             cmake/switchyard/switchyardTargets.cmake pkgconfig/switchyard.pc libswitchyard_runtime.a)
  file(GLOB_RECURSE found ${prefix}/*/${file})  # lib/ or lib/<multiarch>/
  if(NOT found)
    message(FATAL_ERROR "cmake --install did not install <libdir>/${file}")
  endif()
endforeach()

set(configure_args -S ${SOURCE_DIR} -B ${consumer_build} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
                   -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_EXAMPLE=${EXAMPLE})
if(LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(SANITIZE_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
endif()
run("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})
run("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run("running the consumer" ${consumer_build}/consumer)
message(STATUS "${last_output}")
if(NOT last_output MATCHES "exchange plans: 0 wrong words")
  message(FATAL_ERROR "the consumer's output is not the expected one: ${last_output}")
endif()
run("running the consumer written against earlier names" ${consumer_build}/earlier_names)
if(NOT last_output MATCHES "earlier names: ok")
  message(FATAL_ERROR "the consumer written against earlier names answered: ${last_output}")
endif()
# MPI is linked only into a consumer that asks for switchyard::transport_mpi.
run("listing the consumer's libraries" ldd ${consumer_build}/consumer)
if(last_output MATCHES "libmpi")
  message(FATAL_ERROR "the consumer, which did not ask for MPI, links it:\n${last_output}")
endif()
if(MPIEXEC)
  set(mpi_build ${WORK_DIR}/build-mpi)
  list(TRANSFORM configure_args REPLACE "^${consumer_build}$" "${mpi_build}")
  run("configuring the MPI consumer" ${CMAKE_COMMAND} ${configure_args} -DSWITCHYARD_CONSUMER_MPI=ON)
  run("building the MPI consumer" ${CMAKE_COMMAND} --build ${mpi_build})
  run("listing the MPI consumer's libraries" ldd ${mpi_build}/consumer)
  if(NOT last_output MATCHES "libmpi")
    message(FATAL_ERROR "the MPI consumer does not link MPI:\n${last_output}")
  endif()
  # LeakSanitizer (an ASan build) reports Open MPI's own allocations at exit.
  run("running the MPI consumer on 2 nodes" ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
      ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2 ${mpi_build}/consumer)
  message(STATUS "${last_output}")
  if(NOT last_output MATCHES "\\(2 node")
    message(FATAL_ERROR "the MPI consumer's jobs did not span 2 nodes: ${last_output}")
  endif()
endif()

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB_RECURSE pc ${prefix}/*/pkgconfig/switchyard.pc)
  get_filename_component(pc_dir ${pc} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run("pkg-config" ${PKG_CONFIG} --cflags --libs switchyard)
  # Relocatable: the -L names the scratch prefix (by way of the .pc file's folder).
  if(NOT last_output MATCHES "-L${pc_dir}/[./]*lib.* -lswitchyard_runtime .*-lswitchyard_transport.*-lhwloc")
    message(FATAL_ERROR "pkg-config --cflags --libs switchyard: ${last_output}")
  endif()
  # The same program, built with nothing but the flags pkg-config gives.
  separate_arguments(pc_flags UNIX_COMMAND "${last_output}")
  set(compile ${CXX} ${EXAMPLE} -O2 ${SANITIZE_FLAGS} -o ${WORK_DIR}/pkg_config_consumer ${pc_flags})
  if(LAUNCHER)
    list(PREPEND compile ${LAUNCHER})
  endif()
  run("building the consumer with pkg-config's flags" ${compile})
  run("running the pkg-config consumer" ${WORK_DIR}/pkg_config_consumer)
  if(NOT last_output MATCHES "exchange plans: 0 wrong words")
    message(FATAL_ERROR "the pkg-config consumer's output is not the expected one: ${last_output}")
  endif()
endif()
