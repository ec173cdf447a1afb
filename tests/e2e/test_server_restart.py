#!/usr/bin/env python3
"""test_server_restart.py - the standalone ZooKeeper server is restarted under an election.

    test_server_restart.py short|long

The server is SIGKILLed and started again on the same data (scripts/zk.sh stop-server /
start-server), while a leads and b waits.

  short  10 s sessions.  ZooKeeper keeps sessions across a restart, so a's session survives and
         a reconnects.  If a had reconnected at least a second before its safety deadline could
         end (the usual case: its last proof is at most a heartbeat older than the stop, and
         lasts 3/4 of a session timeout), a must still lead without ever having been demoted,
         and b must not have been elected: the test waits until the deadline that was running
         when the server went has certainly passed, then looks.  A slower restart only has to
         be safe.
  long   2 s sessions.  With the server gone, a must step down (demoted) - it cannot prove its
         session alive - and after the restart the election must go on: somebody is elected
         again, with a higher term.

In both, check_leadership.py proves that no two leaderships overlapped.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import (check, earliest_deadline_ns, log, main, wait_for,  # noqa: E402
                    wait_reconnected)


def leaders(t, name, uri):
    s = t.status(name, uri)
    return s if s and len(s["candidates"]) == 2 and s["leader"] else None


def short(t, srv):
    session_ms = 10000
    uri = t.uri(srv.hosts, session_timeout_ms=session_ms)
    name = t.unique("e2e-restart-short")
    a = t.campaign("a", name, uri)
    el = wait_for(lambda: a.elected(), "a elected")[0]
    b = t.campaign("b", name, uri)
    wait_for(lambda: leaders(t, name, uri), "b's node in status")

    reconnects = a.err().count("reconnected")
    stop_ns = time.monotonic_ns()
    srv.stop_server(1)
    srv.start_server(1)
    back_ns = time.monotonic_ns()
    log(f"server back after {(back_ns - stop_ns) / 1e6:.0f} ms")
    seen_ns = wait_reconnected(a, reconnects, "a to reconnect (or be demoted)")
    log(f"a reconnected within {(seen_ns - stop_ns) / 1e6:.0f} ms of the stop")
    if seen_ns < earliest_deadline_ns(stop_ns, session_ms) - 1_000_000_000:
        # The deadline that ran when the server went ends at most 3/4 of a session timeout
        # after the last proof, which came before the stop; a renewed it after reconnecting.
        end_of_old_deadline = stop_ns + session_ms * 1_000_000 * 3 // 4
        wait_for(lambda: time.monotonic_ns() > end_of_old_deadline + 1_000_000_000,
                 "the old safety deadline to pass", timeout=session_ms / 1000 + 30)
        check(not a.demoted(), f"a was demoted by a restart shorter than its session: "
                               f"{a.demoted()}")
        check(not b.elected(), f"b elected while a's session lived: {b.elected()}")
        st = t.status(name, uri)
        check(st["leader"]["id"] == "a" and st["leader"]["term"] == el.term,
              f"after the restart: {st}")
        check("reconnected" in a.err(), "a did not log a reconnection of its session")
        log("a kept its leadership across the restart")
    else:
        log("slow reconnection: only safety is checked")
        wait_for(lambda: leaders(t, name, uri), "a leader after the restart")
    for p in (a, b):
        p.send(signal.SIGTERM)
    for p in (a, b):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    t.check_leadership([a, b], min_leaderships=1)


def long(t, srv):
    session_ms = 2000
    uri = t.uri(srv.hosts, session_timeout_ms=session_ms)
    name = t.unique("e2e-restart-long")
    a = t.campaign("a", name, uri)
    el = wait_for(lambda: a.elected(), "a elected")[0]
    b = t.campaign("b", name, uri)
    wait_for(lambda: leaders(t, name, uri), "b's node in status")

    srv.stop_server(1)
    dem = wait_for(lambda: a.demoted(), "a to step down while the server is gone")[0]
    check(dem.reason in ("suspended", "stalled", "session_lost"), f"a demoted: {dem}")
    check(not b.elected(), "b elected without a server")
    srv.start_server(1)

    def new_term():
        terms = [e.term for p in (a, b) for e in p.elected()]
        return max(terms) > el.term

    wait_for(new_term, "a new leadership after the restart")
    st = wait_for(lambda: leaders(t, name, uri), "a leader and two candidates in status")
    log(f"after the restart: {st['leader']['id']} leads, term {st['leader']['term']}")
    check(st["leader"]["term"] > el.term, f"{st}")
    for p in (a, b):
        p.send(signal.SIGTERM)
    for p in (a, b):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "short"
    if mode not in ("short", "long"):
        sys.exit("usage: test_server_restart.py short|long")
    fn = short if mode == "short" else long
    main(f"e2e_server_restart_{mode}", lambda t: fn(t, t.zk_servers("zk", 1)))
