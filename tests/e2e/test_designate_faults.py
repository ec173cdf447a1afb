#!/usr/bin/env python3
"""test_designate_faults.py - handoffs under faults; check_leadership.py proves each story.

1. A frozen leader (SIGSTOP) is designated away from: the request is written, but a frozen
   leader cannot hand over, and the leader node it holds keeps everyone else out until its
   session expires.  Then the designated candidate takes over (if the next in line claimed
   first, from it in turn, by a handoff); the leader, resumed (SIGCONT), finds it was demoted
   at its deadline, before that.
2. The leader is SIGKILLed right after a designation was asked: the designated candidate (or
   anyone) takes over when the session expires, never while it could still lead.
3. A burst of designations round robin over three candidates, each waited for: every one ends
   with the named candidate leading, and no two leaderships overlap.
4. Priority preemption while the high-priority newcomer is killed and restarted: leaderships
   never overlap, and the last one standing with the highest priority leads.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, leader_of, log, main, wait_for  # noqa: E402

SESSION_MS = 4000


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
    a.send(signal.SIGSTOP)
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


def body(t):
    uri = t.uri(t.shared_hosts(), session_timeout_ms=SESSION_MS)
    frozen_leader(t, uri)
    killed_leader(t, uri)
    burst(t, uri)
    preemption_churn(t, uri)


if __name__ == "__main__":
    main("e2e_designate_faults", body)
