# A node killed mid-job (test_mpi_faults' MpiFaultsKill): runs mpirun and
# checks that every node ended, non-zero, within BOUND_S seconds of the kill,
# mpirun naming the rank the harness killed, and that no node's watchdog had
# to end it (a survivor left waiting).
#
#   cmake -DCOMMAND=<mpirun>|<arg>|... -DBOUND_S=10 -P mpi_kill.cmake
#
# The victim prints "node V is killed at T ms" (T: milliseconds since the
# epoch, just before it raises SIGKILL); the time is taken from there to the
# end of mpirun. Arguments are separated by '|' so that they pass add_test.

cmake_minimum_required(VERSION 3.25)

foreach(var COMMAND BOUND_S)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "mpi_kill.cmake: -D${var}=... is required")
  endif()
endforeach()

string(REPLACE "|" ";" argv "${COMMAND}")
math(EXPR limit "${BOUND_S} + 50")  # mpirun's start and the job's come before the kill
execute_process(COMMAND ${argv} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${limit})
string(TIMESTAMP seconds "%s")
string(TIMESTAMP micros "%f")
math(EXPR ended_ms "${seconds} * 1000 + ${micros} / 1000")

string(REPLACE ";" " " shown "${argv}")
set(report "command: ${shown}\nexit code: ${code}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")

if(NOT code MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "expected mpirun to fail with an exit code, got '${code}'\n${report}")
endif()
if(NOT err MATCHES "fault harness: node ([0-9]+) is killed at ([0-9]+) ms")
  message(FATAL_ERROR "no node said it was killed\n${report}")
endif()
set(victim ${CMAKE_MATCH_1})
set(killed_ms ${CMAKE_MATCH_2})
if(NOT "${out}${err}" MATCHES "process rank ${victim} with PID [0-9]+ on node [^ ]+ exited on signal 9 \\(Killed\\)")
  message(FATAL_ERROR "mpirun does not name rank ${victim} as killed by signal 9\n${report}")
endif()
if(err MATCHES "watchdog")
  message(FATAL_ERROR "a node's watchdog had to end it: a survivor was left waiting\n${report}")
endif()
math(EXPR took_ms "${ended_ms} - ${killed_ms}")
math(EXPR bound_ms "${BOUND_S} * 1000")
if(took_ms GREATER_EQUAL bound_ms OR took_ms LESS 0)
  message(FATAL_ERROR "every node ended ${took_ms} ms after the kill, not within ${BOUND_S} s\n${report}")
endif()
message(STATUS "node ${victim} killed: every node ended ${took_ms} ms later, mpirun exit code ${code}")
