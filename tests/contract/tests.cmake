# Contract tests: what a public header promises on every store, one source per capability
# (contract_<capability>.c), run once per store as contract_<capability>_<store>.
#
# The table below says which stores claim each capability.  Every capability gets an entry for
# every store of REIGN_CONTRACT_STORES: a store that claims it runs the whole contract; one that
# does not runs the program with $REIGN_TEST_GAP set to the reason, and the program proves the
# refusal its header documents (if it can), prints "contract_<capability>: <store>: not
# supported (<reason>)" and exits 77, which ctest reports as Skipped: a gap shows, it never
# passes.  The program learns its store from $REIGN_TEST_STORE and its URI from h_uri()
# (tests/integration/harness.h); the servers are the shared fixtures of
# tests/integration/tests.cmake (ZooKeeper, etcd) and tests/sql/tests.cmake (PostgreSQL, MariaDB).
#
# To add a capability: write contract_<capability>.c (h_contract_init() first), add a line
# below.  To add a store: a name in REIGN_CONTRACT_STORES, a branch in reign_store_test() for
# its fixture, its URI in the harness's h_uri(), and its name in the lines of the capabilities
# it claims.
#
# Labels: contract, plus the fixture helper's (integration, sql).   ctest -L contract

set(REIGN_CONTRACT_STORES zk etcd sqlite postgres mariadb)

# reign_store_test(<store> NAME <name> COMMAND <cmd> [args...] [TIMEOUT s] [LABELS ...]
#                  [ENVIRONMENT ...]): a test on the shared server of <store> (none for
# sqlite), with REIGN_TEST_STORE=<store>.
function(reign_store_test store)
  cmake_parse_arguments(S "" "NAME" "" ${ARGN})
  if(store STREQUAL "zk")
    reign_zk_test(${ARGN})
  elseif(store STREQUAL "etcd")
    reign_etcd_test(${ARGN})
  elseif(store STREQUAL "sqlite")
    reign_sqlite_test(${ARGN})
  elseif(store STREQUAL "postgres")
    reign_pg_test(${ARGN})
  elseif(store STREQUAL "mariadb")
    reign_mariadb_test(${ARGN})
  else()
    message(FATAL_ERROR "reign_store_test: unknown store '${store}'")
  endif()
  set_property(TEST ${S_NAME} APPEND PROPERTY ENVIRONMENT REIGN_TEST_STORE=${store})
endfunction()

# reign_contract(<capability> TITLE <what, for README's table> STORES <stores that claim it...>
#                [GAP <why the others lack it>] [TIMEOUT s])
# One line each: scripts/capabilities.py makes README.md's store x capability table from these
# lines (docs_drift checks that it is current).
function(reign_contract capability)
  cmake_parse_arguments(C "" "TITLE;GAP;TIMEOUT" "STORES" ${ARGN})
  if(NOT C_TITLE)
    message(FATAL_ERROR "reign_contract(${capability}): TITLE says what it is for README's table")
  endif()
  if(NOT C_TIMEOUT)
    set(C_TIMEOUT 300)
  endif()
  set(program contract_${capability})
  add_executable(${program} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${program}.c)
  target_compile_options(${program} PRIVATE ${REIGN_WARNINGS})
  target_link_libraries(${program} PRIVATE reign_it_harness reign)
  foreach(store ${REIGN_CONTRACT_STORES})
    set(name ${program}_${store})
    if(store IN_LIST C_STORES)
      reign_store_test(${store} NAME ${name} COMMAND ${program} TIMEOUT ${C_TIMEOUT}
        LABELS contract)
    else()
      if(NOT C_GAP)
        message(FATAL_ERROR "reign_contract(${capability}): GAP says why ${store} lacks it")
      endif()
      reign_store_test(${store} NAME ${name} COMMAND ${program} TIMEOUT ${C_TIMEOUT}
        LABELS contract)
      set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "REIGN_TEST_GAP=${C_GAP}")
      set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endfunction()

# capability  the stores that claim it
reign_contract(election TITLE "Elections: leader, observers, cede, fencing tokens" STORES zk etcd sqlite postgres mariadb)
reign_contract(value TITLE "Watched values with compare-and-set" STORES zk etcd sqlite postgres mariadb)
reign_contract(group TITLE "Group membership, members watched" STORES zk etcd sqlite postgres mariadb)
reign_contract(designation TITLE "Priorities, preemption, designation" STORES zk etcd sqlite postgres mariadb)
reign_contract(tasks TITLE "Task queue: master, workers, exactly-once results" STORES zk etcd sqlite postgres mariadb)
reign_contract(history TITLE "Leadership history: terms, reasons, gaps" STORES zk etcd sqlite postgres mariadb)
# The history's bound after 10,000 leaderships: the node tree's code on ZooKeeper, the SQL code
# on SQLite and PostgreSQL (etcd and MariaDB run the same code, 200 leaderships); where no
# sanitizer slows the run (about 20 s each).
if(NOT REIGN_SANITIZE AND NOT REIGN_TSAN)
  foreach(store zk sqlite postgres)
    set_property(TEST contract_history_${store} APPEND PROPERTY ENVIRONMENT
      REIGN_TEST_HISTORY_TERMS=10000)
  endforeach()
endif()

# The election, designation and history contracts again on each SQL store with leases=row:
# leases that renew their own rows, as SOFARegistry's do, rather than living in the client's
# session.
foreach(store sqlite postgres mariadb)
  foreach(capability election designation history)
    set(name contract_${capability}_${store}_rows)
    reign_store_test(${store} NAME ${name} COMMAND contract_${capability} TIMEOUT 300
      LABELS contract)
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "REIGN_TEST_URI_EXTRA=leases=row")
  endforeach()
endforeach()
