#!/usr/bin/env python3
"""test_handoff.py [zk|etcd] - graceful hand-over on SIGTERM (and SIGINT).

Three candidates a, b, c join in that order (each waits until the previous one's node is
listed, so the queue order is known).  a leads.  SIGTERM to a: it prints `demoted a
reason=resigned` and exits 0; b, next in line, is elected, and a's demotion time precedes b's
election time; `reign status` shows a's node gone, b leading and c waiting.  Then SIGINT to b:
the same again with c.  check_leadership.py proves the whole story.

And each handoff is the waiter's claim alone (docs/design.md, "Queue strategy"): c joined
behind a and b, so only a's departure can tell it that b is first now.  c watches a too, and
once a is gone it looks at the line again (its step trace, REIGN_TRACE, says so: the test
waits for that look, not for a time); when b then leaves, c's next step is the claim, with no
listing of the line before it.  On the shared ZooKeeper server (zk, the default) or the shared
etcd member (etcd).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, env_path, log, main, wait_for  # noqa: E402


def steps(path, name):
    """The election steps of a step trace: 'event from->to' for each line."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        f = line.split()
        if len(f) >= 7 and f[3] == "election.step" and f[4] == name:
            out.append(f"{f[5]} {f[6]}")
    return out


def body(t, store):
    if store == "etcd":
        with open(env_path("REIGN_TEST_ETCD_FILE")) as f:
            uri = f"etcd://{f.read().strip()}?session_timeout_ms=4000"
    else:
        uri = t.uri(t.shared_hosts(), session_timeout_ms=4000)
    name = t.unique("e2e-handoff")
    procs = []
    trace = {i: os.path.join(t.dir, f"{i}.trace") for i in ("a", "b", "c")}
    for ident in ("a", "b", "c"):
        procs.append(t.campaign(ident, name, uri, env={"REIGN_TRACE": trace[ident]}))
        n = len(procs)
        wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == n,
                 f"{ident}'s node in status")
    a, b, c = procs
    wait_for(lambda: a.elected(), "a elected")
    st = t.status(name, uri)
    check([k["id"] for k in st["candidates"]] == ["a", "b", "c"], f"queue order {st}")
    a_node = st["candidates"][0]["node"]

    wait_for(lambda: steps(trace["c"], name)[-1:] == ["behind checking->waiting"], "c waiting")
    looked = len(steps(trace["c"], name))  # c's steps before a's departure
    for old, new, rest, sig in ((a, b, [c], signal.SIGTERM), (b, c, [], signal.SIGINT)):
        if new is c:
            # c's look at the line after a went: a listing that found it behind b, first.
            wait_for(lambda: steps(trace["c"], name)[looked:].count("behind checking->waiting"),
                     "c looking at the line again after a left")
            before = len(steps(trace["c"], name))
        old.send(sig)
        rc = old.wait()
        check(rc == 0, f"{old.label} exited {rc} after {sig.name}")
        dem = old.demoted()
        check(len(dem) == 1 and dem[0].reason == "resigned",
              f"{old.label}: want one 'demoted reason=resigned', got {dem}")
        el = wait_for(lambda: new.elected(), f"{new.label} elected")
        check(len(el) == 1, f"{new.label}: {el}")
        if new is c:
            took = steps(trace["c"], name)[before:]
            check(took[:2] == ["first waiting->claiming", "claimed claiming->leader"],
                  f"c listed the line before its claim: {took}")
        check(dem[0].ns < el[0].ns,
              f"{new.label} elected at {el[0].ns}, before {old.label} was demoted at "
              f"{dem[0].ns}")
        check(el[0].term > old.elected()[-1].term,
              f"terms {old.elected()[-1].term} then {el[0].term}")
        for p in rest:
            check(not p.elected(), f"{p.label} elected out of turn")
        st = t.status(name, uri)
        ids = [k["id"] for k in st["candidates"]]
        check(ids == [new.label] + [p.label for p in rest], f"candidates {ids}")
        check(st["leader"] and st["leader"]["id"] == new.label, f"leader in status: {st}")
        check(st["leader"]["term"] == el[0].term, f"status term {st['leader']['term']}")
        check(all(k["node"] != a_node for k in st["candidates"]), "a's node is still there")
        log(f"{old.label} -> {new.label}: demoted at {dem[0].ns}, elected at {el[0].ns} "
            f"({(el[0].ns - dem[0].ns) / 1e6:.1f} ms later)")

    c.send(signal.SIGTERM)
    check(c.wait() == 0, "c did not exit 0")
    t.check_leadership(procs, min_leaderships=3)


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "zk"
    if which not in ("zk", "etcd"):
        sys.exit("usage: test_handoff.py [zk|etcd]")
    main("e2e_handoff" if which == "zk" else "e2e_handoff_etcd", lambda t: body(t, which))
