#!/usr/bin/env python3
"""test_kill.py - a SIGKILLed leader on etcd: its successor takes over, never beside it.

    test_kill.py guardian|off

Three `reign campaign` processes on a three-member cluster, 3 s sessions (leases).  Three times
over, the leader is killed with SIGKILL (no chance to resign) and a replacement candidate
joins; a successor with a higher term must be elected after the kill, and `reign status` must
name it with that term.

  guardian  each process's guardian (the default) revokes its lease when it dies: its line
            "process N died: revoked etcd lease 0xLEASE" names the killed leader's lease
            (the one its `leader` key was on), and the lease is gone from `etcdctl lease list`
            (a guardian that found it expired would say "had expired": the takeover then came
            from the lease's TTL, not from the guardian).
  off       REIGN_GUARDIAN=off: nothing revokes the lease, its TTL ends it.  Right after the
            kill the test asks etcd for the lease's time to live (`etcdctl lease timetolive`,
            which etcd's leader answers from its lessor, truncated to whole seconds): the
            lease, and the `leader` key on it, lasts at least that long after the question was
            sent, so the successor's `elected` must come no earlier (the bound is etcd's own
            reading, as e2e_sql's kill tests take theirs from the database's clock).  No
            guardian line may appear.

No time is asserted: only order.  check_leadership.py proves over every process's lines (the
killed ones ending at their kill) that no two leaderships overlapped and that terms and tokens
strictly grew.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, log, wait_for  # noqa: E402

ROUNDS = 3
REMAINING_RE = re.compile(r"remaining\((-?\d+)s\)")
# etcd's lessor and these tests read the same CLOCK_MONOTONIC (Go's monotonic clock); a few
# milliseconds cover the rounding of the readings.
CLOCK_SLACK_NS = 5_000_000


def body(t, mode):
    cluster = etcde.Cluster(t)
    uri = cluster.uri(session_timeout_ms=etcde.SESSION_MS)
    env = {"REIGN_GUARDIAN": "off"} if mode == "off" else None
    name = t.unique("kill")
    alive = etcde.campaigns(t, name, uri, ["a", "b", "c"], env=env)
    procs = list(alive)
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, alive, cluster=cluster)
    leader_key = f"/reign/election/{name}/leader"
    for rnd in range(1, ROUNDS + 1):
        kvs, _ = cluster.get(leader_key)
        check(kvs and kvs[0]["lease"], f"no leader key on a lease: {kvs}")
        lease = kvs[0]["lease"]
        check(lease == etcde.lease_of(leader),
              f"the leader key is on lease {lease}, {leader.label}'s session is "
              f"{etcde.lease_of(leader)}")
        killed_ns = leader.kill9()
        asked_ns = time.monotonic_ns()
        _, ttl_out, _ = cluster.ctl("lease", "timetolive", lease)
        m = REMAINING_RE.search(ttl_out)
        remaining_s = int(m.group(1)) if m else None
        log(f"round {rnd}: killed {leader.label} (lease {lease}); etcd then said: "
            f"{ttl_out.strip()}")
        alive.remove(leader)
        joiner = t.campaign(f"r{rnd}", name, uri, env=env)
        alive.append(joiner)
        procs.append(joiner)
        new, nev = etcde.settled(t, name, uri, alive, above_term=ev.term,
                                 what=f"a successor of {leader.label} (round {rnd})",
                                 cluster=cluster)
        check(nev.ns >= killed_ns, f"{new.label} elected at {nev.ns}, before the kill of "
                                   f"{leader.label} at {killed_ns}")
        check(nev.token > ev.token, f"token {nev.token} after {ev.token}")
        if mode == "guardian":
            lines = wait_for(lambda: etcde.guardian_lines(leader),
                             f"{leader.label}'s guardian to say what it did")
            check(len(lines) == 1, f"{leader.label}: {len(lines)} guardian lines: {lines}")
            _, pid, report = lines[0]
            check(pid == leader.pid, f"guardian line for pid {pid}, not {leader.pid}")
            check(f"revoked etcd lease 0x{lease}" in report,
                  f"{leader.label}'s guardian did not revoke lease {lease}: {report}")
            wait_for(lambda: lease not in cluster.leases(), f"lease {lease} gone")
        else:
            check(not etcde.guardian_lines(leader), f"a guardian acted for {leader.label} "
                                                    f"with REIGN_GUARDIAN=off")
            if remaining_s is not None and remaining_s > 0:
                # etcd's answer came after asked_ns, and truncates what remained to whole
                # seconds: the lease ran out no earlier than asked_ns + remaining_s.
                expiry_ns = asked_ns + remaining_s * 1_000_000_000
                check(nev.ns >= expiry_ns - CLOCK_SLACK_NS,
                      f"{new.label} elected at {nev.ns}, {(expiry_ns - nev.ns) / 1e6:.1f} ms "
                      f"before lease {lease} could have run out")
                log(f"round {rnd}: {new.label} elected {(nev.ns - expiry_ns) / 1e6:.0f} ms "
                    f"after the earliest end of lease {lease}")
            else:
                log(f"round {rnd}: lease {lease} had no time left when asked")
            wait_for(lambda: lease not in cluster.leases(), f"lease {lease} gone")
        log(f"round {rnd}: {new.label} leads (term {nev.term} token {nev.token})")
        leader, ev = new, nev

    # Every replacement standing before the end (one still connecting when its SIGTERM comes
    # would exit 1, which says nothing about the kills).
    etcde.standing(t, name, uri, len(alive))
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=ROUNDS + 1)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("guardian", "off"):
        sys.exit("usage: test_kill.py guardian|off")
    mode = sys.argv[1]
    etcde.main(f"e2e_etcd_kill_{'guardian' if mode == 'guardian' else 'expiry'}",
               lambda t: body(t, mode))
