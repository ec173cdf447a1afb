#!/usr/bin/env python3
"""test_handoff.py - graceful hand-over on SIGTERM and SIGINT, on a SQL lease.

    test_handoff.py sqlite|mariadb|postgres

a stands alone and leads; then b and c join.  SIGTERM to the leader: it prints `demoted
reason=resigned` and exits 0 having released the row, and one of the others is elected with
a higher term; the demotion comes before that election.  `reign status` and the table's row
name the new leader.  Then SIGINT to the new leader: the same again with the last one.  After
the last one resigns the election has no leader.  check_leadership.py proves the story.

(A lease table has no queue: which follower takes over is not fixed, only that one does.)
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("handoff")
    a = t.campaign("a", name, uri)
    sqle.wait_alive(lambda: a.elected(), "a elected", [a])
    live = [a] + sqle.campaigns(t, name, uri, ["b", "c"])
    procs = list(live)

    for sig in (signal.SIGTERM, signal.SIGINT):
        old = sqle.leader_of(live)
        check(old is not None, "nobody leads")
        live.remove(old)
        old_ev = old.elected()[-1]
        old.send(sig)
        rc = old.wait()
        check(rc == 0, f"{old.label} exited {rc} after {sig.name}")
        dem = old.demoted()
        check(dem and dem[-1].reason == "resigned",
              f"{old.label}: want 'demoted reason=resigned', got {dem}")
        new = sqle.wait_alive(lambda: sqle.leader_of(live), f"a successor of {old.label}", live)
        el = new.elected()[-1]
        check(dem[-1].ns <= el.ns,
              f"{new.label} elected at {el.ns}, before {old.label} was demoted at {dem[-1].ns}")
        check(el.term > old_ev.term and el.token > old_ev.token,
              f"term/token {old_ev.term}/{old_ev.token} then {el.term}/{el.token}")
        st = t.status(name, uri)
        check(st["leader"] and st["leader"]["id"] == new.label and
              st["leader"]["term"] == el.term, f"status after the hand-over: {st}")
        row = store.lease_row(name)
        check(row.owner == new.label and row.term == el.term, f"row {row} vs {el}")
        log(f"{old.label} -> {new.label}: demoted at {dem[-1].ns}, elected at {el.ns} "
            f"({(el.ns - dem[-1].ns) / 1e6:.1f} ms later)")

    last = live[0]
    last.send(signal.SIGTERM)
    check(last.wait() == 0, f"{last.label} did not exit 0")
    check(last.demoted() and last.demoted()[-1].reason == "resigned",
          f"{last.label}: {last.demoted()}")
    t.check_leadership(procs, min_leaderships=3)
    st = t.status(name, uri)
    check(st is None or st["leader"] is None, f"a leader after every one resigned: {st}")
    row = store.lease_row(name)
    check(row.remaining_ns <= 0, f"the released lease still runs by the database: {row}")


if __name__ == "__main__":
    kind = sqle.backend_arg("test_handoff.py")
    sqle.main(f"e2e_sql_handoff_{kind}", lambda t: body(t, kind))
