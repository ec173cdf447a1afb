#!/usr/bin/env python3
"""test_group_value.py - `reign register`, `reign members` and `reign value` as a user runs them.

group: a `members --watch --json` follower starts first; three `register` processes join
(two of them with the same id, as Tera's restarted tablet server would); `members --json` must
list all three in join order with their payloads, and the follower must report each one
`added`.  One member is frozen (SIGSTOP) until the server expires its session: the follower
reports it `removed`; thawed, it prints `unregistered ... reason=session_lost` and
`registered` under a new node, and the follower reports that node `added`.  A member sent
SIGTERM exits 0 and the follower reports it `removed` at once (its node is deleted, not left to
expire).

value: a `value watch` follower sees `ready ... none`, then `created`, `changed` and `deleted`
for set, compare-and-set and del; a compare-and-set on a stale version and a set-if-absent on
an existing value exit 1 and change nothing; `value get` prints the payload, `--json` its
version, and exits 1 once the value is deleted.
"""
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

SESSION_MS = 4000
REGISTERED_RE = re.compile(r"^registered (\S+) node=(\S+) monotonic_ns=(-?\d+)$")
UNREGISTERED_RE = re.compile(r"^unregistered (\S+) reason=(\S+) monotonic_ns=(-?\d+)$")


def nodes(proc):
    """The nodes a `register` process announced, in order."""
    return [m.group(2) for m in map(REGISTERED_RE.match, proc.lines()) if m]


def events(follower):
    return [json.loads(line) for line in follower.lines()]


def seen(follower, event, node):
    return any(e["event"] == event and e.get("member", {}).get("node") == node
               for e in events(follower))


def group_part(t, uri):
    group = t.unique("e2e-group")
    f = t.spawn("follower", [t.cli, "--uri", uri, "members", group, "--watch", "--json"])
    wait_for(lambda: any(e["event"] == "ready" for e in events(f)), "the follower's first view")

    regs = []
    for label, ident, data in (("a", "ts-a", "10.0.0.1:2200"), ("b", "ts-b", "10.0.0.2:2200"),
                               ("b2", "ts-b", "10.0.0.2:2200")):
        p = t.spawn(label, [t.cli, "--uri", uri, "--log-level", "info", "register", group,
                            "--id", ident, "--data", data])
        wait_for(lambda: nodes(p), f"{label} registered")
        regs.append(p)
    rc, out, err = t.reign(["--uri", uri, "members", group, "--json"])
    check(rc == 0, f"reign members --json failed ({rc}): {err.strip()}")
    listed = json.loads(out)
    check(listed["group"] == group, f"group {listed['group']!r}")
    check([(m["id"], m["data"], m["node"]) for m in listed["members"]] ==
          [("ts-a", "10.0.0.1:2200", nodes(regs[0])[0]), ("ts-b", "10.0.0.2:2200", nodes(regs[1])[0]),
           ("ts-b", "10.0.0.2:2200", nodes(regs[2])[0])],
          f"members --json listed {listed['members']}")
    seqs = [m["seq"] for m in listed["members"]]
    check(seqs == sorted(seqs), f"not in join order: {seqs}")
    for p in regs:
        wait_for(lambda: seen(f, "added", nodes(p)[0]), f"the follower to report {p.label} added")

    # a frozen member: its session expires on the server, and it registers again when thawed
    a = regs[0]
    old = nodes(a)[0]
    a.send(signal.SIGSTOP)
    wait_for(lambda: seen(f, "removed", old), "the frozen member's node to expire",
             timeout=SESSION_MS / 1000 + 60)
    a.send(signal.SIGCONT)
    wait_for(lambda: len(nodes(a)) >= 2, "the thawed member to register again")
    check(any(m and m.group(2) == "session_lost" for m in map(UNREGISTERED_RE.match, a.lines())),
          f"no 'unregistered ... reason=session_lost' line: {a.lines()}")
    new = nodes(a)[-1]
    check(new != old, "registered again under the expired node")
    wait_for(lambda: seen(f, "added", new), "the follower to report the new registration")
    log(f"a: {old} expired, registered again as {new}")

    # SIGTERM: the member leaves at once, exit 0
    b = regs[1]
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "reign register did not exit 0 on SIGTERM")
    wait_for(lambda: seen(f, "removed", nodes(b)[0]), "the follower to report b removed")
    rc, out, _ = t.reign(["--uri", uri, "members", group])
    check(rc == 0, "reign members failed")
    check(sorted(line.split()[2] for line in out.splitlines()) ==
          sorted(f"node={n}" for n in (new, nodes(regs[2])[0])),
          f"members after the changes: {out!r}")
    for p in (a, regs[2]):
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{p.label} did not exit 0")
    f.send(signal.SIGTERM)
    check(f.wait() == 0, "members --watch did not exit 0 on SIGTERM")


def value_lines(w):
    return [line.split()[0] + " " + (line.split()[-1] if "data=" in line else "none")
            for line in w.lines()]


def value_part(t, uri):
    key = t.unique("e2e-value") + "/root_table"
    w = t.spawn("vwatch", [t.cli, "--uri", uri, "value", "watch", key])
    wait_for(lambda: value_lines(w), "the value watch's first line")
    check(value_lines(w) == ["ready none"], f"first line {w.lines()}")

    def reign_ok(*args):
        rc, out, err = t.reign(["--uri", uri, "value", *args])
        check(rc == 0, f"reign value {' '.join(args)} failed ({rc}): {err.strip()}")
        return out

    out = reign_ok("set", key, "ts1:2200")
    check(out.strip() == f"set {key} version=0", f"set printed {out!r}")
    wait_for(lambda: len(value_lines(w)) >= 2, "created")
    check(reign_ok("get", key) == "ts1:2200\n", "get after set")
    v = json.loads(reign_ok("get", key, "--json"))
    check(v["data"] == "ts1:2200" and v["version"] == 0, f"get --json {v}")

    reign_ok("set", key, "ts2:2200", "--version", "0")
    for args in (("set", key, "ts3:2200", "--version", "0"),
                 ("set", key, "ts3:2200", "--version", "absent"),
                 ("del", key, "--version", "0")):
        rc, _, err = t.reign(["--uri", uri, "value", *args])
        check(rc == 1, f"reign value {' '.join(args)} exited {rc}, want 1 ({err.strip()})")
    check(reign_ok("get", key) == "ts2:2200\n", "a refused write changed the value")
    wait_for(lambda: len(value_lines(w)) >= 3, "changed")
    reign_ok("del", key, "--version", "1")
    wait_for(lambda: len(value_lines(w)) >= 4, "deleted")
    check(value_lines(w) == ["ready none", "created data=ts1:2200", "changed data=ts2:2200",
                             "deleted none"], f"watch saw {w.lines()}")
    rc, _, err = t.reign(["--uri", uri, "value", "get", key])
    check(rc == 1 and "no such value" in err, f"get after del: {rc} {err.strip()}")
    rc, _, err = t.reign(["--uri", uri, "value", "get", "a//b"])
    check(rc == 1 and "illegal key" in err, f"bad key: {rc} {err.strip()}")
    rc, _, err = t.reign(["--uri", uri, "value", "frob", key])
    check(rc == 2, f"unknown value command exited {rc}")
    w.send(signal.SIGTERM)
    check(w.wait() == 0, "value watch did not exit 0 on SIGTERM")


def body(t):
    uri = t.uri(t.shared_hosts(), session_timeout_ms=SESSION_MS)
    group_part(t, uri)
    value_part(t, uri)


if __name__ == "__main__":
    main("e2e_group_value", body)
