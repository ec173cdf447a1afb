#!/usr/bin/env python3
"""test_kill_takeover.py - a SIGKILLed leader's lease is taken over only once it has run out.

    test_kill_takeover.py sqlite|mariadb|postgres

Three campaigns; twice over, the leader is killed with SIGKILL (no chance to release its row)
and a replacement joins.  Right after each kill the test reads the row: its term is still the
killed leader's, and the database says how long the lease has still to run.  The successor's
`elected` must come no earlier than that moment (see sqle.check_after_expiry: the bound is
computed from the database's clock, so it holds however late the test looked), and after the
kill; its term is higher, and the row names it.  check_leadership.py proves that no two
leaderships overlapped (the killed ones end at their kill) and that terms and tokens grew.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# This test is about takeover when the killed leader's lease runs out, the path every process takes when its host dies: without a
# guardian, which would end the killed leadership at once (tests/e2e*/test_guardian*.py).
os.environ["REIGN_GUARDIAN"] = "off"
import sqle  # noqa: E402

ROUNDS = 2


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("kill")
    alive = sqle.campaigns(t, name, uri, ["a", "b", "c"])
    procs = list(alive)
    leader = sqle.wait_alive(lambda: sqle.leader_of(alive), "the first leader", alive)
    for rnd in range(1, ROUNDS + 1):
        leader = sqle.kill_round(t, store, name, uri, leader, alive, procs, rnd)
    sqle.resign_all(alive)
    t.check_leadership(procs, min_leaderships=ROUNDS + 1)


if __name__ == "__main__":
    kind = sqle.backend_arg("test_kill_takeover.py")
    sqle.main(f"e2e_sql_kill_{kind}", lambda t: body(t, kind))
