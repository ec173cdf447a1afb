# reignd's tests: included from tests/CMakeLists.txt.  Unit tests are
# cmocka programs linking reignd_core, one ctest entry each, labelled
# "reignd".  Each module's owner appends its own entries at the end.
set(REIGND_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})

# reignd_unit_test(NAME [ENV VAR=VALUE...]): tests/reignd/NAME.c as a
# cmocka program and the ctest entry reignd_NAME.
function(reignd_unit_test name)
  cmake_parse_arguments(ARG "" "" "ENV" ${ARGN})
  add_executable(${name} ${REIGND_TESTS_DIR}/${name}.c)
  target_compile_options(${name} PRIVATE ${REIGN_WARNINGS})
  target_link_libraries(${name} PRIVATE reignd_core ${CMOCKA_LIBRARY})
  add_test(NAME reignd_${name} COMMAND ${name})
  set_tests_properties(reignd_${name} PROPERTIES LABELS "reignd;unit" TIMEOUT 120)
  if(ARG_ENV)
    set_tests_properties(reignd_${name} PROPERTIES ENVIRONMENT "${ARG_ENV}")
  endif()
endfunction()

# --- R1: config, health, hooks ---

# --- R2: fsm, breadcrumb, fence, service, main ---
reignd_unit_test(test_fsm)
reignd_unit_test(test_breadcrumb)
