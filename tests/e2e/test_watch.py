#!/usr/bin/env python3
"""test_watch.py - `reign watch NAME` sees every change of leader, in order.

An observer (`reign watch`) starts before anyone stands.  Candidates c1..c4 join in order and
the leader is replaced three times by SIGTERM (a graceful hand-over each time) and once by
`reign cede`; before each change the test waits until the observer has reported the current
leader, so no change can be folded into the next.  The observer's `leader ID term=T token=K`
lines must be exactly the campaigns' `elected` lines in term order (same ids, terms and
tokens, and since_ms a time), and once everybody has resigned it must report `leader none`.
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

# since_ms is "-" where the store does not say (a SQL lease row).
LEADER_RE = re.compile(r"^leader (\S+) term=(\d+) token=(\d+) since_ms=(-?\d+|-) "
                       r"monotonic_ns=(-?\d+)$")
NONE_RE = re.compile(r"^leader none monotonic_ns=(-?\d+)$")


def seen(w):
    out = []
    for line in w.lines():
        m = LEADER_RE.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3))))
        elif NONE_RE.match(line):
            out.append(None)
        else:
            raise AssertionError(f"unexpected line from reign watch: {line!r}")
    return out


def since(w):
    """The since_ms of every leader line: an int, or None for "-"."""
    return [None if m.group(4) == "-" else int(m.group(4))
            for m in map(LEADER_RE.match, w.lines()) if m]


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-watch")
    w = t.watch("watch", name, uri)
    wait_for(lambda: seen(w), "the observer's first line")
    check(seen(w) == [None], f"first report {seen(w)}, want 'leader none'")

    procs = []
    for i in range(1, 5):
        procs.append(t.campaign(f"c{i}", name, uri))
        n = len(procs)
        wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == n,
                 f"c{i}'s node in status")

    def elected():
        return sorted(((e.ident, e.term, e.token) for p in procs for e in p.elected()),
                      key=lambda x: x[1])

    def observer_caught_up():
        el = elected()
        s = seen(w)
        return el and s and s[-1] == el[-1]

    wait_for(observer_caught_up, "the observer to report the first leader")
    live = list(procs)
    for change in range(4):
        leader = next(p for p in live if p.leading())
        before = len(elected())
        if change == 2:
            rc, _, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "30000"])
            check(rc == 0, f"reign cede: {err.strip()}")
        else:
            leader.send(signal.SIGTERM)
            check(leader.wait() == 0, f"{leader.label} did not exit 0")
            live.remove(leader)
        wait_for(lambda: len(elected()) > before, "the next leader")
        wait_for(observer_caught_up, "the observer to report the new leader")
        log(f"change {change + 1}: {elected()[-1]}")

    for p in live:
        p.send(signal.SIGTERM)
    for p in live:
        check(p.wait() == 0, f"{p.label} did not exit 0")
    wait_for(lambda: seen(w)[-1] is None, "the observer to report no leader")
    reported = [x for x in seen(w) if x is not None]
    check(reported == elected(),
          f"observer saw {reported}\n  campaigns were elected {elected()}")
    log(f"observer saw all {len(reported)} leaderships in order")
    # ZooKeeper says since when each leads (its node's mtime): a number on every line.
    check(all(x is not None and x > 0 for x in since(w)), f"since_ms {since(w)}, want Unix ms")
    w.send(signal.SIGTERM)
    check(w.wait() == 0, "reign watch did not exit 0 on SIGTERM")


if __name__ == "__main__":
    main("e2e_watch", body)
