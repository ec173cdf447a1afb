#!/usr/bin/env python3
"""test_sqlite_crowd.py - twenty processes on one SQLite file, the leader killed over and over.

Twenty `reign campaign` processes share one SQLite file.  Five times over, the leader is
killed with SIGKILL and a replacement joins; the row is read right after each kill, and the
successor must be elected after the kill and no earlier than the killed leader's lease ran
out by the database's clock (sqle.check_after_expiry).  At the end someone leads (no lease
was lost: `reign status` agrees with the leader's own line), every process exits 0 on
SIGTERM, check_leadership.py proves that leaderships never overlapped and that terms and
tokens grew, and no process printed "database is locked" (SQLite's busy errors must be
retried inside the statement timeout, never surface) or exited early.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# This test is about takeover when the killed leader's lease runs out, the path every process takes when its host dies: without a
# guardian, which would end the killed leadership at once (tests/e2e*/test_guardian*.py).
os.environ["REIGN_GUARDIAN"] = "off"
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402

N = 20
ROUNDS = 5


def body(t):
    store = sqle.Store(t, "sqlite")
    uri = store.uri()
    name = t.unique("crowd")
    alive = sqle.campaigns(t, name, uri, [f"c{i:02d}" for i in range(N)])
    procs = list(alive)
    leader = sqle.wait_alive(lambda: sqle.leader_of(alive), "the first leader", alive)
    for rnd in range(1, ROUNDS + 1):
        leader = sqle.kill_round(t, store, name, uri, leader, alive, procs, rnd)
        for p in alive:
            check(p.alive(), f"{p.label} exited: {p.err()[-2000:]}")

    st = t.status(name, uri)
    check(st["leader"] and st["leader"]["id"] == leader.label and
          st["leader"]["term"] == leader.elected()[-1].term,
          f"status {st} vs the leader's line {leader.elected()[-1]}")
    sqle.resign_all(alive)
    sqle.no_word(procs, ["database is locked", "SQLITE_BUSY"])
    leads = t.check_leadership(procs, min_leaderships=ROUNDS + 1)
    log(f"{len(leads)} leaderships in all")


if __name__ == "__main__":
    sqle.main("e2e_sql_sqlite_crowd", body)
