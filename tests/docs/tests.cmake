# The docs and the shell completion against the tools and the tree: each man page's options
# against --help, README's Layout against the folders, no project bookkeeping in user-facing
# pages, the tests docs/design.md cites for its promises (against this build's `ctest -N`), and
# the bash completion of reign.  No server.  Label sanitize_skip (here and on `monitoring`): the
# sanitizer builds skip what reads only the docs and the tree (scripts/test.sh, CONTRIBUTING.md).
add_test(NAME docs_drift COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_docs.py
  ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${CMAKE_CTEST_COMMAND})
set_tests_properties(docs_drift PROPERTIES LABELS "unit;docs;sanitize_skip" TIMEOUT 60)
if(TARGET reign_cli AND TARGET reignd)
  add_test(NAME docs_man_options COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/test_man_options.py $<TARGET_FILE:reign_cli> $<TARGET_FILE:reignd>
    ${PROJECT_SOURCE_DIR}/man)
  set_tests_properties(docs_man_options PROPERTIES LABELS "unit;docs" TIMEOUT 60)
endif()
if(TARGET reign_cli)
  add_test(NAME docs_completion COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/test_completion.py $<TARGET_FILE:reign_cli>
    ${PROJECT_SOURCE_DIR}/contrib/bash-completion/reign)
  set_tests_properties(docs_completion PROPERTIES LABELS "unit;docs" TIMEOUT 120)
endif()
# The monitoring files of contrib/ (tests/docs/test_monitoring.py): the Prometheus alert rules
# checked and unit-tested by promtool (Debian's prometheus package), the Grafana dashboard's
# JSON and queries, and the metric names in both and in the docs against those reignd exports.
add_test(NAME monitoring COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_LIST_DIR}/test_monitoring.py ${PROJECT_SOURCE_DIR})
set_tests_properties(monitoring PROPERTIES LABELS "unit;docs;monitoring;sanitize_skip"
  TIMEOUT 60)
