#!/usr/bin/env python3
"""test_designate_faults.py - handoffs under faults; check_leadership.py proves each story.

    test_designate_faults.py [zookeeper|sqlite|mariadb|postgres]   (default zookeeper)

On ZooKeeper a 4 s session; on a SQL store the short lease of tests/e2e_sql/sqle.py (2 s).
What holds the lead is the leader node there, the lease row here; the stories are the same.

1. A frozen leader (SIGSTOP) is designated away from: the request is written, but a frozen
   leader cannot hand over, and the leader node (or lease) it holds keeps everyone else out
   until its session expires (its lease has stood still for a whole lease).  Then the
   designated candidate takes over (if another claimed first, from it in turn, by a handoff);
   the leader, resumed (SIGCONT), finds it was demoted at its deadline, before that.
2. The leader is SIGKILLed right after a designation was asked: the designated candidate (or
   anyone) takes over when the session expires or the guardian releases the lease, never
   while it could still lead.
3. A burst of designations round robin over three candidates, each waited for: every one ends
   with the named candidate leading, and no two leaderships overlap.
4. Priority preemption while the high-priority newcomer is killed and restarted: leaderships
   never overlap, and the last one standing with the highest priority leads.
5. The designee is stopped (SIGSTOP) when it is designated: the leader hands over to it, but
   it cannot take over; another candidate leads once the designee's session has expired (its
   designation has stood for a whole lease), with a greater term, and never beside anyone.
6. The designee is SIGKILLed right after the leader handed over to it: another candidate
   leads, with a greater term.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import check, leader_of, log, main, wait_for  # noqa: E402

SESSION_MS = 4000
STORES = ("zookeeper", "sqlite", "mariadb", "postgres")
STOP_PATHS = []  # SQLite: the store's files, which a stopped process must not hold locked


def stop(p):
    """SIGSTOP, but on SQLite never inside a write (it would hold every other process)."""
    if STOP_PATHS:
        e2elib.stop_unlocked(p, STOP_PATHS)
    else:
        p.send(signal.SIGSTOP)


def designate(t, uri, name, ident, wait_ms=30000):
    rc, out, err = t.reign(["--uri", uri, "designate", name, ident, "--wait-ms", str(wait_ms)])
    check(rc == 0, f"reign designate {ident} exited {rc}: {err.strip()}")
    return out.strip()


def frozen_leader(t, uri):
    name = t.unique("e2e-des-frozen")
    a = t.campaign("fa", name, uri)
    wait_for(lambda: a.elected(), "fa elected")
    b = t.campaign("fb", name, uri)
    c = t.campaign("fc", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 3, "3 standing")
    stop(a)
    out = designate(t, uri, name, "fc")
    log(f"designate: {out}")
    # designate returns when the store names fc; fc says so once its claim's answer is in.
    wait_for(lambda: c.leading(), "fc to lead after the designation")
    if b.elected():  # it won the race for the leader node when fa's session ended
        check(b.demoted() and b.demoted()[-1].reason == "handoff", f"fb: {b.demoted()}")
        log("fb claimed first when fa's session ended, and handed over to fc")
    a.send(signal.SIGCONT)
    wait_for(lambda: a.demoted(), "fa, resumed, demoted")
    log(f"fa demoted: {a.demoted()[-1]}")
    for p in (a, b, c):
        p.send(signal.SIGTERM)
    for p in (a, b, c):
        p.wait()
    t.check_leadership([a, b, c], min_leaderships=2)


def killed_leader(t, uri):
    name = t.unique("e2e-des-killed")
    a = t.campaign("ka", name, uri)
    wait_for(lambda: a.elected(), "ka elected")
    b = t.campaign("kb", name, uri)
    c = t.campaign("kc", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 3, "3 standing")
    d = t.spawn("designator", [t.cli, "--uri", uri, "designate", name, "kc", "--wait-ms",
                               "30000"])
    a.kill9()
    check(d.wait() == 0, f"designate after a kill: {d.err().strip()}")
    wait_for(lambda: leader_of([b, c]), "someone to lead after the kill")
    for p in (b, c):
        p.send(signal.SIGTERM)
    for p in (b, c):
        p.wait()
    t.check_leadership([a, b, c], min_leaderships=2)


def burst(t, uri):
    name = t.unique("e2e-des-burst")
    procs = [t.campaign(f"b{i}", name, uri) for i in range(3)]
    wait_for(lambda: leader_of(procs), "someone to lead")
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 3, "3 standing")
    for n in range(9):
        target = procs[(n + 1) % 3]
        designate(t, uri, name, target.label)
        wait_for(lambda: target.leading(), f"{target.label} to lead")
        check(leader_of(procs) is target, f"round {n}: {target.label} does not lead")
    for p in procs:
        p.send(signal.SIGTERM)
    for p in procs:
        p.wait()
    t.check_leadership(procs, min_leaderships=9)


def preemption_churn(t, uri):
    name = t.unique("e2e-prio-churn")
    low = t.campaign("plow", name, uri, extra=["--priority", "1"])
    wait_for(lambda: low.elected(), "plow elected")
    mid = t.campaign("pmid", name, uri, extra=["--priority", "5"])
    wait_for(lambda: mid.elected(), "pmid takes over")
    highs = []
    for n in range(3):
        h = t.campaign(f"phigh{n}", name, uri, extra=["--priority", "9"])
        highs.append(h)
        wait_for(lambda: h.elected(), f"phigh{n} takes over")
        h.kill9()
        wait_for(lambda: leader_of([low, mid]), "a leader after the kill")
    wait_for(lambda: mid.leading(), "pmid leads again (it outranks plow)")
    for p in (low, mid):
        p.send(signal.SIGTERM)
    for p in (low, mid):
        p.wait()
    t.check_leadership([low, mid, *highs], min_leaderships=5)


def lost_designee(t, uri, fault):
    """The designee stopped, or killed once the leader has handed over to it: another leads."""
    name = t.unique(f"e2e-des-{fault}")
    a = t.campaign(f"{fault}a", name, uri)
    wait_for(lambda: a.elected(), f"{fault}a elected")
    b = t.campaign(f"{fault}b", name, uri)
    c = t.campaign(f"{fault}c", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 3, "3 standing")
    stop(c)
    d = t.spawn("designator", [t.cli, "--uri", uri, "designate", name, c.label, "--wait-ms",
                               "1000"])
    d.wait()  # the designee cannot take over while stopped: the command gives up waiting
    wait_for(lambda: a.demoted(), f"{a.label} to hand over")
    check(a.demoted()[-1].reason == "handoff", f"{a.label}: {a.demoted()}")
    handed = a.elected()[-1].term
    if fault == "kill":
        c.kill9()
    successor = wait_for(lambda: leader_of([a, b]), "another candidate to lead")
    check(successor.elected()[-1].term > handed,
          f"{successor.label} leads at term {successor.elected()[-1].term}, not above the "
          f"term {handed} handed over")
    log(f"{successor.label} leads after the designee was lost ({fault})")
    if fault == "stop":
        c.send(signal.SIGCONT)
    alive = [a, b] + ([c] if fault == "stop" else [])
    for p in alive:
        p.send(signal.SIGTERM)
    for p in alive:
        p.wait()
    t.check_leadership([a, b, c], min_leaderships=2)


def body(t, kind):
    if kind == "zookeeper":
        uri = t.uri(t.shared_hosts(), session_timeout_ms=SESSION_MS)
    else:
        import sqle
        store = sqle.Store(t, kind)
        uri = store.uri()
        if kind == "sqlite":
            STOP_PATHS.extend([store.path, store.path + "-wal", store.path + "-shm"])
    frozen_leader(t, uri)
    killed_leader(t, uri)
    burst(t, uri)
    preemption_churn(t, uri)
    # The stopped designee must still stand when the designation looks for it: on a SQL store
    # its candidates row lives one lease after its last refresh, so a longer lease there.
    slow = uri if kind == "zookeeper" else store.uri(lease_ms=8000, renew_ms=1600,
                                                     poll_ms=1600, statement_timeout_ms=1000)
    lost_designee(t, slow, "stop")
    lost_designee(t, slow, "kill")


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "zookeeper"
    if kind not in STORES:
        sys.exit(f"usage: test_designate_faults.py [{'|'.join(STORES)}]")
    if kind == "zookeeper":
        main("e2e_designate_faults", lambda t: body(t, kind))
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "e2e_sql"))
        import sqle
        sqle.main(f"e2e_designate_faults_{kind}", lambda t: body(t, kind))
