#!/usr/bin/env python3
"""test_members.py - etcd members fail under a running election: it goes on, never two leaders.

    test_members.py member_killed|raft_leader_killed|member_paused

Three members, three `reign campaign` processes with 3 s sessions (leases).  A client talks to
the first member its URI lists until that one fails it, so each candidate's URI is ordered to
put it where the scenario wants it, and the test checks (from /proc) which member the leader
holds its connections to before it strikes.

  member_killed       the leader a and the waiting b talk to a follower member X; X is killed
                      (SIGKILL), the two others keep serving.  a must move to another member
                      and either keep leading or hand over cleanly.  While X is down the
                      leader resigns and the next one takes over, and a new candidate whose
                      URI lists X first joins; then X is started again (with its data) and the
                      leader resigns once more.
  raft_leader_killed  the leader a talks to a follower, b to the cluster's raft leader L; L is
                      killed: the followers lose their leader and elect another, while a's
                      keepalives meet "no leader" or silence.  The election settles, the
                      leader resigns and the next one takes over; L is started again.  Then
                      the new raft leader is killed too, and the same is checked again.
  member_paused       every candidate's URI lists the same follower X first: the leader's
                      connections and every candidate's watch stream are on X.  X is paused
                      (SIGSTOP: it accepts and holds connections but never answers, as a
                      partitioned member would).  The election settles on the two others, then
                      the leader resigns while X is still paused: the next candidate must hear
                      of it and take over.  X is resumed, and the leader resigns once more.

After each fault: exactly one running candidate says it leads and `reign status` (through the
members that are up) names it with that term.  At the end every candidate resigns, and
check_leadership.py proves over every process's lines that no two leaderships overlapped and
that terms and tokens strictly grew.  No time is asserted.
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, log, wait_for  # noqa: E402

PARAMS = {"session_timeout_ms": etcde.SESSION_MS}
RECONNECTED_RE = re.compile(r"etcd: lease [0-9a-f]+ (reconnected|granted)")


class Run:
    """The candidates of a scenario: all of them (for the checker) and the running ones."""

    def __init__(self, t, cluster, name):
        self.t, self.cluster, self.name = t, cluster, name
        self.procs, self.alive = [], []
        self.term = 0

    def status_uri(self):
        return self.cluster.live_first(PARAMS)

    def join(self, label, order):
        p = self.t.campaign(label, self.name, self.cluster.uri(order, **PARAMS))
        self.procs.append(p)
        self.alive.append(p)
        return p

    def standing(self):
        return etcde.standing(self.t, self.name, self.status_uri(), len(self.alive))

    def settle(self, what):
        """Exactly one leader, the one status names; terms only grow."""
        p, ev = etcde.settled(self.t, self.name, self.status_uri(), self.alive,
                              above_term=self.term - 1, what=what, cluster=self.cluster)
        check(ev.term >= self.term, f"term {ev.term} after {self.term}")
        self.term = ev.term
        return p, ev

    def handoff(self, what):
        """SIGTERM to the leader: it exits 0, and another one leads with a higher term."""
        leader, ev = self.settle(f"a leader before {what}")
        leader.send(signal.SIGTERM)
        rc = leader.wait()
        check(rc == 0, f"{leader.label} exited {rc} after SIGTERM ({what})")
        self.alive.remove(leader)
        self.term = ev.term + 1
        p, nev = self.settle(f"a successor of {leader.label} ({what})")
        log(f"{what}: {leader.label} resigned, {p.label} leads (term {nev.term})")
        return p

    def finish(self, min_leaderships):
        self.standing()
        etcde.resign_all(self.alive)
        self.t.check_leadership(self.procs, min_leaderships=min_leaderships)


def sessions_seen(p):
    """How many times p's log says a keepalive or a grant was answered (a session confirmed
    after trouble, or a new one)."""
    return len(RECONNECTED_RE.findall(p.err()))


def wait_recovered(p, before, demoted_before, what):
    """Waits until p has a session confirmed again since `before`, or was demoted."""
    wait_for(lambda: sessions_seen(p) > before or len(p.demoted()) > demoted_before,
             f"{p.label} to reconnect or step down after {what}")
    if len(p.demoted()) > demoted_before:
        log(f"{what}: {p.label} was demoted ({p.demoted()[-1].reason})")
    else:
        log(f"{what}: {p.label} reconnected")


def followers(cluster):
    lead = cluster.leader()
    return lead, [i for i in cluster.all() if i != lead]


def scenario_member_killed(t, cluster, run):
    lead, (x, f2) = followers(cluster)
    log(f"raft leader {lead}; the candidates' member X = {x}")
    a = run.join("a", [x, lead, f2])
    run.settle("a elected")
    run.join("b", [x, f2, lead])
    run.join("c", [f2, lead, x])
    run.standing()
    etcde.wait_connected_to(cluster, a, x)
    before, dem_before = sessions_seen(a), len(a.demoted())
    cluster.stop_server(x)
    wait_recovered(a, before, dem_before, f"member {x} killed")
    leader, _ = run.settle(f"one leader with member {x} down")
    log(f"with member {x} down: {leader.label} leads"
        + (" (kept)" if leader is a and not a.demoted() else ""))
    run.handoff(f"member {x} down")
    run.join("d", [x, lead, f2])  # its first member is down: it must still join
    run.standing()
    cluster.start_server(x)
    run.settle(f"one leader after member {x} came back")
    run.handoff(f"member {x} back")
    run.finish(min_leaderships=3)


def scenario_raft_leader_killed(t, cluster, run):
    lead, (f1, f2) = followers(cluster)
    log(f"raft leader {lead}; a talks to follower {f1}, b to the raft leader")
    a = run.join("a", [f1, f2, lead])
    run.settle("a elected")
    run.join("b", [lead, f1, f2])
    run.join("c", [f2, lead, f1])
    run.standing()
    etcde.wait_connected_to(cluster, a, f1)
    for rnd in (1, 2):
        leader, _ = run.settle(f"a leader before round {rnd}")
        cluster.stop_server(lead)
        new_lead = cluster.leader()
        log(f"round {rnd}: raft leader {lead} killed, member {new_lead} leads the cluster")
        # The leader's member lost its raft leader for a while (or was the one killed): its
        # keepalives may have failed meanwhile; it must have come back or stepped down cleanly.
        log(f"round {rnd}: {leader.label} is on members "
            f"{sorted(etcde.connected_members(cluster, leader.pid))}")
        run.settle(f"one leader after raft leader {lead} was killed (round {rnd})")
        run.handoff(f"raft leader {lead} down (round {rnd})")
        run.join(f"r{rnd}", [lead, f1, f2])
        run.standing()
        cluster.start_server(lead)
        run.settle(f"one leader after member {lead} came back (round {rnd})")
        lead = cluster.leader()
        f1, f2 = [i for i in cluster.all() if i != lead]
    run.handoff("the end")
    run.finish(min_leaderships=4)


def scenario_member_paused(t, cluster, run):
    lead, (x, f2) = followers(cluster)
    log(f"raft leader {lead}; every candidate's first member X = {x}")
    a = run.join("a", [x, lead, f2])
    run.settle("a elected")
    run.join("b", [x, f2, lead])
    run.join("c", [x, lead, f2])
    run.standing()
    for p in run.alive:
        etcde.wait_connected_to(cluster, p, x)
    seen = {p: (sessions_seen(p), len(p.demoted())) for p in run.alive}
    cluster.pause_server(x)
    # Every candidate's keepalive meets the silence of X, and each moves on to another member:
    # from then on, nothing but its watch stream is left on X.
    for p in run.alive:
        wait_recovered(p, *seen[p], f"member {x} paused")
    leader, _ = run.settle(f"one leader with member {x} paused")
    log(f"with member {x} paused: {leader.label} leads"
        + (" (kept)" if leader is a and not a.demoted() else ""))
    run.handoff(f"member {x} paused")
    cluster.resume_server(x)
    run.settle(f"one leader after member {x} was resumed")
    run.handoff(f"member {x} resumed")
    run.finish(min_leaderships=3)


SCENARIOS = {
    "member_killed": scenario_member_killed,
    "raft_leader_killed": scenario_raft_leader_killed,
    "member_paused": scenario_member_paused,
}


def body(t, scenario):
    cluster = etcde.Cluster(t)
    run = Run(t, cluster, t.unique(scenario.replace("_", "-")))
    SCENARIOS[scenario](t, cluster, run)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: test_members.py {'|'.join(SCENARIOS)}")
    etcde.main(f"e2e_etcd_{sys.argv[1]}", lambda t: body(t, sys.argv[1]))
