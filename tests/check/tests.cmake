# `reign check` against every store (tests/check/test_check.py): the whole check passes with
# short timeouts in the URI; with the test hook REIGN_CHECK_TEST_FAULT=claim-without-lease (a
# candidate that says it leads without the lease) it fails with exit 1 and names the overlap;
# --json; SIGINT in the middle; an unreachable store and usage errors.  The shared servers are
# those of the contract tests (reign_store_test, tests/contract/tests.cmake, which must be
# included first).
# Label: check.   ctest -L check

if(TARGET reign_cli AND COMMAND reign_store_test)
  set(_reign_check_py ${CMAKE_CURRENT_LIST_DIR}/test_check.py)
  foreach(store ${REIGN_CONTRACT_STORES})
    reign_store_test(${store} NAME check_pass_${store}
      COMMAND ${REIGN_PYTHON} ${_reign_check_py} ${store} pass TIMEOUT 300 LABELS check)
  endforeach()
  foreach(store zk postgres)
    reign_store_test(${store} NAME check_fault_${store}
      COMMAND ${REIGN_PYTHON} ${_reign_check_py} ${store} fault TIMEOUT 300 LABELS check)
  endforeach()
  reign_store_test(sqlite NAME check_json_sqlite
    COMMAND ${REIGN_PYTHON} ${_reign_check_py} sqlite json TIMEOUT 300 LABELS check)
  reign_store_test(sqlite NAME check_interrupt_sqlite
    COMMAND ${REIGN_PYTHON} ${_reign_check_py} sqlite interrupt TIMEOUT 300 LABELS check)
  reign_store_test(sqlite NAME check_errors
    COMMAND ${REIGN_PYTHON} ${_reign_check_py} sqlite errors TIMEOUT 120 LABELS check)
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  It spends seconds waiting and runs no line of src/ that the
  # tests still run there do not run too.
  set_property(TEST check_pass_sqlite APPEND PROPERTY LABELS sanitize_skip)
endif()
