# Fuzz targets: one per parser.  Included from tests/CMakeLists.txt.
#
# Every build replays the corpora under ctest (label "fuzz") through
# replay.c, a plain main() that feeds each corpus file to the target, so
# each input once found to crash stays a regression test, with gcc too.
#
# With -DREIGN_FUZZ=ON and clang (CC=clang) the targets are also built as
# real libFuzzer programs, fuzz_<name>, with the sources they test compiled
# in, instrumented for coverage and with ASan and UBSan.  Run one with:
#   mkdir -p /tmp/c && build/tests/fuzz_uri -max_total_time=120 \
#       -dict=tests/fuzz/uri.dict /tmp/c tests/fuzz/corpus/uri
# New inputs go to the first directory, so the committed seeds stay as they
# are; copy a crasher (crash-*) into the corpus to keep it as a test.
set(REIGN_FUZZ_TARGETS uri record tasks_limits guardian_msg slot_record duration notices etcd
  etcd_h1 etcd_pb)
set(REIGN_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

foreach(name IN LISTS REIGN_FUZZ_TARGETS)
  add_executable(fuzz_${name}_replay ${REIGN_FUZZ_DIR}/fuzz_${name}.c ${REIGN_FUZZ_DIR}/replay.c)
  target_compile_options(fuzz_${name}_replay PRIVATE ${REIGN_WARNINGS})
  target_link_libraries(fuzz_${name}_replay PRIVATE reign_internal)
  add_test(NAME fuzz_${name}_replay
    COMMAND fuzz_${name}_replay ${REIGN_FUZZ_DIR}/corpus/${name})
  set_tests_properties(fuzz_${name}_replay PROPERTIES LABELS fuzz)
endforeach()

if(REIGN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "REIGN_FUZZ needs clang (libFuzzer): configure with CC=clang")
  endif()
  # The core sources the targets exercise, compiled into each target with
  # coverage instrumentation (reign_internal itself is not instrumented).
  if(NOT DEFINED REIGN_FUZZ_CORE_SOURCES)
    set(REIGN_FUZZ_CORE_SOURCES
      ${PROJECT_SOURCE_DIR}/src/core/alloc.c ${PROJECT_SOURCE_DIR}/src/core/buf.c
      ${PROJECT_SOURCE_DIR}/src/core/record.c ${PROJECT_SOURCE_DIR}/src/core/uri.c)
  endif()
  # Targets whose parser lives outside the core: that file is compiled in too, instrumented, and
  # what it calls into comes from reign_internal (not instrumented; the linker takes from that
  # archive only what the compiled-in files do not define).
  set(REIGN_FUZZ_SOURCES_uri ${PROJECT_SOURCE_DIR}/src/client/config.c)
  set(REIGN_FUZZ_SOURCES_tasks_limits ${PROJECT_SOURCE_DIR}/src/recipes/tasks/tasks_zk.c)
  set(REIGN_FUZZ_SOURCES_guardian_msg ${PROJECT_SOURCE_DIR}/src/guardian/proto.c)
  set(REIGN_FUZZ_SOURCES_slot_record ${PROJECT_SOURCE_DIR}/src/recipes/slot/slot_model.c)
  set(REIGN_FUZZ_SOURCES_duration ${PROJECT_SOURCE_DIR}/src/recipes/slot/slot_model.c)
  set(REIGN_FUZZ_SOURCES_notices ${PROJECT_SOURCE_DIR}/src/sql/sqlite_notices.c)
  # The gateway's answers: read back as txn results and as watch stream lines.
  set(REIGN_FUZZ_SOURCES_etcd ${PROJECT_SOURCE_DIR}/src/etcd/etcd_json.c
    ${PROJECT_SOURCE_DIR}/src/etcd/etcd_txn.c ${PROJECT_SOURCE_DIR}/src/etcd/etcd_watch.c)
  # What a member answers over plain http://, read by reign's own HTTP/1.1 (a loopback member).
  set(REIGN_FUZZ_SOURCES_etcd_h1 ${PROJECT_SOURCE_DIR}/src/etcd/etcd_h1.c)
  # What a member answers over gRPC, as protobuf, and the gateway's JSON reign writes: the codec
  # between them.
  set(REIGN_FUZZ_SOURCES_etcd_pb ${PROJECT_SOURCE_DIR}/src/etcd/etcd_pb.c)
  set(REIGN_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  foreach(name IN LISTS REIGN_FUZZ_TARGETS)
    add_executable(fuzz_${name} ${REIGN_FUZZ_DIR}/fuzz_${name}.c ${REIGN_FUZZ_CORE_SOURCES}
      ${REIGN_FUZZ_SOURCES_${name}})
    target_include_directories(fuzz_${name} PRIVATE
      $<TARGET_PROPERTY:reign_internal,INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_options(fuzz_${name} PRIVATE ${REIGN_WARNINGS} ${REIGN_FUZZ_FLAGS})
    target_link_options(fuzz_${name} PRIVATE ${REIGN_FUZZ_FLAGS})
    if(REIGN_FUZZ_SOURCES_${name})
      target_compile_definitions(fuzz_${name} PRIVATE REIGN_BUILDING THREADED)
      target_link_libraries(fuzz_${name} PRIVATE reign_internal)
    endif()
    # The corpus once more, through libFuzzer itself: -runs=0 only executes
    # the inputs it is given.
    add_test(NAME fuzz_${name}_libfuzzer
      COMMAND fuzz_${name} -runs=0 ${REIGN_FUZZ_DIR}/corpus/${name})
    set_tests_properties(fuzz_${name}_libfuzzer PROPERTIES LABELS fuzz)
  endforeach()
endif()
