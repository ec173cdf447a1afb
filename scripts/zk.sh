#!/usr/bin/env bash
# zk.sh - throwaway ZooKeeper servers for reign's tests, demo and benchmarks.
#
# Runs the server classes of Debian's `zookeeper` package directly with java (no systemd, no
# change under /etc), one standalone server or an ensemble of N, on free loopback ports, with
# every file under one STATE_DIR:
#
#   STATE_DIR/zk.state         marker: "servers=N" (present while the servers are ours to run)
#   STATE_DIR/connect          "127.0.0.1:p1,127.0.0.1:p2,..." for clients
#   STATE_DIR/watchdog.pid     the watchdog that stops the servers if their owner dies
#   STATE_DIR/sI/zoo.cfg       server I's configuration (I = 1..N)
#   STATE_DIR/sI/data/         its snapshots and transaction log (removed by `stop`)
#   STATE_DIR/sI/zookeeper.log its output (kept after `stop`, for post-mortems)
#   STATE_DIR/sI/pid, client_port
#
# A test killed half-way must never leave java running forever: every server is found again by
# its command line (the path of its zoo.cfg), so `stop` and `stop-all-under` work even when pid
# files are gone; and with REIGN_ZK_OWNER_PID set (a pid, or "parent" for the process that ran
# `zk.sh start`), a small watchdog stops the servers when that process goes away.
#
# Environment: REIGN_ZK_START_TIMEOUT (seconds, default 60), REIGN_ZK_OWNER_PID,
# REIGN_ZK_JAVA_OPTS (replaces the JVM flags below), JAVA (default: java).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=zk.sh
# shellcheck source-path=SCRIPTDIR source=lib/server-common.sh
. "$(dirname "$SELF")/lib/server-common.sh"
STATE_MARKER=zk.state
WATCH_CMD=__watch
OWNER_ENV=REIGN_ZK_OWNER_PID
JAVA=${JAVA:-java}
START_TIMEOUT=${REIGN_ZK_START_TIMEOUT:-60}

# Debian's classpath for the server (see /etc/zookeeper/conf/environment); the manifest of
# zookeeper.jar names its other jars.  slf4j-log4j12 + log4j make it log through
# /etc/zookeeper/conf/log4j.properties instead of slf4j's silent default.
CLASSPATH_ZK=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar
for jar in /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
    if [[ -r $jar ]]; then CLASSPATH_ZK+=":$jar"; fi
done

# Small heap and the serial collector: several of these run at once on a 2-core machine.
JAVA_OPTS=(-Xms16m -Xmx256m -XX:+UseSerialGC -XX:-UsePerfData -XX:+ExitOnOutOfMemoryError
    -Djava.net.preferIPv4Stack=true -Dzookeeper.jmx.log4j.disable=true
    -Dzookeeper.admin.enableServer=false)
if [[ -n ${REIGN_ZK_JAVA_OPTS:-} ]]; then read -r -a JAVA_OPTS <<<"$REIGN_ZK_JAVA_OPTS"; fi

usage() {
    cat <<EOF
usage: $PROG start STATE_DIR [N]          start N servers (1: standalone, default; 3: ensemble)
       $PROG stop STATE_DIR               stop every server of STATE_DIR, remove their data
       $PROG stop-all-under DIR           stop every server of every state dir under DIR
       $PROG stop-server STATE_DIR I      SIGKILL server I (data kept)
       $PROG start-server STATE_DIR I     start server I again and wait until it serves
       $PROG pause-server STATE_DIR I     SIGSTOP server I
       $PROG resume-server STATE_DIR I    SIGCONT server I
       $PROG port STATE_DIR I             print server I's client port
       $PROG connect STATE_DIR            print the connect string
       $PROG mntr STATE_DIR [I]           print 'mntr' of server I (default: every server)
       $PROG leader STATE_DIR             print the index of the leader
       $PROG status STATE_DIR             one line per server: index port pid state mode
EOF
}

# ---- small helpers ------------------------------------------------------------------------

# four_letter PORT WORD [TIMEOUT_S]: send a four-letter word, print the reply.  python3 rather
# than bash's /dev/tcp because a paused (SIGSTOP) server accepts connections but never answers,
# and every step here needs a timeout.
four_letter() {
    python3 - "$1" "$2" "${3:-2}" <<'EOF'
import socket, sys
port, word, timeout = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3])
try:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word)
        reply = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply.append(chunk)
except OSError:
    sys.exit(1)
sys.stdout.write(b"".join(reply).decode("utf-8", "replace"))
EOF
}

# is_server_of PID CFG: is PID a java process started with this exact zoo.cfg?
is_server_of() {
    grep -qzxF -- "$2" "/proc/$1/cmdline" 2>/dev/null
}

# server_pids_under PREFIX: pids of every server whose zoo.cfg lies under PREFIX (a directory
# path ending in /), found by command line; this is what makes `stop` robust to lost pid files.
server_pids_under() {
    local prefix=$1 f pid args
    for f in $(grep -l -a -F -- "$prefix" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        args=$(cmdline_args "$pid") || continue
        local is_zk=0 has_cfg=0 a
        while IFS= read -r a; do
            if [[ $a == org.apache.zookeeper.server.* ]]; then is_zk=1; fi
            if [[ $a == "$prefix"*/zoo.cfg ]]; then has_cfg=1; fi
        done <<<"$args"
        if [[ $is_zk -eq 1 && $has_cfg -eq 1 ]]; then echo "$pid"; fi
    done
}

# kill_and_wait SIGNAL PID...: signal the processes (and SIGCONT them, so a paused server can
# handle SIGTERM), wait up to 10 s for them to go, then SIGKILL whatever is left.
kill_and_wait() {
    local sig=$1 pid left i
    shift
    [[ $# -gt 0 ]] || return 0
    kill "-$sig" "$@" 2>/dev/null || true
    kill -CONT "$@" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        left=()
        for pid in "$@"; do
            if alive "$pid"; then left+=("$pid"); fi
        done
        [[ ${#left[@]} -eq 0 ]] && return 0
        if [[ $i -eq 50 ]]; then kill -KILL "${left[@]}" 2>/dev/null || true; fi
        sleep 0.1
    done
    kill -KILL "${left[@]}" 2>/dev/null || true
    echo "$PROG: warning: processes ${left[*]} did not exit" >&2
}

# ---- state dir -----------------------------------------------------------------------------

STATE=
NSERVERS=

load_state() {
    STATE=$(abs_path "$1")
    [[ -f $STATE/zk.state ]] || die "no servers recorded in '$STATE' (run: $PROG start $STATE)"
    NSERVERS=$(sed -n 's/^servers=//p' "$STATE/zk.state")
    [[ $NSERVERS =~ ^[0-9]+$ ]] || die "corrupt '$STATE/zk.state'"
}

check_index() {
    [[ $1 =~ ^[0-9]+$ && $1 -ge 1 && $1 -le $NSERVERS ]] ||
        die "server index '$1' is not in 1..$NSERVERS"
}

server_pid() {
    local pid
    pid=$(cat "$STATE/s$1/pid" 2>/dev/null) || return 0
    if alive "$pid" && is_server_of "$pid" "$STATE/s$1/zoo.cfg"; then echo "$pid"; fi
}

client_port() {
    cat "$STATE/s$1/client_port"
}

# server_mode I: standalone / leader / follower / observer, or nothing if it does not serve.
server_mode() {
    local pid port reply
    pid=$(server_pid "$1")
    [[ -n $pid && $(proc_state "$pid") != T ]] || return 0
    port=$(client_port "$1")
    reply=$(four_letter "$port" srvr 2) || return 0
    sed -n 's/^Mode: //p' <<<"$reply"
}

# serving I: does server I answer ruok and take part in a working quorum?
serving() {
    local mode
    [[ $(four_letter "$(client_port "$1")" ruok 2 || true) == imok ]] || return 1
    mode=$(server_mode "$1")
    [[ $mode == standalone || $mode == leader || $mode == follower ]]
}

write_config() {
    local i=$1 client=$2 sd="$STATE/s$1" j
    mkdir -p "$sd/data"
    echo "$i" >"$sd/data/myid"
    echo "$client" >"$sd/client_port"
    {
        echo "# reign test server $i of $NSERVERS (written by $PROG; thrown away by '$PROG stop')"
        echo "tickTime=200"
        # Sessions may be as short as 2 ticks, so tests of expiry run quickly.
        echo "minSessionTimeout=400"
        echo "maxSessionTimeout=60000"
        echo "dataDir=$sd/data"
        echo "clientPort=$client"
        echo "clientPortAddress=127.0.0.1"
        # Every test and benchmark client comes from 127.0.0.1: no per-address cap.
        echo "maxClientCnxns=0"
        echo "4lw.commands.whitelist=*"
        echo "admin.enableServer=false"
        # Throwaway data: skip fsync (a killed server keeps what it wrote; only a machine crash
        # would lose it) and keep preallocated log files small.
        echo "forceSync=no"
        echo "preAllocSize=4096"
        if [[ $NSERVERS -gt 1 ]]; then
            # In ticks: 10 s to sync with a leader, 3 s of silence before a peer is dropped.
            echo "initLimit=50"
            echo "syncLimit=15"
            for ((j = 1; j <= NSERVERS; j++)); do
                echo "server.$j=127.0.0.1:${QUORUM_PORTS[j]}:${ELECTION_PORTS[j]}"
            done
        fi
    } >"$sd/zoo.cfg"
}

launch_server() {
    local i=$1 sd="$STATE/s$1" main=org.apache.zookeeper.server.ZooKeeperServerMain
    if [[ $NSERVERS -gt 1 ]]; then main=org.apache.zookeeper.server.quorum.QuorumPeerMain; fi
    echo "=== $PROG: starting server $i at $(date '+%F %T') ===" >>"$sd/zookeeper.log"
    # Its own session: a Ctrl-C or a group kill aimed at the caller does not reach it (the
    # watchdog and `stop` take care of it); stdio away from the caller's pipes, so ctest does
    # not wait for the server to close them.
    setsid "$JAVA" "${JAVA_OPTS[@]}" -Dzookeeper.log.dir="$sd" \
        -Dzookeeper.root.logger=INFO,CONSOLE -cp "$CLASSPATH_ZK" "$main" "$sd/zoo.cfg" \
        </dev/null >>"$sd/zookeeper.log" 2>&1 &
    echo $! >"$sd/pid"
}

# wait_serving I...: wait until every listed server serves.  Returns 0, 1 (timeout) or 2 (a
# server exited).
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
                echo "$PROG: server $i exited" >&2
                return 2
            fi
            still+=("$i")
        done
        [[ ${#still[@]} -eq 0 ]] && return 0
        if [[ $SECONDS -ge $deadline ]]; then
            echo "$PROG: server(s) ${still[*]} not serving after ${START_TIMEOUT}s" >&2
            return 1
        fi
        pending=("${still[@]}")
        sleep 0.2
    done
}

log_tails() {
    local i
    for ((i = 1; i <= NSERVERS; i++)); do
        echo "---- $STATE/s$i/zookeeper.log (last 40 lines) ----" >&2
        tail -n 40 "$STATE/s$i/zookeeper.log" >&2 2>/dev/null || true
    done
}

bind_conflict() {
    grep -qsE 'BindException|Address already in use' "$STATE"/s*/zookeeper.log
}

# ---- commands ------------------------------------------------------------------------------

cmd_start() {
    [[ $# -ge 1 && $# -le 2 ]] || {
        usage >&2
        exit 2
    }
    STATE=$(abs_path "$1")
    NSERVERS=${2:-1}
    [[ $NSERVERS =~ ^[1-9]$ ]] || die "number of servers '$NSERVERS' must be 1..9"
    command -v "$JAVA" >/dev/null || die "'$JAVA' not found (run scripts/deps.sh)"
    [[ -r /usr/share/java/zookeeper.jar ]] ||
        die "/usr/share/java/zookeeper.jar not found (run scripts/deps.sh)"

    # Whatever an earlier run left in this directory goes first.
    stop_state "$STATE"
    rm -rf -- "$STATE"
    mkdir -p -- "$STATE"

    local attempt i rc ports
    for attempt in 1 2 3; do
        local per=1
        if [[ $NSERVERS -gt 1 ]]; then per=3; fi
        mapfile -t ports < <(pick_ports $((NSERVERS * per)))
        [[ ${#ports[@]} -eq $((NSERVERS * per)) ]] || die "could not find free ports"
        CLIENT_PORTS=() QUORUM_PORTS=() ELECTION_PORTS=()
        for ((i = 1; i <= NSERVERS; i++)); do
            CLIENT_PORTS[i]=${ports[(i - 1) * per]}
            if [[ $per -eq 3 ]]; then
                QUORUM_PORTS[i]=${ports[(i - 1) * per + 1]}
                ELECTION_PORTS[i]=${ports[(i - 1) * per + 2]}
            fi
        done
        echo "servers=$NSERVERS" >"$STATE/zk.state"
        for ((i = 1; i <= NSERVERS; i++)); do write_config "$i" "${CLIENT_PORTS[i]}"; done
        for ((i = 1; i <= NSERVERS; i++)); do launch_server "$i"; done
        if [[ $attempt -eq 1 ]]; then start_watchdog; fi

        rc=0
        wait_serving $(seq 1 "$NSERVERS") || rc=$?
        if [[ $rc -eq 0 ]]; then
            local connect=
            for ((i = 1; i <= NSERVERS; i++)); do
                connect+="${connect:+,}127.0.0.1:${CLIENT_PORTS[i]}"
            done
            echo "$connect" >"$STATE/connect"
            echo "$connect"
            return 0
        fi
        if [[ $attempt -lt 3 ]] && bind_conflict; then
            echo "$PROG: port conflict, trying other ports" >&2
            stop_servers_of "$STATE"
            for ((i = 1; i <= NSERVERS; i++)); do
                mv -f "$STATE/s$i/zookeeper.log" "$STATE/s$i/zookeeper.log.attempt$attempt"
                rm -rf -- "$STATE/s$i/data"
            done
            continue
        fi
        break
    done
    log_tails
    stop_state "$STATE"
    die "ZooKeeper did not start (logs above, and under $STATE)"
}

# stop_servers_of STATE: stop every server of STATE (by pid file and by command line).
stop_servers_of() {
    local state=$1 pids=() d pid
    for d in "$state"/s*/; do
        [[ -f $d/pid ]] || continue
        pid=$(cat "$d/pid" 2>/dev/null || true)
        if [[ -n $pid ]] && alive "$pid" && is_server_of "$pid" "${d%/}/zoo.cfg"; then
            pids+=("$pid")
        fi
        rm -f -- "$d/pid"
    done
    for pid in $(server_pids_under "$state/"); do
        [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid")
    done
    kill_and_wait TERM "${pids[@]}"
}

# stop_state STATE: stop the watchdog and the servers, remove data; logs stay.
stop_state() {
    local state=$1 wpid
    [[ -d $state ]] || return 0
    wpid=$(cat "$state/watchdog.pid" 2>/dev/null || true)
    if [[ -n $wpid && $wpid != "$BASHPID" ]] &&
        grep -qzx -- __watch "/proc/$wpid/cmdline" 2>/dev/null; then
        kill -TERM "$wpid" 2>/dev/null || true
    fi
    rm -f -- "$state/watchdog.pid" "$state/zk.state" "$state/connect"
    stop_servers_of "$state"
    rm -rf -- "$state"/s*/data
}

# stop-all-under (lib/server-common.sh) stops the servers it finds this way.
stop_servers() { kill_and_wait TERM "$@"; }

cmd_stop_server() {
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    check_index "$2"
    local pid i
    pid=$(server_pid "$2")
    if [[ -n $pid ]]; then
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            alive "$pid" || break
            sleep 0.05
        done
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
    if [[ -z $(server_pid "$2") ]]; then launch_server "$2"; fi
    local rc=0
    wait_serving "$2" || rc=$?
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$STATE/s$2/zookeeper.log" >&2 || true
        die "server $2 did not serve again"
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
    [[ -n $pid ]] || die "server $2 is not running"
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

cmd_connect() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    cat "$STATE/connect" 2>/dev/null || die "no connect string in '$STATE' (servers starting?)"
}

cmd_mntr() {
    [[ $# -ge 1 && $# -le 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    local i rc=0
    if [[ $# -eq 2 ]]; then
        check_index "$2"
        four_letter "$(client_port "$2")" mntr 5 || die "server $2 did not answer mntr"
        return 0
    fi
    for ((i = 1; i <= NSERVERS; i++)); do
        if [[ $NSERVERS -gt 1 ]]; then echo "# server $i port $(client_port "$i")"; fi
        four_letter "$(client_port "$i")" mntr 5 || {
            echo "# server $i did not answer"
            rc=1
        }
    done
    return $rc
}

cmd_leader() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    local i mode
    for ((i = 1; i <= NSERVERS; i++)); do
        mode=$(server_mode "$i")
        if [[ $mode == leader || $mode == standalone ]]; then
            echo "$i"
            return 0
        fi
    done
    die "no server of '$STATE' is leading"
}

cmd_status() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    local i pid state mode
    for ((i = 1; i <= NSERVERS; i++)); do
        pid=$(server_pid "$i")
        state=$(run_state "$pid")
        mode=$(server_mode "$i")
        echo "$i $(client_port "$i") ${pid:--} $state ${mode:--}"
    done
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
    connect) cmd_connect "$@" ;;
    mntr) cmd_mntr "$@" ;;
    leader) cmd_leader "$@" ;;
    status) cmd_status "$@" ;;
    __watch) cmd_watch "$@" ;;
    -h | --help | help) usage ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
