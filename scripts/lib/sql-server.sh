# shellcheck shell=bash
# sql-server.sh - the commands mariadb.sh and pg.sh share: both run one server per state dir
# (zk.sh runs several, and has its own).  Sourced after server-common.sh; each script sets
# SERVER_LOG (its server's log file in the state dir) and SQL_CLIENT_ARGS (what makes its
# client print rows tab-separated, without a header, in database reign), defines usage,
# load_state, server_pid, stop_server_of, client and the commands that differ (cmd_start,
# cmd_start_server, cmd_kill_server, cmd_signal_server, cmd_stop_all_under), and ends with
# `sql_main "$@"`.

port_of() {
    cat "$STATE/port"
}

log_tail() {
    echo "---- $STATE/$SERVER_LOG (last 40 lines) ----" >&2
    tail -n 40 "$STATE/$SERVER_LOG" >&2 2>/dev/null || true
}

cmd_stop_server() {
    load_state "$1"
    stop_server_of "$STATE"
}

cmd_restart() {
    cmd_stop_server "$1"
    cmd_start_server "$1"
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
