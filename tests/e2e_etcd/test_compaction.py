#!/usr/bin/env python3
"""test_compaction.py - etcd compacts its history under waiting candidates: the election goes on.

Three members.  Act 1: a, b and c campaign (3 s sessions); while b and c wait, the history is
compacted up to the current revision (`etcdctl compact REV`); then the leader resigns
(SIGTERM) and the next one must take over; compacted again, the next leader resigns, and the
last one must take over.  A newcomer joining after the compaction stands in line.

Act 2 (a watch stream resumed from a compacted revision, the case compaction can break): in a
second election, l leads, p waits behind it and w behind p; w talks to the three members
through three reign_tcpproxy processes, 6 s sessions (so that the short freeze below stays far
inside w's lease).  The proxies freeze: w's watch stream stops delivering.  p resigns (its
keys go: events w's stream has not delivered), and the history is compacted past them.  The
proxies then reset every connection (SIGHUP) and thaw: w's watchers must start again after the
last event each was sent, which etcd compacted away; etcd cancels them, and w's log must say
so ("revisions compacted"), after which each of those watches of w looks again.  Then l
resigns: w, the only candidate left, must take over.

After each step exactly one candidate leads and `reign status` names it with that term;
check_leadership.py proves for each election that no two leaderships overlapped and that terms
and tokens strictly grew.  No time is asserted.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, env_path, log, wait_for  # noqa: E402


def compact(cluster):
    rev = cluster.revision()
    cluster.ctl("compact", str(rev))
    log(f"compacted up to revision {rev}")
    return rev


def resign(p):
    p.send(signal.SIGTERM)
    rc = p.wait()
    check(rc == 0, f"{p.label} exited {rc} after SIGTERM")


def act_waiting(t, cluster):
    uri = cluster.uri(session_timeout_ms=etcde.SESSION_MS)
    name = t.unique("compact")
    procs = etcde.campaigns(t, name, uri, ["a", "b", "c"])
    alive = list(procs)
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, alive, cluster=cluster)
    for rnd in (1, 2):
        compact(cluster)
        if rnd == 1:
            d = t.campaign("d", name, uri)
            procs.append(d)
            alive.append(d)
            etcde.standing(t, name, uri, len(alive))
        resign(leader)
        alive.remove(leader)
        leader, ev = etcde.settled(t, name, uri, alive, above_term=ev.term,
                                   what=f"a successor after compaction (round {rnd})",
                                   cluster=cluster)
    etcde.standing(t, name, uri, len(alive))
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=3)


def act_stream_compacted(t, cluster):
    session_ms = 2 * etcde.SESSION_MS
    direct = cluster.uri(session_timeout_ms=session_ms)
    proxies = [t.spawn(f"proxy{i}", [env_path("REIGN_TCPPROXY"), "0", cluster.hosts([i])])
               for i in cluster.all()]
    ports = [int(wait_for(lambda: p.lines(), f"{p.label}'s port")[0]) for p in proxies]
    via = "etcd://" + ",".join(f"127.0.0.1:{port}" for port in ports) + \
        f"?session_timeout_ms={session_ms}"
    name = t.unique("compact-stream")
    lead = t.campaign("l", name, direct)
    _, ev = etcde.settled(t, name, direct, [lead], cluster=cluster)
    p = t.campaign("p", name, direct)
    etcde.standing(t, name, direct, 2)
    w = t.campaign("w", name, via)
    st = etcde.standing(t, name, direct, 3)
    check([k["id"] for k in st["candidates"]] == ["l", "p", "w"], f"{st['candidates']}")

    for x in proxies:
        x.send(signal.SIGUSR1)
    for x in proxies:
        wait_for(lambda: "frozen" in x.err(), f"{x.label} to freeze")
    resign(p)  # p's keys go while w hears nothing
    # More changes under the prefix w's stream covers: the revision it must resume from is
    # then certainly below the compacted one, whatever p's leaving took.
    for i in (1, 2):
        rc, _, err = t.reign(["--uri", direct, "value", "set", "e2e/compaction", str(i)])
        check(rc == 0, f"value set: {err.strip()}")
    compact(cluster)
    for x in proxies:
        x.send(signal.SIGHUP)
    for x in proxies:
        wait_for(lambda: "dropped" in x.err(), f"{x.label} to drop")
        x.send(signal.SIGUSR2)
    for x in proxies:
        wait_for(lambda: "thawed" in x.err(), f"{x.label} to thaw")
    wait_for(lambda: "revisions compacted" in w.err(),
             "w's watch stream to find its revision compacted")
    log("w's stream met the compaction")
    check(not w.demoted() and not w.elected(), f"w: {w.events()}")
    st = etcde.standing(t, name, direct, 2)
    check(st["leader"]["id"] == "l" and st["leader"]["term"] == ev.term, f"{st}")

    resign(lead)
    etcde.settled(t, name, direct, [w], above_term=ev.term, what="w elected after l resigned",
                  cluster=cluster)
    etcde.resign_all([w])
    t.check_leadership([lead, p, w], min_leaderships=2)


def body(t):
    cluster = etcde.Cluster(t)
    act_waiting(t, cluster)
    act_stream_compacted(t, cluster)


if __name__ == "__main__":
    etcde.main("e2e_etcd_compaction", body)
