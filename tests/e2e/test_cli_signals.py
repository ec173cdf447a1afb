#!/usr/bin/env python3
"""test_cli_signals.py - SIGINT acts at once in every command, and what reign says on stderr.

  * SIGINT while connecting (to a port where nothing answers, with a connect timeout of a
    minute) ends status, campaign and watch at once with "interrupted while connecting to
    'URI'" and exit status 1, also when SIGINT was inherited as ignored (a script's `cmd &`):
    a run that waited out the timeout would say "cannot connect" instead;
  * `reign ctl` waiting for a daemon that never answers: the same ("interrupted");
  * a connect timeout that passes is reported once, without a "still trying" before it;
  * a host that does not resolve is named, with the resolver's reason;
  * log lines start with the local time; error lines stay "reign: COMMAND: ...".
No assertion on how long anything took.
"""
import os
import re
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

SIGINT_IGNORED = [sys.executable, "-c", "import os, signal, sys; "
                  "signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} reign: ")


def body(t):
    quiet = socket.socket()  # bound, never listening: connections are refused
    quiet.bind(("127.0.0.1", 0))
    uri = f"zk://127.0.0.1:{quiet.getsockname()[1]}?connect_timeout_ms=60000"
    for cmd in (["status", "x"], ["campaign", "x", "--id", "a"], ["watch", "x"]):
        for label, wrap in (("default", []), ("ignored", SIGINT_IGNORED)):
            p = t.spawn(f"{cmd[0]}-{label}", [*wrap, t.cli, "--log-level", "info", "--uri", uri,
                                              *cmd])
            wait_for(lambda: "client: connecting to" in p.err(), f"{cmd[0]} to connect")
            p.send(signal.SIGINT)
            check(p.wait() == 1, f"{cmd[0]} (SIGINT {label}): exit {p.returncode()}")
            check(f"reign: {cmd[0]}: interrupted while connecting to '{uri}'" in p.err(),
                  f"{cmd[0]} (SIGINT {label}): {p.err()}")
            log(f"ok: {cmd[0]}, SIGINT {label}")

    # reign ctl, on a socket that takes the request and never answers.
    path = os.path.join(t.short_dir(), "mute.sock")
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(path)
    mute.listen(4)
    p = t.spawn("ctl", [*SIGINT_IGNORED, t.cli, "ctl", "--socket", path, "status"])
    conn, _ = mute.accept()
    wait_for(lambda: conn.recv(4096), "ctl's request")
    p.send(signal.SIGINT)
    check(p.wait() == 1 and "reign: ctl: interrupted" in p.err(), f"ctl: {p.err()}")
    conn.close()
    mute.close()

    # Giving up is said once.
    rc, out, err = t.reign(["--uri", uri.replace("60000", "500"), "status", "x"])
    check(rc == 1 and "cannot connect to" in err and "still trying" not in err,
          f"a store that does not answer: {rc} {err}")
    quiet.close()
    rc, out, err = t.reign(["--uri", "zk://no-such-host.invalid:2181", "status", "x"])
    check(rc == 1 and "host 'no-such-host.invalid' does not resolve" in err
          and "No such file or directory" not in err, f"an unresolvable host: {err}")

    # Log lines carry the time; the error line keeps its form.
    rc, out, err = t.reign(["--log-level", "info", "--uri", t.uri(t.shared_hosts()), "status",
                            t.unique("none")])
    lines = err.splitlines()
    check(rc == 1 and lines[-1].startswith("reign: status: no such election"), err)
    logged = lines[:-1]
    check(logged and all(TIMESTAMP.match(ln) and " reign: status: info: " in ln
                         for ln in logged), f"log lines: {logged}")


if __name__ == "__main__":
    main("e2e_cli_signals", body)
