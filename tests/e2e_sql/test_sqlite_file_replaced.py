#!/usr/bin/env python3
"""test_sqlite_file_replaced.py - a SQLite store file deleted or replaced under a leader.

A SQLite connection holds the file it opened, not its path: once the file is deleted or
another is moved over it, the old file lives on for the processes that have it open, and a
leader's renewals would go on succeeding there while newcomers elect a leader of their own,
with the same term and token, in the new file the path names.  Each process must notice that
its path no longer names its file, count every lease it held there as lost (a leader demotes
with reason session_lost) and stand again in the new file.

  deleted   A leads; the database, its -wal and its -shm are removed (rm).  A demotes
            (session_lost) on its own - nobody else needs to act for it to notice - and says
            why on stderr; then B starts.  Someone leads in the new file, and whichever of A
            and B does not lead takes over when the other resigns: A stands again there.
  replaced  A leads, C follows and an observer (`reign watch`) watches; a copy of the
            database taken a moment after A was elected (an older database: a restore from
            backup) is moved over the file (mv).  A demotes (session_lost), C says it noticed,
            a leader is elected in the new file, the observer reports that leader, and the
            one of A and C that does not lead takes over when the other resigns.

In both, leaderships never overlap by the monotonic_ns of the printed lines, and terms grow
within each file (a new file starts its terms again at 1).
"""
import os
import signal
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

seen = sqle.e2e_module("test_watch").seen
GONE = "was deleted or replaced under us"


def leaderships(procs):
    """Every leadership of procs (check_leadership's intervals, the open ones at infinity),
    in the order they began; fails if two overlap."""
    out = []
    for p in procs:
        events = sqle.e2elib.check_leadership.parse_lines(p.lines(), p.label)
        out.extend(sqle.e2elib.check_leadership.leaderships_of(events, p.label))
    out.sort(key=lambda lead: lead.start_ns)
    end = None
    for lead in out:
        check(end is None or (end.end_ns is not None and end.end_ns <= lead.start_ns),
              f"two leaders at once: {end.describe() if end else ''} and {lead.describe()}")
        if end is None or end.end_ns is None or (lead.end_ns is None or lead.end_ns > end.end_ns):
            end = lead
    return out


def terms_grow(leads, what):
    terms = [lead.term for lead in leads]
    check(terms == sorted(set(terms)), f"terms {terms} {what} did not grow")


def demotion(p, after=0):
    """p's first demotion after its `after` first ones, once printed."""
    return wait_for(lambda: p.demoted()[after] if len(p.demoted()) > after else None,
                    f"{p.label} demoted")


def new_leader(procs, since_ns):
    """The process that leads in the new file: the one leading now, elected after since_ns."""
    def leading():
        p = sqle.leader_of(procs)
        return p if p and p.elected()[-1].ns > since_ns else None
    return sqle.wait_alive(leading, "a leader in the new file", procs)


def takes_over(leader, others):
    """leader resigns (SIGTERM); another of `others` is elected in its place: it stood in the
    new file.  Returns it."""
    before = {p.label: len(p.elected()) for p in others}
    leader.send(signal.SIGTERM)
    check(leader.wait() == 0, f"{leader.label} exited {leader.returncode()} on SIGTERM")
    return sqle.wait_alive(lambda: next((p for p in others if len(p.elected()) > before[p.label]
                                         and p.leading()), None),
                           f"a successor to {leader.label}", others)


def deleted(t):
    store = sqle.Store(t, "sqlite", file=os.path.join(t.dir, "deleted.db"))
    uri = store.uri()
    name = t.unique("deleted")
    a = t.campaign("A", name, uri)
    wait_for(a.leading, "A elected")
    old = a.elected()[-1]

    for suffix in ("", "-wal", "-shm"):
        os.remove(store.path + suffix)
    log("removed the database, its -wal and its -shm")
    d = demotion(a)
    check(d.reason == "session_lost", f"A demoted for {d.reason}, want session_lost")
    check(GONE in a.err() and store.path in a.err(), f"A did not say why: {a.err()[-2000:]}")

    b = t.campaign("B", name, uri)
    procs = [a, b]
    first = new_leader(procs, d.ns)
    row = store.lease_row(name)
    check(row is not None and row.owner == first.label and row.term == 1,
          f"the new file's row {row}, want {first.label}'s at term 1")
    second = takes_over(first, [p for p in procs if p is not first])
    leads = leaderships(procs)
    terms_grow([lead for lead in leads if lead.start_ns < d.ns], "in the old file")
    terms_grow([lead for lead in leads if lead.start_ns > d.ns], "in the new file")
    check(old.term == 1 and len(leads) == 3, f"leaderships {[x.describe() for x in leads]}")
    sqle.resign_all([second])


def replaced(t):
    store = sqle.Store(t, "sqlite", file=os.path.join(t.dir, "replaced.db"))
    uri = store.uri()
    name = t.unique("replaced")
    w = t.watch("watch", name, uri)
    a = t.campaign("A", name, uri)
    wait_for(a.leading, "A elected")
    c = t.campaign("C", name, uri)
    # An older copy of the database (SQLite's online backup: one file, no -wal).
    copy = os.path.join(t.dir, "copy.db")
    src, dst = sqlite3.connect(store.path), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    wait_for(lambda: seen(w) and seen(w)[-1] and seen(w)[-1][0] == "A", "the observer sees A")
    wait_for(lambda: "connected to" in c.err(), "C connected")

    os.rename(copy, store.path)
    log("moved the copy over the database")
    d = demotion(a)
    check(d.reason == "session_lost", f"A demoted for {d.reason}, want session_lost")
    wait_for(lambda: GONE in c.err(), "C noticing the file replaced")
    check(GONE in a.err(), f"A did not say why: {a.err()[-2000:]}")

    procs = [a, c]
    first = new_leader(procs, d.ns)
    lead = first.elected()[-1]
    wait_for(lambda: seen(w)[-1] == (first.label, lead.term, lead.token),
             f"the observer reporting {first.label} term {lead.term}")
    row = store.lease_row(name)
    check(row is not None and row.owner == first.label and row.term == lead.term,
          f"the new file's row {row}, want {first.label}'s at term {lead.term}")
    second = takes_over(first, [p for p in procs if p is not first])
    leads = leaderships(procs)
    check(len(leads) == 3, f"leaderships {[x.describe() for x in leads]}")
    terms_grow(leads[1:], "in the new file")
    sqle.resign_all([second, w])


def body(t):
    deleted(t)
    replaced(t)


if __name__ == "__main__":
    sqle.main("e2e_sql_sqlite_file_replaced", body)
