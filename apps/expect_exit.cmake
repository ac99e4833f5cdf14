# Runs a command and checks its exact exit code, and optionally what it printed
# and a JSON file it wrote. CTest's WILL_FAIL only knows "non-zero"; the CLI's
# contract is 0 = success, 1 = runtime failure, 2 = bad input.
#
#   cmake -DCOMMAND=<prog>|<arg>|<arg>... -DEXPECT_CODE=2
#         [-DEXPECT_STDERR=<regex>] [-DEXPECT_STDOUT=<regex>]
#         [-DJSON_FILE=<path> [-DJSON_KIND=exchange|schedule|phases] [-DJSON_RESULTS=<n>]]
#         -P expect_exit.cmake
#
# JSON_KIND says which command wrote JSON_FILE (default exchange) and so which
# fields it must have; JSON_RESULTS is the number of exchange results, or of
# schedule transfers.
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

if(NOT DEFINED JSON_FILE)
  return()
endif()
if(NOT EXISTS "${JSON_FILE}")
  message(FATAL_ERROR "${JSON_FILE} was not written\n${report}")
endif()
file(READ "${JSON_FILE}" json)
if(NOT DEFINED JSON_KIND)
  set(JSON_KIND exchange)
endif()

# require_json(<regex> <path>...): the value at <path> exists and matches <regex>.
function(require_json regex)
  string(JSON value ERROR_VARIABLE json_error GET "${json}" ${ARGN})
  if(json_error OR NOT value MATCHES "${regex}")
    list(JOIN ARGN "." where)
    message(FATAL_ERROR "${JSON_FILE}: '${where}' is missing or not like '${regex}' (${json_error})\n${json}")
  endif()
endfunction()
# forbid_json(<path>...): there is no value at <path>.
function(forbid_json)
  string(JSON value ERROR_VARIABLE json_error GET "${json}" ${ARGN})
  if(NOT json_error)
    list(JOIN ARGN "." where)
    message(FATAL_ERROR "${JSON_FILE}: '${where}' should not be there\n${json}")
  endif()
endfunction()

set(count "^[0-9]+$")
set(number "^[0-9.eE+-]+$")

if(JSON_KIND STREQUAL "exchange")
  foreach(key processes density cores)
    require_json("${count}" ${key})
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
    require_json("^(ac|lp|gm|cgm|rsn|rsnh|drsn)$" results ${i} scheduler)
    string(JSON scheduler GET "${json}" results ${i} scheduler)
    require_json("${count}" results ${i} bytes)
    require_json("^ON$" results ${i} verified)
    require_json("${number}" results ${i} schedule_ms)
    foreach(stat median min max)
      require_json("${number}" results ${i} comm_ms ${stat})
    endforeach()
    # phases belong to the static schedulers, inquiries to DRS_N.
    if(scheduler STREQUAL "ac" OR scheduler STREQUAL "drsn")
      forbid_json(results ${i} phases)
    else()
      require_json("${count}" results ${i} phases)
    endif()
    if(scheduler STREQUAL "drsn")
      require_json("${count}" results ${i} inquiries)
    else()
      forbid_json(results ${i} inquiries)
    endif()
  endforeach()
elseif(JSON_KIND STREQUAL "schedule")
  require_json("${count}" processes)
  require_json("^(lp|gm|cgm|rsn|rsnh)$" scheduler)
  string(JSON phases ERROR_VARIABLE json_error LENGTH "${json}" phases)
  if(json_error)
    message(FATAL_ERROR "${JSON_FILE}: no 'phases' array (${json_error})\n${json}")
  endif()
  set(transfers 0)
  if(phases GREATER 0)
    math(EXPR last_phase "${phases} - 1")
    foreach(p RANGE ${last_phase})
      string(JSON k LENGTH "${json}" phases ${p})
      if(k GREATER 0)
        math(EXPR last "${k} - 1")
        foreach(t RANGE ${last})
          foreach(key src dst offset bytes)
            require_json("${count}" phases ${p} ${t} ${key})
          endforeach()
        endforeach()
      endif()
      math(EXPR transfers "${transfers} + ${k}")
    endforeach()
  endif()
  if(DEFINED JSON_RESULTS AND NOT transfers EQUAL JSON_RESULTS)
    message(FATAL_ERROR "${JSON_FILE}: ${transfers} transfers, expected ${JSON_RESULTS}\n${json}")
  endif()
elseif(JSON_KIND STREQUAL "phases")
  require_json("^(lp|gm|cgm|rsn|rsnh)$" scheduler)
  foreach(key processes density samples)
    require_json("${count}" ${key})
  endforeach()
  foreach(stat avg min max)
    require_json("${number}" phases ${stat})
  endforeach()
  require_json("${number}" schedule_ms avg)
else()
  message(FATAL_ERROR "expect_exit.cmake: unknown JSON_KIND '${JSON_KIND}'")
endif()
