#!/usr/bin/env python3
"""test_group_faults.py - group members on a SQL store through a kill, a stop and a restart.

    test_group_faults.py kill_stop sqlite|mariadb|postgres
    test_group_faults.py restart mariadb|postgres

A `members --watch --json` follower and `register` processes on a table of the test's own,
with the short lease of sqle.py (2 s).

kill_stop (the shared servers, or a SQLite file):
  kill   a member SIGKILLed: its guardian deletes its session and its row at once (it says
         "ended session" on the member's stderr) and the follower reports it `removed`;
  stop   a member SIGSTOPped, as a dead host: its session's beat stands still, and the
         follower, having seen the same beat for a whole lease on its own clock, deletes the
         session and reports the member `removed`; thawed, the member prints `unregistered ...
         reason=session_lost` (its own bound passed) and registers again under a new node,
         which the follower reports `added`.
restart (a server of the test's own): the database restarted, then SIGKILLed and started
         again, under two members and the follower: every member ends registered (under its
         old node or a new one), and the follower's view, replayed from its lines, converges
         to what `reign members --json` lists, which is each member's last node.

The helpers that read `register` and `members` lines are tests/e2e/test_group_value.py's.
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402

zk = sqle.e2e_module("test_group_value")  # nodes, events, seen, UNREGISTERED_RE


def start(t, uri, group, members):
    f = t.spawn("follower", [t.cli, "--uri", uri, "members", group, "--watch", "--json"])
    sqle.wait_alive(lambda: any(e["event"] == "ready" for e in zk.events(f)),
                    "the follower's first view", [f])
    regs = []
    for label in members:
        p = t.spawn(label, [t.cli, "--uri", uri, "--log-level", "info", "register", group,
                            "--id", f"ts-{label}", "--data", f"{label}:2200"])
        sqle.wait_alive(lambda: zk.nodes(p), f"{label} registered", [p, f])
        regs.append(p)
    for p in regs:
        sqle.wait_alive(lambda: zk.seen(f, "added", zk.nodes(p)[0]),
                        f"the follower to report {p.label} added", [f])
    return f, regs


def view(f):
    """The follower's view, replayed from its lines: the nodes present."""
    present = set()
    for e in zk.events(f):
        node = e.get("member", {}).get("node")
        if e["event"] == "added":
            present.add(node)
        elif e["event"] == "removed":
            present.discard(node)
    return present


def listed(t, uri, group):
    rc, out, err = t.reign(["--uri", uri, "members", group, "--json"])
    check(rc == 0, f"reign members --json failed ({rc}): {err.strip()}")
    return {m["node"] for m in json.loads(out)["members"]}


def stop_all(procs):
    for p in procs:
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{p.label} did not exit 0 on SIGTERM: {p.err()[-2000:]}")


def kill_stop(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    group = t.unique("faults")
    f, (a, b, c) = start(t, uri, group, ["a", "b", "c"])

    # kill: the guardian ends the session
    old_a = zk.nodes(a)[0]
    a.kill9()
    sqle.wait_alive(lambda: zk.seen(f, "removed", old_a), "the killed member removed", [f, b])
    sqle.wait_alive(lambda: "ended session" in a.err(), "the guardian's line", [f])
    log(f"a: killed, its guardian ended its session: {a.err().strip().splitlines()[-1]}")

    # stop: a dead host's session, reaped by the follower after a whole lease
    old_b = zk.nodes(b)[0]
    b.send(signal.SIGSTOP)
    try:
        sqle.wait_alive(lambda: zk.seen(f, "removed", old_b), "the stopped member reaped", [f, c])
    finally:
        b.send(signal.SIGCONT)
    sqle.wait_alive(lambda: len(zk.nodes(b)) >= 2, "the thawed member to register again", [b])
    check(any(m and m.group(2) == "session_lost"
              for m in map(zk.UNREGISTERED_RE.match, b.lines())),
          f"no 'unregistered ... reason=session_lost' line: {b.lines()}")
    new_b = zk.nodes(b)[-1]
    check(new_b != old_b, "registered again under the reaped node")
    sqle.wait_alive(lambda: zk.seen(f, "added", new_b), "the new registration added", [f])
    log(f"b: {old_b} reaped, registered again as {new_b}")

    want = {new_b, zk.nodes(c)[0]}
    check(listed(t, uri, group) == want, f"members after the faults: {listed(t, uri, group)}")
    check(view(f) == want, f"the follower's view {view(f)}, want {want}")
    check(zk.nodes(c) == zk.nodes(c)[:1], f"c registered again: {c.lines()}")
    stop_all([b, c, f])


def restart(t, kind):
    server = sqle.SqlServer(t, kind, "server")
    store = sqle.Store(t, kind, state_dir=server.dir)
    uri = store.uri(retry_period_ms=200)
    group = t.unique("restart")
    f, regs = start(t, uri, group, ["a", "b"])
    for fault in ("restart", "crash"):
        if fault == "restart":
            server.do("restart")
        else:
            server.do("kill-server")
            server.do("start-server")

        def converged():
            """Every member registered (its last line), the listing its last nodes, and the
            follower's view the same."""
            if not all(p.lines() and p.lines()[-1].startswith("registered ") for p in regs):
                return None
            want = {zk.nodes(p)[-1] for p in regs}
            got = sqle.quietly(listed, t, uri, group)
            return want if got == want and view(f) == want else None

        want = sqle.wait_alive(converged, f"members and follower after the {fault}", regs + [f])
        log(f"after the {fault}: {sorted(want)}")
    stop_all(regs + [f])


if __name__ == "__main__":
    scenario = sys.argv[1] if len(sys.argv) == 3 else None
    kinds = {"kill_stop": sqle.BACKENDS, "restart": ("mariadb", "postgres")}
    if scenario not in kinds or sys.argv[2] not in kinds[scenario]:
        sys.exit("usage: test_group_faults.py kill_stop sqlite|mariadb|postgres | "
                 "restart mariadb|postgres")
    kind = sys.argv[2]
    body = kill_stop if scenario == "kill_stop" else restart
    sqle.main(f"e2e_sql_group_{scenario}_{kind}", lambda t: body(t, kind))
