#!/usr/bin/env bash
# mariadb.sh - a throwaway MariaDB server for reign's SQL tests, demo and benchmarks.
#
# Runs mariadbd from Debian's `mariadb-server` package directly (no systemd, no service, nothing
# read from or written to /etc/mysql or /var/lib/mysql: --no-defaults everywhere), on a free
# loopback port, with every file under one STATE_DIR:
#
#   STATE_DIR/mariadb.state   marker (present while the server is ours to run)
#   STATE_DIR/port            the TCP port on 127.0.0.1 (kept for `restart`)
#   STATE_DIR/uri             mysql://reign@127.0.0.1:PORT/reign (no password in it)
#   STATE_DIR/password        the password of users `reign` and `reign_nogrants` (mode 0600,
#                             no newline at the end)
#   STATE_DIR/admin.cnf       client options for the administrator, root (mode 0600)
#   STATE_DIR/data/           the data directory (removed by `stop`)
#   STATE_DIR/mariadb.log     the server's error log (kept after `stop`, for post-mortems)
#   STATE_DIR/pid, STATE_DIR/watchdog.pid, STATE_DIR/socket (path of the unix socket)
#   STATE_DIR/tls/            with REIGN_SQL_TLS=1 at `start`: a throwaway CA (ca.crt), the
#                             server's certificate for 127.0.0.1 signed by it, and another CA
#                             (other-ca.crt); the server then also speaks TLS
#
# Users: `reign` has every privilege on database `reign` and nothing else; `reign_nogrants` can
# log in but has no privilege at all (connecting to database `reign` is refused), for tests of
# permission errors.  Both accept TCP connections from 127.0.0.1 only by password.
#
# A test killed half-way must never leave mariadbd running: the server is found again by its
# command line (--datadir=STATE_DIR/data), so `stop` and `stop-all-under` work even when pid
# files are gone; and with REIGN_SQL_OWNER_PID set (a pid, or "parent" for the process that ran
# `mariadb.sh start`), a small watchdog stops the server when that process goes away.
#
# Environment: REIGN_SQL_START_TIMEOUT (seconds, default 60), REIGN_SQL_OWNER_PID, REIGN_SQL_TLS,
# REIGN_MARIADBD (the server binary, default: mariadbd from PATH or /usr/sbin).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=mariadb.sh
# shellcheck source-path=SCRIPTDIR source=lib/server-common.sh
. "$(dirname "$SELF")/lib/server-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/sql-server.sh
. "$(dirname "$SELF")/lib/sql-server.sh"
STATE_MARKER=mariadb.state
WATCH_CMD=__watch-mariadb
OWNER_ENV=REIGN_SQL_OWNER_PID
SERVER_LOG=mariadb.log
SQL_CLIENT_ARGS=(--batch --skip-column-names reign)
START_TIMEOUT=${REIGN_SQL_START_TIMEOUT:-60}
PATH=$PATH:/usr/sbin:/sbin

usage() {
    cat <<EOF
usage: $PROG start STATE_DIR          initialise a data directory, start, create users (prints uri)
       $PROG stop STATE_DIR           stop the server, remove its data (logs stay)
       $PROG restart STATE_DIR        clean shutdown, then start again: same data, same port
       $PROG stop-server STATE_DIR    clean shutdown, data kept (start-server brings it back)
       $PROG kill-server STATE_DIR    SIGKILL the server, data kept (a crash)
       $PROG start-server STATE_DIR   start a stopped or killed server again, wait until it serves
       $PROG pause-server STATE_DIR   SIGSTOP the server
       $PROG resume-server STATE_DIR  SIGCONT the server
       $PROG port STATE_DIR           print the TCP port
       $PROG connect-uri STATE_DIR    print the URI (mysql://reign@127.0.0.1:PORT/reign)
       $PROG sql STATE_DIR SQL|-      run SQL (or stdin) as root over TCP in database reign;
                                      rows are printed tab-separated, without a header
       $PROG status STATE_DIR         one line: port pid running|paused|stopped
       $PROG stop-all-under DIR       stop every server of every state dir under DIR
EOF
}

# server_pids_under PREFIX: pids of every mariadbd whose --datadir lies under PREFIX (a directory
# path ending in /), found by command line; this is what makes `stop` robust to lost pid files.
server_pids_under() {
    local prefix=$1 f pid args
    for f in $(grep -l -a -F -- "--datadir=$prefix" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        args=$(cmdline_args "$pid") || continue
        local first=1 is_server=0 has_dir=0 a
        while IFS= read -r a; do
            if [[ $first -eq 1 && ($a == */mariadbd || $a == mariadbd || $a == */mysqld ||
                $a == mysqld) ]]; then is_server=1; fi
            first=0
            if [[ $a == "--datadir=$prefix"* ]]; then has_dir=1; fi
        done <<<"$args"
        if [[ $is_server -eq 1 && $has_dir -eq 1 ]] && alive "$pid"; then echo "$pid"; fi
    done
}

# kill_and_wait PID...: SIGTERM (a clean shutdown; SIGCONT too, so a paused server can act on
# it), up to 30 s, then SIGKILL whatever is left.
kill_and_wait() {
    [[ $# -gt 0 ]] || return 0
    kill -TERM "$@" 2>/dev/null || true
    kill -CONT "$@" 2>/dev/null || true
    wait_gone 30 "$@" && return 0
    echo "$PROG: warning: $* ignored SIGTERM for 30 s, killing" >&2
    kill -KILL "$@" 2>/dev/null || true
    wait_gone 10 "$@" || echo "$PROG: warning: processes $* did not exit" >&2
}

# ---- state dir -----------------------------------------------------------------------------

STATE=

load_state() {
    STATE=$(abs_path "$1")
    [[ -f $STATE/mariadb.state ]] ||
        die "no server recorded in '$STATE' (run: $PROG start $STATE)"
}

server_pid() {
    local pid
    pid=$(cat "$STATE/pid" 2>/dev/null) || return 0
    if alive "$pid" && grep -qzxF -- "--datadir=$STATE/data" "/proc/$pid/cmdline" 2>/dev/null
    then
        echo "$pid"
    fi
}

# client ARGS...: the mariadb client as root over TCP (options from admin.cnf, nothing else).
client() {
    mariadb --defaults-file="$STATE/admin.cnf" --connect-timeout=10 "$@"
}

# ping: does a server answer on the port?  (`ping` succeeds even when access is denied, so it
# needs no credentials; the timeout covers a paused server, which accepts but never answers.)
ping_server() {
    mariadb-admin --no-defaults --protocol=TCP -h 127.0.0.1 -P "$(port_of)" --connect-timeout=2 \
        ping >/dev/null 2>&1
}

# socket_path: STATE_DIR/mysqld.sock, or one under a short directory in /tmp when that path is
# too long for a unix socket (108 bytes with the terminating NUL).
socket_path() {
    local sock=$STATE/mysqld.sock
    if [[ ${#sock} -gt 100 ]]; then
        sock=$(mktemp -d /tmp/reign-mariadb.XXXXXX)/mysqld.sock
    fi
    echo "$sock"
}

launch_server() {
    local port sock as_root=()
    port=$(port_of)
    sock=$(cat "$STATE/socket")
    mkdir -p "$STATE/tmp"
    # mariadbd refuses to run as root unless told to (tests and CI run as root).
    if [[ $(id -u) -eq 0 ]]; then as_root=(--user=root); fi
    local tls=()
    if [[ -d $STATE/tls ]]; then
        tls=(--ssl-ca="$STATE/tls/ca.crt" --ssl-cert="$STATE/tls/server.crt"
            --ssl-key="$STATE/tls/server.key")
    fi
    echo "=== $PROG: starting the server at $(date '+%F %T') ===" >>"$STATE/mariadb.log"
    # Its own session: a Ctrl-C or a group kill aimed at the caller does not reach it (the
    # watchdog and `stop` take care of it); stdio away from the caller's pipes, so ctest does
    # not wait for the server to close them.  Small caches for a fast start, several servers on
    # a small machine; innodb_flush_log_at_trx_commit=2 writes the log at each commit without
    # fsync, so a killed server loses nothing (only a machine crash would); no native AIO,
    # whose per-machine limit containers run out of.
    setsid "${REIGN_MARIADBD:-mariadbd}" --no-defaults "${as_root[@]}" \
        --datadir="$STATE/data" --tmpdir="$STATE/tmp" \
        --bind-address=127.0.0.1 --port="$port" --skip-networking=0 --socket="$sock" \
        --pid-file="$STATE/data/mariadbd.pid" --log-error="$STATE/mariadb.log" \
        --skip-name-resolve --skip-log-bin --performance-schema=OFF \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
        --max-connections=500 --innodb-buffer-pool-size=32M --innodb-log-file-size=8M \
        --innodb-log-buffer-size=4M --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 \
        --innodb-use-native-aio=0 --key-buffer-size=1M --aria-pagecache-buffer-size=8M \
        --query-cache-size=0 --query-cache-type=0 "${tls[@]}" \
        </dev/null >>"$STATE/mariadb.log" 2>&1 &
    echo $! >"$STATE/pid"
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
        sleep 0.1
    done
}

bind_conflict() {
    grep -qsE 'Address already in use|Do you already have another .* running' \
        "$STATE/mariadb.log"
}

# initialise: a fresh data directory with the system tables; root may log in from this host
# without a password until setup_users gives it one.
initialise() {
    local as_root=()
    if [[ $(id -u) -eq 0 ]]; then as_root=(--user=root); fi
    # A tmpdir of its own: two servers initialised at once must not share /tmp's temporary tables.
    mkdir -p "$STATE/data" "$STATE/tmp"
    if ! mariadb-install-db --no-defaults "${as_root[@]}" --datadir="$STATE/data" --tmpdir="$STATE/tmp" \
        --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
        --innodb-buffer-pool-size=32M --innodb-log-file-size=8M --innodb-use-native-aio=0 \
        >"$STATE/install-db.log" 2>&1; then
        tail -n 40 "$STATE/install-db.log" >&2
        die "mariadb-install-db failed (log: $STATE/install-db.log)"
    fi
}

# setup_users: root gets a password (kept only in admin.cnf), and loses its entry for this
# host's name (empty password; unused with --skip-name-resolve, but better gone); database
# `reign`, users `reign` and `reign_nogrants`.  The SQL goes through stdin, so no password
# shows on a command line.
setup_users() {
    local port admin_pw pw
    port=$(port_of)
    admin_pw=$(new_password)
    pw=$(new_password)
    (
        umask 077
        printf '%s' "$pw" >"$STATE/password"
        printf '[client]\nuser=root\npassword=""\nhost=127.0.0.1\nport=%s\nprotocol=TCP\n' \
            "$port" >"$STATE/admin.cnf"
    )
    client <<EOF || die "could not create the database and users (log: $STATE/mariadb.log)"
ALTER USER 'root'@'localhost' IDENTIFIED BY '$admin_pw';
ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '$admin_pw';
ALTER USER 'root'@'::1' IDENTIFIED BY '$admin_pw';
DELETE FROM mysql.global_priv WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');
FLUSH PRIVILEGES;
CREATE DATABASE reign CHARACTER SET utf8mb4;
CREATE USER 'reign'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON reign.* TO 'reign'@'%';
CREATE USER 'reign_nogrants'@'%' IDENTIFIED BY '$pw';
EOF
    (
        umask 077
        printf '[client]\nuser=root\npassword="%s"\nhost=127.0.0.1\nport=%s\nprotocol=TCP\n' \
            "$admin_pw" "$port" >"$STATE/admin.cnf"
    )
}

# ---- commands ------------------------------------------------------------------------------

cmd_start() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    STATE=$(abs_path "$1")
    command -v "${REIGN_MARIADBD:-mariadbd}" >/dev/null ||
        die "mariadbd not found (run scripts/deps.sh)"
    command -v mariadb-install-db >/dev/null || die "mariadb-install-db not found (deps.sh)"
    command -v mariadb >/dev/null || die "the mariadb client not found (run scripts/deps.sh)"

    # Whatever an earlier run left in this directory goes first.
    stop_state "$STATE"
    rm -rf -- "$STATE"
    mkdir -p -- "$STATE"
    # From here on, a failure (die included) leaves nothing running.
    trap 'stop_state "$STATE"' EXIT
    socket_path >"$STATE/socket"
    : >"$STATE/mariadb.state"
    start_watchdog
    initialise
    if [[ ${REIGN_SQL_TLS:-0} == 1 ]]; then make_tls "$STATE/tls"; fi

    local attempt rc
    for attempt in 1 2 3; do
        pick_ports 1 >"$STATE/port" || die "could not find a free port"
        launch_server
        rc=0
        wait_serving || rc=$?
        if [[ $rc -eq 0 ]]; then
            setup_users
            echo "mysql://reign@127.0.0.1:$(port_of)/reign" >"$STATE/uri"
            trap - EXIT
            cat "$STATE/uri"
            return 0
        fi
        if [[ $attempt -lt 3 && $rc -eq 2 ]] && bind_conflict; then
            echo "$PROG: port conflict, trying another port" >&2
            mv -f "$STATE/mariadb.log" "$STATE/mariadb.log.attempt$attempt"
            continue
        fi
        break
    done
    log_tail
    die "MariaDB did not start (log above, and under $STATE)"
}

# stop_server_of STATE: stop the server of STATE (by pid file and by command line), cleanly.
stop_server_of() {
    local state=$1 pids=() pid
    pid=$(STATE=$state server_pid)
    if [[ -n $pid ]]; then pids+=("$pid"); fi
    for pid in $(server_pids_under "$state/"); do
        [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid")
    done
    kill_and_wait "${pids[@]}"
    rm -f -- "$state/pid"
}

# stop_state STATE: stop the watchdog and the server, remove data; logs stay.
stop_state() {
    local state=$1 wpid sock
    [[ -d $state ]] || return 0
    wpid=$(cat "$state/watchdog.pid" 2>/dev/null || true)
    if [[ -n $wpid && $wpid != "$BASHPID" ]] &&
        grep -qzx -- __watch-mariadb "/proc/$wpid/cmdline" 2>/dev/null; then
        kill -TERM "$wpid" 2>/dev/null || true
    fi
    rm -f -- "$state/watchdog.pid" "$state/mariadb.state" "$state/uri"
    stop_server_of "$state"
    sock=$(cat "$state/socket" 2>/dev/null || true)
    if [[ $sock == /tmp/reign-mariadb.*/mysqld.sock ]]; then rm -rf -- "$(dirname -- "$sock")"; fi
    rm -rf -- "$state/data" "$state/tmp"
}

cmd_stop_all_under() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    local dir
    dir=$(abs_path "$1")
    stop_marked_under "$dir"
    local pids=()
    mapfile -t pids < <(server_pids_under "$dir/")
    kill_and_wait "${pids[@]}"
    # The process substitutions above (find, the pid scans) are not reaped by bash on their own;
    # wait for them, so none outlives this command with the state dir on its command line.
    wait
}

cmd_kill_server() {
    load_state "$1"
    local pid
    pid=$(server_pid)
    if [[ -n $pid ]]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone 10 "$pid" || die "the server ($pid) survived SIGKILL"
    fi
    rm -f -- "$STATE/pid"
}

cmd_start_server() {
    load_state "$1"
    [[ -f $STATE/admin.cnf ]] || die "'$STATE' was never fully started"
    if [[ -z $(server_pid) ]]; then launch_server; fi
    local rc=0
    wait_serving || rc=$?
    if [[ $rc -ne 0 ]]; then
        log_tail
        die "the server did not serve again on port $(port_of)"
    fi
}

cmd_signal_server() {
    local sig=$1
    load_state "$2"
    local pid
    pid=$(server_pid)
    [[ -n $pid ]] || die "the server is not running"
    if [[ $sig == STOP ]]; then pause_pids "$pid"; else kill -CONT "$pid"; fi
}

sql_main "$@"
