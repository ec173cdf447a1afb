#!/usr/bin/env python3
"""test_cede.py - `reign cede NAME` on a SQL lease: the leader steps down, another takes over.

    test_cede.py sqlite|mariadb|postgres

a leads, b follows.  `reign cede` marks a's lease deposed and waits for the next leadership:
it prints `ceded a term=T -> b term=T2` (T2 > T) and exits 0.  a prints `demoted a
reason=node_deleted` (its next renewal fails), releases the row and, after its cede delay,
stands again; b is elected with the higher term.  A second cede hands back to a - which proves
a stood again - and a third to b.  With nobody standing, cede fails (exit 1) saying there is
no leader.

On a lease the successor can only take the row once the deposed leader has released it or
its lease has run out, and the deposed leader stops at its next renewal, before either: so
unlike on ZooKeeper the leaderships must not overlap, and check_leadership.py proves it.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import beyond, check, log, wait_for  # noqa: E402

# The deposed leader's step when its cede delay (one second, reign(1)) has passed.
STOOD_AGAIN = ": paused -> looking on stand"
CEDED_RE = re.compile(r"^ceded (\S+) term=(\d+) -> (\S+) term=(\d+)$")


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("cede")
    a = t.campaign("a", name, uri, log_level="debug")
    sqle.wait_alive(lambda: a.elected(), "a elected", [a])
    b = t.campaign("b", name, uri, log_level="debug")
    # b must be a follower (connected, having read the row) before the first cede, or a may
    # simply win again after its cede delay.
    sqle.wait_alive(lambda: "connected" in b.err(), "b connected", [a, b])

    def cede(old, new, n):
        term = old.elected()[-1].term
        # What each printed before: `reign cede` returns when the store names the new leader,
        # maybe before its line is read, so a count from before the cede tells the new
        # election from an earlier one (the second cede's new leader was elected once before).
        n_dem, n_el = len(old.demoted()), len(new.elected())
        n_stood = old.err().count(STOOD_AGAIN)
        rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "30000"])
        check(rc == 0, f"reign cede exited {rc}: {err.strip()}")
        m = CEDED_RE.match(out.strip())
        check(m, f"reign cede printed {out!r}")
        check(m.group(1) == old.label and int(m.group(2)) == term,
              f"cede names {m.group(1)} term {m.group(2)}, want {old.label} term {term}")
        check(m.group(3) == new.label and int(m.group(4)) > term, f"successor: {out.strip()}")
        dem = sqle.wait_alive(lambda: beyond(old.demoted(), n_dem), f"{old.label} demoted",
                              [a, b])
        check(dem[-1].reason == "node_deleted", f"{old.label}: {dem[-1]}")
        el = sqle.wait_alive(lambda: beyond(new.elected(), n_el), f"{new.label} elected",
                             [a, b])
        check(el[-1].term == int(m.group(4)), f"{new.label}: {el[-1]} vs {out.strip()}")
        check(el[-1].token > old.elected()[-1].token, "the token did not grow")
        check(dem[-1].ns <= el[-1].ns, f"{new.label} elected at {el[-1].ns}, before "
                                       f"{old.label} was demoted at {dem[-1].ns}")
        log(f"{old.label} demoted {(el[-1].ns - dem[-1].ns) / 1e6:.1f} ms before "
            f"{new.label}'s election")
        st = t.status(name, uri)
        check(st["leader"]["id"] == new.label and st["leader"]["term"] == el[-1].term, f"{st}")
        check(len(old.elected()) == n, f"{old.label} elected again while {new.label} leads")
        check(old.alive(), f"{old.label} exited after the cede: {old.err()}")
        # A lease table lists no followers: the deposed leader's debug log says when it
        # stands again after its cede delay, which the next cede needs.
        sqle.wait_alive(lambda: old.err().count(STOOD_AGAIN) > n_stood,
                        f"{old.label} to stand again", [a, b])

    cede(a, b, 1)
    cede(b, a, 1)
    cede(a, b, 2)

    sqle.resign_all([a, b])
    rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "5000"])
    check(rc == 1 and "no leader" in err, f"cede without a leader: {rc} {err.strip()!r}")
    t.check_leadership([a, b], min_leaderships=4)


if __name__ == "__main__":
    kind = sqle.backend_arg("test_cede.py")
    sqle.main(f"e2e_sql_cede_{kind}", lambda t: body(t, kind))
