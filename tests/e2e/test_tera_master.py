#!/usr/bin/env python3
"""test_tera_master.py SCENARIO - examples/tera-master (Tera's master) on the shared ZooKeeper server.

Every scenario runs its own cluster (a unique --cluster name), stand-in tablet servers
(`tera-master --tablet-server`, or `reign register`), and reads what the masters print.  The
master's state transitions are compared, in order, with the exact list the scenario must cause.

restore      a master without tablet servers waits (secondary -> restoring -> waiting_ts); the
             safemode mark set meanwhile is refused by the state machine and logged; the first
             tablet server resumes the restore, which places the root tablet on it (root_table
             written) and, the mark being set, goes read-only; deleting the mark makes it
             running; SIGTERM makes it secondary and takes its address out of the master node.
ts_list      the ts list keeps the newest registration per address: a second registration of
             one address replaces the first in the master's view (removed, then added), and
             when it leaves the older one is back; deleting the empty ts directory puts the
             master in safe mode (mark written, running -> readonly).
root_table   deleting root_table makes the master write it again with the same address; a new
             master reads the existing root_table instead of placing the root tablet again.
master_node  deleting the master node makes the master step down to secondary and stand again:
             alone, it wins again and restores; with a second master standing, that one takes
             over, and the first leads again once the second leaves.
lock         deleting the master lock's node makes the master go secondary and exit 1; a
             standby master takes the free lock and rewrites the master node.
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, env_path, log, main, wait_for  # noqa: E402

TRANSITION_RE = re.compile(r"^transition (\S+) -> (\S+) on (\S+): ")
REFUSED_RE = re.compile(r"^refused (\S+) in (\S+)$")
TS_RE = re.compile(r"^ts (added|removed) (\S+) node=(\S+) live=(\d+)$")

# The transitions of one mastership that restores without waiting, as (from, to, event).
WIN = [("secondary", "restoring", "got_lock"), ("restoring", "running", "meta_restored")]
LOSE_RUNNING = [("running", "secondary", "lost_lock")]


def transitions(p):
    return [m.groups() for m in map(TRANSITION_RE.match, p.lines()) if m]


def matches(p, regex):
    r = re.compile(regex)
    return [m for m in map(r.match, p.lines()) if m]


def wait_line(p, regex, what, n=1):
    """Waits until p printed n lines matching regex; returns the matches."""
    return wait_for(lambda: len(matches(p, regex)) >= n and matches(p, regex), what)


def wait_transitions(p, want, what):
    """Waits until p's transitions are `want` (a prefix of what it will print), then checks they
    are exactly that (nothing else slipped in)."""
    wait_for(lambda: len(transitions(p)) >= len(want), what)
    check(transitions(p) == want, f"{p.label}'s transitions: {transitions(p)}, want {want}")


class Cluster:
    """One Tera cluster's names, processes and values."""

    def __init__(self, t):
        self.t = t
        self.name = t.unique("tera")
        self.hosts = t.shared_hosts()
        self.uri = t.uri(self.hosts, session_timeout_ms=4000)
        self.binary = env_path("REIGN_TERA_MASTER")
        self.lock_node = f"/reign/election/{self.name}.master-lock/lock"
        self.ts_dir = f"/reign/group/{self.name}.ts"

    def master(self, label, addr, *extra):
        return self.t.spawn(label, [self.binary, "--uri", self.uri, "--cluster", self.name,
                                    "--addr", addr, "--log-level", "info", *extra])

    def ts(self, label, addr):
        p = self.t.spawn(label, [self.binary, "--uri", self.uri, "--cluster", self.name,
                                 "--addr", addr, "--tablet-server"])
        return p, wait_line(p, r"^ts registered (\S+) node=(\S+)$", f"{label} registered")[0][2]

    def ts_by_cli(self, label, addr):
        """A tablet server as `reign register` makes one: the master cannot tell the difference."""
        p = self.t.spawn(label, [self.t.cli, "--uri", self.uri, "register", f"{self.name}.ts",
                                 "--id", addr, "--data", addr])
        return p, wait_line(p, r"^registered (\S+) node=(\S+) ", f"{label} registered")[0][2]

    def value(self, key):
        """The value's payload, or None if there is none."""
        rc, out, err = self.t.reign(["--uri", self.uri, "value", "get", f"{self.name}/{key}"])
        if rc == 1 and "no such value" in err:
            return None
        check(rc == 0, f"reign value get {key} failed ({rc}): {err.strip()}")
        return out.rstrip("\n")

    def set_value(self, key, data):
        rc, _, err = self.t.reign(["--uri", self.uri, "value", "set", f"{self.name}/{key}", data])
        check(rc == 0, f"reign value set {key} failed ({rc}): {err.strip()}")

    def del_value(self, key):
        rc, _, err = self.t.reign(["--uri", self.uri, "value", "del", f"{self.name}/{key}"])
        check(rc == 0, f"reign value del {key} failed ({rc}): {err.strip()}")

    def delete_node(self, path):
        rc, _, err = self.t.zkraw(self.hosts, "delete", path)
        check(rc == 0, f"deleting {path} failed ({rc}): {err.strip()}")
        log(f"deleted {path}")

    def running(self, label, addr, *extra):
        """A master that has restored and runs (with a tablet server already alive)."""
        m = self.master(label, addr, *extra)
        wait_transitions(m, WIN, f"{label} running")
        check(self.value("master") == addr, f"master node after {label} restored")
        return m


def stop(p, code=0):
    p.send(signal.SIGTERM)
    rc = p.wait()
    check(rc == code, f"{p.label} exited {rc}, want {code}")


def scenario_restore(t, c):
    m = c.master("m1", "10.0.0.1:7700")
    want = [("secondary", "restoring", "got_lock"), ("restoring", "waiting_ts", "no_ts")]
    wait_transitions(m, want, "m1 waiting for tablet servers")
    check(c.value("master") == "10.0.0.1:7700", "the master node holds m1's address")
    check(c.value("root_table") is None, "root_table written without a tablet server")

    # Safe mode set while waiting: no such transition (the mark is read again at restore).
    c.set_value("safemode", "on")
    wait_line(m, REFUSED_RE.pattern, "the refused enter_safemode")
    check([g.groups() for g in matches(m, REFUSED_RE.pattern)] == [("enter_safemode",
                                                                     "waiting_ts")],
          f"refusals: {[g.group(0) for g in matches(m, REFUSED_RE.pattern)]}")

    ts, _ = c.ts("ts1", "10.0.0.5:2200")
    want += [("waiting_ts", "restoring", "ts_available"), ("restoring", "readonly",
                                                          "enter_safemode")]
    wait_transitions(m, want, "m1 restored in safe mode")
    wait_line(m, r"^root_table written addr=10\.0\.0\.5:2200 ", "root_table written")
    check(c.value("root_table") == "10.0.0.5:2200", "root_table names the first tablet server")

    c.del_value("safemode")
    want += [("readonly", "running", "leave_safemode")]
    wait_transitions(m, want, "m1 running once the mark is gone")

    # The tablet server leaving changes no state (the master keeps running without one).
    stop(ts)
    wait_line(m, r"^ts removed 10\.0\.0\.5:2200 .* live=0$", "ts1 removed")
    stop(m)
    want += LOSE_RUNNING
    check(transitions(m) == want, f"m1's transitions: {transitions(m)}")
    check(len(matches(m, REFUSED_RE.pattern)) == 1, "another refusal")
    check(c.value("master") is None, "m1 left its address in the master node")


def scenario_ts_list(t, c):
    a1, a1_node = c.ts("a1", "10.0.0.5:2200")
    m = c.running("m1", "10.0.0.1:7700")
    check(matches(m, r"^ts ready live=1$"), "m1's first view of the ts list")

    # The same address again (a tablet server restarted while its old session lives).
    a2, a2_node = c.ts_by_cli("a2", "10.0.0.5:2200")
    wait_line(m, rf"^ts added 10\.0\.0\.5:2200 node={a2_node} live=1$", "a2 replacing a1")
    check(matches(m, rf"^ts removed 10\.0\.0\.5:2200 node={a1_node} live=1$"),
          "a1 not removed from the view when a2 came")
    b, b_node = c.ts("b", "10.0.0.6:2200")
    wait_line(m, rf"^ts added 10\.0\.0\.6:2200 node={b_node} live=2$", "b added")

    # The newest leaves: the older registration of the address is the newest again.
    stop(a2)
    wait_line(m, rf"^ts removed 10\.0\.0\.5:2200 node={a2_node} live=2$", "a2 removed")
    wait_line(m, rf"^ts added 10\.0\.0\.5:2200 node={a1_node} live=2$", "a1 back")
    stop(a1)
    stop(b)
    wait_line(m, r"^ts removed .* live=0$", "every tablet server gone")
    check(transitions(m) == WIN, f"the ts list changed m1's state: {transitions(m)}")

    # Deleting the (empty) ts directory: safe mode.
    c.delete_node(c.ts_dir)
    wait_line(m, r"^ts directory deleted: marking safe mode$", "m1 noticing the directory gone")
    wait_transitions(m, WIN + [("running", "readonly", "enter_safemode")], "m1 in safe mode")
    check(c.value("safemode") is not None, "no safemode mark")
    stop(m)


def scenario_root_table(t, c):
    c.ts("ts1", "10.0.0.5:2200")
    m = c.running("m1", "10.0.0.1:7700")
    wait_line(m, r"^root_table absent: placing the root tablet on 10\.0\.0\.5:2200$",
              "the root tablet placed")
    c.del_value("root_table")
    wait_line(m, r"^root_table deleted: rewriting addr=10\.0\.0\.5:2200$", "the rewrite")
    wait_line(m, r"^root_table rewritten addr=10\.0\.0\.5:2200 ", "root_table rewritten")
    check(c.value("root_table") == "10.0.0.5:2200", "root_table after the rewrite")
    check(transitions(m) == WIN, f"m1's state changed: {transitions(m)}")
    stop(m)

    # The next master reads root_table; it does not place the root tablet again.
    c.set_value("root_table", "10.0.0.9:2200")
    m2 = c.running("m2", "10.0.0.2:7700")
    check(matches(m2, r"^root_table read addr=10\.0\.0\.9:2200$"), "m2 did not read root_table")
    check(not matches(m2, r"^root_table (absent|written)"), "m2 wrote root_table")
    check(c.value("root_table") == "10.0.0.9:2200", "root_table changed by m2")
    stop(m2)


def scenario_master_node(t, c):
    c.ts("ts1", "10.0.0.5:2200")
    # A restand delay long enough that a standing secondary certainly claims the lock first.
    m1 = c.running("m1", "10.0.0.1:7700", "--restand-delay", "5000")

    # Alone: it steps down, stands again, wins again and restores from root_table.
    c.del_value("master")
    wait_line(m1, r"^stepping down: the master node was deleted", "m1 stepping down")
    want = WIN + LOSE_RUNNING + WIN
    wait_transitions(m1, want, "m1 master again")
    check(matches(m1, r"^lock demoted reason=ceded$"), "m1 did not give up the lock")
    check(len(matches(m1, r"^lock elected ")) == 2, "m1 not elected twice")
    check(matches(m1, r"^root_table read addr=10\.0\.0\.5:2200$"), "m1 did not read root_table")
    wait_for(lambda: c.value("master") == "10.0.0.1:7700", "m1's address in the master node")

    # With a second master standing: that one takes over while m1 waits to stand again.
    m2 = c.master("m2", "10.0.0.2:7700")
    wait_line(m2, r"^lock ready$", "m2 standing")
    c.del_value("master")
    wait_transitions(m2, WIN, "m2 running")
    want += LOSE_RUNNING
    check(transitions(m1) == want, f"m1's transitions: {transitions(m1)}")
    wait_for(lambda: c.value("master") == "10.0.0.2:7700", "m2's address in the master node")

    # m1 stood again: it takes over when m2 leaves.
    stop(m2)
    check(transitions(m2) == WIN + LOSE_RUNNING, f"m2's transitions: {transitions(m2)}")
    want += WIN
    wait_transitions(m1, want, "m1 master again after m2 left")
    wait_for(lambda: c.value("master") == "10.0.0.1:7700", "m1's address in the master node")
    stop(m1)


def scenario_lock(t, c):
    c.ts("ts1", "10.0.0.5:2200")
    m1 = c.running("m1", "10.0.0.1:7700")
    m2 = c.master("m2", "10.0.0.2:7700")
    wait_line(m2, r"^lock ready$", "m2 standing")
    check(t.children(c.hosts, os.path.dirname(c.lock_node)) is not None, "no lock directory")

    c.delete_node(c.lock_node)
    rc = m1.wait()
    check(rc == 1, f"m1 exited {rc} after its lock was deleted, want 1")
    check(transitions(m1) == WIN + LOSE_RUNNING, f"m1's transitions: {transitions(m1)}")
    check(matches(m1, r"^lock demoted reason=node_deleted$"), "m1: no node_deleted demotion")
    check(matches(m1, r"^exiting: the master lock was deleted$"), "m1 did not say why it exits")

    # The standby takes the free lock and publishes itself.
    wait_transitions(m2, WIN, "m2 running")
    wait_for(lambda: c.value("master") == "10.0.0.2:7700", "m2's address in the master node")
    stop(m2)


SCENARIOS = {
    "restore": scenario_restore,
    "ts_list": scenario_ts_list,
    "root_table": scenario_root_table,
    "master_node": scenario_master_node,
    "lock": scenario_lock,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} {'|'.join(SCENARIOS)}", file=sys.stderr)
        sys.exit(2)
    scenario = SCENARIOS[sys.argv[1]]
    main(f"e2e_tera_master_{sys.argv[1]}", lambda t: scenario(t, Cluster(t)))
