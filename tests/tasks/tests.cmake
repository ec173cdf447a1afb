# The task queue: end-to-end scenarios driving `reign tasks` (test_tasks.py) and C
# integration tests that inject a lost reply into a submit (it_tasks_submit_connloss.c) and
# into a move (it_tasks_move_connloss.c), through tests/integration/zk_fault.c.
# Registered with the helpers of tests/integration/tests.cmake.

set(REIGN_TASKS_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

if(TARGET reign_cli)
  foreach(scenario basic kill_worker kill_master stop_worker submit_cutoff)
    reign_zk_test(NAME tasks_${scenario}
      COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py ${scenario}
      TIMEOUT 300 LABELS e2e tasks)
  endforeach()
  reign_zk_test(NAME tasks_kill_worker_guardian
    COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py kill_worker_guardian
    TIMEOUT 120 LABELS e2e tasks guardian)
  # The same submits through a resetting proxy, to the shared SQL servers (tests/sql/tests.cmake).
  if(COMMAND reign_mariadb_test)
    reign_mariadb_test(NAME tasks_submit_cutoff_mariadb
      COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py submit_cutoff mariadb
      TIMEOUT 300 LABELS e2e tasks)
    reign_pg_test(NAME tasks_submit_cutoff_postgres
      COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py submit_cutoff postgres
      TIMEOUT 300 LABELS e2e tasks)
    # A worker stopped while its task's command runs: the leash kills the command before the
    # master can move the task (not on SQLite: see test_tasks.py's ON_SQL).
    reign_mariadb_test(NAME tasks_stop_worker_mariadb
      COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py stop_worker mariadb
      TIMEOUT 300 LABELS e2e tasks fault)
    reign_pg_test(NAME tasks_stop_worker_postgres
      COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py stop_worker postgres
      TIMEOUT 300 LABELS e2e tasks fault)
    # Masters and workers on each SQL store, through SIGKILLs and SIGSTOPs.
    foreach(scenario faults)
      reign_sqlite_test(NAME tasks_${scenario}_sqlite
        COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py ${scenario} sqlite
        TIMEOUT 300 LABELS e2e tasks)
      reign_mariadb_test(NAME tasks_${scenario}_mariadb
        COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py ${scenario} mariadb
        TIMEOUT 300 LABELS e2e tasks)
      reign_pg_test(NAME tasks_${scenario}_postgres
        COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py ${scenario} postgres
        TIMEOUT 300 LABELS e2e tasks)
    endforeach()
    # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
    # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
    # runs no line of src/ or examples/ that the tests still run there do not run too.
    set_property(TEST tasks_submit_cutoff_postgres tasks_stop_worker_postgres tasks_faults_mariadb
      tasks_faults_postgres APPEND PROPERTY LABELS sanitize_skip)
  endif()
  reign_fault_test(NAME tasks_zk_restart
    COMMAND ${REIGN_PYTHON} ${REIGN_TASKS_TEST_DIR}/test_tasks.py zk_restart
    TIMEOUT 300 LABELS e2e tasks)
endif()

# A submit whose create is applied but whose reply is lost, and one whose create never reaches
# the server: a submit is one multi, into which zk_fault.c injects the fault.
add_executable(it_tasks_submit_connloss ${REIGN_TASKS_TEST_DIR}/it_tasks_submit_connloss.c
  ${REIGN_ZK_FAULT_SOURCE})
target_compile_options(it_tasks_submit_connloss PRIVATE ${REIGN_WARNINGS})
target_link_libraries(it_tasks_submit_connloss PRIVATE reign_it_harness reign_internal)
target_link_options(it_tasks_submit_connloss PRIVATE ${REIGN_ZK_FAULT_WRAP})
foreach(scenario lost-reply failed)
  reign_zk_test(NAME tasks_submit_connloss_${scenario}
    COMMAND it_tasks_submit_connloss ${scenario} TIMEOUT 120 LABELS tasks)
endforeach()

# A move (the master's assignment, the worker's result: one multi each) whose multi is applied
# but whose reply is lost, one never sent and one whose reply is held back (zk_fault.c).
add_executable(it_tasks_move_connloss ${REIGN_TASKS_TEST_DIR}/it_tasks_move_connloss.c
  ${REIGN_ZK_FAULT_SOURCE})
target_compile_options(it_tasks_move_connloss PRIVATE ${REIGN_WARNINGS})
target_link_libraries(it_tasks_move_connloss PRIVATE reign_it_harness reign_internal)
target_link_options(it_tasks_move_connloss PRIVATE ${REIGN_ZK_FAULT_WRAP})
foreach(scenario assign-lost assign-failed done-lost done-failed done-held)
  reign_zk_test(NAME tasks_move_connloss_${scenario}
    COMMAND it_tasks_move_connloss ${scenario} TIMEOUT 120 LABELS tasks)
endforeach()

# The pure parts (names, paths, records, the task map), without a server.
add_executable(test_tasks_unit ${REIGN_TASKS_TEST_DIR}/test_tasks_unit.c)
target_compile_options(test_tasks_unit PRIVATE ${REIGN_WARNINGS})
target_link_libraries(test_tasks_unit PRIVATE reign_internal ${CMOCKA_LIBRARY})
add_test(NAME unit_test_tasks_unit COMMAND test_tasks_unit)
set_tests_properties(unit_test_tasks_unit PROPERTIES LABELS "unit;tasks")

# The queue through the library alone, in one process: two masters (the leader freed midway),
# two workers, a submitter (so that the sanitizer builds run the recipe's code).
add_executable(it_tasks_queue ${REIGN_TASKS_TEST_DIR}/it_tasks_queue.c)
target_compile_options(it_tasks_queue PRIVATE ${REIGN_WARNINGS})
target_link_libraries(it_tasks_queue PRIVATE reign_it_harness reign)
reign_zk_test(NAME tasks_queue_library COMMAND it_tasks_queue TIMEOUT 180 LABELS tasks)

# A worker's prefetch and read-ahead through the library alone: workers that hold their tasks,
# so that what the master gives (at most the prefetch) and what runs (at most the concurrency)
# can be checked while nothing moves, then every task finished once.
add_executable(it_tasks_prefetch ${REIGN_TASKS_TEST_DIR}/it_tasks_prefetch.c)
target_compile_options(it_tasks_prefetch PRIVATE ${REIGN_WARNINGS})
target_link_libraries(it_tasks_prefetch PRIVATE reign_it_harness reign)
foreach(scenario one-worker two-workers moved-away)
  reign_zk_test(NAME tasks_prefetch_${scenario}
    COMMAND it_tasks_prefetch ${scenario} TIMEOUT 180 LABELS tasks)
endforeach()

# Waiting for results by payload bucket (data/<tag>, one child watch per client and bucket):
# a burst of waits, waits from another client, the bucket deleted once empty (as the server's
# container reaper does), the waiter's session expired with waits in flight (expire.c), and a
# bucket that refuses to be listed (the waits read their results instead).
# Linked with -Wl,--wrap=zoo_awget_children2 to see which bucket listings set a watch.
add_executable(it_tasks_bucket ${REIGN_TASKS_TEST_DIR}/it_tasks_bucket.c
  ${PROJECT_SOURCE_DIR}/tests/integration/expire.c)
target_compile_options(it_tasks_bucket PRIVATE ${REIGN_WARNINGS})
target_link_libraries(it_tasks_bucket PRIVATE reign_it_harness reign_internal)
target_link_options(it_tasks_bucket PRIVATE ${REIGN_EXPIRE_WRAP} -Wl,--wrap=zoo_awget_children2)
foreach(scenario burst other-client reaped expire refused)
  reign_zk_test(NAME tasks_bucket_${scenario} COMMAND it_tasks_bucket ${scenario} TIMEOUT 120
    ENVIRONMENT ${REIGN_EXPIRE_ENV} LABELS tasks)
endforeach()
