# SQL tests: programs that talk to real MariaDB and PostgreSQL servers, or to SQLite files.
#
# Fixtures: one MariaDB and one PostgreSQL server, started by scripts/mariadb.sh and
# scripts/pg.sh before the first test that needs them and stopped after the last (each only if
# some selected test needs it).  Helpers to declare tests:
#
#   reign_mariadb_test(NAME <name> COMMAND <cmd> [args...] [TIMEOUT <s>] [LABELS ...]
#                      [ENVIRONMENT VAR=value ...] [WORKING_DIRECTORY <dir>])
#       a test against the shared MariaDB server, whose state dir is $REIGN_TEST_MARIADB_DIR.
#   reign_pg_test(NAME <name> COMMAND ...)
#       the same against the shared PostgreSQL server: $REIGN_TEST_PG_DIR.
#   reign_sql_test(NAME <name> COMMAND ...)
#       a test against both shared servers (the two variables), e.g. one run per backend.
#   reign_sqlite_test(NAME <name> COMMAND ...)
#       a test that needs no server (SQLite files under $REIGN_TEST_STATE_DIR).
#   reign_sql_fault_test(NAME <name> COMMAND ...)
#       a test that starts its own servers (scripts/mariadb.sh start "$REIGN_TEST_STATE_DIR/m",
#       scripts/pg.sh start "$REIGN_TEST_STATE_DIR/pg") and kills, pauses and restarts them.
#       Never two at once (RESOURCE_LOCK sql_fault).
#
# Tests on the shared servers may create and drop tables in database `reign` (use names of
# their own, e.g. with the test's name in them) but may not stop, pause or restart the servers.
#
# A state dir holds (see the scripts' headers):
#   uri        mysql://reign@127.0.0.1:PORT/reign or postgres://reign@127.0.0.1:PORT/reign
#   password   the password of user `reign` (and of `reign_nogrants`, which may log in but has no
#              rights on database `reign`); pass it as REIGN_PASSWORD or password_file=...
#   port       the TCP port on 127.0.0.1
# and `mariadb.sh sql DIR "SQL"` / `pg.sh sql DIR "SQL"` run SQL as the administrator.
#
# (`reign_mariadb_test(<name> COMMAND ...)` without the NAME keyword works too.)  Every helper
# sets
#   REIGN_SCRIPTS         the scripts/ directory (mariadb.sh, pg.sh, zk.sh)
#   REIGN_TOOLS           tests/tools (also on PYTHONPATH)
#   REIGN_PYTHON          /usr/bin/python3 (Debian's, with Debian's python3-* packages)
#   REIGN_CLI             the reign binary, once it is built
#   REIGN_TCPPROXY        the reign_tcpproxy binary, when tests/integration builds it
#   REIGN_TEST_STATE_DIR  a directory of the test's own under the build tree; stop-all-under
#                         on the build tree stops whatever servers a test left there
#   REIGN_SQL_OWNER_PID   "parent": servers a test starts with mariadb.sh/pg.sh stop by
#                         themselves when the test process dies
# and the label `sql` (plus `fault` for reign_sql_fault_test).

set(REIGN_SQL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(REIGN_SQL_MARIADB_DIR ${CMAKE_BINARY_DIR}/sql-mariadb)
set(REIGN_SQL_PG_DIR ${CMAKE_BINARY_DIR}/sql-pg)
if(EXISTS /usr/bin/python3)
  set(REIGN_SQL_PYTHON /usr/bin/python3)
else()
  set(REIGN_SQL_PYTHON ${Python3_EXECUTABLE})
endif()

set(REIGN_SQL_ENV_COMMON
  REIGN_SCRIPTS=${PROJECT_SOURCE_DIR}/scripts
  REIGN_TOOLS=${PROJECT_SOURCE_DIR}/tests/tools
  PYTHONPATH=${PROJECT_SOURCE_DIR}/tests/tools
  REIGN_PYTHON=${REIGN_SQL_PYTHON}
  REIGN_SQL_OWNER_PID=parent)
if(TARGET reign_cli)
  list(APPEND REIGN_SQL_ENV_COMMON REIGN_CLI=$<TARGET_FILE:reign_cli>)
endif()
if(TARGET reign_tcpproxy)
  list(APPEND REIGN_SQL_ENV_COMMON REIGN_TCPPROXY=$<TARGET_FILE:reign_tcpproxy>)
endif()

# The scripts run as direct children of ctest, so REIGN_SQL_OWNER_PID=parent makes ctest the
# owner: if ctest is killed before the *_down test runs, the server's watchdog stops it.
add_test(NAME mariadb_up
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/mariadb.sh start ${REIGN_SQL_MARIADB_DIR})
set_tests_properties(mariadb_up PROPERTIES
  FIXTURES_SETUP mariadb LABELS sql TIMEOUT 120 ENVIRONMENT REIGN_SQL_OWNER_PID=parent)
add_test(NAME mariadb_down
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/mariadb.sh stop ${REIGN_SQL_MARIADB_DIR})
set_tests_properties(mariadb_down PROPERTIES FIXTURES_CLEANUP mariadb LABELS sql TIMEOUT 60)

add_test(NAME pg_up COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/pg.sh start ${REIGN_SQL_PG_DIR})
set_tests_properties(pg_up PROPERTIES
  FIXTURES_SETUP pg LABELS sql TIMEOUT 120 ENVIRONMENT REIGN_SQL_OWNER_PID=parent)
add_test(NAME pg_down COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/pg.sh stop ${REIGN_SQL_PG_DIR})
set_tests_properties(pg_down PROPERTIES FIXTURES_CLEANUP pg LABELS sql TIMEOUT 60)

# _reign_sql_test_args(<args...>): NAME and COMMAND plus options into ARG_*, NAME keyword
# optional.
macro(_reign_sql_test_args)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;WORKING_DIRECTORY"
    "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_NAME)
    list(POP_FRONT ARG_UNPARSED_ARGUMENTS ARG_NAME)
  endif()
  if(NOT ARG_NAME OR NOT ARG_COMMAND OR ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "usage: reign_*_test(NAME <name> COMMAND <cmd>...) (got: ${ARGN})")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_WORKING_DIRECTORY)
    set(ARG_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
endmacro()

# _reign_sql_add_test(<fixtures> <labels>): add the test parsed into ARG_* (the caller's),
# requiring the given fixtures (a ;-list of mariadb, pg) with the variables naming their state
# dirs.
function(_reign_sql_add_test fixtures labels)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_COMMAND} WORKING_DIRECTORY ${ARG_WORKING_DIRECTORY})
  set(env ${REIGN_SQL_ENV_COMMON}
    REIGN_TEST_STATE_DIR=${CMAKE_BINARY_DIR}/test-state/${ARG_NAME})
  if("mariadb" IN_LIST fixtures)
    list(APPEND env REIGN_TEST_MARIADB_DIR=${REIGN_SQL_MARIADB_DIR})
  endif()
  if("pg" IN_LIST fixtures)
    list(APPEND env REIGN_TEST_PG_DIR=${REIGN_SQL_PG_DIR})
  endif()
  list(APPEND env ${ARG_ENVIRONMENT})
  list(APPEND labels ${ARG_LABELS})
  set_tests_properties(${ARG_NAME} PROPERTIES
    LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${env}")
  if(fixtures)
    set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED "${fixtures}")
  endif()
endfunction()

function(reign_mariadb_test)
  _reign_sql_test_args(${ARGN})
  _reign_sql_add_test("mariadb" "sql")
endfunction()

function(reign_pg_test)
  _reign_sql_test_args(${ARGN})
  _reign_sql_add_test("pg" "sql")
endfunction()

function(reign_sql_test)
  _reign_sql_test_args(${ARGN})
  _reign_sql_add_test("mariadb;pg" "sql")
endfunction()

function(reign_sqlite_test)
  _reign_sql_test_args(${ARGN})
  _reign_sql_add_test("" "sql")
endfunction()

function(reign_sql_fault_test)
  _reign_sql_test_args(${ARGN})
  _reign_sql_add_test("" "sql;fault")
  set_tests_properties(${ARG_NAME} PROPERTIES RESOURCE_LOCK sql_fault)
endfunction()

# The scripts test themselves: servers of their own, restarted, killed, paused, stopped.  Label
# sanitize_skip, here and on the fixtures' check: they run none of the library's code, so the
# sanitizer builds skip them (scripts/test.sh, CONTRIBUTING.md).
add_test(NAME tools_sql_servers
  COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SQL_DIR}/test_sql_servers.py)
# Not at the same time as the fault tests: it kills and pauses servers too, and loads the machine.
set(_reign_sql_selftest_env REIGN_SCRIPTS=${PROJECT_SOURCE_DIR}/scripts
  REIGN_TEST_STATE_DIR=${CMAKE_BINARY_DIR}/test-state/tools_sql_servers)
set_tests_properties(tools_sql_servers PROPERTIES
  LABELS "sql;tools;sanitize_skip" TIMEOUT 300 RESOURCE_LOCK sql_fault
  ENVIRONMENT "${_reign_sql_selftest_env}")

# The shared servers answer as the scripts promise (user reign by password over TCP, the
# no-grants user refused): a failure here points at the fixture, not at the code under test.
reign_sql_test(NAME tools_sql_fixtures
  COMMAND ${REIGN_SQL_PYTHON} ${REIGN_SQL_DIR}/test_sql_servers.py --fixtures
  TIMEOUT 120 LABELS tools sanitize_skip)

# SQL backend tests below

# ---- the lease layer (src/sql/sql.h) ---------------------------------------------------------
# Until src/CMakeLists.txt builds src/sql into libreign, the layer is built here as a static
# library of its own on top of reign_internal (for the core helpers).  Once libreign has it,
# the tests link reign_internal alone.
if(NOT TARGET PkgConfig::REIGN_SQL_CLIENTS)
  pkg_check_modules(REIGN_SQL_CLIENTS REQUIRED IMPORTED_TARGET sqlite3 libmariadb libpq)
endif()
get_target_property(_reign_sql_obj_sources reign_obj SOURCES)
list(FILTER _reign_sql_obj_sources INCLUDE REGEX "(^|/)sql/sql\\.c$")
if(_reign_sql_obj_sources)
  set(REIGN_SQL_LAYER reign_internal)
else()
  add_library(reign_sql_layer STATIC
    ${PROJECT_SOURCE_DIR}/src/sql/sql.c
    ${PROJECT_SOURCE_DIR}/src/sql/sqlite.c
    ${PROJECT_SOURCE_DIR}/src/sql/mariadb.c
    ${PROJECT_SOURCE_DIR}/src/sql/mariadb_wake.c
    ${PROJECT_SOURCE_DIR}/src/sql/postgres.c
    ${PROJECT_SOURCE_DIR}/src/sql/postgres_text.c)
  target_include_directories(reign_sql_layer PUBLIC ${PROJECT_SOURCE_DIR}/include
    ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core ${PROJECT_SOURCE_DIR}/src/sql)
  target_compile_options(reign_sql_layer PRIVATE ${REIGN_WARNINGS})
  target_link_libraries(reign_sql_layer PUBLIC reign_internal PkgConfig::REIGN_SQL_CLIENTS)
  set(REIGN_SQL_LAYER reign_sql_layer)
endif()

add_executable(test_sql_lease ${REIGN_SQL_DIR}/test_sql_lease.c)
target_compile_options(test_sql_lease PRIVATE ${REIGN_WARNINGS})
target_include_directories(test_sql_lease PRIVATE ${PROJECT_SOURCE_DIR}/src/sql)
target_link_libraries(test_sql_lease PRIVATE ${REIGN_SQL_LAYER} PkgConfig::REIGN_SQL_CLIENTS)

# One entry per backend; the statements, schema checks, connect errors and notification.
reign_sqlite_test(NAME sql_lease_sqlite COMMAND test_sql_lease sqlite TIMEOUT 300)
reign_mariadb_test(NAME sql_lease_mariadb COMMAND test_sql_lease mariadb TIMEOUT 300)
reign_pg_test(NAME sql_lease_postgres COMMAND test_sql_lease postgres TIMEOUT 300)
# Twenty processes on one SQLite file: never "database is locked", never a term held twice.
reign_sqlite_test(NAME sql_lease_sqlite_concurrency COMMAND test_sql_lease sqlite-concurrency
  TIMEOUT 300)
# Servers of their own, restarted, paused and killed under a connection.
reign_sql_fault_test(NAME sql_lease_fault_mariadb COMMAND test_sql_lease fault-mariadb
  TIMEOUT 600)
reign_sql_fault_test(NAME sql_lease_fault_postgres COMMAND test_sql_lease fault-postgres
  TIMEOUT 600)

# ---- the client libraries load with the first client of their store (src/sql/dl.h) ----------
# Linked to the shared libreign alone, so that what /proc/self/maps shows is libreign's doing.
add_executable(test_sql_dl ${REIGN_SQL_DIR}/test_sql_dl.c)
target_compile_options(test_sql_dl PRIVATE ${REIGN_WARNINGS})
target_link_libraries(test_sql_dl PRIVATE reign)
# A zk:// client maps no SQL library; each SQL store's client maps its own.
reign_sqlite_test(NAME sql_dl_maps COMMAND test_sql_dl maps TIMEOUT 120)
# A missing library (dl.h's test hook: REIGN_TEST_LIBPQ names no file, REIGN_TEST_LIBMARIADB a
# library without MariaDB's functions) is reign_client_new()'s error, naming the package.
reign_sqlite_test(NAME sql_dl_missing COMMAND test_sql_dl missing TIMEOUT 120
  ENVIRONMENT REIGN_TEST_LIBPQ=/nonexistent/libpq.so.5 REIGN_TEST_LIBMARIADB=libc.so.6)

# ---- values (<reign/value.h>) and listed candidates on the SQL stores ---------------------------
# (src/sql/values.h, candidates.h; src/recipes/value/, election_lease.c.)  Through the public API,
# on each store, one scenario per entry (see test_sql_recipes.c); sql_tasks_*,
# sql_group_foreign_* (rows of the members table reign did not write: src/sql/members.h) and
# sql_history_* (the election history's foreign rows and table, reign rm: src/sql/history.h) too.
add_executable(test_sql_recipes ${REIGN_SQL_DIR}/test_sql_recipes.c ${REIGN_SQL_DIR}/sql_tasks.c
  ${REIGN_SQL_DIR}/sql_groups.c ${REIGN_SQL_DIR}/sql_history.c)
target_compile_options(test_sql_recipes PRIVATE ${REIGN_WARNINGS})
# The C harness (tests/integration/harness.c) for the clients and their loop; libreign's
# objects for the statements behind its back (src/sql/sql.h) and the URI's reading
# (src/client/config.h).
target_link_libraries(test_sql_recipes PRIVATE reign_it_harness reign_internal)
foreach(scenario ops foreign watch candidates tasks tasks_api group_foreign history)
  if(scenario STREQUAL "candidates" OR scenario MATCHES "^(tasks|group|history)")
    set(_prefix sql_${scenario})
    set(_suffix "")
  else()
    set(_prefix sql_values)
    set(_suffix _${scenario})
  endif()
  reign_sqlite_test(NAME ${_prefix}_sqlite${_suffix}
    COMMAND test_sql_recipes ${scenario} TIMEOUT 300 ENVIRONMENT REIGN_TEST_STORE=sqlite)
  reign_mariadb_test(NAME ${_prefix}_mariadb${_suffix}
    COMMAND test_sql_recipes ${scenario} TIMEOUT 300 ENVIRONMENT REIGN_TEST_STORE=mariadb)
  reign_pg_test(NAME ${_prefix}_postgres${_suffix}
    COMMAND test_sql_recipes ${scenario} TIMEOUT 300 ENVIRONMENT REIGN_TEST_STORE=postgres)
endforeach()
