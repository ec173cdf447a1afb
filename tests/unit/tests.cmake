# Unit tests: one cmocka program per file, each a ctest entry labelled
# "unit".  Included from tests/CMakeLists.txt; they link reign_internal to
# reach the private functions they test.
set(REIGN_UNIT_TESTS
  test_uri
  test_record
  test_core
  test_election_unit
  test_group_unit
  test_guardian_proto
  test_slot_unit
  test_sqlite_notices
  test_etcd
  test_etcd_watch
  test_etcd_h1
  test_etcd_h2
  test_etcd_pb
  test_etcd_end
)

foreach(name IN LISTS REIGN_UNIT_TESTS)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.c)
  target_compile_options(${name} PRIVATE ${REIGN_WARNINGS})
  target_link_libraries(${name} PRIVATE reign_internal ${CMOCKA_LIBRARY})
  add_test(NAME unit_${name} COMMAND ${name})
  set_tests_properties(unit_${name} PROPERTIES LABELS unit)
endforeach()

# The step trace reads REIGN_TRACE when the library is loaded: one run with it, one without.
add_executable(test_trace ${CMAKE_CURRENT_LIST_DIR}/test_trace.c)
target_compile_options(test_trace PRIVATE ${REIGN_WARNINGS})
target_link_libraries(test_trace PRIVATE reign_internal ${CMOCKA_LIBRARY} Threads::Threads)
add_test(NAME unit_test_trace_on COMMAND test_trace on)
add_test(NAME unit_test_trace_off COMMAND test_trace off)
set_tests_properties(unit_test_trace_on PROPERTIES LABELS unit
  ENVIRONMENT "REIGN_TRACE=${CMAKE_CURRENT_BINARY_DIR}/test_trace.out")
set_tests_properties(unit_test_trace_off PROPERTIES LABELS unit ENVIRONMENT_MODIFICATION
  "REIGN_TRACE=unset:")

# The candidates' tables (ZooKeeper, SQL leases): every pair and every path, no server.  It draws the tables'
# graph with the generator reignd's --print-fsm uses (src/common/fsm_dot.c), and checks that
# docs/design.md shows that graph as it is (`test_election_fsm --dot` prints it).
add_executable(test_election_fsm ${CMAKE_CURRENT_LIST_DIR}/test_election_fsm.c
  ${PROJECT_SOURCE_DIR}/src/common/fsm_dot.c)
target_compile_options(test_election_fsm PRIVATE ${REIGN_WARNINGS})
target_include_directories(test_election_fsm PRIVATE ${PROJECT_SOURCE_DIR}/src/common)
target_compile_definitions(test_election_fsm PRIVATE REIGN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(test_election_fsm PRIVATE reign_internal ${CMOCKA_LIBRARY})
add_test(NAME unit_test_election_fsm COMMAND test_election_fsm)
set_tests_properties(unit_test_election_fsm PROPERTIES LABELS unit)

# How `reign` shows payloads and times (src/cli/output.c, fmt.c): built from the tool's own
# sources, which need no server.
if(TARGET reign_cli)
  add_executable(test_cli_output ${CMAKE_CURRENT_LIST_DIR}/test_cli_output.c
    ${PROJECT_SOURCE_DIR}/src/cli/output.c ${PROJECT_SOURCE_DIR}/src/cli/fmt.c
    ${PROJECT_SOURCE_DIR}/src/common/toollog.c)
  target_compile_options(test_cli_output PRIVATE ${REIGN_WARNINGS})
  target_include_directories(test_cli_output PRIVATE ${PROJECT_SOURCE_DIR}/src/cli
    ${PROJECT_SOURCE_DIR}/src/common)
  target_link_libraries(test_cli_output PRIVATE reign PkgConfig::LIBUV PkgConfig::CJSON
    ${CMOCKA_LIBRARY})
  add_test(NAME unit_test_cli_output COMMAND test_cli_output)
  set_tests_properties(unit_test_cli_output PROPERTIES LABELS unit)
endif()
