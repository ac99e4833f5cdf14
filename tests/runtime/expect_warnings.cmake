# Compiles one file and checks that the compiler accepts it (exit 0) with a
# warning on each of the given lines.
#
#   cmake -DCOMPILE=<compiler>|<arg>|... -DFILE=<source> -DLINES=<n>|<n>|... -P expect_warnings.cmake
#
# Arguments are separated by '|' so that they pass through add_test unharmed.

cmake_minimum_required(VERSION 3.25)
foreach(var COMPILE FILE LINES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_warnings.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" argv "${COMPILE}")
string(REPLACE "|" ";" lines "${LINES}")
execute_process(COMMAND ${argv} ${FILE} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "compiling ${FILE} failed (${code}):\n${err}")
endif()
get_filename_component(name ${FILE} NAME)
foreach(line IN LISTS lines)
  if(NOT err MATCHES "${name}:${line}:[0-9]+: warning: ignoring return")
    message(FATAL_ERROR "no warning about the value dropped on line ${line} of ${FILE}:\n${err}")
  endif()
endforeach()
message(STATUS "warned on every line: ${LINES}")
