# shellcheck shell=bash
# sql-server.sh - what mariadb.sh and pg.sh share: both run one server per state dir (zk.sh runs
# several, and has its own), with the same commands and the same life cycle; each script keeps
# only what its server does its own way.  Sourced after server-common.sh.  A script sets
#
#   STATE_MARKER, WATCH_CMD   (see server-common.sh)
#   SERVER_NAME               its server's name in messages (MariaDB, PostgreSQL)
#   SERVER_LOG                its server's log file in the state dir
#   URI_SCHEME                the scheme of the URI `start` prints (mysql, postgres)
#   STARTED_FILE              a file `start` writes once the server serves (start-server wants it)
#   SERVE_POLL_S              how often wait_serving asks whether the server answers
#   BIND_CONFLICT_RE          what its log says when the port was taken (grep -E)
#   SQL_CLIENT_ARGS           what makes its client print rows tab-separated, without a header,
#                             in database reign
#   USAGE_START, USAGE_SHUTDOWN, USAGE_KILL, USAGE_PAUSE, USAGE_RESUME, USAGE_SQL
#                             the lines of the usage text that differ
#
# and defines
#
#   check_programs            `start`: die unless the server's programs are installed
#   prepare_data              `start`: the data directory, initialised (and the port, if that
#                             needs it: see new_port)
#   setup_users               `start`: once it serves, the database `reign` and its users
#   data_arg                  the argument naming $STATE's data dir in its server's command line
#   server_pids_under PREFIX  servers whose state dir lies under PREFIX, by command line
#   stop_servers PID...       a clean shutdown of those servers, SIGKILL after a while
#   remove_data STATE         `stop`: the data and whatever else the server left in STATE
#   launch_server, ping_server, client
#
# and may redefine the defaults below: state_loaded, port_changed, server_children,
# server_stopped, sweep_under and setup_tls.  It ends with `sql_main "$@"`.

# shellcheck disable=SC2034 # read by server-common.sh
OWNER_ENV=REIGN_SQL_OWNER_PID
START_TIMEOUT=${REIGN_SQL_START_TIMEOUT:-60}
PATH=$PATH:/usr/sbin:/sbin

usage() {
    cat <<EOF
usage: $PROG start STATE_DIR          $USAGE_START
       $PROG stop STATE_DIR           stop the server, remove its data (logs stay)
       $PROG restart STATE_DIR        $USAGE_SHUTDOWN shutdown, then start again: same data, same port
       $PROG stop-server STATE_DIR    $USAGE_SHUTDOWN shutdown, data kept (start-server brings it back)
       $PROG kill-server STATE_DIR    $USAGE_KILL
       $PROG start-server STATE_DIR   start a stopped or killed server again, wait until it serves
       $PROG pause-server STATE_DIR   $USAGE_PAUSE
       $PROG resume-server STATE_DIR  $USAGE_RESUME
       $PROG port STATE_DIR           print the TCP port
       $PROG connect-uri STATE_DIR    print the URI ($URI_SCHEME://reign@127.0.0.1:PORT/reign)
       $PROG sql STATE_DIR SQL|-      $USAGE_SQL
       $PROG status STATE_DIR         one line: port pid running|paused|stopped
       $PROG stop-all-under DIR       stop every server of every state dir under DIR
EOF
}

# ---- defaults a script may redefine --------------------------------------------------------

state_loaded() { :; }    # after load_state has set STATE
port_changed() { :; }    # after new_port has written STATE/port
server_children() { :; } # PID: the server's processes besides PID, one per line
server_stopped() { :; }  # STATE: after its server was stopped or killed (what it left running)

# setup_tls: the throwaway CA and certificates of REIGN_SQL_TLS=1, under STATE/tls.
setup_tls() {
    make_tls "$STATE/tls"
}

# ---- state dir -----------------------------------------------------------------------------

STATE=

load_state() {
    STATE=$(abs_path "$1")
    [[ -f $STATE/$STATE_MARKER ]] ||
        die "no server recorded in '$STATE' (run: $PROG start $STATE)"
    state_loaded
}

port_of() {
    cat "$STATE/port"
}

# new_port: a free port for the server, in STATE/port.
new_port() {
    pick_ports 1 >"$STATE/port" || die "could not find a free port"
    port_changed
}

# server_pid: the recorded server pid, if that process is alive and is $STATE's server.
server_pid() {
    local pid
    pid=$(cat "$STATE/pid" 2>/dev/null) || return 0
    if alive "$pid" && grep -qzxF -- "$(data_arg)" "/proc/$pid/cmdline" 2>/dev/null; then
        echo "$pid"
    fi
}

log_tail() {
    echo "---- $STATE/$SERVER_LOG (last 40 lines) ----" >&2
    tail -n 40 "$STATE/$SERVER_LOG" >&2 2>/dev/null || true
}

# wait_serving: 0 once the server answers, 1 on timeout, 2 if it exited.
wait_serving() {
    local deadline=$((SECONDS + START_TIMEOUT)) pid
    pid=$(cat "$STATE/pid")
    while :; do
        if ping_server; then return 0; fi
        if ! alive "$pid"; then
            echo "$PROG: the server exited" >&2
            return 2
        fi
        if [[ $SECONDS -ge $deadline ]]; then
            echo "$PROG: the server did not answer within ${START_TIMEOUT}s" >&2
            return 1
        fi
        sleep "$SERVE_POLL_S"
    done
}

bind_conflict() {
    grep -qsE "$BIND_CONFLICT_RE" "$STATE/$SERVER_LOG"
}

# stop_server_of STATE: stop the server of STATE (by pid file and by command line).
stop_server_of() {
    local state=$1 pids=() pid
    pid=$(STATE=$state server_pid)
    if [[ -n $pid ]]; then pids+=("$pid"); fi
    for pid in $(server_pids_under "$state/"); do
        [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid")
    done
    stop_servers "${pids[@]}"
    rm -f -- "$state/pid"
    server_stopped "$state"
}

# stop_state STATE: stop the watchdog and the server, remove data; logs stay.
stop_state() {
    local state=$1 wpid
    [[ -d $state ]] || return 0
    wpid=$(cat "$state/watchdog.pid" 2>/dev/null || true)
    if [[ -n $wpid && $wpid != "$BASHPID" ]] &&
        grep -qzx -- "$WATCH_CMD" "/proc/$wpid/cmdline" 2>/dev/null; then
        kill -TERM "$wpid" 2>/dev/null || true
    fi
    rm -f -- "$state/watchdog.pid" "$state/$STATE_MARKER" "$state/uri"
    stop_server_of "$state"
    remove_data "$state"
}

# ---- commands ------------------------------------------------------------------------------

cmd_start() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    STATE=$(abs_path "$1")
    check_programs
    # Whatever an earlier run left in this directory goes first.
    stop_state "$STATE"
    rm -rf -- "$STATE"
    mkdir -p -- "$STATE"
    # From here on, a failure (die included) leaves nothing running.
    trap 'stop_state "$STATE"' EXIT
    : >"$STATE/$STATE_MARKER"
    start_watchdog
    prepare_data
    if [[ ${REIGN_SQL_TLS:-0} == 1 ]]; then setup_tls; fi

    local attempt rc
    for attempt in 1 2 3; do
        # prepare_data may have taken the first port already.
        if [[ $attempt -gt 1 || ! -f $STATE/port ]]; then new_port; fi
        launch_server
        rc=0
        wait_serving || rc=$?
        if [[ $rc -eq 0 ]]; then
            setup_users
            echo "$URI_SCHEME://reign@127.0.0.1:$(port_of)/reign" >"$STATE/uri"
            trap - EXIT
            cat "$STATE/uri"
            return 0
        fi
        if [[ $attempt -lt 3 && $rc -eq 2 ]] && bind_conflict; then
            echo "$PROG: port conflict, trying another port" >&2
            mv -f "$STATE/$SERVER_LOG" "$STATE/$SERVER_LOG.attempt$attempt"
            continue
        fi
        break
    done
    log_tail
    die "$SERVER_NAME did not start (log above, and under $STATE)"
}

cmd_stop_server() {
    load_state "$1"
    stop_server_of "$STATE"
}

cmd_kill_server() {
    load_state "$1"
    local pid all=()
    pid=$(server_pid)
    if [[ -n $pid ]]; then
        # The server stopped first, so it cannot start a new child meanwhile; then it and every
        # child at once.
        kill -STOP "$pid" 2>/dev/null || true
        mapfile -t all < <(server_children "$pid")
        kill -KILL "$pid" "${all[@]}" 2>/dev/null || true
        wait_gone 10 "$pid" "${all[@]}" || die "the server ($pid) survived SIGKILL"
    fi
    rm -f -- "$STATE/pid"
    server_stopped "$STATE"
}

cmd_start_server() {
    load_state "$1"
    [[ -f $STATE/$STARTED_FILE ]] || die "'$STATE' was never fully started"
    if [[ -z $(server_pid) ]]; then launch_server; fi
    local rc=0
    wait_serving || rc=$?
    if [[ $rc -ne 0 ]]; then
        log_tail
        die "the server did not serve again on port $(port_of)"
    fi
}

cmd_restart() {
    cmd_stop_server "$1"
    cmd_start_server "$1"
}

# pause/resume: every process of the server, not only the first, or its children would go on
# serving their connections.
cmd_signal_server() {
    local sig=$1 pid kids
    load_state "$2"
    pid=$(server_pid)
    [[ -n $pid ]] || die "the server is not running"
    if [[ $sig == STOP ]]; then
        # The server first: once all its threads are stopped it forks no more, and a child it
        # forked before that is already listed.  Then its children.
        pause_pids "$pid"
        mapfile -t kids < <(server_children "$pid")
        if [[ ${#kids[@]} -gt 0 ]]; then pause_pids "${kids[@]}"; fi
    else
        mapfile -t kids < <(server_children "$pid")
        if [[ ${#kids[@]} -gt 0 ]]; then kill -CONT "${kids[@]}" 2>/dev/null || true; fi
        kill -CONT "$pid"
    fi
}

cmd_port() {
    load_state "$1"
    port_of
}

cmd_uri() {
    load_state "$1"
    cat "$STATE/uri" 2>/dev/null || die "no uri in '$STATE' (server starting?)"
}

cmd_sql() {
    [[ $# -eq 2 ]] || {
        usage >&2
        exit 2
    }
    load_state "$1"
    if [[ $2 == - ]]; then
        client "${SQL_CLIENT_ARGS[@]}"
    else
        client "${SQL_CLIENT_ARGS[@]}" <<<"$2"
    fi
}

cmd_status() {
    load_state "$1"
    local pid
    pid=$(server_pid)
    echo "$(port_of) ${pid:--} $(run_state "$pid")"
}

# sql_main ARGS...: the command line of mariadb.sh and pg.sh (the same commands).
sql_main() {
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
    sql) cmd_sql "$@" ;;
    "$WATCH_CMD") cmd_watch "$@" ;;
    -h | --help | help) usage ;;
    restart | stop-server | kill-server | start-server | pause-server | resume-server | port | \
        connect-uri | status)
        [[ $# -eq 1 ]] || {
            usage >&2
            exit 2
        }
        case $cmd in
        restart) cmd_restart "$@" ;;
        stop-server) cmd_stop_server "$@" ;;
        kill-server) cmd_kill_server "$@" ;;
        start-server) cmd_start_server "$@" ;;
        pause-server) cmd_signal_server STOP "$@" ;;
        resume-server) cmd_signal_server CONT "$@" ;;
        port) cmd_port "$@" ;;
        connect-uri) cmd_uri "$@" ;;
        status) cmd_status "$@" ;;
        esac
        ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}
