#!/usr/bin/env python3
"""test_stop.py - a leader SIGSTOPped past its lease on etcd demotes itself, never beside the
next one.

Three `reign campaign` processes on a three-member cluster, 3 s sessions (leases), guardians
on (the default: a stopped process is not dead, so its guardian must not act).  The leader is
stopped with SIGSTOP; its loop sends no keepalive, its lease runs out, and one of the two
others is elected with a higher term, which `reign status` shows.  Then SIGCONT: the stopped
one must print its own `demoted` line (its leadership ended by its own safety deadline,
stalled or suspended, or found expired), dated no later than the successor's `elected`; it
gets a new session and stands again behind the new leader without being elected, and the new
leader's `leader` key is still there, on its lease (what the continued one does on waking must
not touch it).  Its guardian never acted.  Twice over, each time with the current leader.
Then a candidate of higher priority joins: the leader must hand over to it (demoted first),
and it resigns in turn (SIGTERM) so that a last leadership follows.  check_leadership.py
proves from every process's lines that no two leaderships overlapped and that terms and tokens
strictly grew.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, log, wait_for  # noqa: E402
from e2elib import beyond  # noqa: E402

ROUNDS = 2


def body(t):
    cluster = etcde.Cluster(t)
    uri = cluster.uri(session_timeout_ms=etcde.SESSION_MS)
    name = t.unique("stop")
    alive = etcde.campaigns(t, name, uri, ["a", "b", "c"])
    procs = list(alive)
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, alive, cluster=cluster)
    for rnd in range(1, ROUNDS + 1):
        lines_before = len(leader.lines())
        demoted_before = len(leader.demoted())
        elected_before = len(leader.elected())
        leader.send(signal.SIGSTOP)
        wait_for(lambda: etcde.stopped(leader), f"{leader.label} stopped")
        others = [p for p in alive if p is not leader]
        new, nev = etcde.settled(t, name, uri, others, above_term=ev.term,
                                 what=f"a successor of the stopped {leader.label}", cluster=cluster)
        check(len(leader.lines()) == lines_before, f"{leader.label} printed while stopped")
        leader.send(signal.SIGCONT)
        dem = wait_for(lambda: beyond(leader.demoted(), demoted_before),
                       f"{leader.label}'s own demoted line after SIGCONT")[-1]
        log(f"round {rnd}: {leader.label} demoted (reason {dem.reason}) "
            f"{(nev.ns - dem.ns) / 1e6:.0f} ms before {new.label} was elected")
        check(dem.ns <= nev.ns, f"{leader.label} demoted at {dem.ns}, after {new.label} was "
                                f"elected at {nev.ns}")
        # It stands again, behind the new leader, which keeps leading.
        st = etcde.standing(t, name, uri, 3)
        check(st["leader"]["id"] == new.label and st["leader"]["term"] == nev.term,
              f"status after {leader.label} came back: {st}")
        check(len(leader.elected()) == elected_before,
              f"{leader.label} elected again: {leader.elected()}")
        check(not etcde.guardian_lines(leader),
              f"{leader.label}'s guardian acted: {etcde.guardian_lines(leader)}")
        check(etcde.e2elib.leader_of(alive) is new, "the leadership moved meanwhile")
        # Whatever the continued one did on waking, the new leader still holds the leader key.
        etcde.check_leader_key(cluster, name, new)
        leader, ev = new, nev

    # A candidate of higher priority joins: the leader must hand over to it, demoted first (the
    # leader key makes the claim exclusive: without it the newcomer would claim beside it).
    p = t.campaign("p", name, uri, extra=["--priority", "10"])
    alive.append(p)
    procs.append(p)
    _, pev = etcde.settled(t, name, uri, alive, above_term=ev.term,
                           what="the higher-priority newcomer elected", cluster=cluster)
    check(p.leading(), f"{etcde.e2elib.leader_of(alive).label} leads, not p")
    check(leader.demoted() and leader.demoted()[-1].ns <= pev.ns,
          f"{leader.label} not demoted before p was elected: {leader.events()}")
    leader, ev = p, pev

    # A plain handoff after the stops: the election still works.
    leader.send(signal.SIGTERM)
    check(leader.wait() == 0, f"{leader.label} did not exit 0 after SIGTERM")
    alive.remove(leader)
    etcde.settled(t, name, uri, alive, above_term=ev.term, what="a leader after the handoff",
                  cluster=cluster)
    etcde.standing(t, name, uri, len(alive))
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=ROUNDS + 3)


if __name__ == "__main__":
    etcde.main("e2e_etcd_stop", body)
