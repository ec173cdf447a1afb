#!/usr/bin/env python3
"""test_status_takeover.py - `reign status` reports the takeover time of the election's own
settings, not of the `reign status` that asks.

Two candidates campaign with a 2 s session (`reign --session-timeout 2000`); `reign status`,
run with its default 10 s, must report the session timeout the leader's server granted (which
each candidate writes in its node), say that it is the leader's, and not its own 10000 ms.
Candidates whose records do not say (an older reign: the test rewrites them without the
session_ms key) make status fall back to its own settings, and say so.  On a SQLite lease
table the lease in the row counts: a leader on lease_ms=2000 reads as 2000 + a poll period of
400 ms + three statements of 200 ms (the session reaped, the row read and taken), whatever
the reader's lease.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

GRANTED = re.compile(r"session 0x[0-9a-f]+ established, timeout (\d+) ms")


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts)
    name = t.unique("takeover")
    procs = {}
    for ident in ("n1", "n2"):
        procs[ident] = t.spawn(ident, [t.cli, "--uri", uri, "--session-timeout", "2000",
                                       "--log-level", "info", "campaign", name, "--id", ident])
    st = wait_for(lambda: (lambda s: s if s and s["leader"] and len(s["candidates"]) == 2
                           else None)(t.status(name, uri)), "a leader and two candidates")
    leader = st["leader"]["id"]
    granted = int(wait_for(lambda: GRANTED.findall(procs[leader].err()),
                           "the leader's session timeout")[-1])
    log(f"leader {leader}, granted {granted} ms; status says {st['takeover_ms']} ms")
    check(st["takeover_ms"] == granted and st["takeover_from"] == "leader",
          f"status --json: takeover {st['takeover_ms']} from {st['takeover_from']}, want "
          f"{granted} from the leader")
    check(granted != 10000, "the test needs a session other than status's own 10 s")
    rc, out, err = t.reign(["--uri", uri, "status", name])
    check(rc == 0 and f"takeover:         {granted} ms after a crash (the leader's session "
          f"timeout)" in out, f"status: {rc} {out} {err}")

    # Records of an older reign (no session_ms): status can only give its own, and says so.
    for c in st["candidates"]:
        path = f"/reign/election/{name}/{c['node']}"
        rc, out, err = t.zkraw(hosts, "get", path)
        check(rc == 0, f"get {path}: {err}")
        old = bytes.fromhex(json.loads(out)["data_hex"])
        check(b"\nsession_ms=" in old, f"the candidate's record names its session: {old!r}")
        new = re.sub(rb"session_ms=\d+\n", b"", old)
        rc, _, err = t.zkraw(hosts, "set", path, "hex:" + new.hex())
        check(rc == 0, f"set {path}: {err}")
    st = t.status(name, uri)
    check(st["takeover_ms"] == 10000 and st["takeover_from"] == "this client",
          f"records without session_ms: {st['takeover_ms']} from {st['takeover_from']}")
    rc, out, err = t.reign(["--uri", uri, "status", name])
    check("(this client's settings: the election does not say)" in out, out)
    for p in procs.values():
        p.send(2)
        check(p.wait() == 0, f"{p.label} exited {p.returncode()}")

    # SQLite: the lease in the row, plus a poll and three statements at that lease's defaults
    # (the lease lives in its holder's session: the session reaped, the row read and taken).
    db = os.path.join(t.dir, "lease.db")
    lite = t.spawn("lite", [t.cli, "--uri", f"sqlite://{db}?lease_ms=2000", "campaign", name,
                            "--id", "s1"])
    wait_for(lambda: lite.elected(), "the SQLite candidate to lead")
    st = t.status(name, f"sqlite://{db}")
    check(st["takeover_ms"] == 3000 and st["takeover_from"] == "lease",
          f"SQLite: takeover {st['takeover_ms']} from {st['takeover_from']}, want 3000 (lease)")
    lite.send(2)
    check(lite.wait() == 0, "the SQLite candidate exited")


if __name__ == "__main__":
    main("e2e_status_takeover", body)
