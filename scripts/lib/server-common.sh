# shellcheck shell=bash
# server-common.sh - helpers shared by zk.sh, etcd.sh, mariadb.sh and pg.sh (sourced; each script
# sets PROG, SELF, STATE_MARKER (its marker file in a state dir), WATCH_CMD (its watchdog's hidden
# command) and OWNER_ENV (the name of its owner-pid variable), and defines usage and
# stop_state, which these call).

# SERVER_PRELOAD: what goes before a server's command so that it, and nothing else the script
# runs, loads the library REIGN_SERVER_PRELOAD names (none: nothing goes before it).
SERVER_PRELOAD=()
if [[ -n ${REIGN_SERVER_PRELOAD:-} ]]; then
    SERVER_PRELOAD=(env "LD_PRELOAD=$REIGN_SERVER_PRELOAD")
fi

# pick_ports K: print K distinct free TCP ports on 127.0.0.1, one per line.  They are taken
# below the kernel's ephemeral range, so no outgoing connection can grab one between this
# check and the server's bind, and from 15000 up: the ports below are the tests' own daemons'
# (tests/reignd), so the two never race; all K stay bound until all are found, so they differ.
pick_ports() {
    python3 - "$1" <<'EOF'
import random, socket, sys
want = int(sys.argv[1])
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
lo, hi = (15000, low - 1) if low > 16000 else (1024, 65535)
held, ports = [], []
for _ in range(20000):
    if len(ports) == want:
        break
    port = random.randint(lo, hi)
    if port in ports:
        continue
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    held.append(s)
    ports.append(port)
if len(ports) < want:
    sys.exit("no free ports")
print("\n".join(map(str, ports)))
EOF
}

# new_password: 24 characters of [A-Za-z0-9_-], safe in SQL strings, URIs and option files.
new_password() {
    head -c 18 /dev/urandom | base64 | tr '+/' '-_'
}

# proc_stat_field PID N: field N (1-based, as in proc(5)) of /proc/PID/stat, or nothing.  The
# command name (field 2) may hold spaces and parentheses: fields are counted after its ')'.
proc_stat_field() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) }
    read -r -a fields <<<"$stat"
    echo "${fields[$2 - 3]}"
}

# proc_state PID: the one-letter state (R, S, T, Z, ...) or nothing if there is no such process.
proc_state() {
    proc_stat_field "$1" 3
}

# proc_start_time PID: start time in clock ticks since boot (field 22); with the pid it names
# one process for good, even if the pid is reused later.
proc_start_time() {
    proc_stat_field "$1" 22
}

die() {
    echo "$PROG: $*" >&2
    exit 1
}

# An absolute, normalised path that need not exist (servers are found by the
# path of their configuration in their command line).
abs_path() {
    realpath -m -- "$1"
}

# Is pid $1 a live process (not a zombie)?
alive() {
    local st
    st=$(proc_state "$1")
    [[ -n $st && $st != Z && $st != X ]]
}

# The command line of pid $1, one argument per line (nothing if it has just exited: the
# silencing comes first, so that a failed open of its cmdline says nothing either).
cmdline_args() {
    tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline"
}

cmd_stop() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    stop_state "$(abs_path "$1")"
}

# "stopped", "paused" or "running": the state of server pid $1 ("" when none).
run_state() {
    if [[ -z $1 ]]; then
        echo stopped
    elif [[ $(proc_state "$1") == T ]]; then
        echo paused
    else
        echo running
    fi
}

# watch_owner STATE STATEFILE OWNER OWNER_START: the watchdog's loop - stops STATE's servers
# once the owner process is gone (its start time no longer matches), or returns when
# STATE/STATEFILE is removed (the servers were stopped).
watch_owner() {
    local state=$1 file=$2 owner=$3 started=$4
    trap 'exit 0' TERM
    while [[ -f $state/$file ]]; do
        if [[ $(proc_start_time "$owner") != "$started" ]]; then
            stop_state "$state"
            exit 0
        fi
        sleep 1 &
        wait $! || true
    done
}

# wait_gone TIMEOUT_S PID...: wait until none of the processes is alive; 1 if some still are.
wait_gone() {
    local timeout=$1 pid i left
    shift
    for ((i = 0; i <= timeout * 20; i++)); do
        left=0
        for pid in "$@"; do
            if alive "$pid"; then left=1; fi
        done
        [[ $left -eq 0 ]] && return 0
        sleep 0.05
    done
    return 1
}

# stop_watchdogs PID...: SIGTERM the owner watchdogs and wait (up to 5 s) until they are gone, so
# a caller that looks for processes right after a stop finds none.
stop_watchdogs() {
    [[ $# -gt 0 ]] || return 0
    kill -TERM "$@" 2>/dev/null || true
    wait_gone 5 "$@" || echo "$PROG: warning: watchdogs $* did not exit" >&2
}

# all_threads_stopped PID: true when every thread of PID is stopped (T or t) or the process is
# gone or a zombie.  SIGSTOP is delivered to each thread on its own way back to user space, so a
# multi-threaded server (MariaDB, the JVM) is not stopped the instant kill returns.
all_threads_stopped() {
    local f stat
    for f in /proc/"$1"/task/*/stat; do
        stat=$(cat "$f" 2>/dev/null) || continue
        stat=${stat##*) }
        case ${stat%% *} in
        T | t | Z | X) ;;
        *) return 1 ;;
        esac
    done
    return 0
}

# wait_stopped TIMEOUT_S PID...: wait until every thread of every PID is stopped; 1 if some
# thread still runs after TIMEOUT_S seconds.
wait_stopped() {
    local timeout=$1 pid i left
    shift
    for ((i = 0; i <= timeout * 100; i++)); do
        left=0
        for pid in "$@"; do
            all_threads_stopped "$pid" || left=1
        done
        [[ $left -eq 0 ]] && return 0
        sleep 0.01
    done
    return 1
}

# pause_pids PID...: SIGSTOP the processes and return only once every thread of each is stopped.
pause_pids() {
    kill -STOP "$@" 2>/dev/null || true
    wait_stopped 10 "$@" || die "processes $* did not stop within 10 s"
}

# watchdog_pids_under PREFIX: watchdogs (`$PROG $WATCH_CMD STATE_DIR ...`) for state dirs under
# it.
watchdog_pids_under() {
    local prefix=$1 f pid args
    for f in $(grep -l -a -F -- "$WATCH_CMD" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        [[ $pid == "$BASHPID" ]] && continue
        args=$(cmdline_args "$pid") || continue
        local is_watch=0 has_dir=0 a
        while IFS= read -r a; do
            if [[ $a == "$WATCH_CMD" ]]; then is_watch=1; fi
            if [[ $a == "$prefix"* || $a/ == "$prefix" ]]; then has_dir=1; fi
        done <<<"$args"
        if [[ $is_watch -eq 1 && $has_dir -eq 1 ]]; then echo "$pid"; fi
    done
}

# start_watchdog: with the variable named by OWNER_ENV set (a pid, or "parent"), a watchdog
# that stops $STATE's servers once that process is gone.
start_watchdog() {
    local owner=${!OWNER_ENV:-}
    [[ -n $owner ]] || return 0
    if [[ $owner == parent ]]; then owner=$PPID; fi
    [[ $owner =~ ^[0-9]+$ ]] || die "$OWNER_ENV '$owner' is not a pid"
    local started
    started=$(proc_start_time "$owner")
    [[ -n $started ]] || die "owner process $owner does not exist"
    setsid bash "$SELF" "$WATCH_CMD" "$STATE" "$owner" "$started" </dev/null >/dev/null 2>&1 &
    echo $! >"$STATE/watchdog.pid"
}

# $WATCH_CMD STATE OWNER OWNER_START: stop STATE's servers once the owner process is gone.
cmd_watch() {
    watch_owner "$1" "$STATE_MARKER" "$2" "$3"
}

# stop_marked_under DIR: stops every state dir under DIR that has our marker, then the
# watchdogs left whose state dir is gone or unmarked.  The caller then stops the servers left
# (found by command line: server_pids_under), its own way.
stop_marked_under() {
    local dir=$1 marker
    if [[ -d $dir ]]; then
        while IFS= read -r -d '' marker; do
            stop_state "$(dirname -- "$marker")"
        done < <(find "$dir" -maxdepth 8 -name "$STATE_MARKER" -type f -print0 2>/dev/null)
    fi
    # shellcheck disable=SC2046 # one pid per word
    stop_watchdogs $(watchdog_pids_under "$dir/")
}

# make_tls DIR [client]: throwaway TLS material for a test server, made with Debian's openssl:
#   DIR/ca.crt, ca.key          a CA of its own (valid two days)
#   DIR/server.crt, server.key  the server's certificate for 127.0.0.1 and localhost, signed by it
#   DIR/other-ca.crt            another CA, which signed nothing: a client that trusts only it
#                               must refuse the server
# With `client`, for a server that asks its clients for a certificate, also
#   DIR/client.crt, client.key  a client's certificate signed by the CA (extendedKeyUsage
#                               clientAuth), and the server's may serve as a client's too: etcd's
#                               JSON gateway presents it to the member's own gRPC port
# Keys are EC P-256 (fast to make) and owner-only.
make_tls() {
    local dir=$1 client=${2:-} usage=serverAuth
    if [[ $client == client ]]; then usage=serverAuth,clientAuth; fi
    command -v openssl >/dev/null || die "openssl not found (Debian package openssl)"
    mkdir -p -- "$dir"
    (
        cd "$dir"
        umask 077
        local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
        openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 \
            -subj "/CN=reign throwaway test CA" 2>/dev/null
        openssl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.crt -days 2 \
            -subj "/CN=reign throwaway test CA" 2>/dev/null
        openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=127.0.0.1" \
            2>/dev/null
        printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
            "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=$usage" >server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -out server.crt -days 2 -extfile server.ext 2>/dev/null
        if [[ $client == client ]]; then
            openssl req "${ec[@]}" -keyout client.key -out client.csr \
                -subj "/CN=reign throwaway test client" 2>/dev/null
            printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature" \
                "extendedKeyUsage=clientAuth" >client.ext
            openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -out client.crt -days 2 -extfile client.ext 2>/dev/null
            rm -f client.csr client.ext
            chmod 644 client.crt
        fi
        rm -f server.csr server.ext ca.srl other-ca.key
        chmod 644 ca.crt other-ca.crt server.crt
    ) || die "could not make the TLS files under $dir"
}

# stop-all-under DIR: every server and watchdog a run under DIR left (a test's build tree, a
# crashed suite).  Each script says how its servers are found (server_pids_under DIR/) and
# stopped (stop_servers PID...); sweep_under DIR cleans what they leave behind, if anything.
sweep_under() { :; }

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
    stop_servers "${pids[@]}"
    sweep_under "$dir"
    # The process substitutions above (find, the pid scans) are not reaped by bash on their own;
    # wait for them, so none outlives this command with the state dir on its command line.
    wait
}
