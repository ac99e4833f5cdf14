# The static schedulers (schedulers/): matrices, the schedule validator and the
# schedulers themselves. Included from tests/CMakeLists.txt (best after its
# SWITCHYARD_TEST_TIMEOUT is set); same conventions as the suite there.
include(GoogleTest)

if(NOT DEFINED SWITCHYARD_TEST_TIMEOUT)
  set(SWITCHYARD_TEST_TIMEOUT 120)
endif()

set(SWITCHYARD_SCHEDULER_TESTS
  comm_matrix
  schedule
  static_schedulers)

foreach(name IN LISTS SWITCHYARD_SCHEDULER_TESTS)
  add_executable(test_${name} ${CMAKE_CURRENT_LIST_DIR}/test_${name}.cpp)
  target_link_libraries(test_${name} PRIVATE switchyard::schedulers GTest::gtest_main)
  target_compile_options(test_${name} PRIVATE -Wall -Wextra)
  if(NOT SWITCHYARD_SANITIZE STREQUAL "")
    target_compile_definitions(test_${name} PRIVATE SWITCHYARD_TEST_SANITIZE="${SWITCHYARD_SANITIZE}")
  endif()
  gtest_discover_tests(test_${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${SWITCHYARD_TEST_TIMEOUT})
endforeach()
