# Runs a command and checks its exact exit code, and optionally what it printed
# and a JSON file it wrote. CTest's WILL_FAIL only knows "non-zero"; the CLI's
# contract is 0 = success, 1 = runtime failure, 2 = bad input.
#
#   cmake -DCOMMAND=<prog>|<arg>|<arg>... -DEXPECT_CODE=2
#         [-DEXPECT_STDERR=<regex>] [-DEXPECT_STDOUT=<regex>]
#         [-DJSON_FILE=<path> -DJSON_RESULTS=<n>] -P expect_exit.cmake
#
# Arguments are separated by '|' so that they pass through add_test unharmed.

cmake_minimum_required(VERSION 3.25)

foreach(var COMMAND EXPECT_CODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_exit.cmake: -D${var}=... is required")
  endif()
endforeach()

string(REPLACE "|" ";" argv "${COMMAND}")
if(DEFINED JSON_FILE)
  file(REMOVE "${JSON_FILE}")
endif()

execute_process(
  COMMAND ${argv}
  RESULT_VARIABLE code
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 120)

string(REPLACE ";" " " shown "${argv}")
set(report "command: ${shown}\nexit code: ${code}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")

if(NOT code STREQUAL EXPECT_CODE)
  message(FATAL_ERROR "expected exit code ${EXPECT_CODE}, got '${code}'\n${report}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}'\n${report}")
endif()
if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}'\n${report}")
endif()
# A crash must never pass as a clean error: the message comes from the program.
if(NOT EXPECT_CODE STREQUAL "0" AND err STREQUAL "")
  message(FATAL_ERROR "the command failed without saying why on stderr\n${report}")
endif()

if(DEFINED JSON_FILE)
  if(NOT EXISTS "${JSON_FILE}")
    message(FATAL_ERROR "${JSON_FILE} was not written\n${report}")
  endif()
  file(READ "${JSON_FILE}" json)
  foreach(key processes density cores)
    string(JSON value ERROR_VARIABLE json_error GET "${json}" ${key})
    if(json_error OR NOT value MATCHES "^[0-9]+$")
      message(FATAL_ERROR "${JSON_FILE}: '${key}' is missing or not a count (${json_error})\n${json}")
    endif()
  endforeach()
  string(JSON n ERROR_VARIABLE json_error LENGTH "${json}" results)
  if(json_error)
    message(FATAL_ERROR "${JSON_FILE}: no 'results' array (${json_error})\n${json}")
  endif()
  if(DEFINED JSON_RESULTS AND NOT n EQUAL JSON_RESULTS)
    message(FATAL_ERROR "${JSON_FILE}: ${n} results, expected ${JSON_RESULTS}\n${json}")
  endif()
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON scheduler GET "${json}" results ${i} scheduler)
    string(JSON bytes GET "${json}" results ${i} bytes)
    string(JSON verified GET "${json}" results ${i} verified)
    if(NOT scheduler STREQUAL "ac" OR NOT bytes MATCHES "^[0-9]+$" OR NOT verified STREQUAL "ON")
      message(FATAL_ERROR "${JSON_FILE}: result ${i} is malformed\n${json}")
    endif()
    foreach(stat median min max)
      string(JSON ms ERROR_VARIABLE json_error GET "${json}" results ${i} comm_ms ${stat})
      if(json_error OR NOT ms MATCHES "^[0-9.eE+-]+$")
        message(FATAL_ERROR "${JSON_FILE}: result ${i} has no numeric comm_ms.${stat}\n${json}")
      endif()
    endforeach()
  endforeach()
endif()
