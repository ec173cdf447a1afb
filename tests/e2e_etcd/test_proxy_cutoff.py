#!/usr/bin/env python3
"""test_proxy_cutoff.py - a leader cut off from etcd steps down before anyone else leads.

Three members; a talks to them through three reign_tcpproxy processes (one per member, all
three in a's URI), b and c directly; 3 s sessions (leases).  a leads.  SIGUSR1 freezes the
three proxies: a's connections stay open but nothing moves, as in a network partition that
isolates a's host, so a's keepalives go unanswered on every member and a can prove nothing.
a must print `demoted` (suspended or stalled: whichever of its safety deadline and its
keepalives' silence it notices first) at a time earlier than the `elected` of b or c, which
can only come once etcd expired a's lease.  Thawed (SIGUSR2), a finds its lease gone, takes a
new one and stands again behind the new leader, which keeps leading and still holds the
`leader` key on its lease.  Then the new leader
resigns and the election goes on.  check_leadership.py proves the story.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, env_path, log, wait_for  # noqa: E402


def body(t):
    cluster = etcde.Cluster(t)
    proxies = []
    for i in cluster.all():
        p = t.spawn(f"proxy{i}", [env_path("REIGN_TCPPROXY"), "0", cluster.hosts([i])])
        proxies.append(p)
    ports = [int(wait_for(lambda: p.lines(), f"{p.label}'s port")[0]) for p in proxies]
    params = {"session_timeout_ms": etcde.SESSION_MS}
    via_proxies = "etcd://" + ",".join(f"127.0.0.1:{port}" for port in ports) + \
        f"?session_timeout_ms={etcde.SESSION_MS}"
    direct = cluster.uri(**params)
    name = t.unique("cutoff")
    a = t.campaign("a", name, via_proxies)
    etcde.settled(t, name, direct, [a], cluster=cluster)
    others = etcde.campaigns(t, name, direct, ["b", "c"])
    procs = [a] + others
    etcde.standing(t, name, direct, 3)
    check(etcde.e2elib.leader_of(procs) is a, "a does not lead any more")

    for p in proxies:
        p.send(signal.SIGUSR1)
    for p in proxies:
        wait_for(lambda: "frozen" in p.err(), f"{p.label} to freeze")
    dem = wait_for(lambda: a.demoted(), "a demoted after the cut")[0]
    new, el = etcde.settled(t, name, direct, others, above_term=a.elected()[0].term,
                            what="b or c elected", cluster=cluster)
    check(dem.reason in ("suspended", "stalled", "expired"),
          f"a demoted with reason {dem.reason}")
    check(dem.ns < el.ns, f"{new.label} elected at {el.ns}, before a stepped down at {dem.ns}")
    log(f"a demoted ({dem.reason}) {(el.ns - dem.ns) / 1e6:.0f} ms before {new.label} was "
        f"elected")

    for p in proxies:
        p.send(signal.SIGUSR2)
    for p in proxies:
        wait_for(lambda: "thawed" in p.err(), f"{p.label} to thaw")
    # a's lease expired meanwhile: it takes a new one and stands again, behind the leader.
    st = etcde.standing(t, name, direct, 3)
    check(st["leader"]["id"] == new.label and st["leader"]["term"] == el.term, f"{st}")
    check(len(a.elected()) == 1, f"a elected again while {new.label} leads: {a.elected()}")
    check(st["candidates"][-1]["id"] == "a", f"a is not last in line: {st['candidates']}")
    # Whatever a did on waking, the new leader still holds the leader key, on its lease.
    etcde.check_leader_key(cluster, name, new)

    new.send(signal.SIGTERM)
    check(new.wait() == 0, f"{new.label} did not exit 0 after SIGTERM")
    alive = [p for p in procs if p is not new]
    etcde.settled(t, name, direct, alive, above_term=el.term, what="a leader after the handoff",
                  cluster=cluster)
    etcde.standing(t, name, direct, 2)
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=3)


if __name__ == "__main__":
    etcde.main("e2e_etcd_proxy_cutoff", body)
