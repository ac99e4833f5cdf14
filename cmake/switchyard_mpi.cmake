# SWITCHYARD_WITH_MPI: AUTO (default) builds the MPI transport when
# find_package(MPI) finds MPI's C interface, ON requires it, OFF leaves it out.
# Sets SWITCHYARD_MPI (ON/OFF) and, with it, SWITCHYARD_MPIEXEC for the tests.
# MPI's C bindings are called from C++; FindMPI's C component needs the C
# language enabled.
string(TOUPPER "${SWITCHYARD_WITH_MPI}" _switchyard_with_mpi)
if(NOT _switchyard_with_mpi MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "SWITCHYARD_WITH_MPI must be AUTO, ON or OFF, not '${SWITCHYARD_WITH_MPI}'")
endif()
set(SWITCHYARD_MPI OFF)
if(NOT _switchyard_with_mpi STREQUAL "OFF")
  include(CheckLanguage)
  check_language(C)
  if(CMAKE_C_COMPILER)
    enable_language(C)
    if(_switchyard_with_mpi STREQUAL "ON")
      find_package(MPI REQUIRED COMPONENTS C)
    else()
      find_package(MPI QUIET COMPONENTS C)
    endif()
  elseif(_switchyard_with_mpi STREQUAL "ON")
    message(FATAL_ERROR "SWITCHYARD_WITH_MPI=ON needs a C compiler (FindMPI's C component)")
  endif()
  if(MPI_C_FOUND)
    set(SWITCHYARD_MPI ON)
    find_program(SWITCHYARD_MPIEXEC NAMES mpiexec mpirun HINTS ${MPIEXEC_EXECUTABLE})
    message(STATUS "switchyard: jobs across nodes over MPI ${MPI_C_VERSION}")
  else()
    message(STATUS "switchyard: no MPI: every job runs on one node")
  endif()
endif()

# switchyard_mpi_test(NAME target NODES args...): ctest entry mpi.NAME.npNODES
# running `target args` as NODES MPI ranks on this machine (root allowed,
# oversubscribed), with a timeout so that a hang fails. Label "mpi": the group
# is `ctest -L mpi` (or -R '^mpi\\.').
function(switchyard_mpi_test name target nodes)
  if(NOT SWITCHYARD_MPI OR NOT SWITCHYARD_MPIEXEC)
    return()
  endif()
  set(test mpi.${name}.np${nodes})
  add_test(NAME ${test}
           COMMAND ${SWITCHYARD_MPIEXEC} --allow-run-as-root --oversubscribe -np ${nodes} $<TARGET_FILE:${target}> ${ARGN})
  # 12-15 s alone for the longest (mpi.runtime.np3), 30-36 s beside another
  # test on the 2 cores (ctest -j2), and the host's speed swings up to 3x.
  set(timeout 150)
  set(environment ${SWITCHYARD_TEST_ENVIRONMENT})
  if(NOT SWITCHYARD_SANITIZE STREQUAL "")
    set(timeout 240)
  endif()
  if(SWITCHYARD_SANITIZE STREQUAL "address")
    # LeakSanitizer reports Open MPI's own allocations at exit (~125 KB in
    # ~3400 blocks, from libmpi, libopen-pal and MCA components that are
    # unloaded by then, so no suppression can name them). The one-node runs
    # of the same programs keep leak detection on.
    list(APPEND environment "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT ${timeout} LABELS mpi ENVIRONMENT "${environment}")
endfunction()

# switchyard_mpi_expect_exit(NAME target NODES CODE STDERR_REGEX args...):
# ctest entry mpi.NAME.npNODES expecting `target args` on NODES MPI ranks to
# exit with CODE and print STDERR_REGEX (apps/tests/expect_exit.cmake), with
# SWITCHYARD_TEST_MPI_ABORT=1 in its environment. Label "mpi".
function(switchyard_mpi_expect_exit name target nodes code stderr)
  if(NOT SWITCHYARD_MPI OR NOT SWITCHYARD_MPIEXEC)
    return()
  endif()
  set(test mpi.${name}.np${nodes})
  list(JOIN ARGN "|" args)
  add_test(NAME ${test}
           COMMAND ${CMAKE_COMMAND}
                   "-DCOMMAND=${SWITCHYARD_MPIEXEC}|--allow-run-as-root|--oversubscribe|-np|${nodes}|$<TARGET_FILE:${target}>|${args}"
                   -DEXPECT_CODE=${code} "-DEXPECT_STDERR=${stderr}" -P ${PROJECT_SOURCE_DIR}/apps/tests/expect_exit.cmake)
  set(environment ${SWITCHYARD_TEST_ENVIRONMENT} SWITCHYARD_TEST_MPI_ABORT=1)
  if(SWITCHYARD_SANITIZE STREQUAL "address")
    list(APPEND environment "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT 60 LABELS mpi ENVIRONMENT "${environment}")
endfunction()
