#!/usr/bin/env bash
# test.sh - everything CI checks, in order:
#
#   1. scripts/deps.sh (packages)
#   2. clang-format --dry-run --Werror over the C sources of src/ include/ tests/ bench/ examples/
#   3. build/       RelWithDebInfo build, then the whole ctest suite
#   4. build-asan/  -DREIGN_SANITIZE=ON (ASan + UBSan), then the whole ctest suite again
#
# Every step runs even if an earlier one failed, so one run shows everything that is wrong; the
# exit status is non-zero if any failed.  Whatever happens, every ZooKeeper server started under
# the two build directories is stopped at the end.
#
# Environment: REIGN_BUILD_DIR, REIGN_BUILD_ASAN_DIR (instead of build/ and build-asan/),
# REIGN_CTEST_JOBS (parallel tests, default: number of cores),
# REIGN_CTEST_ARGS (extra ctest arguments, e.g. "-L unit" or "-E fault"),
# REIGN_SKIP_ASAN=1 (only the normal build).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${REIGN_BUILD_DIR:-$ROOT/build}
BUILD_ASAN=${REIGN_BUILD_ASAN_DIR:-$ROOT/build-asan}
BUILD_TSAN=${REIGN_BUILD_TSAN_DIR:-$ROOT/build-tsan}
JOBS=${REIGN_CTEST_JOBS:-$(nproc)}
read -r -a CTEST_EXTRA <<<"${REIGN_CTEST_ARGS:-}"

# shellcheck disable=SC2317 # called by the EXIT trap
# Stops every server a test may have left under a build directory.
stop_servers_under() {
    local s
    for s in zk.sh mariadb.sh pg.sh etcd.sh; do
        bash "$ROOT/scripts/$s" stop-all-under "$1" || true
    done
}

cleanup() {
    stop_servers_under "$BUILD"
    stop_servers_under "$BUILD_ASAN"
    stop_servers_under "$BUILD_TSAN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

declare -a RESULTS=()
status=0
record() { # record NAME RC
    if [[ $2 -eq 0 ]]; then
        RESULTS+=("  ok      $1")
    else
        RESULTS+=("  FAILED  $1")
        status=1
    fi
}

section() {
    printf '\n==== %s ====\n' "$*"
}

section "dependencies"
bash "$ROOT/scripts/deps.sh" || {
    echo "test.sh: installing dependencies failed" >&2
    exit 1
}

section "clang-format check"
mapfile -d '' -t C_FILES < <(find src include tests bench examples \
    \( -name '*.c' -o -name '*.h' \) -type f -print0 2>/dev/null | sort -z)
rc=0
if [[ ${#C_FILES[@]} -gt 0 ]]; then
    clang-format --dry-run --Werror "${C_FILES[@]}" || rc=1
fi
echo "${#C_FILES[@]} C file(s) checked"
record "clang-format (${#C_FILES[@]} files)" $rc

# run_suite NAME BUILD_DIR [cmake args...]: build, then ctest; records both.
run_suite() {
    local name=$1 dir=$2 rc
    shift 2
    rm -f "$dir/ctest.log"
    section "$name: build ($dir)"
    bash "$ROOT/scripts/build.sh" "$dir" "$@"
    rc=$?
    record "$name build" $rc
    [[ $rc -eq 0 ]] || return 0
    section "$name: ctest"
    (cd "$dir" && ctest --output-on-failure --no-tests=error --parallel "$JOBS" \
        "${CTEST_EXTRA[@]}") 2>&1 | tee "$dir/ctest.log"
    rc=${PIPESTATUS[0]}
    stop_servers_under "$dir"
    record "$name ctest: $(grep -E 'tests passed|No tests were found' "$dir/ctest.log" |
        tail -n 1)" "$rc"
}

run_suite "release" "$BUILD"

if [[ ${REIGN_SKIP_ASAN:-0} != 1 ]]; then
    export ASAN_OPTIONS=detect_leaks=1
    # print_suppressions=0: a suppressed leak of the ZooKeeper client (how much of it exists at
    # exit depends on timing) must not add lines to the stderr the tests read.
    export LSAN_OPTIONS=suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    run_suite "asan+ubsan" "$BUILD_ASAN" -DREIGN_SANITIZE=ON
fi

# ThreadSanitizer over the C programs that drive the thread hand-offs: ZooKeeper's completion
# thread and each SQL client's worker thread (the unit, C integration and SQL tests; the
# python e2e tests exercise the same code through the CLI).
if [[ ${REIGN_SKIP_TSAN:-0} != 1 ]]; then
    unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
    CTEST_EXTRA_SAVED=("${CTEST_EXTRA[@]}")
    CTEST_EXTRA=(-L "unit|integration|sql" -LE "e2e|fault|tools" "${CTEST_EXTRA_SAVED[@]}")
    run_suite "tsan" "$BUILD_TSAN" -DREIGN_TSAN=ON -DREIGN_BUILD_BENCH=OFF
    CTEST_EXTRA=("${CTEST_EXTRA_SAVED[@]}")
fi

section "summary"
printf '%s\n' "${RESULTS[@]}"
for log in "$BUILD/ctest.log" "$BUILD_ASAN/ctest.log" "$BUILD_TSAN/ctest.log"; do
    [[ -f $log ]] || continue
    if grep -q 'The following tests FAILED' "$log"; then
        echo "failed in ${log%/ctest.log}:"
        sed -n '/The following tests FAILED/,$p' "$log" | sed -n '2,$p' | grep -v '^Errors while'
    fi
done
if [[ $status -eq 0 ]]; then echo "test.sh: all passed"; else echo "test.sh: FAILED"; fi
exit $status
