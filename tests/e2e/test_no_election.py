#!/usr/bin/env python3
"""test_no_election.py - commands that fail on an election that does not exist change nothing.

`reign status NAME` and `reign cede NAME` for a NAME nobody ever joined must fail (exit 1) with
a clear message, and must not create the election (no /reign/election/NAME afterwards): a
command that fails on bad input changes nothing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main  # noqa: E402


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    for cmd in (["status"], ["cede", "--wait-ms", "5000"]):
        name = t.unique("nowhere")
        rc, out, err = t.reign(["--uri", uri, cmd[0], name, *cmd[1:]], timeout=30)
        check(rc == 1, f"reign {cmd[0]} of no election: exit {rc} ({err.strip()})")
        check(err.startswith("reign: ") and name in err, f"reign {cmd[0]}: message {err!r}")
        left = t.children(hosts, f"/reign/election/{name}")
        check(left is None, f"reign {cmd[0]} of no election created /reign/election/{name} "
                            f"(children {left}); message was {err.strip()!r}")
        log(f"ok: reign {cmd[0]}: {err.strip()}")


if __name__ == "__main__":
    main("e2e_no_election", body)
