#!/usr/bin/env python3
"""test_kill_storm.py - twenty candidates, the leader SIGKILLed over and over.

Twenty `reign campaign` processes start at once.  Then, for eight rounds: the current leader
is killed with SIGKILL (no chance to resign: its guardian closes its session), a replacement
candidate is started, and the test waits until someone else is elected.  At the
end every process gets SIGTERM, and check_leadership.py proves over all their lines - the
killed ones ending at their kill - that no two leaderships overlapped and that terms and tokens
strictly increased.  Each new leader must also be elected only after its predecessor's kill.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, leader_of, log, main, wait_for  # noqa: E402

N = 20
ROUNDS = 8


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=1000)
    name = t.unique("e2e-storm")
    procs = [t.campaign(f"c{i:02d}", name, uri) for i in range(N)]
    alive = list(procs)

    def current_leader():
        return leader_of(alive)

    leader = wait_for(current_leader, "the first leader")
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == N,
             f"{N} candidates in status")
    last_term = leader.elected()[-1].term
    for rnd in range(1, ROUNDS + 1):
        killed_ns = leader.kill9()
        alive.remove(leader)
        log(f"round {rnd}: killed leader {leader.label} (term {last_term})")
        alive.append(t.campaign(f"r{rnd:02d}", name, uri))

        def successor():
            p = leader_of(alive)
            return p if p and p.elected()[-1].term > last_term else None

        leader = wait_for(successor, f"a new leader after round {rnd}")
        ev = leader.elected()[-1]
        check(ev.ns >= killed_ns, f"{leader.label} elected at {ev.ns}, before the kill of its "
                                  f"predecessor at {killed_ns}")
        log(f"round {rnd}: {leader.label} leads, term {ev.term} token {ev.token}")
        last_term = ev.term

    # Every replacement standing before the end: one still connecting when its SIGTERM comes
    # exits 1 ("interrupted while connecting"), which says nothing about the storm.  The killed
    # ones' nodes are gone by now (their guardians closed their sessions).
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == len(alive),
             f"{len(alive)} candidates in status at the end")
    for p in alive:
        p.send(signal.SIGTERM)
    for p in alive:
        rc = p.wait()
        check(rc == 0, f"{p.label} exited {rc} after SIGTERM")
    leads = t.check_leadership(procs + [p for p in alive if p not in procs],
                               min_leaderships=ROUNDS + 1)
    log(f"{len(leads)} leaderships in all")


if __name__ == "__main__":
    main("e2e_kill_storm", body)
