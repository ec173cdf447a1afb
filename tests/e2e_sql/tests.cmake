# End-to-end and fault tests of SQL lease elections: Python (standard library) scripts that
# drive the built `reign` binary against SQLite files and real MariaDB and PostgreSQL servers.
# tests/e2e_sql/sqle.py is what they share (on top of tests/e2e/e2elib.py).  Registered with
# the helpers of tests/sql/tests.cmake, which must be included first: the shared servers
# (reign_sqlite_test, reign_mariadb_test, reign_pg_test, reign_sql_test) or servers of the
# test's own (reign_sql_fault_test).  Labels: sql (and fault) from the helpers, plus e2e and
# e2e_sql:  ctest -L e2e_sql -j8

set(REIGN_E2E_SQL_DIR ${CMAKE_CURRENT_LIST_DIR})

# reign_e2e_sql(<store: sqlite|mariadb|postgres|both|fault> <test name> <script> [ARGS args...]
#               [TIMEOUT s] [LABELS more...])
function(reign_e2e_sql store name script)
  cmake_parse_arguments(E "" "TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 180)
  endif()
  set(cmd COMMAND ${REIGN_SQL_PYTHON} ${REIGN_E2E_SQL_DIR}/${script} ${E_ARGS}
    TIMEOUT ${E_TIMEOUT} LABELS e2e e2e_sql ${E_LABELS})
  if(store STREQUAL "sqlite")
    reign_sqlite_test(NAME ${name} ${cmd})
  elseif(store STREQUAL "mariadb")
    reign_mariadb_test(NAME ${name} ${cmd})
  elseif(store STREQUAL "postgres")
    reign_pg_test(NAME ${name} ${cmd})
  elseif(store STREQUAL "both")
    reign_sql_test(NAME ${name} ${cmd})
  else()
    reign_sql_fault_test(NAME ${name} ${cmd})
  endif()
endfunction()

if(TARGET reign_cli AND COMMAND reign_sql_fault_test)
  foreach(store sqlite mariadb postgres)
    reign_e2e_sql(${store} e2e_sql_one_leader_${store} test_one_leader.py ARGS ${store})
    reign_e2e_sql(${store} e2e_sql_handoff_${store} test_handoff.py ARGS ${store})
    reign_e2e_sql(${store} e2e_sql_kill_${store} test_kill_takeover.py ARGS ${store})
    reign_e2e_sql(${store} e2e_sql_stop_fence_${store} test_stop_fence.py ARGS ${store})
    # The test of tests/e2e (every store runs it): no two commands of `reign run` at once.
    reign_e2e_sql(${store} e2e_run_leash_${store} ../e2e/test_run_leash.py ARGS ${store})
    # The history's e2e test of tests/e2e, on every store: every way a leadership ends.
    reign_e2e_sql(${store} e2e_history_${store} ../e2e/test_history.py ARGS ${store}
      LABELS history)
    reign_e2e_sql(${store} e2e_sql_cede_${store} test_cede.py ARGS ${store})
    reign_e2e_sql(${store} e2e_sql_watch_${store} test_watch.py ARGS ${store})
    reign_e2e_sql(${store} e2e_sql_ls_rm_${store} test_ls_rm.py ARGS ${store})
    # Group members: a killed one removed by its guardian, a stopped one reaped a lease later.
    reign_e2e_sql(${store} e2e_sql_group_kill_stop_${store} test_group_faults.py
      ARGS kill_stop ${store} LABELS guardian)
    # The test of tests/e2e (every store runs it): designation and preemption under faults.
    reign_e2e_sql(${store} e2e_designate_faults_${store} ../e2e/test_designate_faults.py
      ARGS ${store} TIMEOUT 300 LABELS fault)
    # The guardian releases a killed leader's lease after killing its command's group, and
    # never a lease another took meanwhile.
    foreach(scenario run_kill stop_kill)
      reign_e2e_sql(${store} e2e_sql_guardian_${scenario}_${store} test_guardian.py
        ARGS ${scenario} ${store} TIMEOUT 120 LABELS guardian)
    endforeach()
  endforeach()
  # No wall clock decides who leads: the store's clock stepped an hour forward, then back.
  reign_e2e_sql(sqlite e2e_sql_clock_step_sqlite test_clock_step.py ARGS sqlite LABELS fault)
  foreach(store mariadb postgres)
    reign_e2e_sql(fault e2e_sql_clock_step_${store} test_clock_step.py ARGS ${store})
  endforeach()
  # MariaDB's wake-up lock: it wakes followers; held by another, refused or off, the polls work.
  reign_e2e_sql(mariadb e2e_sql_wakeup_mariadb test_wakeup.py ARGS mariadb TIMEOUT 180
    LABELS fault guardian)
  reign_e2e_sql(sqlite e2e_sql_sqlite_crowd test_sqlite_crowd.py)
  reign_e2e_sql(sqlite e2e_sql_sqlite_file_replaced test_sqlite_file_replaced.py)
  reign_e2e_sql(sqlite e2e_sql_default_store test_default_store.py)
  reign_e2e_sql(both e2e_sql_bad_input test_bad_input.py)
  reign_e2e_sql(fault e2e_sql_server_restart_mariadb test_server_restart.py ARGS mariadb
    TIMEOUT 300)
  reign_e2e_sql(fault e2e_sql_server_restart_postgres test_server_restart.py ARGS postgres
    TIMEOUT 300)
  foreach(store mariadb postgres)
    reign_e2e_sql(fault e2e_sql_group_restart_${store} test_group_faults.py ARGS restart ${store}
      TIMEOUT 300)
  endforeach()
  # TLS to a server of the test's own, the client libraries' password sources, the guardian.
  foreach(store mariadb postgres)
    reign_e2e_sql(fault e2e_sql_tls_${store} test_tls.py ARGS ${store} LABELS guardian)
    if(TARGET reignd)
      set_property(TEST e2e_sql_tls_${store} APPEND PROPERTY ENVIRONMENT REIGND=$<TARGET_FILE:reignd>)
    endif()
  endforeach()
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
  # runs no line of src/ or examples/ that the tests still run there do not run too.
  set_property(TEST
    e2e_designate_faults_mariadb e2e_designate_faults_postgres e2e_designate_faults_sqlite
    e2e_history_mariadb e2e_history_postgres e2e_history_sqlite e2e_run_leash_mariadb
    e2e_run_leash_sqlite e2e_sql_cede_mariadb e2e_sql_cede_postgres e2e_sql_clock_step_postgres
    e2e_sql_clock_step_sqlite e2e_sql_group_kill_stop_mariadb e2e_sql_group_kill_stop_postgres
    e2e_sql_group_kill_stop_sqlite e2e_sql_guardian_stop_kill_mariadb
    e2e_sql_guardian_stop_kill_postgres e2e_sql_guardian_stop_kill_sqlite e2e_sql_kill_mariadb
    e2e_sql_kill_postgres e2e_sql_kill_sqlite e2e_sql_ls_rm_mariadb e2e_sql_ls_rm_postgres
    e2e_sql_one_leader_mariadb e2e_sql_one_leader_postgres e2e_sql_one_leader_sqlite
    e2e_sql_server_restart_mariadb e2e_sql_server_restart_postgres e2e_sql_stop_fence_mariadb
    e2e_sql_stop_fence_postgres e2e_sql_stop_fence_sqlite e2e_sql_watch_mariadb
    APPEND PROPERTY LABELS sanitize_skip)
endif()
