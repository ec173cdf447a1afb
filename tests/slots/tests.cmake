# The slot checker (tests/slots/test_slots.py): `reign run --slot` on every store, N copies for
# M consecutive slots with faults, proved from what the job saw and what the record says.
# Included from tests/CMakeLists.txt after the ZooKeeper and SQL helpers it registers with.

set(REIGN_SLOTS_DIR ${CMAKE_CURRENT_LIST_DIR})

if(TARGET reign_cli AND COMMAND reign_sql_fault_test)
  foreach(scenario basic kill stop options)
    reign_zk_test(NAME slots_zk_${scenario}
      COMMAND ${REIGN_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py zk ${scenario}
      TIMEOUT 300 LABELS e2e slots)
    reign_sqlite_test(NAME slots_sqlite_${scenario}
      COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py sqlite ${scenario}
      TIMEOUT 300 LABELS e2e slots)
    reign_pg_test(NAME slots_postgres_${scenario}
      COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py postgres ${scenario}
      TIMEOUT 300 LABELS e2e slots)
    reign_mariadb_test(NAME slots_mariadb_${scenario}
      COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py mariadb ${scenario}
      TIMEOUT 300 LABELS e2e slots)
  endforeach()
  reign_fault_test(NAME slots_zk_restart
    COMMAND ${REIGN_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py zk restart
    TIMEOUT 300 LABELS e2e slots)
  foreach(store postgres mariadb)
    reign_sql_fault_test(NAME slots_${store}_restart
      COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SLOTS_DIR}/test_slots.py ${store} restart
      TIMEOUT 300 LABELS e2e slots)
  endforeach()
  reign_sqlite_test(NAME slots_bad_input
    COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SLOTS_DIR}/test_bad_input.py
    TIMEOUT 120 LABELS e2e slots)
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
  # runs no line of src/ or examples/ that the tests still run there do not run too.
  set_property(TEST
    slots_mariadb_options slots_mariadb_stop slots_postgres_basic slots_postgres_kill
    slots_postgres_options slots_postgres_restart slots_sqlite_basic slots_sqlite_options
    slots_sqlite_stop slots_zk_basic slots_zk_restart slots_zk_stop
    APPEND PROPERTY LABELS sanitize_skip)
endif()
