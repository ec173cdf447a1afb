#!/usr/bin/env python3
"""test_completion.py REIGN COMPLETION - the bash completion of reign completes what it should.

Sources contrib/bash-completion/reign in a bash (with the bash-completion package's own
functions when installed, as an interactive shell has them) and calls its function for a few
command lines, each checked against the words it must offer (and, for some, must not).  The
words of `value`, `tasks` and `ctl`, which the script lists itself, are checked against each
command's --help.  Election names come from `reign ls` when the tool has it: checked with a stub
tool that has one, and with the real tool, which must answer at once whether or not it has one.
"""

import os
import re
import stat
import subprocess
import sys
import tempfile

from docslib import report

# Runs the completion for the words in $WORDS (one per line; the last is being completed) and
# prints the candidates one per line.
DRIVER = r'''
[[ -r /usr/share/bash-completion/bash_completion ]] && source /usr/share/bash-completion/bash_completion
source "$COMPLETION"
mapfile -t COMP_WORDS <<<"$WORDS"
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_reign
printf '%s\n' "${COMPREPLY[@]}"
'''

failures = []


def complete(completion, words):
    env = dict(os.environ, COMPLETION=completion, WORDS="\n".join(words))
    p = subprocess.run(["bash", "-c", DRIVER], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 0 or p.stderr.strip():
        failures.append(f"{words[1:]}: bash exited {p.returncode}: {p.stderr.strip()}")
    return [w for w in p.stdout.splitlines() if w]


def expect(completion, words, want, unwanted=(), exact=False):
    got = complete(completion, words)
    shown = " ".join(words[1:])
    missing = [w for w in want if w not in got]
    extra = [w for w in unwanted if w in got]
    if exact and sorted(got) != sorted(want):
        failures.append(f"`reign {shown}<TAB>`: {got}, expected exactly {list(want)}")
    elif missing or extra:
        failures.append(f"`reign {shown}<TAB>`: {got}; missing {missing}, unexpected {extra}")
    else:
        print(f"ok  reign {shown}<TAB> -> {' '.join(got)}")


def script_words(completion, cmd):
    """The words the script lists itself for cmd's first argument."""
    with open(completion, encoding="utf-8") as f:
        text = f.read()
    m = re.search(rf'^_reign_words_{cmd}="([^"]+)"$', text, re.M)
    if not m:
        failures.append(f"{completion}: no _reign_words_{cmd}")
        return []
    return m.group(1).split()


def main():
    reign, completion = sys.argv[1], sys.argv[2]
    # The default store is the machine's (for root, /var/lib/reign/reign.db): an empty one of
    # the test's own instead, so that what the machine's elections are does not matter.
    store = tempfile.TemporaryDirectory()
    os.environ["REIGN_URI"] = f"sqlite://{store.name}/empty.db"
    commands = ["campaign", "run", "runs", "status", "watch", "cede", "designate", "register",
                "members", "value", "tasks", "ctl", "check"]
    expect(completion, [reign, ""], commands)
    expect(completion, [reign, "sta"], ["status"], exact=True)
    expect(completion, [reign, "--"], ["--uri", "--session-timeout", "--log-level", "--help",
                                       "--version"])
    expect(completion, [reign, "--log-level", ""], ["error", "warn", "notice", "info", "debug"],
           exact=True)
    expect(completion, [reign, "--uri", "zk://127.0.0.1:2181", "c"],
           ["campaign", "cede", "ctl", "check"], exact=True)
    expect(completion, [reign, "--uri", "zk://127.0.0.1:2181", "campaign", "x", "--pr"],
           ["--priority", "--preempt-delay"], exact=True)
    expect(completion, [reign, "run", "x", "--s"], ["--strategy", "--slot"])
    expect(completion, [reign, "run", "x", "--strategy", ""], ["queue", "lock"], exact=True)
    expect(completion, [reign, "runs", "x", "--"], ["--last", "--json", "--help"], exact=True)
    expect(completion, [reign, "ctl", "f"], ["failover"], exact=True)
    expect(completion, [reign, "ctl", "failover", "db", "--"], ["--to", "--no-wait", "--socket"])
    expect(completion, [reign, "tasks", "worker", "q", "--con"], ["--concurrency"], exact=True)
    expect(completion, [reign, "value", ""], ["get", "set", "del", "watch"], exact=True)
    expect(completion, [reign, "check", "--"], ["--candidates", "--rounds", "--json", "--help"],
           exact=True)
    expect(completion, [reign, "check", ""], ["zk://", "etcd://", "sqlite:///", "postgres://",
                                              "mysql://"], exact=True)
    expect(completion, [reign, "check", "--rounds", ""], [], exact=True)
    expect(completion, [reign, "run", "x", "--", "bas"], ["bash"])
    # An election's name: none from an empty store, and at once.
    expect(completion, [reign, "status", ""], [], exact=True)

    # The lists in the script are the tool's own words.
    for cmd in ("value", "tasks", "ctl"):
        help_text = subprocess.run([reign, cmd, "--help"], stdout=subprocess.PIPE,
                                   text=True).stdout
        for w in script_words(completion, cmd):
            if not re.search(rf"(^|\s){w}\s", help_text, re.M):
                failures.append(f"the completion offers `reign {cmd} {w}`, "
                                f"which `reign {cmd} --help` does not name")

    # Election names from `reign ls`, on the store named by --uri.
    with tempfile.TemporaryDirectory() as tmp:
        stub = os.path.join(tmp, "reign")
        with open(stub, "w", encoding="utf-8") as f:
            f.write("""#!/bin/sh
case "$*" in
--help) printf 'Usage: reign\\n\\nCommands:\\n  status  x\\n  ls      y\\n\\n' ;;
"--uri sqlite:///s.db ls n") printf 'election nightly standing=1\\nelection noon standing=0\\n'
    printf 'group nodes standing=2\\n' ;;
esac
""")
        os.chmod(stub, stat.S_IRWXU)
        expect(completion, [stub, "--uri", "sqlite:///s.db", "status", "n"],
               ["nightly", "noon"], exact=True)
    return report(failures, "bash completion: every command line completes as expected")


if __name__ == "__main__":
    sys.exit(main())
