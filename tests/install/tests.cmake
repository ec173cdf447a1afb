# The installed tree is usable on its own (headers, reign.pc, CMake package).
# Packaging is a property of the plain build: a sanitized library cannot be
# linked by a program built without the sanitizer's flags.
if(NOT REIGN_SANITIZE AND NOT REIGN_TSAN)
  add_test(NAME install_tree COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/install_test.sh
    ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(install_tree PROPERTIES LABELS unit)
endif()
