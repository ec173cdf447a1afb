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
# REIGN_MARIADBD (the server binary, default: mariadbd from PATH or /usr/sbin),
# REIGN_SERVER_PRELOAD (a library the server process alone loads, e.g. libfaketime for the
# clock-step tests; nothing else the script runs loads it).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=mariadb.sh
# shellcheck source-path=SCRIPTDIR source=lib/server-common.sh
. "$(dirname "$SELF")/lib/server-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/sql-server.sh
. "$(dirname "$SELF")/lib/sql-server.sh"
STATE_MARKER=mariadb.state
WATCH_CMD=__watch-mariadb
SERVER_NAME=MariaDB
SERVER_LOG=mariadb.log
URI_SCHEME=mysql
STARTED_FILE=admin.cnf
SERVE_POLL_S=0.1
BIND_CONFLICT_RE='Address already in use|Do you already have another .* running'
SQL_CLIENT_ARGS=(--batch --skip-column-names reign)
USAGE_START='initialise a data directory, start, create users (prints uri)'
USAGE_SHUTDOWN=clean
USAGE_KILL='SIGKILL the server, data kept (a crash)'
USAGE_PAUSE='SIGSTOP the server'
USAGE_RESUME='SIGCONT the server'
USAGE_SQL='run SQL (or stdin) as root over TCP in database reign;
                                      rows are printed tab-separated, without a header'

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

# stop_servers PID...: SIGTERM (a clean shutdown; SIGCONT too, so a paused server can act on
# it), up to 30 s, then SIGKILL whatever is left.
stop_servers() {
    [[ $# -gt 0 ]] || return 0
    kill -TERM "$@" 2>/dev/null || true
    kill -CONT "$@" 2>/dev/null || true
    wait_gone 30 "$@" && return 0
    echo "$PROG: warning: $* ignored SIGTERM for 30 s, killing" >&2
    kill -KILL "$@" 2>/dev/null || true
    wait_gone 10 "$@" || echo "$PROG: warning: processes $* did not exit" >&2
}

# ---- the server ----------------------------------------------------------------------------

# data_arg: how $STATE's server names its data dir on its command line.
data_arg() {
    echo "--datadir=$STATE/data"
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
    setsid "${SERVER_PRELOAD[@]}" "${REIGN_MARIADBD:-mariadbd}" --no-defaults "${as_root[@]}" \
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

# ---- what sql-server.sh's commands leave to this script ------------------------------------

check_programs() {
    command -v "${REIGN_MARIADBD:-mariadbd}" >/dev/null ||
        die "mariadbd not found (run scripts/deps.sh)"
    command -v mariadb-install-db >/dev/null || die "mariadb-install-db not found (deps.sh)"
    command -v mariadb >/dev/null || die "the mariadb client not found (run scripts/deps.sh)"
}

prepare_data() {
    socket_path >"$STATE/socket"
    initialise
}

# remove_data STATE: the data, and the socket's directory under /tmp if it has one.
remove_data() {
    local state=$1 sock
    sock=$(cat "$state/socket" 2>/dev/null || true)
    if [[ $sock == /tmp/reign-mariadb.*/mysqld.sock ]]; then rm -rf -- "$(dirname -- "$sock")"; fi
    rm -rf -- "$state/data" "$state/tmp"
}

sql_main "$@"
