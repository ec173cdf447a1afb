# Integration tests: programs that talk to real ZooKeeper servers.
#
# Fixture section (scripts/ and tests/tools/ own it): a standalone ZooKeeper server started by
# scripts/zk.sh before the first test that needs it and stopped after the last, plus two helpers
# to declare tests:
#
#   reign_zk_test(NAME <name> COMMAND <cmd> [args...] [TIMEOUT <s>] [LABELS ...]
#                 [ENVIRONMENT VAR=value ...] [WORKING_DIRECTORY <dir>])
#       a test against the shared standalone server: its connect string is in the file named
#       by $REIGN_TEST_ZK_FILE.  The test may not stop or restart that server.
#
#   reign_fault_test(NAME <name> COMMAND <cmd> [args...] [same options])
#       a test that starts its own servers (scripts/zk.sh start "$REIGN_TEST_STATE_DIR" 3,
#       reign_tcpproxy ...), kills, pauses and restarts them.  Never two at once.
#
# (`reign_zk_test(<name> COMMAND ...)` without the NAME keyword works too.)  Both set
#   REIGN_SCRIPTS         the scripts/ directory (zk.sh)
#   REIGN_TOOLS           tests/tools (check_leadership.py; also on PYTHONPATH)
#   REIGN_TCPPROXY        the reign_tcpproxy binary
#   REIGN_CLI             the reign binary, once it is built
#   REIGN_PYTHON          a python3 that has Debian's python3-kazoo
#   REIGN_TEST_STATE_DIR  a directory of the test's own under the build tree, for servers and
#                         files; scripts/test.sh stops every server under the build tree at
#                         the end, whatever happened
#   REIGN_ZK_OWNER_PID    "parent": servers a test starts with zk.sh stop by themselves when
#                         the test process dies
# and the label `integration` or `fault`.

set(REIGN_ZK_STANDALONE_DIR ${CMAKE_BINARY_DIR}/zk-standalone)
set(REIGN_TOOLS_DIR ${PROJECT_SOURCE_DIR}/tests/tools)

# Debian's python3-kazoo is installed for /usr/bin/python3, which may not be the first python3
# on PATH (pyenv and friends).
if(EXISTS /usr/bin/python3)
  set(REIGN_PYTHON /usr/bin/python3)
else()
  set(REIGN_PYTHON ${Python3_EXECUTABLE})
endif()

add_executable(reign_tcpproxy ${REIGN_TOOLS_DIR}/tcpproxy.c)
target_compile_options(reign_tcpproxy PRIVATE ${REIGN_WARNINGS})

set(REIGN_TEST_ENV_COMMON
  REIGN_SCRIPTS=${PROJECT_SOURCE_DIR}/scripts
  REIGN_TOOLS=${REIGN_TOOLS_DIR}
  PYTHONPATH=${REIGN_TOOLS_DIR}
  REIGN_TCPPROXY=$<TARGET_FILE:reign_tcpproxy>
  REIGN_PYTHON=${REIGN_PYTHON}
  REIGN_ZK_OWNER_PID=parent)
if(TARGET reign_cli)
  list(APPEND REIGN_TEST_ENV_COMMON REIGN_CLI=$<TARGET_FILE:reign_cli>)
endif()

# zk.sh runs as a direct child of ctest, so REIGN_ZK_OWNER_PID=parent makes ctest the owner:
# if ctest is killed before zk_standalone_down runs, the server's watchdog stops it.
add_test(NAME zk_standalone_up
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/zk.sh start ${REIGN_ZK_STANDALONE_DIR} 1)
set_tests_properties(zk_standalone_up PROPERTIES
  FIXTURES_SETUP zk_standalone LABELS integration TIMEOUT 120
  ENVIRONMENT REIGN_ZK_OWNER_PID=parent)
add_test(NAME zk_standalone_down
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/zk.sh stop ${REIGN_ZK_STANDALONE_DIR})
set_tests_properties(zk_standalone_down PROPERTIES
  FIXTURES_CLEANUP zk_standalone LABELS integration TIMEOUT 60)

# _reign_test_args(<prefix> <args...>): NAME and COMMAND plus options, NAME keyword optional.
macro(_reign_test_args prefix)
  cmake_parse_arguments(${prefix} "" "NAME;TIMEOUT;WORKING_DIRECTORY"
    "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ${prefix}_NAME)
    list(POP_FRONT ${prefix}_UNPARSED_ARGUMENTS ${prefix}_NAME)
  endif()
  if(NOT ${prefix}_NAME OR NOT ${prefix}_COMMAND OR ${prefix}_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "usage: reign_zk_test/reign_fault_test(NAME <name> COMMAND <cmd>...) "
      "(got: ${ARGN})")
  endif()
  if(NOT ${prefix}_TIMEOUT)
    set(${prefix}_TIMEOUT 300)
  endif()
  if(NOT ${prefix}_WORKING_DIRECTORY)
    set(${prefix}_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
endmacro()

# _reign_add_test(<kind>): add the test parsed into ARG_*, with kind's label and environment.
macro(_reign_add_test kind)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_COMMAND} WORKING_DIRECTORY ${ARG_WORKING_DIRECTORY})
  set(env ${REIGN_TEST_ENV_COMMON} REIGN_TEST_STATE_DIR=${CMAKE_BINARY_DIR}/test-state/${ARG_NAME})
  if("${kind}" STREQUAL "integration")
    list(APPEND env REIGN_TEST_ZK_FILE=${REIGN_ZK_STANDALONE_DIR}/connect)
  endif()
  list(APPEND env ${ARG_ENVIRONMENT})
  set(labels ${kind} ${ARG_LABELS})
  set_tests_properties(${ARG_NAME} PROPERTIES
    LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${env}")
endmacro()

function(reign_zk_test)
  _reign_test_args(ARG ${ARGN})
  _reign_add_test(integration)
  set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED zk_standalone)
endfunction()

function(reign_fault_test)
  _reign_test_args(ARG ${ARGN})
  _reign_add_test(fault)
  set_tests_properties(${ARG_NAME} PROPERTIES RESOURCE_LOCK zk_fault)
endfunction()

# The test tools test themselves: the checker needs nothing, the proxy a server to talk to.
# Label sanitize_skip on these and the tree's check: they run none of the library's code, so
# the sanitizer builds skip them (scripts/test.sh, CONTRIBUTING.md).
add_test(NAME tools_check_leadership
  COMMAND ${REIGN_PYTHON} ${REIGN_TOOLS_DIR}/test_check_leadership.py)
set_tests_properties(tools_check_leadership PROPERTIES LABELS "tools;sanitize_skip"
  TIMEOUT 120)
# No circle between the library's headers, nor between its source files (docs/style.md).
add_test(NAME tools_no_cycles
  COMMAND ${REIGN_PYTHON} ${REIGN_TOOLS_DIR}/check_cycles.py ${PROJECT_SOURCE_DIR}/src
  $<TARGET_FILE:reign_internal>)
set_tests_properties(tools_no_cycles PROPERTIES LABELS "tools;sanitize_skip" TIMEOUT 60)
reign_zk_test(NAME tools_tcpproxy
  COMMAND ${REIGN_PYTHON} ${REIGN_TOOLS_DIR}/test_tcpproxy.py $<TARGET_FILE:reign_tcpproxy>
  TIMEOUT 180 LABELS tools sanitize_skip)
# scripts/etcd.sh tests itself: one member and a three-member cluster of its own, put and get
# through etcdctl and the JSON gateway (curl), the leader killed, a member paused, the watchdog.
# Registered only where Debian's etcd-server, etcd-client and curl are installed (deps.sh).
find_program(REIGN_ETCD_PROGRAM etcd)
find_program(REIGN_ETCDCTL_PROGRAM etcdctl)
find_program(REIGN_CURL_PROGRAM curl)
if(REIGN_ETCD_PROGRAM AND REIGN_ETCDCTL_PROGRAM AND REIGN_CURL_PROGRAM)
  add_test(NAME tools_etcd_servers
    COMMAND ${REIGN_PYTHON} ${REIGN_TOOLS_DIR}/test_etcd_servers.py)
  # Never beside the etcd fault tests (the same lock): it kills and pauses members too.
  set(_reign_etcd_selftest_env REIGN_SCRIPTS=${PROJECT_SOURCE_DIR}/scripts
    REIGN_TEST_STATE_DIR=${CMAKE_BINARY_DIR}/test-state/tools_etcd_servers)
  set_tests_properties(tools_etcd_servers PROPERTIES LABELS "etcd;tools;sanitize_skip" TIMEOUT 120
    RESOURCE_LOCK etcd_fault ENVIRONMENT "${_reign_etcd_selftest_env}")
else()
  message(STATUS "etcd, etcdctl or curl not found: tools_etcd_servers not registered "
    "(scripts/deps.sh installs them)")
endif()

# The shared etcd member of the tests on the etcd store (the contract tests' etcd column),
# started and stopped like the shared ZooKeeper server.
set(REIGN_ETCD_STANDALONE_DIR ${CMAKE_BINARY_DIR}/etcd-standalone)
add_test(NAME etcd_standalone_up
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/etcd.sh start ${REIGN_ETCD_STANDALONE_DIR} 1)
set_tests_properties(etcd_standalone_up PROPERTIES
  FIXTURES_SETUP etcd_standalone LABELS "integration;etcd" TIMEOUT 120
  ENVIRONMENT REIGN_ETCD_OWNER_PID=parent)
add_test(NAME etcd_standalone_down
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/etcd.sh stop ${REIGN_ETCD_STANDALONE_DIR})
set_tests_properties(etcd_standalone_down PROPERTIES
  FIXTURES_CLEANUP etcd_standalone LABELS "integration;etcd" TIMEOUT 60)

function(reign_etcd_test)
  _reign_test_args(ARG ${ARGN})
  list(APPEND ARG_ENVIRONMENT REIGN_TEST_ETCD_FILE=${REIGN_ETCD_STANDALONE_DIR}/connect)
  list(APPEND ARG_LABELS etcd)
  _reign_add_test(integration)
  set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED etcd_standalone)
endfunction()

# integration tests below

# ---- the C harness and raw helper (tests/integration/harness.[ch], zkraw.c) ----
# harness.c uses only the public API and the ZooKeeper C client, so it links with either the
# shared libreign or reign_internal (the fault-injection tests that wrap ZooKeeper calls).
add_library(reign_it_harness STATIC ${CMAKE_CURRENT_LIST_DIR}/harness.c)
target_include_directories(reign_it_harness PUBLIC
  ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/include ${ZOOKEEPER_INCLUDE_DIR})
target_compile_definitions(reign_it_harness PUBLIC THREADED)
target_compile_options(reign_it_harness PRIVATE ${REIGN_WARNINGS})
target_link_libraries(reign_it_harness PUBLIC ${ZOOKEEPER_MT_LIBRARY} Threads::Threads)

# reign_it_program(<name> [INTERNAL] [LINK_OPTIONS ...]): tests/integration/<name>.c linked with
# the harness and libreign (INTERNAL: the static reign_internal, private objects and all).
function(reign_it_program name)
  cmake_parse_arguments(P "INTERNAL" "" "LINK_OPTIONS" ${ARGN})
  add_executable(${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.c)
  target_compile_options(${name} PRIVATE ${REIGN_WARNINGS})
  if(P_INTERNAL)
    target_link_libraries(${name} PRIVATE reign_it_harness reign_internal)
  else()
    target_link_libraries(${name} PRIVATE reign_it_harness reign)
  endif()
  if(P_LINK_OPTIONS)
    target_link_options(${name} PRIVATE ${P_LINK_OPTIONS})
  endif()
endfunction()

# 1. one leader among N with the lock strategy (the queue strategy, ZooKeeper's default, is in
# the election contract: tests/contract/)
reign_it_program(it_one_leader)
reign_zk_test(NAME it_one_leader_lock COMMAND it_one_leader lock TIMEOUT 120)

# A fault injected into one create or multi libreign sends (zk_fault.[ch]): a program that uses it
# adds zk_fault.c to its sources and links with these options against reign_internal.
set(REIGN_ZK_FAULT_SOURCE ${CMAKE_CURRENT_LIST_DIR}/zk_fault.c)
set(REIGN_ZK_FAULT_WRAP -Wl,--wrap=zoo_acreate2,--wrap=zoo_amulti)

# 6. a candidate's create whose reply is lost (applied, or not) after a connection loss
reign_it_program(it_create_connloss INTERNAL LINK_OPTIONS ${REIGN_ZK_FAULT_WRAP})
target_sources(it_create_connloss PRIVATE ${REIGN_ZK_FAULT_SOURCE})
foreach(scenario queue-lost-reply lock-lost-reply queue-failed lock-failed new-lost-reply
    new-failed)
  reign_zk_test(NAME it_create_connloss_${scenario} COMMAND it_create_connloss ${scenario}
    TIMEOUT 120)
endforeach()

# A raw ZooKeeper client for the end-to-end tests (tests/e2e/ run it as $REIGN_ZKRAW).
add_executable(reign_it_zkraw ${CMAKE_CURRENT_LIST_DIR}/zkraw.c)
target_compile_options(reign_it_zkraw PRIVATE ${REIGN_WARNINGS})
target_link_libraries(reign_it_zkraw PRIVATE reign_it_harness reign)

# A leader that closes its guardian's socket, for tests/e2e/test_guardian.py (socket_closed).
add_executable(reign_it_guardian_client ${CMAKE_CURRENT_LIST_DIR}/guardian_client.c)
target_compile_options(reign_it_guardian_client PRIVATE ${REIGN_WARNINGS})
target_link_libraries(reign_it_guardian_client PRIVATE reign_it_harness reign)

# 10. the library's reign_election_cede()
reign_it_program(it_cede_api)
reign_zk_test(NAME it_cede_api COMMAND it_cede_api TIMEOUT 120)

# 11. observers (and candidates with follow_leader) see every change of leader in order
reign_it_program(it_observer)
reign_zk_test(NAME it_observer COMMAND it_observer TIMEOUT 120)

# 12. designation and priority (issue 4): handoffs, preemption, no_preempt, preemption delay
reign_it_program(it_designate)
reign_zk_test(NAME it_designate COMMAND it_designate TIMEOUT 180)

reign_it_program(it_many_joins)
reign_zk_test(NAME it_many_joins COMMAND it_many_joins TIMEOUT 180)

# Freeing a client with answers and watch events still queued (meant for the sanitizer builds).
reign_it_program(it_close_pending)
reign_zk_test(NAME it_close_pending COMMAND it_close_pending TIMEOUT 120)

# Group membership and watched values (issue 4).  expire.c ends a client's session on the
# server on purpose: it needs to see the ZooKeeper handles libreign opens.
# The expiring is done by reign_it_expire, a process of its own (see expire_tool.c).
add_executable(reign_it_expire ${CMAKE_CURRENT_LIST_DIR}/expire_tool.c)
target_compile_options(reign_it_expire PRIVATE ${REIGN_WARNINGS})
target_include_directories(reign_it_expire PRIVATE ${ZOOKEEPER_INCLUDE_DIR})
target_compile_definitions(reign_it_expire PRIVATE THREADED)
target_link_libraries(reign_it_expire PRIVATE ${ZOOKEEPER_MT_LIBRARY} Threads::Threads)
set(REIGN_EXPIRE_WRAP -Wl,--wrap=zookeeper_init2 -Wl,--wrap=zookeeper_close)
set(REIGN_EXPIRE_ENV REIGN_IT_EXPIRE=$<TARGET_FILE:reign_it_expire>)
reign_it_program(it_group INTERNAL LINK_OPTIONS ${REIGN_EXPIRE_WRAP})
target_sources(it_group PRIVATE ${CMAKE_CURRENT_LIST_DIR}/expire.c)
foreach(scenario burst expiry newest deleted)
  reign_zk_test(NAME it_group_${scenario} COMMAND it_group ${scenario} TIMEOUT 180
    ENVIRONMENT ${REIGN_EXPIRE_ENV})
endforeach()
# A ceded candidate keeps following the leader across a new session.
reign_it_program(it_cede_expire INTERNAL LINK_OPTIONS ${REIGN_EXPIRE_WRAP})
target_sources(it_cede_expire PRIVATE ${CMAKE_CURRENT_LIST_DIR}/expire.c)
reign_zk_test(NAME it_cede_expire COMMAND it_cede_expire TIMEOUT 120
  ENVIRONMENT ${REIGN_EXPIRE_ENV})
reign_it_program(it_value INTERNAL LINK_OPTIONS ${REIGN_EXPIRE_WRAP})
target_sources(it_value PRIVATE ${CMAKE_CURRENT_LIST_DIR}/expire.c)
foreach(scenario tree expiry)
  reign_zk_test(NAME it_value_${scenario} COMMAND it_value ${scenario} TIMEOUT 180
    ENVIRONMENT ${REIGN_EXPIRE_ENV})
endforeach()
