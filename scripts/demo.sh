#!/usr/bin/env bash
# demo.sh - see reign elect a leader, hand over gracefully, and survive a crash.
#
# Installs what is missing (deps.sh), builds (build.sh), starts a throwaway ZooKeeper (zk.sh) in
# a temporary directory and three `reign campaign demo --id node-N` processes, then:
#   1. shows who leads,
#   2. sends SIGTERM to the leader: it resigns, and the next candidate takes over at once;
#   3. kill -9 the new leader: it cannot say goodbye, but its guardian (a helper process that
#      outlives it) closes its session at once, and the next candidate takes over;
#   4. kill -9 that leader together with its guardian, as a host that dies takes both: now
#      nobody says goodbye, so ZooKeeper has to notice the silence (the session timeout,
#      2000 ms here) before a fourth candidate takes over;
#   5. proves from the four outputs that two leaderships never overlapped.
# Times are measured from the signal to the next `elected` line, on CLOCK_MONOTONIC.  Everything
# it started is stopped and removed on exit, however it exits.
#
# Environment: REIGN_BUILD_DIR (default build/), REIGN_CLI (default BUILD/src/cli/reign),
# REIGN_DEMO_SESSION_MS (default 2000), REIGN_DEMO_NO_BUILD=1 (skip deps and build).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${REIGN_BUILD_DIR:-$ROOT/build}
CLI=${REIGN_CLI:-$BUILD/src/cli/reign}
SESSION_MS=${REIGN_DEMO_SESSION_MS:-2000}
ELECTION=demo
WAIT_S=30 # generous bound for anything that should happen

die() {
    echo "demo.sh: $*" >&2
    exit 1
}

if [[ ${REIGN_DEMO_NO_BUILD:-0} != 1 ]]; then
    bash "$ROOT/scripts/deps.sh"
    echo "building reign in $BUILD (log: $BUILD/build.log) ..."
    mkdir -p "$BUILD"
    if ! bash "$ROOT/scripts/build.sh" "$BUILD" >"$BUILD/build.log" 2>&1; then
        tail -n 30 "$BUILD/build.log" >&2
        die "the build failed (see $BUILD/build.log)"
    fi
fi
[[ -x $CLI ]] || die "no reign command at '$CLI' (was src/cli built?)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/reign-demo.XXXXXX")
declare -A PID=() # node id -> pid of its `reign campaign`
cleanup() {
    local id pids=()
    for id in "${!PID[@]}"; do pids+=("${PID[$id]}"); done
    if [[ ${#pids[@]} -gt 0 ]]; then
        disown "${pids[@]}" 2>/dev/null || true # no "Killed" notices from bash
        kill -TERM "${pids[@]}" 2>/dev/null || true
        # Resigning takes a round trip; then whatever is left goes the hard way.
        for _ in $(seq 50); do
            kill -0 "${pids[@]}" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
    bash "$ROOT/scripts/zk.sh" stop "$TMP/zk" >/dev/null 2>&1 || true
    rm -rf -- "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The demo's clock: CLOCK_MONOTONIC, the clock of the monotonic_ns= fields.
now_ns() {
    python3 -c 'import time; print(time.monotonic_ns())'
}
# signal_at SIG PID...: send the signal to each, and print the monotonic time just before.
signal_at() {
    python3 -c 'import os, sys, time
t = time.monotonic_ns()
for p in sys.argv[2:]: os.kill(int(p), int(sys.argv[1]))
print(t)' "$(kill -l "$1")" "${@:2}"
}
ms_between() { # ms_between FROM_NS TO_NS
    echo $((($2 - $1) / 1000000))
}

# first_elected AFTER_NS: "id term token ns" of the earliest `elected` line after AFTER_NS.
first_elected() {
    awk -v after="$1" '$1 == "elected" {
            delete f
            for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["monotonic_ns"] + 0 > after + 0)
                print $2, f["term"], f["token"], f["monotonic_ns"]
        }' "$TMP"/node-*.out 2>/dev/null | sort -k4,4n | head -n 1
}
# wait_elected AFTER_NS: first_elected, waiting for it (polling the output files).
wait_elected() {
    local line deadline=$((SECONDS + WAIT_S))
    while :; do
        line=$(first_elected "$1")
        [[ -n $line ]] && {
            echo "$line"
            return 0
        }
        [[ $SECONDS -lt $deadline ]] || return 1
        sleep 0.02
    done
}
# demoted_line ID: its latest `demoted` line (waiting for it a little), or nothing.
demoted_line() {
    local deadline=$((SECONDS + 5)) line
    while :; do
        line=$(grep '^demoted ' "$TMP/$1.out" 2>/dev/null | tail -n 1 || true)
        if [[ -n $line || $SECONDS -ge $deadline ]]; then
            echo "$line"
            return 0
        fi
        sleep 0.05
    done
}
field() { # field LINE KEY
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
}
stamp() { # stamp NS: "[+1234 ms]" since the demo began
    printf '[+%6d ms]' "$(ms_between "$T0" "$1")"
}
show_errors() {
    local f
    for f in "$TMP"/node-*.err; do
        [[ -s $f ]] || continue
        echo "---- $(basename "$f") ----"
        tail -n 20 "$f"
    done
}

echo
echo "reign demo: leader election on ZooKeeper"
echo "========================================"
CONNECT=$(REIGN_ZK_OWNER_PID=$$ bash "$ROOT/scripts/zk.sh" start "$TMP/zk" 1) ||
    die "could not start ZooKeeper"
export REIGN_URI="zk://$CONNECT"
echo "ZooKeeper   $CONNECT (standalone, throwaway, under $TMP)"
echo "candidates  node-1 node-2 node-3, each running:"
echo "              reign --session-timeout $SESSION_MS campaign $ELECTION --id node-N"
echo "            (REIGN_URI=$REIGN_URI; the session timeout is how long ZooKeeper"
echo "            keeps a silent client's session, and so its leadership, alive)"

T0=$(now_ns)
for i in 1 2 3; do
    "$CLI" --session-timeout "$SESSION_MS" campaign "$ELECTION" --id "node-$i" \
        >"$TMP/node-$i.out" 2>"$TMP/node-$i.err" &
    PID[node-$i]=$!
done

echo
echo "1. Election: three candidates, one leader"
first=$(wait_elected 0) || {
    show_errors
    die "nobody was elected within ${WAIT_S}s"
}
read -r L1 TERM1 TOKEN1 NS1 <<<"$first"
echo "   $(stamp "$NS1") $L1 elected  term=$TERM1 token=$TOKEN1"
# Let every candidate join before showing the election, if `reign status` is there to ask.
if "$CLI" status "$ELECTION" --json >/dev/null 2>&1; then
    for _ in $(seq 100); do
        n=$("$CLI" status "$ELECTION" --json 2>/dev/null | python3 -c \
            'import json, sys; print(len(json.load(sys.stdin).get("candidates", [])))' \
            2>/dev/null || echo 0)
        [[ $n -ge 3 ]] && break
        sleep 0.1
    done
    echo "   reign status $ELECTION:"
    "$CLI" status "$ELECTION" 2>&1 | sed 's/^/     /'
fi

echo
echo "2. Graceful handoff: SIGTERM to the leader, $L1; it resigns and exits"
T_TERM=$(signal_at TERM "${PID[$L1]}")
second=$(wait_elected "$T_TERM") || {
    show_errors
    die "no new leader within ${WAIT_S}s of the SIGTERM"
}
read -r L2 TERM2 TOKEN2 NS2 <<<"$second"
rc=0
wait "${PID[$L1]}" || rc=$?
unset "PID[$L1]"
d=$(demoted_line "$L1")
echo "   $(stamp "$T_TERM") SIGTERM to $L1"
if [[ -n $d ]]; then
    echo "   $(stamp "$(field "$d" monotonic_ns)") $L1 demoted  reason=$(field "$d" reason)" \
        "(exit status $rc)"
fi
echo "   $(stamp "$NS2") $L2 elected  term=$TERM2 token=$TOKEN2"
HANDOFF_MS=$(ms_between "$T_TERM" "$NS2")
echo "   => new leader $HANDOFF_MS ms after the signal: the old leader deleted its node itself"

echo
echo "3. Crash: kill -9 the new leader, $L2; it cannot say goodbye"
disown "${PID[$L2]}" # bash would print a "Killed" notice
T_KILL=$(signal_at KILL "${PID[$L2]}")
KILLED_FILE=$TMP/$L2.out
third=$(wait_elected "$T_KILL") || {
    show_errors
    die "no new leader within ${WAIT_S}s of the kill"
}
read -r L3 TERM3 TOKEN3 NS3 <<<"$third"
unset "PID[$L2]"
echo "   $(stamp "$T_KILL") SIGKILL to $L2"
echo "   $(stamp "$NS3") $L3 elected  term=$TERM3 token=$TOKEN3"
CRASH_MS=$(ms_between "$T_KILL" "$NS3")
grep -h 'reign-guardian\[' "$TMP/$L2.err" 2>/dev/null | sed 's/^/   /' || true
echo "   => new leader $CRASH_MS ms after the kill: $L2's guardian saw it die and closed its"
echo "      session (deleting its node) at once"

# A fourth candidate, so that someone is left to take over from the last of the three.
"$CLI" --session-timeout "$SESSION_MS" campaign "$ELECTION" --id node-4 \
    >"$TMP/node-4.out" 2>"$TMP/node-4.err" &
PID[node-4]=$!
for _ in $(seq 100); do
    n=$("$CLI" status "$ELECTION" --json 2>/dev/null | python3 -c \
        'import json, sys; print(len(json.load(sys.stdin).get("candidates", [])))' 2>/dev/null ||
        echo 0)
    [[ $n -ge 2 ]] && break
    sleep 0.1
done

echo
echo "4. Host death: kill -9 the leader, $L3, and its guardian at once, as a dead host would"
GUARDIAN=$(pgrep -f "^reign-guardian ${PID[$L3]}\$" || true)
[[ -n $GUARDIAN ]] || die "no guardian found for $L3 (pid ${PID[$L3]})"
disown "${PID[$L3]}"
T_HOST=$(signal_at KILL "$GUARDIAN" "${PID[$L3]}")
HOST_FILE=$TMP/$L3.out
fourth=$(wait_elected "$T_HOST") || {
    show_errors
    die "no new leader within ${WAIT_S}s of the kill"
}
read -r L4 TERM4 TOKEN4 NS4 <<<"$fourth"
unset "PID[$L3]"
echo "   $(stamp "$T_HOST") SIGKILL to $L3 and its guardian (pid $GUARDIAN)"
echo "   $(stamp "$NS4") $L4 elected  term=$TERM4 token=$TOKEN4"
HOST_MS=$(ms_between "$T_HOST" "$NS4")
echo "   => new leader $HOST_MS ms after the kill: nobody was left to close $L3's session, so"
echo "      ZooKeeper ended it when it had heard nothing from it for the session timeout,"
echo "      $SESSION_MS ms counted from its last heartbeat, which came before the kill"

echo
echo "5. Proof: no two leaderships overlapped, terms and tokens only grew"
T_END=$(now_ns)
if ! python3 "$ROOT/tests/tools/check_leadership.py" --killed "$KILLED_FILE=$T_KILL" \
    --killed "$HOST_FILE=$T_HOST" --end "$T_END" --min-leaderships 4 "$TMP"/node-*.out |
    sed 's/^/   /'; then
    die "the leadership check failed"
fi

echo
echo "Summary: graceful handoff $HANDOFF_MS ms, crash failover $CRASH_MS ms (the guardian)," \
    "host death $HOST_MS ms (session timeout $SESSION_MS ms)."
echo "Cleaning up: $L4 resigns, ZooKeeper stops, $TMP is removed."
