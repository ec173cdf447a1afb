#!/usr/bin/env python3
"""test_watch.py - `reign watch NAME` on a SQL lease sees every leadership, in order.

    test_watch.py sqlite|mariadb|postgres

An observer (`reign watch`) starts before anyone stands and reports `leader none`.  Four
campaigns join; the leader is replaced three times by SIGTERM (a release each time) and once
by `reign cede`.  Before each change the test waits until the observer has reported the
current leader, so that no leadership can be folded into the next.  The observer's `leader ID
term=T token=K` lines must be exactly the campaigns' `elected` lines in term order (`leader
none` lines may come between them: a released row has no leader until it is taken), and once
everybody has resigned it reports `leader none`.  Every leader line says `since_ms=-`: the row
does not keep since when its holder leads.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

# The observer's lines are parsed as the ZooKeeper test does.
seen = sqle.e2e_module("test_watch").seen
since = sqle.e2e_module("test_watch").since


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("watch")
    w = t.watch("watch", name, uri)
    sqle.wait_alive(lambda: seen(w), "the observer's first line", [w])
    check(seen(w) == [None], f"first report {seen(w)}, want 'leader none'")

    procs = sqle.campaigns(t, name, uri, [f"c{i}" for i in range(1, 5)])

    def elected():
        return sorted(((e.ident, e.term, e.token) for p in procs for e in p.elected()),
                      key=lambda x: x[1])

    def observer_caught_up():
        el = elected()
        s = [x for x in seen(w) if x is not None]
        return el and s and s[-1] == el[-1] and seen(w)[-1] is not None

    sqle.wait_alive(observer_caught_up, "the observer to report the first leader", [w] + procs)
    live = list(procs)
    for change in range(4):
        leader = sqle.leader_of(live)
        check(leader is not None, "nobody leads")
        before = len(elected())
        if change == 2:
            rc, _, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "30000"])
            check(rc == 0, f"reign cede: {err.strip()}")
        else:
            leader.send(signal.SIGTERM)
            check(leader.wait() == 0, f"{leader.label} did not exit 0")
            live.remove(leader)
        sqle.wait_alive(lambda: len(elected()) > before, "the next leader", [w] + live)
        wait_for(observer_caught_up, "the observer to report the new leader")
        log(f"change {change + 1}: {elected()[-1]}")

    sqle.resign_all(live)
    wait_for(lambda: seen(w)[-1] is None, "the observer to report no leader")
    reported = [x for x in seen(w) if x is not None]
    check(reported == elected(),
          f"observer saw {reported}\n  campaigns were elected {elected()}")
    log(f"observer saw all {len(reported)} leaderships in order")
    # A lease row does not say since when its holder leads: "-", never 0 (1970).
    check(since(w) and all(x is None for x in since(w)), f"since_ms {since(w)}, want '-'")
    w.send(signal.SIGTERM)
    check(w.wait() == 0, "reign watch did not exit 0 on SIGTERM")
    t.check_leadership(procs, min_leaderships=5)


if __name__ == "__main__":
    kind = sqle.backend_arg("test_watch.py")
    sqle.main(f"e2e_sql_watch_{kind}", lambda t: body(t, kind))
