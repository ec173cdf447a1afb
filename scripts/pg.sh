#!/usr/bin/env bash
# pg.sh - a throwaway PostgreSQL server for reign's SQL tests, demo and benchmarks.
#
# Runs initdb and postgres from Debian's `postgresql` package directly (no pg_ctlcluster, no
# service, nothing under /etc/postgresql or /var/lib/postgresql), on a free loopback port, with
# every file under one STATE_DIR:
#
#   STATE_DIR/pg.state          marker (present while the server is ours to run)
#   STATE_DIR/port              the TCP port on 127.0.0.1 (kept for `restart`)
#   STATE_DIR/uri               postgres://reign@127.0.0.1:PORT/reign (no password in it)
#   STATE_DIR/password          the password of roles `reign` and `reign_nogrants` (mode 0600,
#                               no newline at the end)
#   STATE_DIR/admin.pgpass      the superuser `postgres`'s password, as a .pgpass file (0600)
#   STATE_DIR/data/             the data directory (removed by `stop`)
#   STATE_DIR/.s.PGSQL.PORT     the unix socket
#   STATE_DIR/postgres.log      the server's output (kept after `stop`, for post-mortems)
#   STATE_DIR/pid, STATE_DIR/watchdog.pid
#   STATE_DIR/home              where data/ and the socket are: STATE_DIR itself, or see below
#   STATE_DIR/tls/              with REIGN_SQL_TLS=1 at `start`: a throwaway CA (ca.crt), the
#                               server's certificate for 127.0.0.1 signed by it, and another CA
#                               (other-ca.crt); the server then also speaks TLS (ssl=on)
#
# PostgreSQL refuses to run as root: when this script runs as root, initdb and postgres run as
# the unprivileged user REIGN_PG_USER (default: `postgres`, which Debian's package creates), the
# state dir is handed to that user, and the files meant for the caller stay root's.  When that
# user cannot reach STATE_DIR (a directory above it is private, like /root), or when the socket's
# path would be too long, data/ and the socket go to a directory of their own under /tmp instead
# (named in STATE_DIR/home, removed by `stop`); the server's command line names STATE_DIR all
# the same (-c reign.state_dir=...), so it is found again.
#
# Roles: `reign` owns database `reign`; `reign_nogrants` can log in but may not connect to
# `reign` (CONNECT is revoked from PUBLIC there), for tests of permission errors.  TCP
# connections from 127.0.0.1 need a password (scram-sha-256).
#
# For speed, fsync and full_page_writes are off: a killed server loses nothing (the kernel has
# the writes), only a machine crash would.  synchronous_commit stays on: with fsync off it costs
# a write() per commit, and off it would let a killed server forget commits it had acknowledged
# (a leader's renewal), which the "server restarted under a leader" tests must not see.
#
# A test killed half-way must never leave postgres running: the postmaster is found again by
# its command line (-D STATE_DIR/data), its backends by their parent; and with
# REIGN_SQL_OWNER_PID set (a pid, or "parent" for the process that ran `pg.sh start`), a small
# watchdog stops the server when that process goes away.
#
# Environment: REIGN_SQL_START_TIMEOUT (seconds, default 60), REIGN_SQL_OWNER_PID, REIGN_SQL_TLS,
# REIGN_PG_USER (see above), REIGN_PG_BINDIR (default: Debian's newest, e.g.
# /usr/lib/postgresql/15/bin), REIGN_SERVER_PRELOAD (a library the server process alone
# loads, e.g. libfaketime for the clock-step tests; nothing else the script runs loads it).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=pg.sh
# shellcheck source-path=SCRIPTDIR source=lib/server-common.sh
. "$(dirname "$SELF")/lib/server-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/sql-server.sh
. "$(dirname "$SELF")/lib/sql-server.sh"
STATE_MARKER=pg.state
WATCH_CMD=__watch-pg
SERVER_NAME=PostgreSQL
SERVER_LOG=postgres.log
URI_SCHEME=postgres
STARTED_FILE=password
SERVE_POLL_S=0.05
BIND_CONFLICT_RE='Address already in use|could not create any TCP/IP sockets'
SQL_CLIENT_ARGS=(-d reign -A -t -F $'\t')
USAGE_START='initdb, start, create roles and database (prints the uri)'
USAGE_SHUTDOWN=fast
USAGE_KILL='SIGKILL the postmaster and every backend (a crash)'
USAGE_PAUSE='SIGSTOP the postmaster and every backend'
USAGE_RESUME='SIGCONT them'
USAGE_SQL='run SQL (or stdin) as the superuser over TCP in database
                                      reign; rows are printed tab-separated, without a header'

# bindir: where initdb, postgres and pg_isready are (the newest Debian major by default).
bindir() {
    if [[ -n ${REIGN_PG_BINDIR:-} ]]; then
        echo "$REIGN_PG_BINDIR"
        return 0
    fi
    local d
    d=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null |
        sort -V | tail -n 1)
    [[ -n $d && -x $d/postgres ]] || die "PostgreSQL not found under /usr/lib/postgresql " \
        "(run scripts/deps.sh)"
    echo "$d"
}

# children_of PID: the live processes whose parent is PID (a postmaster's backends, checkpointer,
# walwriter...: each sits in a session of its own, so no process group covers them all).
children_of() {
    ps -o pid=,stat= --ppid "$1" 2>/dev/null | awk '$2 !~ /^[ZX]/ { print $1 }' || true
}

# server_pids_under PREFIX: postmasters whose data directory (-D) or state dir
# (-c reign.state_dir=) lies under PREFIX (a path ending in /), found by command line; this is
# what makes `stop` robust to lost pid files.
server_pids_under() {
    local prefix=$1 f pid args
    for f in $(grep -l -a -F -- "$prefix" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        args=$(cmdline_args "$pid") || continue
        local first=1 is_server=0 prev='' has_dir=0 a
        while IFS= read -r a; do
            if [[ $first -eq 1 && ($a == */postgres || $a == postgres) ]]; then is_server=1; fi
            first=0
            if [[ $prev == -D && $a == "$prefix"* ]]; then has_dir=1; fi
            if [[ $prev == -c && $a == "reign.state_dir=$prefix"* ]]; then has_dir=1; fi
            prev=$a
        done <<<"$args"
        if [[ $is_server -eq 1 && $has_dir -eq 1 ]] && alive "$pid"; then echo "$pid"; fi
    done
}

# pg_procs_under PREFIX: every postgres process (postmaster, backend, checkpointer...) whose
# working directory lies under PREFIX: they all chdir to their data directory, and this finds
# the children of a postmaster that died, which no command line or parent names any more.
pg_procs_under() {
    local link pid exe
    for link in $(find /proc/[0-9]*/cwd -maxdepth 0 -lname "$1*" 2>/dev/null || true); do
        pid=${link#/proc/}
        pid=${pid%/cwd}
        exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
        if [[ $exe == */postgres ]] && alive "$pid"; then echo "$pid"; fi
    done
}

# stop_servers PID...: a fast shutdown (SIGINT: backends are told to quit, the last
# checkpoint is written), with everything SIGCONTed first so a paused server can act on it; after
# 15 s an immediate shutdown (SIGQUIT), after 5 more SIGKILL for them and their children.
stop_servers() {
    [[ $# -gt 0 ]] || return 0
    local all=("$@") pid
    for pid in "$@"; do mapfile -t -O "${#all[@]}" all < <(children_of "$pid"); done
    kill -CONT "${all[@]}" 2>/dev/null || true
    kill -INT "$@" 2>/dev/null || true
    wait_gone 15 "${all[@]}" && return 0
    echo "$PROG: warning: $* still running 15 s after SIGINT, sending SIGQUIT" >&2
    kill -QUIT "$@" 2>/dev/null || true
    wait_gone 5 "${all[@]}" && return 0
    kill -KILL "${all[@]}" 2>/dev/null || true
    wait_gone 10 "${all[@]}" || echo "$PROG: warning: processes ${all[*]} did not exit" >&2
}

# ---- the server ----------------------------------------------------------------------------

RUN_AS=()

# set_run_as: as root, run the server's programs as REIGN_PG_USER through setpriv, which execs
# (no parent left between us and postgres, so the recorded pid is the postmaster's).
set_run_as() {
    RUN_AS=()
    RUN_USER=$(id -un)
    if [[ $(id -u) -eq 0 ]]; then
        RUN_USER=${REIGN_PG_USER:-postgres}
        id -u "$RUN_USER" >/dev/null 2>&1 ||
            die "user '$RUN_USER' does not exist (install postgresql, or set REIGN_PG_USER)"
        RUN_AS=(setpriv --reuid="$RUN_USER" --regid="$(id -g "$RUN_USER")" --init-groups --)
    fi
}

# home: the directory of data/ and the socket (STATE_DIR, or one under /tmp).
home() {
    cat "$STATE/home" 2>/dev/null || echo "$STATE"
}

# data_arg: how $STATE's server names its data dir on its command line (-D).
data_arg() {
    echo "$(home)/data"
}

# client ARGS...: psql as the superuser over TCP, nothing read from ~/.psqlrc or the
# environment's PG* settings but the password file.
client() {
    env -i PATH="$PATH" PGPASSFILE="$STATE/admin.pgpass" PGCONNECT_TIMEOUT=10 \
        "$(bindir)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port_of)" -U postgres "$@"
}

# ping_server: does the server accept connections?  Without the caller's PG* variables: with a
# PGPASSWORD in them, pg_isready would try it and fill the log with failed logins.
ping_server() {
    env -i PATH="$PATH" "$(bindir)/pg_isready" -q -h 127.0.0.1 -p "$(port_of)" -U postgres \
        -d postgres -t 2 >/dev/null 2>&1
}

# clear_stale_locks: a postmaster that was SIGKILLed leaves data/postmaster.pid and the socket's
# lock file behind, and postgres refuses to start while the pid in them exists, zombies included
# (where pid 1 is slow to reap orphans, as in some containers, a killed postmaster stays a zombie
# for a while).  Once that pid is dead or a zombie, the files are stale: remove them, and the shared
# memory segment postmaster.pid names.
clear_stale_locks() {
    local lock pid home
    home=$(home)
    for lock in "$home/data/postmaster.pid" "$home/.s.PGSQL.$(port_of).lock"; do
        [[ -f $lock ]] || continue
        pid=$(head -n 1 "$lock")
        if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid"; then continue; fi
        if [[ $lock == */postmaster.pid ]]; then remove_shm "$home"; fi
        rm -f -- "$lock" "${lock%.lock}"
    done
}

# choose_home: STATE_DIR if the server's user can work there and the socket's path
# (HOME/.s.PGSQL.PORT, 108 bytes at most with the terminating NUL) is short enough; else a new
# directory under /tmp.
choose_home() {
    local ok=1 home
    if [[ ${#RUN_AS[@]} -gt 0 ]]; then
        chown "$RUN_USER" "$STATE"
        "${RUN_AS[@]}" test -w "$STATE" -a -x "$STATE" || ok=0
    fi
    if [[ $((${#STATE} + 20)) -gt 100 ]]; then ok=0; fi
    if [[ $ok -eq 1 ]]; then
        echo "$STATE"
        return 0
    fi
    home=$(mktemp -d /tmp/reign-pg.XXXXXX)
    if [[ ${#RUN_AS[@]} -gt 0 ]]; then chown "$RUN_USER" "$home"; fi
    echo "$home"
}

launch_server() {
    local port home
    port=$(port_of)
    home=$(home)
    clear_stale_locks
    echo "=== $PROG: starting the server at $(date '+%F %T') ===" >>"$STATE/postgres.log"
    local tls=()
    if [[ -d $STATE/tls ]]; then
        tls=(-c ssl=on -c ssl_cert_file="$home/server.crt" -c ssl_key_file="$home/server.key")
    fi
    # Its own session: a Ctrl-C or a group kill aimed at the caller does not reach it (the
    # watchdog and `stop` take care of it); stdio away from the caller's pipes, so ctest does
    # not wait for the server to close them.  The log is opened here, by the caller.
    (
        cd "$home"
        exec setsid "${RUN_AS[@]}" "${SERVER_PRELOAD[@]}" "$(bindir)/postgres" -D "$home/data" -k "$home" \
            -c reign.state_dir="$STATE" \
            -h 127.0.0.1 -p "$port" -c fsync=off -c full_page_writes=off \
            -c synchronous_commit=on -c shared_buffers=16MB -c max_connections=200 \
            -c huge_pages=off -c max_wal_size=256MB -c logging_collector=off \
            -c log_line_prefix='%m [%p] %q%u@%d ' "${tls[@]}" \
            </dev/null >>"$STATE/postgres.log" 2>&1
    ) &
    echo $! >"$STATE/pid"
}

# initialise: initdb, as the run user, with the superuser's password from a file it can read.
initialise() {
    local admin_pw home
    admin_pw=$(new_password)
    home=$(home)
    (
        umask 077
        printf '%s\n' "$admin_pw" >"$home/admin.pw"
        printf '127.0.0.1:%s:*:postgres:%s\n' "$(port_of)" "$admin_pw" >"$STATE/admin.pgpass"
    )
    if [[ ${#RUN_AS[@]} -gt 0 ]]; then chown "$RUN_USER" "$home/admin.pw"; fi
    # Password (scram-sha-256) for TCP, the OS user for the unix socket; no fsync of the new
    # files: the data are thrown away anyway.
    if ! (cd "$home" && "${RUN_AS[@]}" "$(bindir)/initdb" -D "$home/data" -U postgres \
        --pwfile="$home/admin.pw" --auth-host=scram-sha-256 --auth-local=peer \
        --encoding=UTF8 --locale=C.UTF-8 --no-sync) >"$STATE/initdb.log" 2>&1; then
        rm -f -- "$home/admin.pw"
        tail -n 40 "$STATE/initdb.log" >&2
        die "initdb failed (log: $STATE/initdb.log)"
    fi
    rm -f -- "$home/admin.pw"
}

# setup_users: database `reign` owned by role `reign`, role `reign_nogrants` kept out of it.  The
# SQL goes through stdin, so no password shows on a command line.
setup_users() {
    local pw
    pw=$(new_password)
    (
        umask 077
        printf '%s' "$pw" >"$STATE/password"
    )
    client -d postgres <<EOF || die "could not create the database and roles (log above)"
CREATE ROLE reign LOGIN PASSWORD '$pw';
CREATE ROLE reign_nogrants LOGIN PASSWORD '$pw';
CREATE DATABASE reign OWNER reign;
REVOKE ALL ON DATABASE reign FROM PUBLIC;
EOF
}

# ---- what sql-server.sh's commands leave to this script ------------------------------------

# setup_tls: the CA and certificates under STATE/tls (the caller's), the server's key and
# certificate also in its home, owned by the user it runs as (postgres wants its key 0600).
setup_tls() {
    local h
    make_tls "$STATE/tls"
    h=$(home)
    cp -- "$STATE/tls/server.crt" "$STATE/tls/server.key" "$h/"
    chmod 600 "$h/server.key"
    if [[ ${#RUN_AS[@]} -gt 0 ]]; then chown "$RUN_USER" "$h/server.crt" "$h/server.key"; fi
}

check_programs() {
    set_run_as
    bindir >/dev/null
}

# prepare_data: the port first, since the superuser's password file names it.
prepare_data() {
    new_port
    choose_home >"$STATE/home"
    initialise
}

# port_changed: a new port after a port conflict goes into the superuser's password file too.
port_changed() {
    if [[ -f $STATE/admin.pgpass ]]; then
        sed -i "s/^127\.0\.0\.1:[0-9]*:/127.0.0.1:$(port_of):/" "$STATE/admin.pgpass"
    fi
}

state_loaded() {
    set_run_as
}

server_children() {
    children_of "$1"
}

# server_stopped STATE: any process of a postmaster that died before (they quit by themselves
# once they notice; SIGKILL after 5 s).
server_stopped() {
    local state=$1 home
    kill_orphans "$state/"
    home=$(STATE=$state home)
    if [[ $home != "$state" ]]; then kill_orphans "$home/"; fi
}

# kill_orphans PREFIX: postgres processes left under PREFIX by a postmaster that is gone.
kill_orphans() {
    local pids=()
    mapfile -t pids < <(pg_procs_under "$1")
    [[ ${#pids[@]} -gt 0 ]] || return 0
    kill -CONT "${pids[@]}" 2>/dev/null || true
    wait_gone 5 "${pids[@]}" && return 0
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait_gone 10 "${pids[@]}" || echo "$PROG: warning: processes ${pids[*]} did not exit" >&2
}

# remove_data STATE: the data, the sockets, the shared memory of a killed postmaster, and the
# home under /tmp if it has one.
remove_data() {
    local state=$1 home
    home=$(STATE=$state home)
    remove_shm "$home"
    rm -rf -- "$home/data" "$home"/.s.PGSQL.*
    if [[ $home == /tmp/reign-pg.* ]]; then rm -rf -- "$home"; fi
}

# remove_shm HOME: a postmaster killed with SIGKILL leaves its small System V segment behind
# (its key and id are on line 7 of postmaster.pid); remove it once nothing is attached.
remove_shm() {
    local line id nattch
    line=$(sed -n 7p "$1/data/postmaster.pid" 2>/dev/null || true)
    id=${line##* }
    [[ $id =~ ^[0-9]+$ ]] || return 0
    nattch=$(ipcs -m -i "$id" 2>/dev/null | sed -n 's/.*nattch=\([0-9]*\).*/\1/p' || true)
    if [[ $nattch == 0 ]]; then ipcrm -m "$id" 2>/dev/null || true; fi
}

# sweep_under DIR: after stop-all-under, what postmasters that died left under DIR.
sweep_under() {
    local dir=$1
    kill_orphans "$dir/"
    # Shared memory of killed postmasters whose state dir was not marked.
    local lock
    if [[ -d $dir ]]; then
        while IFS= read -r -d '' lock; do
            remove_shm "$(dirname -- "$(dirname -- "$lock")")"
        done < <(find "$dir" -maxdepth 9 -name postmaster.pid -path '*/data/*' -type f \
            -print0 2>/dev/null)
    fi
}

sql_main "$@"
