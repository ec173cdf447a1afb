#!/usr/bin/env bash
# etcd.sh - throwaway etcd servers for reign's tests, demo and benchmarks.
#
# Runs the etcd binary of Debian's `etcd-server` package directly (no systemd, no change under
# /etc, nothing read from /etc/default/etcd), one member or a cluster of N, on free loopback
# ports, with every file under one STATE_DIR:
#
#   STATE_DIR/etcd.state       marker: "servers=N" (present while the members are ours to run)
#   STATE_DIR/connect          "127.0.0.1:p1,127.0.0.1:p2,..." (the client ports)
#   STATE_DIR/uri              "etcd://127.0.0.1:p1[,127.0.0.1:p2,...]" for reign
#   STATE_DIR/endpoints        "http://127.0.0.1:p1,..." for etcdctl --endpoints
#   STATE_DIR/tls/             with REIGN_ETCD_TLS=1 at `start`: a throwaway CA (ca.crt), the
#                              members' certificate for 127.0.0.1 signed by it (server.crt,
#                              server.key), a client's (client.crt, client.key) and another CA
#                              (other-ca.crt; make_tls in lib/server-common.sh).  The members then
#                              serve their client port over TLS only and require a client
#                              certificate signed by the CA (--client-cert-auth); their peers still
#                              talk plain HTTP.  uri is then "etcds://...?cacert=..&cert=..&key=..",
#                              endpoints "https://...", and `ctl` and the probes present the
#                              client's certificate.
#   STATE_DIR/watchdog.pid     the watchdog that stops the members if their owner dies
#   STATE_DIR/sI/data/         member I's data directory (I = 1..N; removed by `stop`)
#   STATE_DIR/sI/etcd.log      its output (kept after `stop`, for post-mortems)
#   STATE_DIR/sI/args          its command line, one argument per line (start-server reuses it)
#   STATE_DIR/sI/pid, client_port, peer_port
#
# Each member serves gRPC and the JSON gateway (/v3/...) on its client port, and talks to its
# peers on its peer port; both on 127.0.0.1 only.
#
# Settings for tests on a small shared machine: no fsync (--unsafe-no-fsync: etcd 3.4.23 has the
# flag although --help does not list it; a killed member keeps what it wrote, only a machine
# crash would lose it), a 256 MiB backend quota, a snapshot every 10,000 entries (fewer raft
# entries held in memory than the default 100,000), two snapshot and WAL files kept.  Heartbeat
# (100 ms), election timeout (1 s), pre-vote (off), the request size limit (1.5 MiB) and
# compaction (none) are etcd 3.4's defaults, so tests see what a default deployment does.
#
# A test killed half-way must never leave etcd running: every member is found again by its
# command line (--data-dir under STATE_DIR), so `stop` and `stop-all-under` work even when pid
# files are gone; and with REIGN_ETCD_OWNER_PID set (a pid, or "parent" for the process that ran
# `etcd.sh start`), a small watchdog stops the members when that process goes away.
#
# Environment: REIGN_ETCD_START_TIMEOUT (seconds, default 60), REIGN_ETCD_OWNER_PID, REIGN_ETCD_TLS,
# REIGN_ETCD_EXTRA_OPTS (words added to every member's command line, e.g. "--pre-vote=true" or
# "--auto-compaction-retention=1"), ETCD (the server binary, default: etcd), ETCDCTL (default:
# etcdctl).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=etcd.sh
# shellcheck source-path=SCRIPTDIR source=lib/server-common.sh
. "$(dirname "$SELF")/lib/server-common.sh"
STATE_MARKER=etcd.state
WATCH_CMD=__watch-etcd
OWNER_ENV=REIGN_ETCD_OWNER_PID
ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
START_TIMEOUT=${REIGN_ETCD_START_TIMEOUT:-60}
EXTRA_OPTS=()
if [[ -n ${REIGN_ETCD_EXTRA_OPTS:-} ]]; then read -r -a EXTRA_OPTS <<<"$REIGN_ETCD_EXTRA_OPTS"; fi

usage() {
    cat <<EOF
usage: $PROG start STATE_DIR [N]          start N members (1: one member, default; 3: a cluster)
       $PROG stop STATE_DIR               stop every member of STATE_DIR, remove their data
       $PROG stop-all-under DIR           stop every member of every state dir under DIR
       $PROG stop-server STATE_DIR I      SIGKILL member I (data kept)
       $PROG start-server STATE_DIR I     start member I again and wait until it serves
       $PROG pause-server STATE_DIR I     SIGSTOP member I
       $PROG resume-server STATE_DIR I    SIGCONT member I
       $PROG port STATE_DIR I             print member I's client port
       $PROG connect STATE_DIR            print the client addresses (127.0.0.1:p1,...)
       $PROG uri STATE_DIR                print the URI (etcd://127.0.0.1:p1,..., or etcds://...)
       $PROG leader STATE_DIR             print the index of the member that leads the cluster
       $PROG status STATE_DIR             one line per member: index port pid state role
       $PROG ctl STATE_DIR ARGS...        run etcdctl (API v3) against every member
EOF
}

# ---- small helpers ------------------------------------------------------------------------

# probe PORT WHAT [TIMEOUT_S]: ask member PORT over its JSON gateway, with a timeout (a paused
# member accepts connections but never answers).  WHAT is
#   health   exit 0 if GET /health says {"health":"true"} (it has a leader, no alarm)
#   role     print "leader" or "follower" (POST /v3/maintenance/status)
# With TLS_DIR set (the members speak TLS), over https with the client's certificate; and health
# then also asks the gateway for a status: /health is answered by the member itself, the /v3 calls
# by its gateway through the member's own gRPC port, which refuses the gateway where the members'
# certificate is no client's one.
# python3 rather than curl: the tests need it anyway, and this is one request with a deadline.
probe() {
    python3 - "$1" "$2" "${3:-2}" "${TLS_DIR:-}" <<'EOF'
import json, ssl, sys, urllib.request
port, what, timeout, tls = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
ctx = None
if tls:
    ctx = ssl.create_default_context(cafile=f"{tls}/ca.crt")
    ctx.load_cert_chain(f"{tls}/client.crt", f"{tls}/client.key")
try:
    if what == "health":
        with urllib.request.urlopen(base + "/health", timeout=timeout, context=ctx) as r:
            if json.load(r).get("health") != "true":
                sys.exit(1)
        if not tls:
            sys.exit(0)
    req = urllib.request.Request(base + "/v3/maintenance/status", data=b"{}",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
        st = json.load(r)
except (OSError, ValueError):
    sys.exit(1)
member, leader = st.get("header", {}).get("member_id"), st.get("leader")
if not member or not leader:
    sys.exit(1)
if what == "role":
    print("leader" if member == leader else "follower")
EOF
}

# is_server_of PID DATA_DIR: is PID an etcd started with this exact data directory?
is_server_of() {
    grep -qzxF -- "$2" "/proc/$1/cmdline" 2>/dev/null
}

# server_pids_under PREFIX: pids of every etcd whose --data-dir lies under PREFIX (a directory
# path ending in /), found by command line; this is what makes `stop` robust to lost pid files.
server_pids_under() {
    local prefix=$1 f pid args
    for f in $(grep -l -a -F -- "$prefix" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        args=$(cmdline_args "$pid") || continue
        local first=1 is_etcd=0 prev='' has_dir=0 a
        while IFS= read -r a; do
            if [[ $first -eq 1 && ${a##*/} == etcd* && ${a##*/} != etcdctl* ]]; then is_etcd=1; fi
            first=0
            if [[ $prev == --data-dir && $a == "$prefix"*/data ]]; then has_dir=1; fi
            prev=$a
        done <<<"$args"
        if [[ $is_etcd -eq 1 && $has_dir -eq 1 ]] && alive "$pid"; then echo "$pid"; fi
    done
}

# kill_and_wait SIGNAL PID...: signal the processes (and SIGCONT them, so a paused member can
# handle SIGTERM), wait up to 10 s for them to go, SIGKILL whatever is left after 5.
kill_and_wait() {
    local sig=$1 pid left i
    shift
    [[ $# -gt 0 ]] || return 0
    kill "-$sig" "$@" 2>/dev/null || true
    kill -CONT "$@" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        left=()
        for pid in "$@"; do
            if alive "$pid"; then left+=("$pid"); fi
        done
        [[ ${#left[@]} -eq 0 ]] && return 0
        if [[ $i -eq 100 ]]; then kill -KILL "${left[@]}" 2>/dev/null || true; fi
        sleep 0.05
    done
    kill -KILL "${left[@]}" 2>/dev/null || true
    echo "$PROG: warning: processes ${left[*]} did not exit" >&2
}

# ---- state dir -----------------------------------------------------------------------------

STATE=
NSERVERS=
TLS_DIR= # STATE/tls when the members speak TLS to their clients

load_state() {
    STATE=$(abs_path "$1")
    [[ -f $STATE/$STATE_MARKER ]] ||
        die "no members recorded in '$STATE' (run: $PROG start $STATE)"
    if [[ -d $STATE/tls ]]; then TLS_DIR=$STATE/tls; fi
    NSERVERS=$(sed -n 's/^servers=//p' "$STATE/$STATE_MARKER")
    [[ $NSERVERS =~ ^[0-9]+$ ]] || die "corrupt '$STATE/$STATE_MARKER'"
}

check_index() {
    [[ $1 =~ ^[0-9]+$ && $1 -ge 1 && $1 -le $NSERVERS ]] ||
        die "member index '$1' is not in 1..$NSERVERS"
}

server_pid() {
    local pid
    pid=$(cat "$STATE/s$1/pid" 2>/dev/null) || return 0
    if alive "$pid" && is_server_of "$pid" "$STATE/s$1/data"; then echo "$pid"; fi
}

client_port() {
    cat "$STATE/s$1/client_port"
}

# server_role I: leader / follower, or nothing if member I does not answer.
server_role() {
    local pid
    pid=$(server_pid "$1")
    [[ -n $pid && $(proc_state "$pid") != T ]] || return 0
    probe "$(client_port "$1")" role 2 || true
}

# serving I: is member I up, with a leader (its own cluster's quorum) and no alarm?
serving() {
    probe "$(client_port "$1")" health 2
}

# write_args I: member I's command line, one argument per line, in STATE/sI/args.  The same
# line restarts it (start-server): with a data directory in place, etcd ignores the --initial-*
# flags and rejoins as the member it was.
write_args() {
    local i=$1 sd="$STATE/s$1" j cluster='' scheme=http tls=()
    mkdir -p "$sd"
    if [[ -n $TLS_DIR ]]; then
        scheme=https
        tls=(--cert-file "$TLS_DIR/server.crt" --key-file "$TLS_DIR/server.key"
            --client-cert-auth --trusted-ca-file "$TLS_DIR/ca.crt")
    fi
    echo "${CLIENT_PORTS[i]}" >"$sd/client_port"
    echo "${PEER_PORTS[i]}" >"$sd/peer_port"
    for ((j = 1; j <= NSERVERS; j++)); do
        cluster+="${cluster:+,}s$j=http://127.0.0.1:${PEER_PORTS[j]}"
    done
    printf '%s\n' "$ETCD" --name "s$i" --data-dir "$sd/data" \
        --listen-client-urls "$scheme://127.0.0.1:${CLIENT_PORTS[i]}" \
        --advertise-client-urls "$scheme://127.0.0.1:${CLIENT_PORTS[i]}" "${tls[@]}" \
        --listen-peer-urls "http://127.0.0.1:${PEER_PORTS[i]}" \
        --initial-advertise-peer-urls "http://127.0.0.1:${PEER_PORTS[i]}" \
        --initial-cluster "$cluster" --initial-cluster-state new \
        --initial-cluster-token "$CLUSTER_TOKEN" \
        --unsafe-no-fsync --quota-backend-bytes $((256 * 1024 * 1024)) \
        --snapshot-count 10000 --max-snapshots 2 --max-wals 2 \
        --logger zap --log-outputs stderr "${EXTRA_OPTS[@]}" >"$sd/args"
}

launch_server() {
    local i=$1 sd="$STATE/s$1" args
    mapfile -t args <"$sd/args"
    echo "=== $PROG: starting member $i at $(date '+%F %T') ===" >>"$sd/etcd.log"
    # Its own session: a Ctrl-C or a group kill aimed at the caller does not reach it (the
    # watchdog and `stop` take care of it); stdio away from the caller's pipes, so ctest does
    # not wait for the member to close them.  The working directory is its own, so nothing it
    # might write relative to it lands elsewhere.
    (
        cd "$sd"
        exec setsid "${args[@]}" </dev/null >>"$sd/etcd.log" 2>&1
    ) &
    echo $! >"$sd/pid"
    # Found again by pid file and command line, never waited for: no job report when killed.
    disown $!
}

# wait_serving I...: wait until every listed member serves.  Returns 0, 1 (timeout) or 2 (a
# member exited).
wait_serving() {
    local deadline=$((SECONDS + START_TIMEOUT)) i pending
    pending=("$@")
    while :; do
        local still=()
        for i in "${pending[@]}"; do
            if serving "$i"; then continue; fi
            local pid
            pid=$(cat "$STATE/s$i/pid" 2>/dev/null || true)
            if [[ -z $pid ]] || ! alive "$pid"; then
                echo "$PROG: member $i exited" >&2
                return 2
            fi
            still+=("$i")
        done
        [[ ${#still[@]} -eq 0 ]] && return 0
        if [[ $SECONDS -ge $deadline ]]; then
            echo "$PROG: member(s) ${still[*]} not serving after ${START_TIMEOUT}s" >&2
            return 1
        fi
        pending=("${still[@]}")
        sleep 0.1
    done
}

log_tails() {
    local i
    for ((i = 1; i <= NSERVERS; i++)); do
        echo "---- $STATE/s$i/etcd.log (last 40 lines) ----" >&2
        tail -n 40 "$STATE/s$i/etcd.log" >&2 2>/dev/null || true
    done
}

bind_conflict() {
    grep -qsE 'address already in use' "$STATE"/s*/etcd.log
}

# ---- commands ------------------------------------------------------------------------------

cmd_start() {
    [[ $# -ge 1 && $# -le 2 ]] || {
        usage >&2
        exit 2
    }
    STATE=$(abs_path "$1")
    NSERVERS=${2:-1}
    [[ $NSERVERS =~ ^[1-9]$ ]] || die "number of members '$NSERVERS' must be 1..9"
    command -v "$ETCD" >/dev/null || die "'$ETCD' not found (run scripts/deps.sh: etcd-server)"

    # Whatever an earlier run left in this directory goes first.
    stop_state "$STATE"
    rm -rf -- "$STATE"
    mkdir -p -- "$STATE"
    if [[ ${REIGN_ETCD_TLS:-0} == 1 ]]; then
        make_tls "$STATE/tls" client
        TLS_DIR=$STATE/tls
    fi

    local attempt i rc ports
    for attempt in 1 2 3; do
        mapfile -t ports < <(pick_ports $((NSERVERS * 2)))
        [[ ${#ports[@]} -eq $((NSERVERS * 2)) ]] || die "could not find free ports"
        CLIENT_PORTS=() PEER_PORTS=()
        for ((i = 1; i <= NSERVERS; i++)); do
            CLIENT_PORTS[i]=${ports[(i - 1) * 2]}
            PEER_PORTS[i]=${ports[(i - 1) * 2 + 1]}
        done
        # A token of its own: a member of some other run that still listens on a reused port
        # cannot be taken for one of ours.
        CLUSTER_TOKEN=reign-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
        echo "servers=$NSERVERS" >"$STATE/$STATE_MARKER"
        for ((i = 1; i <= NSERVERS; i++)); do write_args "$i"; done
        for ((i = 1; i <= NSERVERS; i++)); do launch_server "$i"; done
        if [[ $attempt -eq 1 ]]; then start_watchdog; fi

        rc=0
        # shellcheck disable=SC2046 # one index per word
        wait_serving $(seq 1 "$NSERVERS") || rc=$?
        if [[ $rc -eq 0 ]]; then
            local connect='' endpoints='' scheme=http uri
            if [[ -n $TLS_DIR ]]; then scheme=https; fi
            for ((i = 1; i <= NSERVERS; i++)); do
                connect+="${connect:+,}127.0.0.1:${CLIENT_PORTS[i]}"
                endpoints+="${endpoints:+,}$scheme://127.0.0.1:${CLIENT_PORTS[i]}"
            done
            uri="etcd://$connect"
            if [[ -n $TLS_DIR ]]; then
                uri="etcds://$connect?cacert=$TLS_DIR/ca.crt&cert=$TLS_DIR/client.crt"
                uri+="&key=$TLS_DIR/client.key"
            fi
            echo "$connect" >"$STATE/connect"
            echo "$endpoints" >"$STATE/endpoints"
            echo "$uri" >"$STATE/uri"
            echo "$connect"
            return 0
        fi
        if [[ $attempt -lt 3 ]] && bind_conflict; then
            echo "$PROG: port conflict, trying other ports" >&2
            stop_servers_of "$STATE"
            for ((i = 1; i <= NSERVERS; i++)); do
                mv -f "$STATE/s$i/etcd.log" "$STATE/s$i/etcd.log.attempt$attempt"
                rm -rf -- "$STATE/s$i/data"
            done
            continue
        fi
        break
    done
    log_tails
    stop_state "$STATE"
    die "etcd did not start (logs above, and under $STATE)"
}

# stop_servers_of STATE: stop every member of STATE (by pid file and by command line).
stop_servers_of() {
    local state=$1 pids=() d pid
    for d in "$state"/s*/; do
        [[ -f $d/pid ]] || continue
        pid=$(cat "$d/pid" 2>/dev/null || true)
        if [[ -n $pid ]] && alive "$pid" && is_server_of "$pid" "${d%/}/data"; then
            pids+=("$pid")
        fi
        rm -f -- "$d/pid"
    done
    for pid in $(server_pids_under "$state/"); do
        [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid")
    done
    stop_servers "${pids[@]}"
}

# stop_servers PID...: the data is thrown away, so there is nothing to shut down cleanly: SIGKILL.
# SIGTERM to the three members of a cluster at once takes 7 s on a 2-core machine (each waits
# for peers that are going too); SIGKILL, milliseconds.  stop-all-under calls it too.
stop_servers() { kill_and_wait KILL "$@"; }

# stop_state STATE: stop the watchdog and the members, remove data; logs stay.
stop_state() {
    local state=$1 wpid
    [[ -d $state ]] || return 0
    wpid=$(cat "$state/watchdog.pid" 2>/dev/null || true)
    if [[ -n $wpid && $wpid != "$BASHPID" ]] &&
        grep -qzx -- "$WATCH_CMD" "/proc/$wpid/cmdline" 2>/dev/null; then
        kill -TERM "$wpid" 2>/dev/null || true
    fi
    rm -f -- "$state/watchdog.pid" "$state/$STATE_MARKER" "$state/connect" "$state/uri" \
        "$state/endpoints"
    stop_servers_of "$state"
    rm -rf -- "$state"/s*/data
}

cmd_stop_server() {
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    check_index "$2"
    local pid
    pid=$(server_pid "$2")
    if [[ -n $pid ]]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone 5 "$pid" || die "member $2 ($pid) survived SIGKILL"
    fi
    rm -f -- "$STATE/s$2/pid"
}

cmd_start_server() {
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    check_index "$2"
    [[ -f $STATE/s$2/args ]] || die "member $2 of '$STATE' was never started"
    if [[ -z $(server_pid "$2") ]]; then launch_server "$2"; fi
    local rc=0
    wait_serving "$2" || rc=$?
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$STATE/s$2/etcd.log" >&2 || true
        die "member $2 did not serve again"
    fi
}

cmd_signal_server() {
    local sig=$1
    shift
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    check_index "$2"
    local pid
    pid=$(server_pid "$2")
    [[ -n $pid ]] || die "member $2 is not running"
    if [[ $sig == STOP ]]; then pause_pids "$pid"; else kill -CONT "$pid"; fi
}

cmd_port() {
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    check_index "$2"
    client_port "$2"
}

# cmd_print FILE STATE_DIR: print a file `start` writes once the members serve.
cmd_print() {
    local file=$1
    shift
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    cat "$STATE/$file" 2>/dev/null || die "no $file in '$STATE' (members starting?)"
}

cmd_leader() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    local i
    for ((i = 1; i <= NSERVERS; i++)); do
        if [[ $(server_role "$i") == leader ]]; then
            echo "$i"
            return 0
        fi
    done
    die "no member of '$STATE' is leading"
}

cmd_status() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    local i pid state role
    for ((i = 1; i <= NSERVERS; i++)); do
        pid=$(server_pid "$i")
        state=$(run_state "$pid")
        role=$(server_role "$i")
        echo "$i $(client_port "$i") ${pid:--} $state ${role:--}"
    done
}

cmd_ctl() {
    [[ $# -ge 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    shift
    local endpoints
    endpoints=$(cat "$STATE/endpoints" 2>/dev/null) ||
        die "no endpoints in '$STATE' (members starting?)"
    command -v "$ETCDCTL" >/dev/null ||
        die "'$ETCDCTL' not found (run scripts/deps.sh: etcd-client)"
    local tls=()
    if [[ -n $TLS_DIR ]]; then
        tls=(--cacert="$TLS_DIR/ca.crt" --cert="$TLS_DIR/client.crt" --key="$TLS_DIR/client.key")
    fi
    ETCDCTL_API=3 exec "$ETCDCTL" --endpoints="$endpoints" --dial-timeout=2s \
        --command-timeout=10s "${tls[@]}" "$@"
}

main() {
    [[ $# -ge 1 ]] || {
        usage >&2
        exit 2
    }
    local cmd=$1
    shift
    case $cmd in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    stop-all-under) cmd_stop_all_under "$@" ;;
    stop-server) cmd_stop_server "$@" ;;
    start-server) cmd_start_server "$@" ;;
    pause-server) cmd_signal_server STOP "$@" ;;
    resume-server) cmd_signal_server CONT "$@" ;;
    port) cmd_port "$@" ;;
    connect) cmd_print connect "$@" ;;
    uri) cmd_print uri "$@" ;;
    leader) cmd_leader "$@" ;;
    status) cmd_status "$@" ;;
    ctl) cmd_ctl "$@" ;;
    "$WATCH_CMD") cmd_watch "$@" ;;
    -h | --help | help) usage ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
