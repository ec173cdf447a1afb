#!/usr/bin/env python3
"""test_guardian.py SCENARIO STORE - a SQL leader's guardian: at once, and never the wrong lease.

    test_guardian.py run_kill|stop_kill sqlite|mariadb|postgres

  run_kill   tests/e2e/test_guardian.py's run_kill on a SQL lease (20 s): a leading `reign
             run` is SIGKILLed while its command runs a ticker and a sleep in its group.  Its
             guardian kills that group, waits until none of it runs, then releases the lease by
             compare-and-set ("released NAME term T" on the killed process's stderr); the
             follower takes over at once (PostgreSQL and SQLite notify it; on MariaDB it sees
             the release at its next poll, every 500 ms here), long before the lease could have
             run out.  When the successor's command starts, no process of the old group runs
             (its start stamp lists them from /proc: none) and no tick of the old ticker
             follows its start stamp.
  stop_kill  a leading `reign campaign` is SIGSTOPped past its lease (2 s) and the other is
             elected; then it is SIGKILLed, still stopped.  Its guardian finds the lease taken
             by another (owner, guid and term moved on) and releases nothing: once it has
             exited, the row still names the new leader at its term, live, and the new leader
             was never demoted.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check  # noqa: E402

guardian = sqle.e2e_module("test_guardian")


def run_kill(t, store):
    ms = guardian.HOLD_MS
    uri = store.uri(lease_ms=ms, renew_ms=ms // 10, poll_ms=500, statement_timeout_ms=1000)
    guardian.run_kill(t, uri, lambda proc, name, term: f"released {name} term {term}")


def stop_kill(t, store):
    uri = store.uri()
    name = t.unique("guardian-stop")
    a = t.campaign("a", name, uri)
    sqle.wait_alive(a.elected, "a elected", [a])
    b = t.campaign("b", name, uri)
    sqle.wait_alive(lambda: f"standing in election '{name}' as 'b'" in b.err(), "b standing",
                    [b])
    g = guardian.the_guardian_of(a)
    a.send(signal.SIGSTOP)
    el = sqle.wait_alive(b.elected, "b elected once a's lease ran out", [b])[0]
    a.kill9()  # stopped, never demoted: its lines cannot go to check_leadership
    guardian.wait_gone(g, "a's guardian to exit")
    guardian.no_guardian_line([a])
    row = store.lease_row(name)
    check(row.owner == "b" and row.term == el.term and row.remaining_ns > 0,
          f"b's lease after a's guardian exited: {row}")
    check(not b.demoted() and len(b.elected()) == 1, f"b's lines: {b.lines()}")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")


SCENARIOS = {"run_kill": run_kill, "stop_kill": stop_kill}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS or sys.argv[2] not in sqle.BACKENDS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(SCENARIOS)} {'|'.join(sqle.BACKENDS)}")
    scenario, kind = sys.argv[1:]
    sqle.main(f"e2e_sql_guardian_{scenario}_{kind}",
              lambda t: SCENARIOS[scenario](t, sqle.Store(t, kind)))
