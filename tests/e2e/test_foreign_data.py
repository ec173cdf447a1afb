#!/usr/bin/env python3
"""test_foreign_data.py - foreign data in an election's nodes breaks nothing.

While a leads, b waits and `reign watch` follows, a raw ZooKeeper client (reign_it_zkraw)
writes data reign did not write: into the term node (binary bytes with NUL and 0xff, text that
is almost a record, a record naming a node outside the election, a record forged to name b's
node, 1 MB of noise, nothing at all), into both candidates' nodes, and it adds children that
are not candidates ("junk", "n_zz").  After each write `reign status` (text and --json) must
exit 0 with sane output - a JSON object, text without control characters - and nobody may
crash.  Then the election must keep working: a still leads until SIGTERM, b takes over, a new
candidate c joins and takes over from b, each claim writing a proper term again (status names
the right leader with the term it was elected with).  check_leadership.py proves the story.
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402


def sane_status(t, name, uri, what):
    rc, out, err = t.reign(["--uri", uri, "status", name])
    check(rc == 0, f"status after {what}: exit {rc}: {err.strip()}")
    bad = [c for c in out if ord(c) < 0x20 and c != "\n"]
    check(not bad, f"status after {what} printed control characters: {out!r}")
    rc, out, err = t.reign(["--uri", uri, "status", name, "--json"])
    check(rc == 0, f"status --json after {what}: exit {rc}: {err.strip()}")
    try:
        st = json.loads(out)
    except ValueError:
        raise AssertionError(f"status --json after {what} is not JSON: {out!r}") from None
    check(isinstance(st, dict) and isinstance(st.get("candidates"), list),
          f"status --json after {what}: {st}")
    return st


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-foreign")
    edir = f"/reign/election/{name}"
    w = t.watch("watch", name, uri)
    a = t.campaign("a", name, uri)
    ael = wait_for(lambda: a.elected(), "a elected")[0]
    b = t.campaign("b", name, uri)
    st = wait_for(lambda: (lambda s: s if s and len(s["candidates"]) == 2 else None)(
        t.status(name, uri)), "b's node in status")
    a_node, b_node = (f"{edir}/{k['node']}" for k in st["candidates"])

    def write(op, path, data):
        rc, _, err = t.zkraw(hosts, op, path, data)
        check(rc == 0, f"zkraw {op} {path}: {err.strip()}")

    noise = os.path.join(t.dir, "noise")
    with open(noise, "wb") as f:
        f.write(os.urandom(1000000))
    garbage = [
        ("binary bytes", "hex:00ff0a0dfe0001"),
        ("an almost-record", "reign 1\nid\nnode=\n"),
        ("a record naming a node outside the election",
         "reign 1\nid=x\nnode=../../../zookeeper\nguid=0\n\n"),
        ("a record forged to name b's node",
         f"reign 1\nid=b\nnode={b_node.rsplit('/', 1)[1]}\nguid=0\n\n"),
        ("1 MB of noise", f"file:{noise}"),
        ("nothing", ""),
        ("a record with a bad escape", "reign 1\nid=%zz\n\n"),
    ]
    for what, data in garbage:
        write("set", f"{edir}/term", data)
        sane_status(t, name, uri, f"the term node got {what}")
        log(f"ok: term node with {what}")
    for what, data in garbage[:3] + garbage[4:5]:
        write("set", a_node, data)
        write("set", b_node, data)
        st = sane_status(t, name, uri, f"candidate nodes got {what}")
        check(len(st["candidates"]) == 2, f"candidates after {what}: {st['candidates']}")
        log(f"ok: candidate nodes with {what}")
    write("create", f"{edir}/junk", "x")
    write("create", f"{edir}/n_zz", "reign 1\nid=zz\n\n")
    st = sane_status(t, name, uri, "junk children")
    check(len(st["candidates"]) == 2, f"junk listed as candidates: {st['candidates']}")

    for p in (a, b, w):
        check(p.alive(), f"{p.label} died: {p.err()[-2000:]}")
    check(not a.demoted() and not b.elected(), "the foreign data moved the leadership")

    # The election keeps working.
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    bel = wait_for(lambda: b.elected(), "b elected after a resigned")[0]
    check(bel.term > ael.term and bel.token > ael.token, f"{ael} then {bel}")
    st = sane_status(t, name, uri, "b's election")
    check(st["leader"] and st["leader"]["id"] == "b" and st["leader"]["term"] == bel.term,
          f"status after b's election: {st}")
    c = t.campaign("c", name, uri)
    wait_for(lambda: len(t.status(name, uri)["candidates"]) == 2, "c's node in status")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    cel = wait_for(lambda: c.elected(), "c elected after b resigned")[0]
    st = sane_status(t, name, uri, "c's election")
    check(st["leader"] and st["leader"]["id"] == "c" and st["leader"]["term"] == cel.term,
          f"status after c's election: {st}")
    wait_for(lambda: any(line.startswith("leader c ") for line in w.lines()),
             "the observer to report c")
    for p in (c, w):
        check(p.alive(), f"{p.label} died")
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{p.label} did not exit 0")
    t.check_leadership([a, b, c], min_leaderships=3)


if __name__ == "__main__":
    main("e2e_foreign_data", body)
