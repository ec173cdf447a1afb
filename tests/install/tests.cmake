# The installed tree, used as a user would (tests/install/test_install_tree.py): programs,
# systemd unit, reign.pc, the CMake package and the guardian, from a throwaway prefix and again
# after the tree was moved.  Packaging is a property of the plain build: a sanitized library
# cannot be linked by a program built without the sanitizer's flags.
if(NOT REIGN_SANITIZE AND NOT REIGN_TSAN)
  add_test(NAME install_tree COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/test_install_tree.py ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(install_tree PROPERTIES LABELS "unit;install" TIMEOUT 300)
endif()

# The Debian packages (tests/install/test_packages.py): built with scripts/package.sh, lintian,
# installed with apt-get, used, purged.  Root only (skipped otherwise, exit 77, as without
# dpkg-buildpackage); once per suite, in the plain build.  It changes /usr: nothing else that
# installs system packages may run beside it (RESOURCE_LOCK in this suite; between two suites on
# one machine, the script's own flock).
if(NOT REIGN_SANITIZE AND NOT REIGN_TSAN)
  add_test(NAME packages COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/test_packages.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(packages PROPERTIES LABELS package TIMEOUT 600 SKIP_RETURN_CODE 77
    RESOURCE_LOCK system_packages)
endif()
