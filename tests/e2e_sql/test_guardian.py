#!/usr/bin/env python3
"""test_guardian.py - a SIGKILLed leader's guardian releases its lease and kills its command.

    test_guardian.py sqlite|mariadb|postgres

tests/e2e/test_guardian.py's run_kill on a SQL lease (20 s): a leading `reign run` is
SIGKILLed while its command runs a ticker and a sleep in its group.  Its guardian kills that
group, waits until none of it runs, then releases the lease by compare-and-set ("released NAME
term T" on the killed process's stderr); the follower takes over at once (PostgreSQL and SQLite
notify it; on MariaDB it sees the release at its next poll, every 500 ms here), long before the
lease could have run out.  When the successor's command starts, no process of the old group
runs (its start stamp lists them from /proc: none) and no tick of the old ticker follows its
start stamp.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402

guardian = sqle.e2e_module("test_guardian")


def body(t, kind):
    store = sqle.Store(t, kind)
    ms = guardian.HOLD_MS
    uri = store.uri(lease_ms=ms, renew_ms=ms // 10, poll_ms=500, statement_timeout_ms=1000)
    guardian.run_kill(t, uri, lambda proc, name, term: f"released {name} term {term}")


if __name__ == "__main__":
    kind = sqle.backend_arg("test_guardian.py")
    sqle.main(f"e2e_sql_guardian_{kind}", lambda t: body(t, kind))
