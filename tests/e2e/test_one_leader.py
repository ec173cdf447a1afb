#!/usr/bin/env python3
"""test_one_leader.py - five `reign campaign` processes, one leader.

Five candidates of one election start at once.  Exactly one prints `elected`; `reign status`
names the same candidate with the same term and token, and lists all five candidates with the
leader first.  After a quiet look (still exactly one elected line in all), every process gets
SIGTERM and exits 0, and check_leadership.py proves the story has no overlap.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

N = 5


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-one")
    procs = [t.campaign(f"c{i}", name, uri) for i in range(N)]

    def all_joined():
        st = t.status(name, uri)
        return st if st and len(st["candidates"]) == N and st["leader"] else None

    st = wait_for(all_joined, "five candidates and a leader in `reign status`")
    wait_for(lambda: sum(len(p.elected()) for p in procs) >= 1, "an elected line")
    # The status answer came after the five joined: no later leadership can come without a
    # change, so one more look at both must still agree.
    st = t.status(name, uri)
    elected = [(p, e) for p in procs for e in p.elected()]
    check(len(elected) == 1, f"{len(elected)} elected lines among {N} candidates: {elected}")
    proc, ev = elected[0]
    log(f"leader {proc.label}: {ev}")
    check(st["leader"] is not None, "status shows no leader")
    check(st["leader"]["id"] == ev.ident == proc.label,
          f"status says {st['leader']['id']} leads, {proc.label} printed {ev}")
    check(st["leader"]["term"] == ev.term and st["leader"]["token"] == ev.token,
          f"status term/token {st['leader']['term']}/{st['leader']['token']} != {ev}")
    ids = [c["id"] for c in st["candidates"]]
    check(sorted(ids) == sorted(p.label for p in procs), f"candidates {ids}")
    check(ids[0] == proc.label, f"the leader {proc.label} is not first in {ids}")
    check(st["strategy"] == "queue", f"strategy {st['strategy']}")
    # ZooKeeper knows both times (the nodes' mtime and ctime): numbers, never null.
    times = [st["leader"]["since_ms"]] + [c["joined_ms"] for c in st["candidates"]]
    check(all(isinstance(x, int) and x > 0 for x in times), f"times {times}, want Unix ms")
    for p in procs:
        check(p.alive(), f"{p.label} exited early: {p.err()}")

    for p in procs:
        p.send(signal.SIGTERM)
    for p in procs:
        rc = p.wait()
        check(rc == 0, f"{p.label} exited {rc} after SIGTERM")
    t.check_leadership(procs, min_leaderships=1)
    check(t.status(name, uri)["candidates"] == [], "candidates left after every one resigned")


if __name__ == "__main__":
    main("e2e_one_leader", body)
