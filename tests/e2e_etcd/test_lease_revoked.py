#!/usr/bin/env python3
"""test_lease_revoked.py - the leader's lease revoked by hand: it demotes, another one leads.

Three members, three `reign campaign` processes, 3 s sessions (leases).  The leader's lease is
the one its `leader` key is on (`etcdctl get -w json`), which must also be the lease its log
says it was granted.  `etcdctl lease revoke LEASE` ends it from outside: etcd deletes every key
on it at once, the leader's candidate and leader keys among them.  Then:

  * the leader must print its own `demoted` line (it hears of its keys' deletion, or finds its
    lease gone at its next keepalive), take a new lease, and stand again;
  * another candidate must be elected, after the revoke was sent, with a higher term and token,
    and `reign status` must name it;
  * `etcdctl lease list` no longer has the revoked lease;
  * the new leader's `leader` key is there, on its lease, once the deposed one stood again
    (what the deposed leader does on hearing of its keys' deletion must not touch it).

Twice over, then a plain handoff.  A revoke is an operator ending a leadership by fiat, as a
kill -9 is: nothing the leader can see coming.  So, as a killed leader's leadership ends at
its kill, a revoked leader's ends when the revoke was sent (check_leadership_cut) whenever its
own `demoted` line says it heard of it; the test logs how much later that was, and
check_leadership.py proves over every process's lines that no leadership began before the
previous one ended so, and that terms and tokens strictly grew.  No time is asserted.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from e2elib import beyond  # noqa: E402
from etcde import check, log, wait_for  # noqa: E402

ROUNDS = 2


def body(t):
    cluster = etcde.Cluster(t)
    uri = cluster.uri(session_timeout_ms=etcde.SESSION_MS)
    name = t.unique("revoke")
    procs = etcde.campaigns(t, name, uri, ["a", "b", "c"])
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, procs, cluster=cluster)
    cuts = {}
    for rnd in range(1, ROUNDS + 1):
        kvs, _ = cluster.get(f"/reign/election/{name}/leader")
        check(kvs and kvs[0]["lease"], f"no leader key on a lease: {kvs}")
        lease = kvs[0]["lease"]
        check(lease == etcde.lease_of(leader), f"the leader key is on lease {lease}, "
                                               f"{leader.label}'s is {etcde.lease_of(leader)}")
        check(lease in cluster.leases(), f"lease {lease} not listed")
        demoted_before = len(leader.demoted())
        revoke_ns = time.monotonic_ns()
        cluster.ctl("lease", "revoke", lease)
        log(f"round {rnd}: revoked {leader.label}'s lease {lease}")
        cuts.setdefault(leader, []).append(revoke_ns)
        dem = wait_for(lambda: beyond(leader.demoted(), demoted_before),
                       f"{leader.label} demoted after its lease was revoked")[-1]
        log(f"round {rnd}: {leader.label} demoted, reason {dem.reason}")
        new, nev = etcde.settled(t, name, uri, procs, above_term=ev.term,
                                 what=f"a successor of {leader.label} (round {rnd})",
                                 cluster=cluster)
        check(nev.ns >= revoke_ns, f"{new.label} elected at {nev.ns}, before the revoke at "
                                   f"{revoke_ns}")
        if nev.ns < dem.ns:
            log(f"round {rnd}: {new.label} was elected {(dem.ns - nev.ns) / 1e6:.1f} ms "
                f"before {leader.label} heard its lease was gone")
        wait_for(lambda: lease not in cluster.leases(), f"lease {lease} gone from the list")
        # The deposed leader stands again, in a new session.
        etcde.standing(t, name, uri, 3)
        check(etcde.lease_of(leader) != lease, f"{leader.label} kept lease {lease}")
        # Whatever the deposed one did on hearing of it, the new leader holds the leader key.
        etcde.check_leader_key(cluster, name, new)
        leader, ev = new, nev

    leader.send(signal.SIGTERM)
    check(leader.wait() == 0, f"{leader.label} did not exit 0 after SIGTERM")
    alive = [p for p in procs if p is not leader]
    etcde.settled(t, name, uri, alive, above_term=ev.term, what="a leader after the handoff",
                  cluster=cluster)
    etcde.standing(t, name, uri, 2)
    etcde.resign_all(alive)
    etcde.check_leadership_cut(t, procs, cuts, min_leaderships=ROUNDS + 2)


if __name__ == "__main__":
    etcde.main("e2e_etcd_lease_revoked", body)
