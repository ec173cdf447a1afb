#!/usr/bin/env python3
"""test_cede.py - `reign cede NAME` makes the leader step down.

a leads, b waits.  `reign cede` deletes a's node and waits for the next leadership: it prints
`ceded a term=T -> b term=T+1` and exits 0.  a prints `demoted a reason=node_deleted`, b is
elected with the next term and a higher token, and after its cede delay a stands again:
`reign status` lists b (leading) then a.  A second cede hands back to a.  With nobody standing,
cede fails (exit 1) with a clear message.

Deposing deletes the leader's node from outside, but with the queue strategy the deposed
leader also holds the election's leader node, which it deletes only after it has demoted
itself: its successor cannot claim before that.  check_leadership.py therefore proves that the
leaderships never overlapped, and that terms and tokens strictly grew.
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import beyond, check, main, wait_for  # noqa: E402

CEDED_RE = re.compile(r"^ceded (\S+) term=(\d+) -> (\S+) term=(\d+)$")


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-cede")
    a = t.campaign("a", name, uri)
    wait_for(lambda: a.elected(), "a elected")
    b = t.campaign("b", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             "b's node in status")

    def cede(old, new, n):
        term = old.elected()[-1].term
        # What each printed before: `reign cede` may return before the new leader's line is
        # read, so a count from before the cede tells the new election from an earlier one.
        n_dem, n_el = len(old.demoted()), len(new.elected())
        rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "30000"])
        check(rc == 0, f"reign cede exited {rc}: {err.strip()}")
        m = CEDED_RE.match(out.strip())
        check(m, f"reign cede printed {out!r}")
        check(m.group(1) == old.label and int(m.group(2)) == term,
              f"cede names {m.group(1)} term {m.group(2)}, want {old.label} term {term}")
        check(m.group(3) == new.label and int(m.group(4)) > term, f"successor: {out.strip()}")
        dem = wait_for(lambda: beyond(old.demoted(), n_dem), f"{old.label} demoted")
        check(dem[-1].reason == "node_deleted", f"{old.label}: {dem[-1]}")
        el = wait_for(lambda: beyond(new.elected(), n_el), f"{new.label} elected")
        check(el[-1].term == int(m.group(4)), f"{new.label}: {el[-1]} vs {out.strip()}")
        check(el[-1].token > old.elected()[-1].token, "the token did not grow")
        check(dem[-1].ns < el[-1].ns, f"{new.label} elected before {old.label} stepped down")
        # The deposed leader stands again after its cede delay, behind the new leader.
        st = wait_for(lambda: (lambda s: s if s and [k["id"] for k in s["candidates"]] ==
                               [new.label, old.label] else None)(t.status(name, uri)),
                      f"{old.label} standing again behind {new.label}")
        check(st["leader"]["id"] == new.label and st["leader"]["term"] == el[-1].term, f"{st}")
        check(len(old.elected()) == n, f"{old.label} elected again while {new.label} leads")

    cede(a, b, 1)
    cede(b, a, 1)
    # A third one, to see a leader ceded twice stand and take over again.
    cede(a, b, 2)

    for p in (a, b):
        p.send(signal.SIGTERM)
    for p in (a, b):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "5000"])
    check(rc == 1 and "no leader" in err, f"cede without a leader: {rc} {err.strip()!r}")

    t.check_leadership([a, b], min_leaderships=4)

if __name__ == "__main__":
    main("e2e_cede", body)
