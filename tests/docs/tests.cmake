# The docs and the shell completion against the tools themselves: each man page's options
# against --help, and the bash completion of reign.  No server.
if(TARGET reign_cli)
  add_test(NAME docs_completion COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/test_completion.py $<TARGET_FILE:reign_cli>
    ${PROJECT_SOURCE_DIR}/contrib/bash-completion/reign)
  set_tests_properties(docs_completion PROPERTIES LABELS "unit;docs" TIMEOUT 120)
endif()
