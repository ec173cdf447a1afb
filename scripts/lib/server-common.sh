# shellcheck shell=bash
# server-common.sh - helpers shared, word for word, by zk.sh, mariadb.sh and
# pg.sh (sourced; each script sets PROG and defines proc_state, usage and
# stop_state, which these call).

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

# The command line of pid $1, one argument per line.
cmdline_args() {
    tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null
}

cmd_stop() {
    [[ $# -eq 1 ]] || {
        usage >&2
        exit 2
    }
    stop_state "$(abs_path "$1")"
}
