#!/usr/bin/env bash
# test.sh - everything CI checks, in order:
#
#   1. scripts/deps.sh (packages)
#   2. clang-format --dry-run --Werror over the C sources of src/ include/ tests/ bench/ examples/
#   3. build/       RelWithDebInfo build, then the whole ctest suite
#   4. build-asan/  -DREIGN_SANITIZE=ON (ASan + UBSan), then every test not labelled
#                   sanitize_skip
#   5. build-tsan/  -DREIGN_TSAN=ON, then the unit, C integration and SQL tests (not e2e,
#                   fault, tools, nor sanitize_skip)
#
# The label sanitize_skip marks the tests that spend their time waiting on servers or timeouts
# and run no code of the library that the tests still run under the sanitizers do not run too,
# and the checks of the docs, the tree and the test tools (CONTRIBUTING.md says how they were
# chosen); the release suite runs them all.  The two sanitizer builds are compiled in the
# background at the lowest CPU priority (nice 19) while the release suite runs, whose tests
# mostly wait, and their suites run one test more at a time than there are cores: what they
# keep leaves the CPU half idle.
#
# Every step runs even if an earlier one failed, so one run shows everything that is wrong; the
# exit status is non-zero if any failed.  Whatever happens, every server started under the
# build directories is stopped at the end.  The summary gives each step's time.
#
# Environment: REIGN_BUILD_DIR, REIGN_BUILD_ASAN_DIR, REIGN_BUILD_TSAN_DIR (instead of build/,
# build-asan/ and build-tsan/), REIGN_CTEST_JOBS (parallel tests of the release suite, default:
# number of cores), REIGN_CTEST_SANITIZE_JOBS (of the sanitizer suites, default: cores + 1),
# REIGN_CTEST_ARGS (extra ctest arguments, e.g. "-L unit" or "-E fault"),
# REIGN_SKIP_ASAN=1, REIGN_SKIP_TSAN=1 (without that sanitizer build).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${REIGN_BUILD_DIR:-$ROOT/build}
BUILD_ASAN=${REIGN_BUILD_ASAN_DIR:-$ROOT/build-asan}
BUILD_TSAN=${REIGN_BUILD_TSAN_DIR:-$ROOT/build-tsan}
JOBS=${REIGN_CTEST_JOBS:-$(nproc)}
SANITIZE_JOBS=${REIGN_CTEST_SANITIZE_JOBS:-$(($(nproc) + 1))}
read -r -a CTEST_EXTRA <<<"${REIGN_CTEST_ARGS:-}"

# shellcheck disable=SC2317 # called by the EXIT trap
# Stops every server a test may have left under a build directory.
stop_servers_under() {
    local s
    for s in zk.sh mariadb.sh pg.sh etcd.sh; do
        bash "$ROOT/scripts/$s" stop-all-under "$1" || true
    done
}

BG_BUILDS=  # the process group of the background sanitizer builds, while they run
BG_LOGS=$(mktemp -d) || exit 1

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    if [[ -n $BG_BUILDS ]]; then
        kill -- "-$BG_BUILDS" 2>/dev/null
        wait "$BG_BUILDS" 2>/dev/null
    fi
    rm -rf "$BG_LOGS"
    stop_servers_under "$BUILD"
    stop_servers_under "$BUILD_ASAN"
    stop_servers_under "$BUILD_TSAN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

declare -a RESULTS=()
status=0
record() { # record NAME RC [TIME]
    local took=${3:+ ($3)}
    if [[ $2 -eq 0 ]]; then
        RESULTS+=("  ok      $1$took")
    else
        RESULTS+=("  FAILED  $1$took")
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

# The sanitizer builds, one after the other in the background at nice 19 (a process group of
# their own, for cleanup): the release build and suite keep the CPU they need, the compilers
# take what the waiting tests leave.  A suite built there has $BG_LOGS/<suite>.queued; the
# build's output, time and status go to <suite>.log, .time and then .rc, which run_suite
# waits for and shows when the suite's turn comes.
bg_build() { # bg_build SUITE BUILD_DIR [cmake args...]
    local out=$BG_LOGS/$1 start=$SECONDS rc
    shift
    nice -n 19 bash "$ROOT/scripts/build.sh" "$@" >"$out.log" 2>&1
    rc=$?
    echo $((SECONDS - start)) >"$out.time"
    echo $rc >"$out.rc.tmp" && mv "$out.rc.tmp" "$out.rc"
}
if [[ ${REIGN_SKIP_ASAN:-0} != 1 || ${REIGN_SKIP_TSAN:-0} != 1 ]]; then
    [[ ${REIGN_SKIP_ASAN:-0} == 1 ]] || touch "$BG_LOGS/asan+ubsan.queued"
    [[ ${REIGN_SKIP_TSAN:-0} == 1 ]] || touch "$BG_LOGS/tsan.queued"
    set -m
    (
        if [[ -e $BG_LOGS/asan+ubsan.queued ]]; then
            bg_build "asan+ubsan" "$BUILD_ASAN" -DREIGN_SANITIZE=ON
        fi
        if [[ -e $BG_LOGS/tsan.queued ]]; then
            bg_build "tsan" "$BUILD_TSAN" -DREIGN_TSAN=ON -DREIGN_BUILD_BENCH=OFF
        fi
    ) </dev/null &
    BG_BUILDS=$!
    set +m
fi

section "clang-format check"
mapfile -d '' -t C_FILES < <(find src include tests bench examples \
    \( -name '*.c' -o -name '*.h' \) -type f -print0 2>/dev/null | sort -z)
rc=0
if [[ ${#C_FILES[@]} -gt 0 ]]; then
    clang-format --dry-run --Werror "${C_FILES[@]}" || rc=1
fi
echo "${#C_FILES[@]} C file(s) checked"
record "clang-format (${#C_FILES[@]} files)" $rc

# run_suite NAME BUILD_DIR JOBS [cmake args...]: build (or wait for its background build and
# show its output), then ctest with JOBS tests at a time; records both.
run_suite() {
    local name=$1 dir=$2 jobs=$3 rc start=$SECONDS bg=$BG_LOGS/$1 took
    shift 3
    rm -f "$dir/ctest.log"
    section "$name: build ($dir)"
    if [[ -e $bg.queued ]]; then
        [[ -e $bg.rc ]] || echo "(still building in the background: waiting for it)"
        while [[ ! -e $bg.rc ]] && kill -0 "$BG_BUILDS" 2>/dev/null; do sleep 1; done
        cat "$bg.log" 2>/dev/null
        rc=$(cat "$bg.rc" 2>/dev/null || echo 1)
        took=$(cat "$bg.time" 2>/dev/null || echo "?")
        echo "(built in the background at nice 19, in $took s)"
        record "$name build" "$rc" "$took s in the background, $((SECONDS - start)) s waited"
    else
        bash "$ROOT/scripts/build.sh" "$dir" "$@"
        rc=$?
        record "$name build" "$rc" "$((SECONDS - start)) s"
    fi
    [[ $rc -eq 0 ]] || return 0
    section "$name: ctest"
    start=$SECONDS
    (cd "$dir" && ctest --output-on-failure --no-tests=error --parallel "$jobs" \
        "${CTEST_EXTRA[@]}") 2>&1 | tee "$dir/ctest.log"
    rc=${PIPESTATUS[0]}
    stop_servers_under "$dir"
    record "$name ctest: $(grep -E 'tests passed|No tests were found' "$dir/ctest.log" |
        tail -n 1)" "$rc" "$((SECONDS - start)) s"
}

run_suite "release" "$BUILD" "$JOBS"

if [[ ${REIGN_SKIP_ASAN:-0} != 1 ]]; then
    export ASAN_OPTIONS=detect_leaks=1
    # print_suppressions=0: a suppressed leak of the ZooKeeper client (how much of it exists at
    # exit depends on timing) must not add lines to the stderr the tests read.
    export LSAN_OPTIONS=suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    CTEST_EXTRA_SAVED=("${CTEST_EXTRA[@]}")
    CTEST_EXTRA=(-LE sanitize_skip "${CTEST_EXTRA_SAVED[@]}")
    run_suite "asan+ubsan" "$BUILD_ASAN" "$SANITIZE_JOBS" -DREIGN_SANITIZE=ON
    CTEST_EXTRA=("${CTEST_EXTRA_SAVED[@]}")
fi

# ThreadSanitizer over the C programs that drive the thread hand-offs: ZooKeeper's completion
# thread and each SQL client's worker thread (the unit, C integration and SQL tests; the
# python e2e tests exercise the same code through the CLI).
if [[ ${REIGN_SKIP_TSAN:-0} != 1 ]]; then
    unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
    CTEST_EXTRA_SAVED=("${CTEST_EXTRA[@]}")
    CTEST_EXTRA=(-L "unit|integration|sql" -LE "e2e|fault|tools|sanitize_skip"
        "${CTEST_EXTRA_SAVED[@]}")
    run_suite "tsan" "$BUILD_TSAN" "$SANITIZE_JOBS" -DREIGN_TSAN=ON -DREIGN_BUILD_BENCH=OFF
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
echo "in $SECONDS s"
if [[ $status -eq 0 ]]; then echo "test.sh: all passed"; else echo "test.sh: FAILED"; fi
exit $status
