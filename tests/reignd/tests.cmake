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
reignd_unit_test(test_config)
target_compile_definitions(test_config PRIVATE
  REIGND_EXAMPLE_CONF="${PROJECT_SOURCE_DIR}/examples/reignd/reign.conf"
  REIGND_MAN_PAGE="${PROJECT_SOURCE_DIR}/man/reign.conf.5")
reignd_unit_test(test_hooks)
reignd_unit_test(test_health)
# The config parser's fuzz target (as tests/fuzz/ does it): its corpus
# replayed by tests/fuzz/replay.c in every build; with -DREIGN_FUZZ=ON and
# clang also a libFuzzer program, fuzz_config, with config.c instrumented:
#   mkdir -p /tmp/c && build/tests/fuzz_config -max_total_time=120 \
#       -dict=tests/reignd/config.dict \
#       /tmp/c tests/reignd/corpus/config
add_executable(fuzz_config_replay ${REIGND_TESTS_DIR}/fuzz_config.c
  ${PROJECT_SOURCE_DIR}/tests/fuzz/replay.c)
target_include_directories(fuzz_config_replay PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz)
target_compile_options(fuzz_config_replay PRIVATE ${REIGN_WARNINGS})
target_link_libraries(fuzz_config_replay PRIVATE reignd_core)
add_test(NAME fuzz_config_replay COMMAND fuzz_config_replay ${REIGND_TESTS_DIR}/corpus/config)
set_tests_properties(fuzz_config_replay PROPERTIES LABELS "fuzz;reignd")
if(REIGN_FUZZ)
  add_executable(fuzz_config ${REIGND_TESTS_DIR}/fuzz_config.c
    ${PROJECT_SOURCE_DIR}/src/reignd/config.c)
  target_include_directories(fuzz_config PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz
    ${PROJECT_SOURCE_DIR}/src/reignd ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(fuzz_config PRIVATE ${REIGN_WARNINGS} ${REIGN_FUZZ_FLAGS})
  target_link_options(fuzz_config PRIVATE ${REIGN_FUZZ_FLAGS})
  pkg_check_modules(REIGND_FUZZ_INIH REQUIRED IMPORTED_TARGET inih)
  target_link_libraries(fuzz_config PRIVATE PkgConfig::REIGND_FUZZ_INIH)
  add_test(NAME fuzz_config_libfuzzer
    COMMAND fuzz_config -runs=0 ${REIGND_TESTS_DIR}/corpus/config)
  set_tests_properties(fuzz_config_libfuzzer PROPERTIES LABELS "fuzz;reignd")
endif()

# --- R2: fsm, breadcrumb, fence, service, main ---
reignd_unit_test(test_fsm)
reignd_unit_test(test_breadcrumb)
reignd_unit_test(test_fence)
# No circle between reignd's headers, nor between the files of reignd_core: the service's
# files are layers, each calling only those below it (service_internal.h says which).
add_test(NAME reignd_no_cycles
  COMMAND ${REIGN_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/check_cycles.py
  ${PROJECT_SOURCE_DIR}/src/reignd $<TARGET_FILE:reignd_core>)
# (Label sanitize_skip: it runs none of reignd's code; scripts/test.sh, CONTRIBUTING.md.)
set_tests_properties(reignd_no_cycles PROPERTIES LABELS "reignd;tools;sanitize_skip" TIMEOUT 60)
# End to end: two or three reignd with dummy services on the shared ZooKeeper server, one
# entry per scenario of test_reignd_e2e.py.
if(TARGET reignd AND TARGET reign_it_zkraw AND COMMAND reign_zk_test)
  foreach(scenario health kill fence_fail failover cede neutral credentials two_services active_fails config
                   ensemble peer_auth check bad_password signals logs restart same_id
                   failover_wait pause pause_stop)
    reign_zk_test(NAME reignd_e2e_${scenario}
      COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py ${scenario}
      TIMEOUT 180 LABELS reignd e2e
      ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  endforeach()
  # The same on etcd, whose elections are ZooKeeper's kept in keys (docs/etcd.md).
  if(COMMAND reign_etcd_test)
    foreach(scenario health kill kill_guardian fence_fail failover cede two_services active_fails
                     pause pause_stop same_id failover_wait restart)
      reign_etcd_test(NAME reignd_e2e_etcd_${scenario}
        COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py ${scenario} etcd
        TIMEOUT 180 LABELS reignd e2e
        ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
    endforeach()
  endif()
  # The same on the SQL stores (the breadcrumb, the pause and the candidates in tables beside
  # the lease table), one entry per scenario and store.
  if(COMMAND reign_pg_test)
    foreach(scenario health kill fence_fail failover cede two_services active_fails pause
                     pause_stop same_id failover_wait restart)
      foreach(store sqlite mariadb pg)
        set(_arg ${store})
        if(store STREQUAL "pg")
          set(_arg postgres)
        endif()
        cmake_language(CALL reign_${store}_test NAME reignd_e2e_${_arg}_${scenario}
          COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py ${scenario} ${_arg}
          TIMEOUT 180 LABELS reignd e2e
          ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
      endforeach()
    endforeach()
    reign_mariadb_test(NAME reignd_e2e_mariadb_bad_password
      COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py bad_password mariadb
      TIMEOUT 180 LABELS reignd e2e
      ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
    reign_pg_test(NAME reignd_e2e_postgres_bad_password
      COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py bad_password postgres
      TIMEOUT 180 LABELS reignd e2e
      ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  endif()
  # The killed reignd's guardian closes its session (the standby need not wait for it).
  reign_zk_test(NAME reignd_e2e_kill_guardian
    COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_reignd_e2e.py kill_guardian
    TIMEOUT 120 LABELS reignd e2e guardian
    ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  # Label sanitize_skip: not run by the sanitizer builds (scripts/test.sh; CONTRIBUTING.md
  # says how they were chosen).  Each spends seconds waiting on servers or timeouts and
  # runs no line of src/ or examples/ that the tests still run there do not run too.
  set_property(TEST reignd_e2e_ensemble reignd_e2e_failover_wait reignd_e2e_fence_fail
    reignd_e2e_restart APPEND PROPERTY LABELS sanitize_skip)
  if(COMMAND reign_etcd_test)
    set_property(TEST reignd_e2e_etcd_active_fails reignd_e2e_etcd_failover_wait
      reignd_e2e_etcd_fence_fail reignd_e2e_etcd_restart reignd_e2e_etcd_same_id
      APPEND PROPERTY LABELS sanitize_skip)
  endif()
  if(COMMAND reign_pg_test)
    foreach(store mariadb postgres sqlite)
      set_property(TEST reignd_e2e_${store}_active_fails reignd_e2e_${store}_fence_fail
        reignd_e2e_${store}_restart reignd_e2e_${store}_same_id
        APPEND PROPERTY LABELS sanitize_skip)
    endforeach()
    set_property(TEST reignd_e2e_mariadb_failover_wait reignd_e2e_postgres_failover_wait
      APPEND PROPERTY LABELS sanitize_skip)
  endif()
endif()

# --- R3: control socket, peer endpoint, metrics, sd_notify, reign ctl ---
# fake_ops.c: a recording reignd_ops table shared by the tests below; net_client.c:
# a blocking client on a thread while the test's loop serves it.
add_library(reignd_fake_ops STATIC ${REIGND_TESTS_DIR}/fake_ops.c ${REIGND_TESTS_DIR}/net_client.c)
target_compile_options(reignd_fake_ops PRIVATE ${REIGN_WARNINGS})
target_link_libraries(reignd_fake_ops PUBLIC reignd_core Threads::Threads)
foreach(name test_control test_peer test_metrics)
  reignd_unit_test(${name})
  target_link_libraries(${name} PRIVATE reignd_fake_ops)
endforeach()
reignd_unit_test(test_sdnotify)
# The control socket's request parser (fuzz_control.c), as fuzz_config above:
#   mkdir -p /tmp/c && build/tests/fuzz_control -max_total_time=120 \
#       /tmp/c tests/reignd/corpus/control
add_executable(fuzz_control_replay ${REIGND_TESTS_DIR}/fuzz_control.c
  ${PROJECT_SOURCE_DIR}/tests/fuzz/replay.c)
target_include_directories(fuzz_control_replay PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz)
target_compile_options(fuzz_control_replay PRIVATE ${REIGN_WARNINGS})
target_link_libraries(fuzz_control_replay PRIVATE reignd_core)
add_test(NAME fuzz_control_replay COMMAND fuzz_control_replay ${REIGND_TESTS_DIR}/corpus/control)
set_tests_properties(fuzz_control_replay PROPERTIES LABELS "fuzz;reignd")
if(REIGN_FUZZ)
  add_executable(fuzz_control ${REIGND_TESTS_DIR}/fuzz_control.c
    ${PROJECT_SOURCE_DIR}/src/reignd/control.c ${PROJECT_SOURCE_DIR}/src/reignd/call.c)
  target_include_directories(fuzz_control PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz
    ${PROJECT_SOURCE_DIR}/src/reignd)
  target_compile_options(fuzz_control PRIVATE ${REIGN_WARNINGS} ${REIGN_FUZZ_FLAGS})
  target_link_options(fuzz_control PRIVATE ${REIGN_FUZZ_FLAGS})
  target_link_libraries(fuzz_control PRIVATE reign PkgConfig::LIBUV PkgConfig::CJSON)
  add_test(NAME fuzz_control_libfuzzer
    COMMAND fuzz_control -runs=0 ${REIGND_TESTS_DIR}/corpus/control)
  set_tests_properties(fuzz_control_libfuzzer PROPERTIES LABELS "fuzz;reignd")
endif()
# The peer endpoint's signature header and what follows it (fuzz_peer_auth.c), as above:
#   mkdir -p /tmp/c && build/tests/fuzz_peer_auth -max_total_time=120 \
#       /tmp/c tests/reignd/corpus/peer_auth
add_executable(fuzz_peer_auth_replay ${REIGND_TESTS_DIR}/fuzz_peer_auth.c
  ${PROJECT_SOURCE_DIR}/tests/fuzz/replay.c)
target_include_directories(fuzz_peer_auth_replay PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz)
target_compile_options(fuzz_peer_auth_replay PRIVATE ${REIGN_WARNINGS})
target_link_libraries(fuzz_peer_auth_replay PRIVATE reignd_core)
add_test(NAME fuzz_peer_auth_replay
  COMMAND fuzz_peer_auth_replay ${REIGND_TESTS_DIR}/corpus/peer_auth)
set_tests_properties(fuzz_peer_auth_replay PROPERTIES LABELS "fuzz;reignd")
if(REIGN_FUZZ)
  add_executable(fuzz_peer_auth ${REIGND_TESTS_DIR}/fuzz_peer_auth.c
    ${PROJECT_SOURCE_DIR}/src/reignd/peer_auth.c)
  target_include_directories(fuzz_peer_auth PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz
    ${PROJECT_SOURCE_DIR}/src/reignd)
  target_compile_options(fuzz_peer_auth PRIVATE ${REIGN_WARNINGS} ${REIGN_FUZZ_FLAGS})
  target_link_options(fuzz_peer_auth PRIVATE ${REIGN_FUZZ_FLAGS})
  pkg_check_modules(REIGND_FUZZ_NETTLE REQUIRED IMPORTED_TARGET nettle)
  target_link_libraries(fuzz_peer_auth PRIVATE reign PkgConfig::LIBUV PkgConfig::CJSON
    PkgConfig::REIGND_FUZZ_NETTLE)
  add_test(NAME fuzz_peer_auth_libfuzzer
    COMMAND fuzz_peer_auth -runs=0 ${REIGND_TESTS_DIR}/corpus/peer_auth)
  set_tests_properties(fuzz_peer_auth_libfuzzer PROPERTIES LABELS "fuzz;reignd")
endif()
# reign ctl end to end against control.c with the fake operations (ctl_server.c).
add_executable(reignd_ctl_server ${REIGND_TESTS_DIR}/ctl_server.c)
target_compile_options(reignd_ctl_server PRIVATE ${REIGN_WARNINGS})
target_link_libraries(reignd_ctl_server PRIVATE reignd_fake_ops)
add_test(NAME reignd_ctl_e2e COMMAND ${Python3_EXECUTABLE} ${REIGND_TESTS_DIR}/test_ctl.py)
set_tests_properties(reignd_ctl_e2e PROPERTIES LABELS "reignd;e2e" TIMEOUT 120
  ENVIRONMENT "REIGN=$<TARGET_FILE:reign_cli>;CTL_SERVER=$<TARGET_FILE:reignd_ctl_server>")

# --- the status page (page.c) and the timeline it shares with `reign history --svg` ---
# page_render.c runs the drawer and the page's renderer on JSON; test_page_render.py checks the
# XML, the bars and gaps, and that ids which look like markup stay text.
add_executable(page_render ${REIGND_TESTS_DIR}/page_render.c)
target_include_directories(page_render PRIVATE ${PROJECT_SOURCE_DIR}/src/common)
target_compile_options(page_render PRIVATE ${REIGN_WARNINGS})
target_link_libraries(page_render PRIVATE reignd_core)
add_test(NAME reignd_page_render COMMAND ${Python3_EXECUTABLE}
  ${REIGND_TESTS_DIR}/test_page_render.py $<TARGET_FILE:page_render>)
set_tests_properties(reignd_page_render PROPERTIES LABELS "reignd;unit;page" TIMEOUT 60)
# The page end to end: three reignd on the shared ZooKeeper server (and on etcd), the page read
# by headless Chromium (scripts/deps.sh) before and after a failover and a killed active, and
# `reign history --svg`.  Label sanitize_skip on the first two: seconds of Chromium and of
# failovers, and no line of src/ that the SQLite one and the others do not run too, so the
# sanitizer builds skip them (scripts/test.sh, CONTRIBUTING.md).
if(TARGET reignd AND TARGET reign_it_zkraw AND COMMAND reign_zk_test)
  reign_zk_test(NAME reignd_status_page
    COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_status_page.py
    TIMEOUT 300 LABELS reignd e2e page sanitize_skip
    ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  if(COMMAND reign_etcd_test)
    reign_etcd_test(NAME reignd_status_page_etcd
      COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_status_page.py etcd
      TIMEOUT 300 LABELS reignd e2e page sanitize_skip
      ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  endif()
  # On a SQLite file: the page as a SQL store gives it (a store without history says so).
  if(COMMAND reign_sqlite_test)
    reign_sqlite_test(NAME reignd_status_page_sqlite
      COMMAND ${REIGN_PYTHON} ${REIGND_TESTS_DIR}/test_status_page.py sqlite
      TIMEOUT 300 LABELS reignd e2e page
      ENVIRONMENT REIGND=$<TARGET_FILE:reignd> REIGN_ZKRAW=$<TARGET_FILE:reign_it_zkraw>)
  endif()
endif()
