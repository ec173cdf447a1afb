#!/usr/bin/env python3
"""test_ls_rm.py STORE - `reign ls` and `reign rm` on a SQL store (a table of the test's own).

    test_ls_rm.py sqlite|mariadb|postgres

  * ls of the empty table prints nothing; with `a` leading el-1, el-2 released by its leader,
    sl-1 with two slots run by `reign run --slot`, a foreign row (a lock_name reign would
    never write, inserted by hand), the values cfg and app/x, and reignd's layout value of an
    election (reignd/svc/layout): ls lists el-1 with leader=a, el-2 with nobody, sl-1 with
    slots=2, the foreign row marked foreign, the values by key (app/x, not its first segment),
    reignd's with used-by=reignd and not foreign; a PREFIX filters; --json.
  * rm el-1 while a holds the lease exits 1 naming a, and leaves the row; rm of a group or of
    a value with no row of that name is "no such"; rm of a name with no row says
    so; rm cfg removes the value; rm app/x (found by ls) and rm --kind value app/y remove
    values whose key has a '/'.
  * rm el-2 (released) clears its row, keeping its term; once a has resigned, rm el-1 clears
    that too; ls lists neither, rm of either again is "no such"; the foreign row stays (rm
    refuses a name reign would not write); a new campaign in el-1 is elected with a token
    above a's.
  * tokens never go back: three leaderships of tk, each recorded by a slot of `reign run
    --slot` (tokens growing), rm tk, a campaign in tk is elected with a token above the
    three, and a fourth slot is recorded with a token above that: the slot record's tokens
    keep growing across the removal.
  * a group: rm gr-1 exits 1 naming its member m1; once m1 has left, rm removes it.
  * task queues, as on ZooKeeper: two tasks submitted to qu-1, worker w1 and master m1 running:
    ls lists queue qu-1 once, beside its workers' group and masters' election tasks.qu-1
    (entries of their own); rm qu-1 exits 1 naming w1 and m1, then, once w1 has stopped,
    naming m1, its tasks left; once m1 has stopped, rm qu-1 removes the queue: its tasks'
    rows and its group's go, its election's row is cleared (term kept), ls lists none of
    them, rm again says there is no such queue, and a master of qu-1 made again is elected at
    a term above m1's.  Rows reign did not write: a task row of a state reign never writes
    (queue qf) is listed as queue qf and never removed (rm exits 1, "not reign's", the row
    stays); a queue name reign would not give ("bad name") is listed as foreign.
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()

    def reign(*args):
        return t.reign(["--uri", uri, *args])

    rc, out, err = reign("ls")
    check(rc == 0 and out == "", f"ls of an empty table: {rc} {out!r} {err!r}")

    b = t.campaign("b", "el-2", uri)
    sqle.wait_alive(b.elected, "b elected in el-2", [b])
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    rc, _, err = reign("run", "sl-1", "--slot", "k1", "--", "true")
    check(rc == 0, f"run --slot k1: {err}")
    rc, _, err = reign("run", "sl-1", "--slot", "k2", "--", "true")
    check(rc == 0, f"run --slot k2: {err}")
    a = t.campaign("a", "el-1", uri)
    sqle.wait_alive(a.elected, "a elected in el-1", [a])
    store.sql(f"INSERT INTO {store.quoted()} (data_center, lock_name, owner, duration, term, "
              "term_duration, gmt_create, gmt_modified) VALUES ('default', 'not a/name', 'x', "
              "1000, 1, 0, '2020-01-01 00:00:00', '2020-01-01 00:00:00')")
    for key in ("cfg", "app/x", "app/y"):
        rc, _, err = reign("value", "set", key, "1")
        check(rc == 0, f"value set {key}: {err}")
    # What reignd keeps per election, as it writes it.
    rc, _, err = reign("value", "set", "reignd/svc/layout", "reignd layout 1\n")
    check(rc == 0, f"value set reignd/svc/layout: {err}")

    rc, out, err = reign("ls")
    check(rc == 0, f"ls: {rc} {err}")
    lines = [ln.split() for ln in out.splitlines()]
    want = [["election", "el-1", "standing=1", "leader=a"],
            ["election", "el-2", "standing=0"],
            ["election", "sl-1", "standing=0", "slots=2"],
            ["election", "not", "a/name", "standing=0", "foreign"],
            ["value", "app/x", "standing=0"],
            ["value", "app/y", "standing=0"],
            ["value", "cfg", "standing=0"],
            ["value", "reignd/svc/layout", "standing=0", "used-by=reignd"]]
    check(sorted(lines) == sorted(want), f"ls:\n{out}")
    rc, out, _ = reign("ls", "el-2")
    check(out.split() == ["election", "el-2", "standing=0"], f"ls el-2: {out!r}")
    rc, out, _ = reign("ls", "--json")
    got = {e["name"]: (e["standing"], e["leader"], e["foreign"]) for e in json.loads(out)}
    check(got == {"el-1": (1, "a", False), "el-2": (0, None, False), "sl-1": (0, None, False),
                  "not a/name": (0, None, True), "cfg": (0, None, False),
                  "app/x": (0, None, False), "app/y": (0, None, False),
                  "reignd/svc/layout": (0, None, False)}, f"ls --json: {out}")
    check({e["name"]: e["used_by"] for e in json.loads(out) if e["used_by"]} ==
          {"reignd/svc/layout": "reignd"}, f"used_by: {out}")
    check([e["slots"] for e in json.loads(out) if e["name"] == "sl-1"] == [2], f"slots: {out}")
    rc, out, _ = reign("ls", "cf")
    check(out.split() == ["value", "cfg", "standing=0"], f"ls cf: {out!r}")

    rc, _, err = reign("rm", "el-1")
    check(rc == 1 and "'a' stands in it" in err, f"rm el-1 while a leads: {rc} {err!r}")
    check(store.lease_row("el-1") is not None, "el-1's row is gone after the refusal")
    for args in (["--kind", "group", "el-1"], ["--kind", "value", "el-1"]):
        rc, _, err = reign("rm", *args)
        check(rc == 1 and "no " in err, f"rm {args}: {rc} {err!r}")
    rc, _, err = reign("rm", "el-9")
    check(rc == 1 and "no election" in err, f"rm of nothing: {rc} {err!r}")
    log("refused while a leads; nothing removed")

    rc, out, err = reign("rm", "cfg")
    check(rc == 0 and out.strip() == "removed value cfg", f"rm cfg: {rc} {out!r} {err!r}")
    rc, _, err = reign("value", "get", "cfg")
    check(rc != 0, f"cfg still there after rm: {rc} {err!r}")
    rc, out, err = reign("rm", "app/x")
    check(rc == 0 and out.strip() == "removed value app/x", f"rm app/x: {rc} {out!r} {err!r}")
    rc, out, err = reign("rm", "--kind", "value", "app/y")
    check(rc == 0 and out.strip() == "removed value app/y",
          f"rm --kind value app/y: {rc} {out!r} {err!r}")
    rc, out, _ = reign("ls", "app")
    check(rc == 0 and out == "", f"ls app after rm: {out!r}")
    log("values with a '/' in their key listed and removed by key")

    term = store.lease_row("el-2").term
    rc, out, err = reign("rm", "el-2")
    check(rc == 0 and out.strip() == "removed election el-2", f"rm el-2: {rc} {out!r} {err!r}")
    row = store.lease_row("el-2")
    check(row is not None and row.owner == "" and row.term == term,
          f"el-2's row after rm: {row} (want kept at term {term}, with no owner)")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    rc, out, err = reign("rm", "el-1")
    check(rc == 0 and out.strip() == "removed election el-1", f"rm el-1: {rc} {out!r} {err!r}")
    rc, out, _ = reign("ls")
    check(sorted(ln.split()[-1] for ln in out.splitlines()) == ["foreign", "slots=2",
                                                                "used-by=reignd"],
          f"ls after rm: {out!r}")
    for args, msg in ((["el-1"], "no election, group, value or queue 'el-1'"),
                      (["--kind", "election", "el-2"], "no election 'el-2'")):
        rc, _, err = reign("rm", *args)
        check(rc == 1 and msg in err, f"rm {args} again: {rc} {err!r}")
    check(t.status("el-1", uri) is None, "status of el-1 after rm is not 'no such election'")

    c = t.campaign("c", "el-1", uri)
    sqle.wait_alive(c.elected, "c elected in el-1 made again", [c])
    check(c.elected()[0].token > a.elected()[-1].token,
          f"c's token {c.elected()[0].token} is not above a's {a.elected()[-1].token}")
    c.send(signal.SIGTERM)
    check(c.wait() == 0, "c did not exit 0")

    tokens_never_go_back(t, uri, reign)
    groups(t, uri, reign)
    queues(t, store, uri, reign)


def slot_tokens(reign, name):
    """{slot key: token} of the slot record of `name`."""
    rc, out, err = reign("runs", name, "--json")
    check(rc == 0, f"runs {name}: {rc} {err!r}")
    return {s["slot"]: r["token"] for s in json.loads(out)["slots"] for r in s["runs"]}


def tokens_never_go_back(t, uri, reign):
    for k in ("k1", "k2", "k3"):
        rc, _, err = reign("run", "tk", "--slot", k, "--", "true")
        check(rc == 0, f"run tk --slot {k}: {err}")
    before = slot_tokens(reign, "tk")
    check(before["k1"] < before["k2"] < before["k3"], f"tokens of three leaderships: {before}")
    rc, out, err = reign("rm", "tk")
    check(rc == 0 and out.strip() == "removed election tk", f"rm tk: {rc} {out!r} {err!r}")
    d = t.campaign("after-rm", "tk", uri)
    sqle.wait_alive(d.elected, "after-rm elected in tk", [d])
    ev = d.elected()[0]
    # On a SQL store the term is the token: both go on from the last leadership's.
    check(ev.token > before["k3"] and ev.term > before["k3"],
          f"after rm: elected term={ev.term} token={ev.token}, tokens before: {before}")
    d.send(signal.SIGTERM)
    check(d.wait() == 0, "after-rm did not exit 0")
    rc, _, err = reign("run", "tk", "--slot", "k4", "--", "true")
    check(rc == 0, f"run tk --slot k4: {err}")
    after = slot_tokens(reign, "tk")
    check(after["k4"] > ev.token > after["k3"], f"slot record after rm: {after}")
    log(f"tokens {before} then {ev.token} (campaign) and {after['k4']} (slot k4) after rm")


def groups(t, uri, reign):
    m = t.spawn("gr-m1", [t.cli, "--uri", uri, "register", "gr-1", "--id", "m1"])
    sqle.wait_alive(lambda: "group gr-1 standing=1" in " ".join(reign("ls", "gr-")[1].split()),
                    "m1 registered in gr-1", [m])
    rc, _, err = reign("rm", "gr-1")
    check(rc == 1 and "'m1' is its member" in err, f"rm gr-1 while m1 is in: {rc} {err!r}")
    m.send(signal.SIGTERM)
    check(m.wait() == 0, "m1 did not exit 0")
    rc, out, err = reign("rm", "gr-1")
    check(rc == 0 and out.strip() == "removed group gr-1", f"rm gr-1: {rc} {out!r} {err!r}")
    rc, out, _ = reign("ls", "gr-")
    check(rc == 0 and out == "", f"ls gr- after rm: {out!r}")
    log("a group: refused while m1 is its member, removed once it left")


def master_terms(proc):
    """The terms of a `reign tasks master`'s "elected term=N" lines."""
    return [int(ln.split("=")[1]) for ln in proc.lines() if ln.startswith("elected term=")]


def queue_lines(reign):
    rc, out, err = reign("ls")
    check(rc == 0, f"ls: {rc} {err!r}")
    return [ln.split() for ln in out.splitlines() if "qu-1" in ln or ln.startswith("queue")]


def queues(t, store, uri, reign):
    for i in range(2):
        rc, _, err = reign("tasks", "submit", "qu-1", f"payload {i}")
        check(rc == 0, f"tasks submit qu-1: {err}")
    rc, out, _ = reign("ls", "qu-")
    check(out.split() == ["queue", "qu-1", "standing=0"], f"ls qu- with tasks only: {out!r}")
    # A worker whose command never ends: its tasks stay assigned to it while it stands.
    w = t.spawn("w1", [t.cli, "--uri", uri, "tasks", "worker", "qu-1", "--id", "w1", "--",
                       "sleep", "1000"])
    m = t.spawn("m1", [t.cli, "--uri", uri, "tasks", "master", "qu-1", "--id", "m1"])
    sqle.wait_alive(lambda: master_terms(m), "m1 elected", [w, m])
    sqle.wait_alive(lambda: ["group", "tasks.qu-1", "standing=1"] in queue_lines(reign),
                    "w1 registered", [w, m])
    check(queue_lines(reign) == [["election", "tasks.qu-1", "standing=1", "leader=m1"],
                                 ["group", "tasks.qu-1", "standing=1"],
                                 ["queue", "qu-1", "standing=0"]],
          f"ls with w1 and m1: {queue_lines(reign)}")

    rc, _, err = reign("rm", "qu-1")
    check(rc == 1 and "'w1', 'm1' work or master for it" in err, f"rm qu-1: {rc} {err!r}")
    w.send(signal.SIGTERM)
    check(w.wait() == 0, "w1 did not exit 0")
    rc, _, err = reign("rm", "qu-1")
    check(rc == 1 and "'m1' works or masters for it" in err, f"rm qu-1 with m1: {rc} {err!r}")
    rc, out, _ = reign("tasks", "list", "qu-1")
    check(rc == 0 and len(out.splitlines()) == 2, f"qu-1's tasks after the refusals: {out!r}")
    m.send(signal.SIGTERM)
    check(m.wait() == 0, "m1 did not exit 0")
    term = store.lease_row("tasks.qu-1").term
    log("refused while w1, then m1, stood; nothing removed")

    rc, out, err = reign("rm", "qu-1")
    check(rc == 0 and out.strip() == "removed queue qu-1", f"rm qu-1: {rc} {out!r} {err!r}")
    check(queue_lines(reign) == [], f"ls after rm qu-1: {queue_lines(reign)}")
    tasks = store.quoted(store.table + "_tasks")
    members = store.quoted(store.table + "_members")
    left = store.sql(f"SELECT COUNT(*) FROM {tasks} WHERE queue_name = 'qu-1'")[0][0]
    check(left == "0", f"qu-1's task rows after rm: {left}")
    left = store.sql(f"SELECT COUNT(*) FROM {members} WHERE group_name = 'tasks.qu-1'")[0][0]
    check(left == "0", f"tasks.qu-1's group rows after rm: {left}")
    row = store.lease_row("tasks.qu-1")
    check(row is not None and row.owner == "" and row.term == term,
          f"tasks.qu-1's lease row after rm: {row} (want kept at term {term}, with no owner)")
    rc, _, err = reign("rm", "qu-1")
    check(rc == 1 and "no election, group, value or queue 'qu-1'" in err,
          f"rm qu-1 again: {rc} {err!r}")
    m = t.spawn("m2", [t.cli, "--uri", uri, "tasks", "master", "qu-1", "--id", "m2"])
    sqle.wait_alive(lambda: master_terms(m), "m2 elected", [m])
    check(master_terms(m)[0] > term, f"m2's term {master_terms(m)} is not above {term}")
    m.send(signal.SIGTERM)
    check(m.wait() == 0, "m2 did not exit 0")
    log(f"qu-1 removed; its master made again leads at term {master_terms(m)[0]} > {term}")

    for queue, state in (("qf", 9), ("bad name", 1)):
        store.sql(f"INSERT INTO {tasks} (data_center, queue_name, guid, state, submitted_ms) "
                  f"VALUES ('default', '{queue}', '0123456789abcdef', {state}, 0)")
    rc, out, err = reign("ls")
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("queue")]
    # qu-1 again too: m2 stood in its election.
    check(rc == 0 and lines == [["queue", "bad", "name", "standing=0", "foreign"],
                                ["queue", "qf", "standing=0"], ["queue", "qu-1", "standing=0"]],
          f"ls with foreign rows: {out!r}")
    rc, _, err = reign("rm", "qf")
    check(rc == 1 and "not reign's" in err, f"rm of a queue with a foreign row: {rc} {err!r}")
    left = store.sql(f"SELECT COUNT(*) FROM {tasks} WHERE queue_name = 'qf'")[0][0]
    check(left == "1", f"qf's foreign row after rm: {left}")
    log("rows reign did not write: listed, never removed")


if __name__ == "__main__":
    kind = sqle.backend_arg(sys.argv[0])
    sqle.main(f"e2e_sql_ls_rm_{kind}", lambda t: body(t, kind))
