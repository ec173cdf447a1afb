#!/usr/bin/env python3
"""test_server_restart.py - the database server restarted, crashed and frozen under a leader.

    test_server_restart.py mariadb|postgres

A server of the test's own (scripts/mariadb.sh or pg.sh) and three campaigns on it.  Under
the leader, in turn:

  restart  a clean shutdown and start (same data, same port);
  crash    the server SIGKILLed, then started again (it recovers its data);
  outage   the server stopped until the leader, unable to renew, has demoted itself (it
           must: its bound passes on its own clock), then started again;
  freeze   the same with the server SIGSTOPped (statements hang rather than fail), then
           SIGCONTed.

Through each, leadership is either kept or safely lost and regained: no campaign exits, and
after each the election settles to exactly one process that says it leads, which `reign
status` and the table's row agree with.  At the end check_leadership.py proves over every
line that no two leaderships overlapped and that terms and tokens strictly grew.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402


def body(t, kind):
    server = sqle.SqlServer(t, kind, "server")
    store = sqle.Store(t, kind, state_dir=server.dir)
    # retry_period_ms: reconnect attempts while the server is away come quicker.
    uri = store.uri(retry_period_ms=200)
    name = t.unique("restart")
    procs = sqle.campaigns(t, name, uri, ["a", "b", "c"])

    def settled():
        """The one leader, if the processes, status and the row all agree on it.  Two last
        lines may both say elected for a moment (a starved old leader prints its demotion
        late); check_leadership proves from the times that they never overlapped."""
        leading = [p for p in procs if p.leading()]
        if len(leading) != 1:
            return None
        leader = leading[0]
        ev = leader.elected()[-1]
        st = sqle.status_leader(t, name, uri)
        row = sqle.quietly(store.lease_row, name)
        if not (st and st["id"] == leader.label and st["term"] == ev.term):
            return None
        if not (row and row.owner == leader.label and row.term == ev.term and
                row.remaining_ns > 0):
            return None
        return leader, ev

    leader, ev = sqle.wait_alive(settled, "a settled leader", procs)
    for fault in ("restart", "crash", "outage", "freeze"):
        before = (leader, ev.term, sum(len(p.events()) for p in procs))
        if fault == "restart":
            server.do("restart")
        elif fault == "crash":
            server.do("kill-server")
            server.do("start-server")
        else:
            n_demoted = len(leader.demoted())
            server.do("stop-server" if fault == "outage" else "pause-server")
            try:
                dem = sqle.wait_alive(lambda: leader.demoted()[n_demoted:],
                                      f"{leader.label} to demote itself", procs)[0]
                check(dem.reason in ("suspended", "stalled"),
                      f"{leader.label} demoted with reason {dem.reason} in the {fault}")
                log(f"{leader.label} demoted ({dem.reason}) in the {fault}")
            finally:
                server.do("start-server" if fault == "outage" else "resume-server")
        leader, ev = sqle.wait_alive(settled, f"a settled leader after the {fault}", procs)
        kept = leader is before[0] and ev.term == before[1]
        log(f"after the {fault}: {leader.label} leads, term {ev.term} "
            f"({'kept' if kept else 'lost and regained'}; "
            f"{sum(len(p.events()) for p in procs) - before[2]} new lines)")
        for p in procs:
            check(p.alive(), f"{p.label} exited after the {fault}: {p.err()[-2000:]}")

    sqle.resign_all(procs)
    t.check_leadership(procs, min_leaderships=1)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("mariadb", "postgres"):
        sys.exit("usage: test_server_restart.py mariadb|postgres")
    kind = sys.argv[1]
    sqle.main(f"e2e_sql_server_restart_{kind}", lambda t: body(t, kind))
