#!/usr/bin/env python3
"""test_wakeup.py - MariaDB's wake-up lock wakes followers; without it, the polls still work.

    test_wakeup.py mariadb

A MariaDB leader holds a named lock (GET_LOCK) while it leads, and its followers wait for it
on connections of their own, so that a release or a death wakes them at once
(docs/sql-leases.md).  It is a wake-up only: the lease row decides, the followers poll as
before.  Four cases, each with three `reign campaign` processes (guardians on), each
election checked by check_leadership.py (no two leaderships overlap, tokens grow):

1. the lock works: SIGTERM, then SIGKILL, to the leader; each time the next is elected, and
   the followers were waiting for the lock meanwhile;
2. another session holds the lock from before the first leader and never lets go (a stopped
   process, a dead host whose connection lingers): no wake-up ever comes, and SIGTERM, then
   SIGKILL, to the leader still hand the lease on, by the followers' polls;
3. the server refuses the lock (REIGN_TEST_MARIADB_WAKE_REFUSE=1 makes every statement that
   takes or waits for it name a function the server does not have, as Galera refuses
   GET_LOCK): each process says so once, and hand-overs go on by polls;
4. wakeup=poll in the URI: no connection waits for the lock, and hand-overs go on.
"""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402

DC = "dc1"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def lock_name(table, name):
    """The wake-up lock of (DC, name): reign__sql_channel()'s name."""
    h = 0xcbf29ce484222325
    for b in DC.encode() + b"\0" + name.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "reign_%s_%016x" % (table[:32], h)


def waiters(store, lock, blocked=True):
    """Sessions of the server waiting for the lock (blocked False: or sleeping before they
    look again)."""
    state = "STATE = 'User lock' AND " if blocked else ""
    rows = store.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> "
                     f"CONNECTION_ID() AND {state}INFO LIKE '%IS_FREE_LOCK(''{lock}'')%'")
    return int(rows[0][0])


def run_case(t, store, case, uri, name=None, env=None, waits=None):
    """Three campaigns in one election; SIGTERM, then SIGKILL, to the leader, each time until
    a successor with a higher term leads.  waits True: first until the followers wait for the
    leader's lock; False: no session waits for it while they all stand.  Returns the
    processes."""
    name = name or t.unique(case)
    lock = lock_name(store.table, name)
    live = sqle.campaigns(t, name, uri, [f"{case}a", f"{case}b", f"{case}c"], env=env)
    procs = list(live)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        old = sqle.wait_alive(lambda: sqle.leader_of(live), "a leader", live)
        ev = old.elected()[-1]
        if waits:
            sqle.wait_for(lambda: waiters(store, lock) >= len(live) - 1,
                          "the followers waiting for the leader's lock")
        elif waits is False:
            check(waiters(store, lock, blocked=False) == 0, f"sessions wait for {lock}")
        live.remove(old)
        if sig == signal.SIGKILL:
            old.kill9()
        else:
            old.send(sig)
            check(old.wait() == 0, f"{old.label} did not exit 0 after {sig.name}")

        def successor():
            p = sqle.leader_of(live)
            return p if p and p.elected()[-1].term > ev.term else None

        new = sqle.wait_alive(successor, f"a successor of {old.label}", live)
        log(f"{case}: {sig.name} to {old.label} (term {ev.term}), {new.label} leads "
            f"(term {new.elected()[-1].term})")
    sqle.resign_all(live)
    t.check_leadership(procs, min_leaderships=3)
    return procs


def body(t, kind):
    check(kind == "mariadb", "the wake-up lock is MariaDB's")
    store = sqle.Store(t, kind)
    uri = store.uri(data_center=DC)

    # 1. The lock wakes the followers.
    run_case(t, store, "lock", uri, waits=True)

    # 2. Another session holds the lock for ever: no wake-up comes, the polls do the work.
    name = t.unique("held")
    lock = lock_name(store.table, name)
    holder = subprocess.Popen(
        [os.path.join(ROOT, "scripts", "mariadb.sh"), "sql", store.state,
         f"SELECT GET_LOCK('{lock}', 0), SLEEP(600)"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        sqle.wait_for(lambda: store.sql(f"SELECT IS_FREE_LOCK('{lock}')")[0][0] == "0",
                      "the other session holding the lock")
        run_case(t, store, "held", uri, name=name)
        check(store.sql(f"SELECT IS_FREE_LOCK('{lock}')")[0][0] == "0",
              "the other session lost the lock")
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()

    # 3. The server refuses the lock: said once per process, the polls do the work.
    for p in run_case(t, store, "refused", uri, env={"REIGN_TEST_MARIADB_WAKE_REFUSE": "1"}):
        said = p.err().count("the server refused the wake-up lock")
        check(said == 1, f"{p.label} said {said} times that the lock was refused")

    # 4. wakeup=poll: nothing waits for a lock.
    run_case(t, store, "polls", store.uri(data_center=DC, wakeup="poll"), waits=False)


if __name__ == "__main__":
    kind = sqle.backend_arg("test_wakeup.py")
    sqle.main(f"e2e_sql_wakeup_{kind}", lambda t: body(t, kind))
