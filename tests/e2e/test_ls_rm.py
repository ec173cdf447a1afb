#!/usr/bin/env python3
"""test_ls_rm.py - `reign ls` and `reign rm` on ZooKeeper, under a fresh chroot.

  * ls of an empty store prints nothing (exit 0); then with an election (a candidate `a`
    standing), a group (member `m1`), a value, a task queue, a node of the same name in two
    kinds, and a foreign node (/reign/election/foreign-x made with zkraw, data not reign's):
    ls lists each with its kind and who stands, sorted, and an election with a slot run by
    `reign run --slot` with slots=1; a PREFIX filters; --json parses.
  * refusals: rm of the election while `a` stands and of the group while `m1` is a member exit
    1 naming them, and leave the nodes; rm of the queue while worker `w1` runs exits 1 naming
    it and leaves its pending tasks; rm of the foreign node exits 1 and leaves it; rm of a
    name held by two kinds without --kind is a usage error (2); rm of a name nobody made says
    so.
  * once `a`, `m1` and `w1` have left, rm removes the election (its term too), the group, the
    value at once, and the queue with its three pending tasks (the whole subtree); ZooKeeper
    has no node of them left, and ls no longer lists them (the workers' group tasks.qu-1
    stays, an entry of its own).
  * the election can be made again afterwards: a new campaign is elected with a token above
    the removed election's (ZooKeeper's tokens are zxids, which a removal does not reset).
  * values whose key has a '/': ls lists app/config by key (not its parent node app, which
    holds nothing, as foreign); rm app/config and rm --kind value app/b remove them, and the
    parent nodes they leave holding nothing go with the last of them (`value del app/a` with
    app/b still there keeps /reign/value/app); reignd's value reignd/svc/breadcrumb is listed
    as used-by=reignd, not foreign.
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

NONODE = 4


def body(t):
    hosts = t.shared_hosts()
    chroot = "/" + t.unique("e2e-lsrm")
    zh = hosts + chroot
    uri = t.uri(zh, session_timeout_ms=4000)

    def reign(*args, env=None):
        return t.reign(["--uri", uri, *args], env=env)

    rc, out, err = reign("ls")
    check(rc == 0 and out == "", f"ls of an empty store: {rc} {out!r} {err!r}")

    a = t.campaign("a", "el-1", uri)
    wait_for(lambda: a.elected(), "a elected")
    m = t.spawn("m1", [t.cli, "--uri", uri, "register", "gr-1", "--id", "m1"])
    wait_for(lambda: "gr-1" in reign("ls", "gr")[1], "m1's group listed")
    rc, _, err = reign("value", "set", "va-1", "hello")
    check(rc == 0, f"value set: {err}")
    rc, _, err = reign("value", "set", "el-1", "same name as the election")
    check(rc == 0, f"value set el-1: {err}")
    for i in range(3):
        rc, _, err = reign("tasks", "submit", "qu-1", f"payload {i}")
        check(rc == 0, f"tasks submit: {err}")
    rc, _, err = reign("run", "sl-1", "--slot", "k1", "--", "true")
    check(rc == 0, f"run --slot: {err}")
    rc, _, err = t.zkraw(zh, "create", "/reign/election/foreign-x", "not reign's")
    check(rc == 0, f"creating a foreign node: {err}")

    wait_for(lambda: "standing=1" in next((ln for ln in reign("ls", "gr")[1].splitlines()
                                           if "gr-1" in ln), ""), "m1 counted in gr-1")
    rc, out, err = reign("ls")
    check(rc == 0, f"ls: {rc} {err}")
    lines = [ln.split() for ln in out.splitlines()]
    want = [["election", "el-1", "standing=1"],
            ["election", "foreign-x", "standing=0", "foreign"],
            ["election", "sl-1", "standing=0", "slots=1"],
            ["group", "gr-1", "standing=1"],
            ["value", "el-1", "standing=0"],
            ["value", "va-1", "standing=0"],
            ["queue", "qu-1", "standing=0"]]
    check(lines == want, f"ls:\n{out}")
    rc, out, _ = reign("ls", "va")
    check(out.split() == ["value", "va-1", "standing=0"], f"ls va: {out!r}")
    rc, out, _ = reign("ls", "--json")
    entries = json.loads(out)
    check([(e["kind"], e["name"], e["standing"], e["foreign"]) for e in entries] ==
          [("election", "el-1", 1, False), ("election", "foreign-x", 0, True),
           ("election", "sl-1", 0, False), ("group", "gr-1", 1, False), ("value", "el-1", 0, False),
           ("value", "va-1", 0, False), ("queue", "qu-1", 0, False)], f"ls --json: {out}")

    # Refusals.
    rc, _, err = reign("rm", "--kind", "election", "el-1")
    check(rc == 1 and "'a' stands in it" in err, f"rm el-1 while a stands: {rc} {err!r}")
    rc, _, err = reign("rm", "gr-1")
    check(rc == 1 and "'m1' is its member" in err, f"rm gr-1 while m1 is in: {rc} {err!r}")
    rc, _, err = reign("rm", "foreign-x")
    check(rc == 1 and "not reign's" in err, f"rm of a foreign node: {rc} {err!r}")
    rc, _, err = reign("rm", "el-1")
    check(rc == 2 and "--kind" in err, f"rm of a name of two kinds: {rc} {err!r}")
    w = t.spawn("w1", [t.cli, "--uri", uri, "tasks", "worker", "qu-1", "--id", "w1", "--",
                       "cat"])
    wait_for(lambda: "tasks.qu-1 standing=1" in reign("ls", "tasks.")[1], "w1 registered")
    rc, _, err = reign("rm", "qu-1")
    check(rc == 1 and "'w1' works or masters for it" in err, f"rm qu-1 with w1: {rc} {err!r}")
    rc, _, _ = t.zkraw(zh, "exists", "/reign/tasks/qu-1/tasks")
    check(rc == 0, f"qu-1's tasks are gone after a refusal ({rc})")
    rc, _, err = reign("rm", "nobody-made-this")
    check(rc == 1 and "no election, group, value or queue" in err, f"rm of nothing: {rc} {err!r}")
    for p in ("/reign/election/el-1", "/reign/election/el-1/term", "/reign/group/gr-1",
              "/reign/election/foreign-x"):
        rc, _, _ = t.zkraw(zh, "exists", p)
        check(rc == 0, f"{p} is gone after a refusal ({rc})")
    check(not a.demoted(), "a was disturbed")
    log("refused while somebody stands, for foreign data, and for an ambiguous name")

    # Removals once nobody stands.
    for p in (a, m, w):
        p.send(signal.SIGTERM)
    check(a.wait() == 0 and m.wait() == 0 and w.wait() == 0, "a, m1 or w1 did not exit 0")
    for args, line in ((["--kind", "election", "el-1"], "removed election el-1"),
                       (["gr-1"], "removed group gr-1"),
                       (["va-1"], "removed value va-1"),
                       (["--kind", "queue", "qu-1"], "removed queue qu-1")):
        rc, out, err = reign("rm", *args)
        check(rc == 0 and out.strip() == line, f"rm {args}: {rc} {out!r} {err!r}")
    for p in ("/reign/election/el-1", "/reign/group/gr-1", "/reign/value/va-1",
              "/reign/tasks/qu-1"):
        rc, _, _ = t.zkraw(zh, "exists", p)
        check(rc == NONODE, f"{p} still exists after rm ({rc})")
    rc, out, _ = reign("ls")
    check([ln.split()[:2] for ln in out.splitlines()] ==
          [["election", "foreign-x"], ["election", "sl-1"], ["group", "tasks.qu-1"],
           ["value", "el-1"]], f"ls after rm: {out}")

    b = t.campaign("b", "el-1", uri)
    wait_for(lambda: b.elected(), "b elected in the election made again")
    check(b.elected()[0].token > a.elected()[-1].token,
          f"b's token {b.elected()[0].token} is not above a's {a.elected()[-1].token}")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")

    values_with_a_slash(t, zh, reign)


def values_with_a_slash(t, zh, reign):
    for key in ("app/config", "app/a", "app/b", "deep/er/key"):
        rc, _, err = reign("value", "set", key, "1")
        check(rc == 0, f"value set {key}: {err}")
    # What reignd keeps per election, as it writes it.
    rc, _, err = reign("value", "set", "reignd/svc/breadcrumb",
                       "reignd breadcrumb 1\nid=x\nservice_address=h:1\nterm=1\ntoken=1\n")
    check(rc == 0, f"value set reignd/svc/breadcrumb: {err}")
    for prefix, want in (("app", [["value", "app/a", "standing=0"],
                                  ["value", "app/b", "standing=0"],
                                  ["value", "app/config", "standing=0"]]),
                         ("deep/er/", [["value", "deep/er/key", "standing=0"]]),
                         ("reignd", [["value", "reignd/svc/breadcrumb", "standing=0",
                                      "used-by=reignd"]])):
        rc, out, err = reign("ls", prefix)
        check(rc == 0 and [ln.split() for ln in out.splitlines()] == want,
              f"ls {prefix}: {rc} {out!r} {err!r}")
    rc, out, _ = reign("ls", "reignd", "--json")
    check([(e["name"], e["used_by"], e["foreign"]) for e in json.loads(out)] ==
          [("reignd/svc/breadcrumb", "reignd", False)], f"ls reignd --json: {out}")

    rc, out, err = reign("rm", "app/config")
    check(rc == 0 and out.strip() == "removed value app/config",
          f"rm app/config: {rc} {out!r} {err!r}")
    rc, _, err = reign("value", "del", "app/a")
    check(rc == 0, f"value del app/a: {err}")
    rc, _, _ = t.zkraw(zh, "exists", "/reign/value/app")
    check(rc == 0, f"/reign/value/app went while app/b is in it ({rc})")
    rc, out, err = reign("rm", "--kind", "value", "app/b")
    check(rc == 0 and out.strip() == "removed value app/b",
          f"rm --kind value app/b: {rc} {out!r} {err!r}")
    rc, out, err = reign("rm", "deep/er/key")
    check(rc == 0 and out.strip() == "removed value deep/er/key",
          f"rm deep/er/key: {rc} {out!r} {err!r}")
    for p in ("/reign/value/app", "/reign/value/deep"):
        rc, _, _ = t.zkraw(zh, "exists", p)
        check(rc == NONODE, f"{p} still exists once no value is below it ({rc})")
    rc, _, err = reign("rm", "--kind", "value", "reignd")
    check(rc == 1 and "no value 'reignd'" in err, f"rm of a parent node: {rc} {err!r}")
    rc, out, _ = reign("ls", "--json")
    check(not [e for e in json.loads(out) if e["foreign"] and e["kind"] == "value"],
          f"ls lists values as foreign: {out}")
    log("values with a '/': listed and removed by key, their parents pruned")


if __name__ == "__main__":
    main("e2e_ls_rm", body)
