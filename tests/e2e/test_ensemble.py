#!/usr/bin/env python3
"""test_ensemble.py - a three-server ensemble loses the server the leader is connected to.

Three ZooKeeper servers (scripts/zk.sh start DIR 3); a and b campaign with all three in their
connect string, 8 s sessions; a leads.  The test finds the server a's session is connected to
(`cons` on each server lists its connections with sid=0x...; a logs its session id) and kills
that server.  a's client moves to another server with the same session, so a must keep
leading: no `demoted` line from a and no `elected` line from b, looked at once the safety
deadline that was running when the server went has certainly passed; `reign status` (through
the survivors) shows a with the same term.  Then the election must still work: SIGTERM to a
hands over to b.  Then the stopped server comes back and the ensemble's own leader is killed:
if b reconnected well before its safety deadline could end, b must have kept leading (c, a new
candidate, not elected).  check_leadership.py proves the story.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import (check, earliest_deadline_ns, log, main, wait_for,  # noqa: E402
                    wait_reconnected)

SESSION_MS = 8000
ONE_S = 1_000_000_000


def body(t):
    srv = t.zk_servers("zk", 3)
    uri = t.uri(srv.hosts, session_timeout_ms=SESSION_MS)
    name = t.unique("e2e-ensemble")
    a = t.campaign("a", name, uri)
    el = wait_for(lambda: a.elected(), "a elected")[0]
    b = t.campaign("b", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             "b's node in status")
    sid = wait_for(a.session_id, "a's session id in its log")

    def server_of_a():
        for i in range(1, 4):
            if f"sid=0x{sid}," in srv.four_letter(i, "cons") or \
               f"sid=0x{sid})" in srv.four_letter(i, "cons"):
                return i
        return None

    i = wait_for(server_of_a, f"the server holding session 0x{sid}")
    mode = srv.four_letter(i, "srvr")
    log(f"a's session 0x{sid} is on server {i} "
        f"({[x for x in mode.splitlines() if x.startswith('Mode:')]})")
    reconnects_before = a.err().count("reconnected")
    stop_ns = time.monotonic_ns()
    srv.stop_server(i)
    seen_ns = wait_reconnected(a, reconnects_before, "a's session to move to another server")
    moved_to = wait_for(server_of_a, f"session 0x{sid} on a surviving server")
    check(moved_to != i, f"session still on the stopped server {i}")
    log(f"session 0x{sid} moved to server {moved_to} within {(seen_ns - stop_ns) / 1e6:.0f} ms")
    # Had the move taken so long that a's deadline could have ended meanwhile (a machine far
    # too slow), a demotion would be right; the test would then fail here and say so.
    check(seen_ns < earliest_deadline_ns(stop_ns, SESSION_MS) - ONE_S,
          "a's session took too long to move for the test to tell anything")
    end_of_old_deadline = stop_ns + SESSION_MS * 1_000_000 * 3 // 4
    wait_for(lambda: time.monotonic_ns() > end_of_old_deadline + ONE_S,
             "the old safety deadline to pass", timeout=SESSION_MS / 1000 + 30)
    check(not a.demoted(), f"a was demoted when one server of three went: {a.demoted()}")
    check(not b.elected(), f"b was elected while a's session lived: {b.elected()}")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "a" and st["leader"]["term"] == el.term, f"{st}")

    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    bel = wait_for(lambda: b.elected(), "b elected after a resigned")[0]
    check(bel.ns > a.demoted()[0].ns and bel.term > el.term, f"{a.demoted()} then {bel}")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "b" and [k["id"] for k in st["candidates"]] == ["b"], f"{st}")

    # Second act: the stopped server comes back, then the ensemble loses its own leader, which
    # takes every client through a quorum election.  If b reconnected well before its deadline
    # could end, b must have kept leading; otherwise only safety is asked.
    srv.start_server(i)
    c = t.campaign("c", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             "c's node in status")
    zk_leader = wait_for(lambda: next((k for k in range(1, 4)
                                       if "Mode: leader" in srv.four_letter(k, "srvr")), None),
                         "the ensemble's leader")
    reconnects_before = b.err().count("reconnected")
    stop_ns = time.monotonic_ns()
    srv.stop_server(zk_leader)
    seen_ns = wait_reconnected(b, reconnects_before, "b to reconnect after the quorum change")
    log(f"ensemble leader {zk_leader} stopped; b reconnected within "
        f"{(seen_ns - stop_ns) / 1e6:.0f} ms")
    if seen_ns < earliest_deadline_ns(stop_ns, SESSION_MS) - ONE_S:
        end_of_old_deadline = stop_ns + SESSION_MS * 1_000_000 * 3 // 4
        wait_for(lambda: time.monotonic_ns() > end_of_old_deadline + ONE_S,
                 "the old safety deadline to pass", timeout=SESSION_MS / 1000 + 30)
        check(len(b.demoted()) == 0, f"b was demoted by a quick quorum change: {b.demoted()}")
        check(not c.elected(), f"c was elected while b's session lived: {c.elected()}")
        st = t.status(name, uri)
        check(st["leader"]["id"] == "b" and st["leader"]["term"] == bel.term, f"{st}")
        log("b kept its leadership across the ensemble's leader change")
    else:
        log("slow quorum change: only safety is checked")
    for p in (b, c):
        p.send(signal.SIGTERM)
    for p in (b, c):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    t.check_leadership([a, b, c], min_leaderships=2)


if __name__ == "__main__":
    main("e2e_ensemble", body)
