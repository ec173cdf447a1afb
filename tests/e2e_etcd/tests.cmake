# End-to-end fault tests of elections on etcd: Python (standard library) scripts that drive the
# built `reign` binary against a three-member etcd cluster of each test's own (scripts/etcd.sh,
# started in the test's REIGN_TEST_STATE_DIR and always stopped).  tests/e2e_etcd/etcde.py is
# what they share (on top of tests/e2e/e2elib.py); README.md says what each one shows.
# Included after tests/integration/tests.cmake (REIGN_TEST_ENV_COMMON, reign_tcpproxy).
# Labels: e2e, etcd, fault, e2e_etcd.  They kill, pause and restart members, as
# tools_etcd_servers does: one at a time (RESOURCE_LOCK etcd_fault).   ctest -L e2e_etcd

set(REIGN_E2E_ETCD_DIR ${CMAKE_CURRENT_LIST_DIR})
find_program(REIGN_ETCD_PROGRAM etcd)
find_program(REIGN_ETCDCTL_PROGRAM etcdctl)
find_program(REIGN_OPENSSL_PROGRAM openssl)

# reign_e2e_etcd(<test name> <script> [ARGS args...] [TIMEOUT s])
function(reign_e2e_etcd name script)
  cmake_parse_arguments(E "" "TIMEOUT" "ARGS" ${ARGN})
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 240)
  endif()
  add_test(NAME ${name} COMMAND ${REIGN_PYTHON} ${REIGN_E2E_ETCD_DIR}/${script} ${E_ARGS}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set(env ${REIGN_TEST_ENV_COMMON} REIGN_TEST_STATE_DIR=${CMAKE_BINARY_DIR}/test-state/${name})
  set_tests_properties(${name} PROPERTIES LABELS "e2e;etcd;fault;e2e_etcd" TIMEOUT ${E_TIMEOUT}
    RESOURCE_LOCK etcd_fault ENVIRONMENT "${env}")
endfunction()

if(TARGET reign_cli AND TARGET reign_tcpproxy AND REIGN_ETCD_PROGRAM AND REIGN_ETCDCTL_PROGRAM)
  # A SIGKILLed leader: its guardian revokes its lease (takeover at once), or, without one,
  # the lease runs out.
  reign_e2e_etcd(e2e_etcd_kill_guardian test_kill.py ARGS guardian)
  reign_e2e_etcd(e2e_etcd_kill_expiry test_kill.py ARGS off)
  # A leader SIGSTOPped past its lease, then continued.
  reign_e2e_etcd(e2e_etcd_stop test_stop.py)
  # A leader cut off from every member (frozen proxies).
  reign_e2e_etcd(e2e_etcd_proxy_cutoff test_proxy_cutoff.py)
  # Members: the one the leader talks to killed, the raft leader killed, one paused.
  foreach(scenario member_killed raft_leader_killed member_paused)
    reign_e2e_etcd(e2e_etcd_${scenario} test_members.py ARGS ${scenario})
  endforeach()
  # Compaction under waiting candidates, and a watch stream resumed from a compacted revision.
  reign_e2e_etcd(e2e_etcd_compaction test_compaction.py)
  # The leader's lease revoked by hand (etcdctl lease revoke).
  reign_e2e_etcd(e2e_etcd_lease_revoked test_lease_revoked.py)
  # Bad input: nothing listening, the JSON gateway off, foreign data, payloads too large, the
  # HTTP answers' parser library missing.
  foreach(scenario unreachable gateway_off foreign_data too_large library_missing)
    reign_e2e_etcd(e2e_etcd_bad_input_${scenario} test_bad_input.py ARGS ${scenario}
      TIMEOUT 180)
  endforeach()
  # TLS (etcds://): members that serve clients over TLS only and require a client certificate,
  # with certificates made by openssl at the test's start (etcd.sh's REIGN_ETCD_TLS=1):
  # elections, status and values, the leader killed (its guardian over TLS); wrong files, CAs
  # and schemes; etcd's users over TLS, and over plain HTTP (auth_plain: no certificates, kept
  # beside auth, which it repeats without TLS; auth_token_lost: three plain members restarted
  # one after the other under candidates logged in as a user, whose tokens they forget).
  if(REIGN_OPENSSL_PROGRAM)
    foreach(scenario elect bad_files auth auth_plain auth_token_lost)
      reign_e2e_etcd(e2e_etcd_tls_${scenario} test_tls.py ARGS ${scenario})
    endforeach()
  else()
    message(STATUS "openssl not found: the e2e_etcd_tls tests are not registered "
      "(scripts/deps.sh installs it)")
  endif()
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
  # runs no line of src/ or examples/ that the tests still run there do not run too.
  set_property(TEST
    e2e_etcd_bad_input_unreachable e2e_etcd_kill_expiry e2e_etcd_member_killed
    e2e_etcd_proxy_cutoff e2e_etcd_raft_leader_killed
    APPEND PROPERTY LABELS sanitize_skip)
else()
  message(STATUS "etcd or etcdctl not found: the e2e_etcd tests are not registered "
    "(scripts/deps.sh installs them)")
endif()
