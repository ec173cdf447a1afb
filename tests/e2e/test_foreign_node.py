#!/usr/bin/env python3
"""test_foreign_node.py - a node that only looks like a candidate must not stall the election.

Someone with write access (any client, without credentials) creates a persistent node named
like a queue candidate, with the lowest possible sequence number (n_<16 zeros>_0000000000), so
that it sorts ahead of every real candidate.  It belongs to no session: it is not a candidate
and will never go away by itself.  a leads, c joins after the foreign node appeared, then a
resigns: c must still be elected (the election must not wait forever behind a node that no
session owns), and `reign status` must not show the foreign node as the leader.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-fnode")
    edir = f"/reign/election/{name}"
    a = t.campaign("a", name, uri)
    wait_for(lambda: a.elected(), "a elected")
    fake = f"{edir}/n_0000000000000000_0000000000"
    rc, _, err = t.zkraw(hosts, "create", fake, "reign 1\nid=fake\nguid=0000000000000000\n\n")
    check(rc == 0, f"creating {fake}: {err.strip()}")
    c = t.campaign("c", name, uri)
    # status lists real candidates only: the persistent impostor is not one
    wait_for(lambda: [x["id"] for x in t.status(name, uri)["candidates"]] == ["a", "c"],
             "c's node in status, the foreign node left out")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    wait_for(lambda: c.elected(), "c elected although a foreign node sorts first", timeout=30)
    st = t.status(name, uri)
    check(st["leader"] and st["leader"]["id"] == "c", f"status: {st}")
    log("c leads; the foreign node did not stall the election")
    c.send(signal.SIGTERM)
    check(c.wait() == 0, "c did not exit 0")
    t.check_leadership([a, c], min_leaderships=2)


if __name__ == "__main__":
    main("e2e_foreign_node", body)
