# End-to-end tests: Python (standard library) scripts driving the built `reign` binary against
# real ZooKeeper servers; tests/e2e/e2elib.py is what they share.  Registered with the helpers
# of tests/integration/tests.cmake: reign_zk_test (the shared standalone server) or
# reign_fault_test (servers of their own, stopped and restarted).

set(REIGN_E2E_DIR ${CMAKE_CURRENT_LIST_DIR})
set(REIGN_E2E_ENV REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)

# reign_e2e(<kind: zk|fault> <test name> <script> [ARGS args...] [TIMEOUT s] [LABELS more...])
function(reign_e2e kind name script)
  cmake_parse_arguments(E "" "TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 180)
  endif()
  if(kind STREQUAL "zk")
    reign_zk_test(NAME ${name} COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/${script} ${E_ARGS}
      TIMEOUT ${E_TIMEOUT} LABELS e2e ${E_LABELS} ENVIRONMENT ${REIGN_E2E_ENV})
  else()
    reign_fault_test(NAME ${name} COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/${script} ${E_ARGS}
      TIMEOUT ${E_TIMEOUT} LABELS e2e ${E_LABELS} ENVIRONMENT ${REIGN_E2E_ENV})
  endif()
endfunction()

if(TARGET reign_cli)
  reign_e2e(zk e2e_one_leader test_one_leader.py)
  reign_e2e(zk e2e_kill_storm test_kill_storm.py)
  reign_e2e(zk e2e_handoff test_handoff.py)
  if(COMMAND reign_etcd_test)
    reign_etcd_test(NAME e2e_handoff_etcd COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/test_handoff.py
      etcd TIMEOUT 180 LABELS e2e ENVIRONMENT ${REIGN_E2E_ENV})
  endif()
  reign_e2e(zk e2e_same_id_restart test_same_id_restart.py)
  reign_e2e(zk e2e_kill_expiry test_kill_expiry.py ARGS off)
  reign_e2e(zk e2e_kill_expiry_no_helper test_kill_expiry.py ARGS no_helper LABELS guardian)
  reign_e2e(zk e2e_kill_expiry_not_a_guardian test_kill_expiry.py ARGS not_a_guardian
    LABELS guardian)
  reign_e2e(zk e2e_proxy_cutoff_deadline test_proxy_cutoff.py ARGS deadline)
  reign_e2e(zk e2e_proxy_cutoff_immediate test_proxy_cutoff.py ARGS immediate)
  reign_e2e(zk e2e_proxy_cutoff_blip test_proxy_cutoff.py ARGS blip LABELS history)
  reign_e2e(zk e2e_cede test_cede.py)
  reign_e2e(zk e2e_designate test_designate.py)
  reign_e2e(zk e2e_designate_faults test_designate_faults.py)
  reign_e2e(zk e2e_watch test_watch.py)
  reign_e2e(zk e2e_credentials test_credentials.py)
  reign_e2e(zk e2e_chroot test_chroot.py)
  reign_e2e(zk e2e_ls_rm test_ls_rm.py)
  reign_e2e(zk e2e_bad_input test_bad_input.py)
  reign_e2e(zk e2e_no_election test_no_election.py)
  reign_e2e(zk e2e_foreign_data test_foreign_data.py)
  reign_e2e(zk e2e_foreign_node test_foreign_node.py)
  reign_e2e(zk e2e_run test_run.py)
  # A failed runner never leaves its command beside the next one's (the leash; SQL stores in
  # tests/e2e_sql/tests.cmake).
  reign_e2e(zk e2e_run_leash_zookeeper test_run_leash.py ARGS zookeeper)
  reign_e2e(zk e2e_group_value test_group_value.py)
  reign_e2e(zk e2e_status_takeover test_status_takeover.py)
  reign_e2e(zk e2e_cli_signals test_cli_signals.py)
  # An election's history through every way a leadership ends, on ZooKeeper and on etcd.
  reign_e2e(zk e2e_history_zk test_history.py ARGS zk LABELS history)
  if(COMMAND reign_etcd_test)
    reign_etcd_test(NAME e2e_history_etcd COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/test_history.py
      etcd TIMEOUT 180 LABELS e2e history ENVIRONMENT ${REIGN_E2E_ENV})
  endif()
  # The examples of issue 4 (examples/tera-master, examples/service-masters).
  list(APPEND REIGN_E2E_ENV REIGN_TERA_MASTER=$<TARGET_FILE:reign_example_tera_master>
    REIGN_SERVICE_MASTERS=$<TARGET_FILE:reign_example_service_masters>)
  foreach(scenario restore ts_list root_table master_node lock)
    reign_e2e(zk e2e_tera_master_${scenario} test_tera_master.py ARGS ${scenario})
  endforeach()
  reign_e2e(zk e2e_service_masters test_service_masters.py)
  # examples/hourly.c, on a SQLite file of the test's own (no server).
  add_test(NAME example_hourly COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/test_hourly.py)
  set_tests_properties(example_hourly PROPERTIES LABELS e2e TIMEOUT 120
    ENVIRONMENT "${REIGN_TEST_ENV_COMMON};REIGN_HOURLY=$<TARGET_FILE:reign_example_hourly>")
  # The guardian: a dead client's leaderships end at once, and what it ran with them first
  # (test_guardian.py; ctest -L guardian runs every test of it).
  list(APPEND REIGN_E2E_ENV REIGN_IT_GUARDIAN_CLIENT=$<TARGET_FILE:reign_it_guardian_client>
    REIGN_GUARDIAN_HELPER=$<TARGET_FILE:reign_guardian>)
  foreach(scenario run_kill run_leftovers stop stop_expired socket_closed guardian_killed
      group_signals helper_late register_kill history history_credentials history_written
      history_many)
    reign_e2e(zk e2e_guardian_${scenario} test_guardian.py ARGS ${scenario} TIMEOUT 120
      LABELS guardian)
  endforeach()
  # The same ends of history records on etcd, on the shared member (nothing is faulted).
  if(COMMAND reign_etcd_test)
    foreach(scenario history_etcd history_written_etcd)
      reign_etcd_test(NAME e2e_guardian_${scenario}
        COMMAND ${REIGN_PYTHON} ${REIGN_E2E_DIR}/test_guardian.py ${scenario}
        TIMEOUT 120 LABELS e2e guardian ENVIRONMENT ${REIGN_E2E_ENV})
    endforeach()
  endif()
  reign_e2e(fault e2e_server_restart_short test_server_restart.py ARGS short)
  reign_e2e(fault e2e_server_restart_long test_server_restart.py ARGS long)
  reign_e2e(fault e2e_ensemble test_ensemble.py TIMEOUT 300)
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
  # runs no line of src/ or examples/ that the tests still run there do not run too.
  set_property(TEST
    e2e_cede e2e_ensemble e2e_guardian_stop e2e_guardian_stop_expired e2e_history_zk
    e2e_kill_expiry e2e_kill_expiry_no_helper e2e_proxy_cutoff_deadline e2e_proxy_cutoff_immediate
    e2e_run_leash_zookeeper e2e_same_id_restart e2e_server_restart_long e2e_server_restart_short
    APPEND PROPERTY LABELS sanitize_skip)
endif()
