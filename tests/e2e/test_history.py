#!/usr/bin/env python3
"""test_history.py zk|etcd|sqlite|mariadb|postgres - an election's history, end to end, with
the faults a host sees, on every store.

`reign campaign` processes on the shared ZooKeeper server, etcd member, MariaDB or PostgreSQL
server, or a SQLite file of the test's own (2 s sessions and leases) go through every way a
leadership ends, one after the other:

    a leads, then SIGTERM            -> a  resigned
    b leads; `reign designate` c     -> b  designated
    c leads; `reign cede` (deposed)  -> c  deposed
    b leads again; SIGKILL, guardian -> b  guardian
    c leads again; SIGSTOP past the session, d takes over, SIGCONT -> c expired
    d leads                          -> d  leading

and `reign history --json` must give exactly those leaderships, in that order: the ids, the
ends, the terms and tokens each process printed when it was elected, every start at or after
the previous end and, for the expiry, an end marked estimated.  The text form lists them too.
Then `reign rm` removes the election, its history with it.
No timed assertion: every wait is for an event.
"""
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
from e2elib import check, env_path, log, main, wait_for  # noqa: E402

STORES = ("zk", "etcd", "sqlite", "mariadb", "postgres")
SESSION_MS = 2000


def store_uri(t, store):
    if store == "etcd":
        with open(env_path("REIGN_TEST_ETCD_FILE")) as f:
            return f"etcd://{f.read().strip()}?session_timeout_ms={SESSION_MS}"
    if store == "zk":
        return t.uri(t.shared_hosts(), session_timeout_ms=SESSION_MS)
    import sqle
    check(sqle.LEASE["lease_ms"] == SESSION_MS, "a 2 s lease")
    return sqle.Store(t, store).uri()


def elected_count(p, n):
    return lambda: len(p.elected()) >= n


def candidates(t, name, uri, n):
    return lambda: (lambda s: s if s and len(s["candidates"]) == n else None)(t.status(name, uri))


def body(t, store):
    uri = store_uri(t, store)
    name = t.unique("e2e-history")
    a = t.campaign("a", name, uri)
    wait_for(elected_count(a, 1), "a elected")
    b = t.campaign("b", name, uri)
    wait_for(candidates(t, name, uri, 2), "b standing")
    a.send(signal.SIGTERM)
    wait_for(elected_count(b, 1), "b elected after a resigned")
    check(a.wait() == 0, "a exited 0")

    c = t.campaign("c", name, uri)
    wait_for(candidates(t, name, uri, 2), "c standing")
    rc, _, err = t.reign(["--uri", uri, "designate", name, "c"])
    check(rc == 0, f"designate c: {err.strip()}")
    wait_for(elected_count(c, 1), "c elected by the designation")

    rc, _, err = t.reign(["--uri", uri, "cede", name])
    check(rc == 0, f"cede: {err.strip()}")
    wait_for(elected_count(b, 2), "b elected after c was deposed")
    wait_for(candidates(t, name, uri, 2), "c standing again")

    b.kill9()
    wait_for(elected_count(c, 2), "c elected after b was killed (its guardian)")

    d = t.campaign("d", name, uri)
    wait_for(candidates(t, name, uri, 2), "d standing")
    c.send(signal.SIGSTOP)
    wait_for(elected_count(d, 1), "d elected after c's session expired", timeout=60)
    c.send(signal.SIGCONT)
    wait_for(lambda: not c.leading(), "c demoted once resumed")

    rc, out, err = t.reign(["--uri", uri, "history", name, "--json"])
    check(rc == 0, f"history: {err.strip()}")
    terms = json.loads(out)["terms"]
    log("history: " + "; ".join(f"{x['term']} {x['id']} {x['end']}" for x in terms))
    want = [("a", "resigned"), ("b", "designated"), ("c", "deposed"), ("b", "guardian"),
            ("c", "expired"), ("d", "leading")]
    check([(x["id"], x["end"]) for x in terms] == want,
          f"ids and ends {[(x['id'], x['end']) for x in terms]}, want {want}")
    elections = [a.elected()[0], b.elected()[0], c.elected()[0], b.elected()[1],
                 c.elected()[1], d.elected()[0]]
    for x, e in zip(terms, elections):
        check(x["term"] == e.term and x["token"] == e.token,
              f"{x['id']}: term {x['term']} token {x['token']}, elected with {e.term}/{e.token}")
    for prev, x in zip(terms, terms[1:]):
        check(prev["ended_ms"] is not None and prev["ended_ms"] <= x["started_ms"],
              f"term {prev['term']} ended at {prev['ended_ms']}, after {x['started_ms']}")
        check(prev["gap_ms"] == x["started_ms"] - prev["ended_ms"], f"gap of {prev['term']}")
    check([x["ended_estimated"] for x in terms] == [False] * 4 + [True, False],
          "only the expiry's end is an estimate")
    check(terms[-1]["ended_ms"] is None and terms[-1]["gap_ms"] is None, "d still leads")

    rc, out, err = t.reign(["--uri", uri, "history", name])
    check(rc == 0 and len(out.splitlines()) == 7, f"text form: {rc} {out!r} {err.strip()}")
    rc, out, err = t.reign(["--uri", uri, "history", name, "--since", "@4102444800", "--json"])
    check(rc == 0 and [x["id"] for x in json.loads(out)["terms"]] == ["d"],
          f"--since in the future keeps the current leader only: {out} {err.strip()}")
    for p in (c, d):
        p.send(signal.SIGTERM)
        p.wait()
    # Nobody stands: the election goes, its history with it.
    rc, out, err = t.reign(["--uri", uri, "rm", name])
    check(rc == 0, f"rm after the history: {rc} {err.strip()}")
    rc, out, err = t.reign(["--uri", uri, "history", name])
    check(rc == 1 and "no such election" in err, f"history after rm: {rc} {out!r} {err.strip()}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STORES:
        sys.exit(f"usage: test_history.py {'|'.join(STORES)}")
    which = sys.argv[1]
    if which in ("zk", "etcd"):
        main(f"e2e_history_{which}", lambda t: body(t, which))
    else:
        import sqle
        sqle.main(f"e2e_history_{which}", lambda t: body(t, which))
