#!/usr/bin/env python3
"""test_slots.py - a checker in the manner of Jepsen's Chronos test, for `reign run --slot`.

    test_slots.py zk|sqlite|postgres|mariadb basic|kill|stop|options|restart

N copies of `reign run NAME --slot KEY -- job.py` (the way N hosts' crontabs would start them)
for M consecutive slots, with faults:

  basic    N = 3 and N = 10 copies per slot, nothing goes wrong; then copies started late for
           every slot: they exit 0 at once, saying who ran it, without standing in the election
  kill     the copy running the job SIGKILLed mid-job (N = 3 and 10): a waiting copy retries
           it; with --at-most-once it is abandoned instead and never runs again
  stop     the copy running the job SIGSTOPped past its lease: its job is killed by the leash
           before anyone else may start, a waiting copy retries it; resumed, the stopped copy
           finds its report refused, waits its turn and exits 0
  options  --retries with a failing job, --retries 0 (the slot fails for good), --no-wait while
           the slot runs, --keep (the record cut to the newest slots), --every with the store's
           clock, --deadline for a copy that comes late
  restart  the store restarted under a running job (servers of the test's own)

Per slot the checker proves, from what the job itself wrote (tests/slots/job.py: an flock per
slot, so overlap is judged by the kernel) and from the record `reign runs --json` shows:
exactly one successful run (none when abandoned or failed for good); no two attempts of a slot
ran at once; attempts are retried only as the options say; the record agrees with what ran
(each started job is an attempt with its owner, term and token; its end as the job saw it;
killed ones lost or stopped).  Exit codes and each copy's outcome line are checked too.
"""
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
import e2elib  # noqa: E402
import sqle  # noqa: E402
from e2elib import Failure, check, log, wait_for  # noqa: E402

STORES = ("zk", "sqlite", "postgres", "mariadb")
SCENARIOS = ("basic", "kill", "stop", "options", "restart")
JOB = os.path.join(HERE, "job.py")


class Env:
    """One store as the scenarios see it: its URI, and copies of reign run on it."""

    def __init__(self, t, store, server=None):
        self.t, self.store = t, store
        if store == "zk":
            hosts = server.hosts if server else t.shared_hosts()
            self.uri = t.uri(hosts, session_timeout_ms=2000)
        else:
            state = server.dir if server else None
            s = sqle.Store(t, store, state_dir=state)
            # Reconnections come quicker while a server of the test's own is away.
            self.uri = s.uri(retry_period_ms=200) if server else s.uri()
        self.events = os.path.join(t.dir, "events")
        self.n = 0

    def copy(self, label, name, args, env=None, job_env=None):
        """One copy of `reign run NAME ARGS -- job.py` (its id is its label)."""
        self.n += 1
        full = dict(job_env or {})
        full.update(env or {})
        cmd = [self.t.cli, "--uri", self.uri, "--log-level", "notice", "run", name,
               "--id", label, *args, "--", sys.executable, JOB, self.t.dir]
        return self.t.spawn(label, cmd, env=full)

    def runs(self, name):
        rc, out, err = self.t.reign(["--uri", self.uri, "runs", name, "--json"])
        check(rc == 0, f"reign runs {name} failed ({rc}): {err.strip()}")
        return {s["slot"]: s for s in json.loads(out)["slots"]}

    def read_events(self):
        try:
            with open(self.events) as f:
                return [line.split() for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def starts(self, name, key):
        return [e for e in self.read_events() if e[0] == "start" and e[1] == f"{name}/{key}"]

    def release(self, name, key):
        open(os.path.join(self.t.dir, f"release-{name}-{key}"), "w").close()


def outcome(proc):
    """The outcome a copy logged ("ran", "already_done", ...), or None."""
    for line in proc.err().splitlines():
        if " outcome=" in line:
            return line.split(" outcome=")[1].split()[0]
    return None


def wait_exit(procs, timeout=e2elib.WAIT):
    deadline = time.monotonic() + timeout
    for p in procs:
        p.wait(max(1.0, deadline - time.monotonic()))
    return [p.returncode() for p in procs]


def check_slot(env, name, key, verdict, attempts=None, retries=2):
    """The checker: what ran (the job's events) against the record, for one slot."""
    record = env.runs(name)
    events = env.read_events()
    overlaps = [e for e in events if e[0] == "overlap"]
    check(not overlaps, f"two attempts ran at once: {overlaps}")
    slot = f"{name}/{key}"
    starts = [e for e in events if e[0] == "start" and e[1] == slot]
    ends = {e[2]: e for e in events if e[0] == "end" and e[1] == slot}
    ok = [e for e in ends.values() if e[4] == "0"]
    rec = record.get(key)
    check(rec is not None, f"slot {key}: no record")
    runs = {str(u["attempt"]): u for u in rec["runs"]}
    log(f"slot {key}: verdict {rec['verdict']}, attempts "
        + ", ".join(f"{u['attempt']}:{u['result']}/{u['code']}@{u['owner']}" for u in rec["runs"]))
    check(rec["verdict"] == verdict, f"slot {key}: verdict {rec['verdict']}, want {verdict}")
    check(len(ok) == (1 if verdict == "succeeded" else 0),
          f"slot {key}: {len(ok)} successful runs, want {1 if verdict == 'succeeded' else 0}")
    check(len(rec["runs"]) <= retries + 1,
          f"slot {key}: {len(rec['runs'])} attempts with --retries {retries}")
    if attempts is not None:
        check(len(rec["runs"]) == attempts, f"slot {key}: {len(rec['runs'])} attempts, "
              f"want {attempts}")
    # Every job that started is an attempt of the record, under its leadership.
    seen = set()
    for _, _, attempt, ident, term, token, _pid, _ns in starts:
        check(attempt not in seen, f"slot {key}: attempt {attempt} started twice")
        seen.add(attempt)
        u = runs.get(attempt)
        check(u is not None, f"slot {key}: attempt {attempt} ran but is not recorded")
        check((u["owner"], str(u["term"]), str(u["token"])) == (ident, term, token),
              f"slot {key}: attempt {attempt} ran as {ident} term {term} token {token}, "
              f"recorded {u}")
        end = ends.get(attempt)
        if end:
            check(u["result"] == "exited" and str(u["code"]) == end[4],
                  f"slot {key}: attempt {attempt} exited {end[4]}, recorded {u}")
        else:
            check(u["result"] in ("lost", "stopped", "killed"),
                  f"slot {key}: attempt {attempt} was killed, recorded {u}")
    # An attempt of the record whose job never started was recorded and then stopped before
    # it could run (the leadership went in between): it must say so.
    for a, u in runs.items():
        if a not in seen:
            check(u["result"] in ("stopped", "lost") and u["code"] == 0,
                  f"slot {key}: attempt {a} recorded as {u} but never ran")
    # Attempts ran one after another, in order.
    order = [int(e[2]) for e in sorted(starts, key=lambda e: int(e[7]))]
    check(order == sorted(order), f"slot {key}: attempts started in order {order}")
    return rec


def check_outcomes(procs, want, label):
    got = sorted(str(outcome(p)) for p in procs)
    check(got == sorted(want), f"{label}: outcomes {got}, want {sorted(want)}")


# ---- scenarios ----------------------------------------------------------------------------

def basic(env, n, m):
    t = env.t
    name = t.unique(f"basic{n}")
    keys = [f"2024-05-{d:02d}" for d in range(1, m + 1)]
    for key in keys:
        procs = [env.copy(f"{key}-c{j}", name, ["--slot", key]) for j in range(n)]
        rcs = wait_exit(procs)
        check(rcs == [0] * n, f"slot {key}: exit codes {rcs}")
        check_outcomes(procs, ["ran"] + ["already_done"] * (n - 1), f"slot {key}")
    for key in keys:
        check_slot(env, name, key, "succeeded", attempts=1)
    # Copies started late: one read, no election, exit 0 saying who ran it.
    late = [env.copy(f"late-{key}-{j}", name, ["--slot", key]) for key in keys for j in range(2)]
    check(wait_exit(late) == [0] * len(late), "late copies' exit codes")
    check_outcomes(late, ["already_done"] * len(late), "late copies")
    for p in late:
        check("already ran: attempt 1" in p.err(), f"{p.label} did not say who ran it")
        check(not p.elected() and "elected" not in p.err(), f"{p.label} stood in the election")
    ran = [e for e in env.read_events() if e[1].startswith(name + "/")]
    check(len(ran) == 2 * m, "late copies ran the job")


def kill_retry(env, n, m):
    """SIGKILL the runner mid-job; a waiting copy retries and succeeds."""
    t = env.t
    name = t.unique(f"kill{n}")
    for i in range(m):
        key = f"k{i}"
        # Attempt 1 runs long (it is killed); the retry is short.
        procs = {}
        for j in range(n):
            label = f"{key}-c{j}"
            procs[label] = env.copy(label, name, ["--slot", key], job_env={"JOB_HOLD": "1"})
        first = wait_for(lambda: env.starts(name, key), f"slot {key}: a job to start")[0]
        runner = procs[first[3]]
        runner.kill9()
        second = wait_for(lambda: env.starts(name, key)[1:], f"slot {key}: the retry")[0]
        check(second[2] == "2", f"slot {key}: retried as attempt {second[2]}")
        env.release(name, key)
        rest = [p for p in procs.values() if p is not runner]
        rcs = wait_exit(rest)
        check(rcs == [0] * len(rest), f"slot {key}: exit codes {rcs}")
        check_outcomes(rest, ["ran"] + ["already_done"] * (len(rest) - 1), f"slot {key}")
        rec = check_slot(env, name, key, "succeeded", attempts=2)
        check(rec["runs"][0]["result"] == "lost", f"slot {key}: attempt 1 {rec['runs'][0]}")


def kill_at_most_once(env, n):
    """SIGKILL the runner mid-job with --at-most-once: the slot is abandoned, never rerun."""
    t = env.t
    name = t.unique(f"amo{n}")
    key = "a0"
    procs = {}
    for j in range(n):
        label = f"{key}-c{j}"
        procs[label] = env.copy(label, name, ["--slot", key, "--at-most-once"],
                                job_env={"JOB_HOLD": "1"})
    first = wait_for(lambda: env.starts(name, key), f"slot {key}: a job to start")[0]
    runner = procs[first[3]]
    runner.kill9()
    rest = [p for p in procs.values() if p is not runner]
    rcs = wait_exit(rest)
    check(rcs == [1] * len(rest), f"slot {key}: exit codes {rcs}, want 1 (abandoned)")
    check_outcomes(rest, ["abandoned"] * len(rest), f"slot {key}")
    for p in rest:
        check("was abandoned" in p.err(), f"{p.label} did not say the slot was abandoned")
    rec = check_slot(env, name, key, "abandoned", attempts=1, retries=0)
    check(rec["runs"][0]["result"] == "lost", f"slot {key}: attempt 1 {rec['runs'][0]}")
    # Late copies, with or without --at-most-once, never run it again.
    late = [env.copy(f"{key}-late{j}", name, ["--slot", key]) for j in range(2)]
    check(wait_exit(late) == [1, 1], "late copies of an abandoned slot")
    check(len(env.starts(name, key)) == 1, "an abandoned slot ran again")


def stop(env, n, m):
    """SIGSTOP the runner past its lease; the leash kills its job; a waiting copy retries."""
    t = env.t
    name = t.unique(f"stop{n}")
    for i in range(m):
        key = f"p{i}"
        procs = {}
        for j in range(n):
            label = f"{key}-c{j}"
            procs[label] = env.copy(label, name, ["--slot", key], job_env={"JOB_HOLD": "1"})
        first = wait_for(lambda: env.starts(name, key), f"slot {key}: a job to start")[0]
        runner = procs[first[3]]
        runner.send(signal.SIGSTOP)
        stopped_at = time.monotonic_ns()
        second = wait_for(lambda: env.starts(name, key)[1:], f"slot {key}: the retry")[0]
        # The retry started after the first job was gone (job.py's flock says so, or it would
        # have written an overlap line), and after the runner was stopped.
        check(int(second[7]) > stopped_at, f"slot {key}: retry before the stop")
        check(second[2] == "2", f"slot {key}: retried as attempt {second[2]}")
        env.release(name, key)
        runner.send(signal.SIGCONT)
        rcs = wait_exit(list(procs.values()))
        check(rcs == [0] * n, f"slot {key}: exit codes {rcs}")
        check("leash: SIGKILL" in runner.err(), f"slot {key}: the leash did not act")
        check_outcomes(procs.values(), ["ran"] + ["already_done"] * (n - 1), f"slot {key}")
        rec = check_slot(env, name, key, "succeeded", attempts=2)
        check(rec["runs"][0]["result"] == "lost", f"slot {key}: attempt 1 {rec['runs'][0]}")


def options(env):
    t = env.t
    # --retries 2 and a job that fails twice: three copies, three attempts, one success.
    name = t.unique("retries")
    procs = [env.copy(f"r-c{j}", name, ["--slot", "r", "--retries", "2"],
                      job_env={"JOB_FAIL": "1,2"}) for j in range(4)]
    rcs = sorted(wait_exit(procs))
    check(rcs == [0, 0, 3, 3], f"--retries 2: exit codes {rcs}")
    check_outcomes(procs, ["ran_failed", "ran_failed", "ran", "already_done"], "--retries 2")
    check_slot(env, name, "r", "succeeded", attempts=3, retries=2)

    # --retries 0 and a failing job: failed for good; the others say so and exit 1.
    name = t.unique("noretry")
    procs = [env.copy(f"f-c{j}", name, ["--slot", "f", "--retries", "0"],
                      job_env={"JOB_FAIL": "1"}) for j in range(3)]
    rcs = sorted(wait_exit(procs))
    check(rcs == [1, 1, 3], f"--retries 0: exit codes {rcs}")
    check_outcomes(procs, ["ran_failed", "gave_up", "gave_up"], "--retries 0")
    check_slot(env, name, "f", "failed", attempts=1, retries=0)

    # --no-wait while the slot runs: exit 0 at once, nothing run.
    name = t.unique("nowait")
    holder = env.copy("w-hold", name, ["--slot", "w"], job_env={"JOB_HOLD": "1"})
    wait_for(lambda: env.starts(name, "w"), "the job of slot w")
    skippers = [env.copy(f"w-skip{j}", name, ["--slot", "w", "--no-wait"]) for j in range(2)]
    check(wait_exit(skippers) == [0, 0], "--no-wait exit codes")
    check_outcomes(skippers, ["skipped", "skipped"], "--no-wait")
    env.release(name, "w")
    check(wait_exit([holder]) == [0], "the holder's exit code")
    check_slot(env, name, "w", "succeeded", attempts=1)

    # --keep 2: the record is cut to the newest slots (ZooKeeper lets it grow a tenth and one
    # more first, so that it need not read every slot's age each time).
    name = t.unique("keep")
    for i in range(5):
        p = env.copy(f"keep-{i}", name, ["--slot", f"k{i}", "--keep", "2"])
        check(wait_exit([p]) == [0], f"--keep: slot k{i}")
    kept = env.runs(name)
    log(f"--keep 2: {sorted(kept)} kept of k0..k4")
    check("k4" in kept and "k3" in kept and "k0" not in kept and len(kept) <= 3,
          f"--keep 2 kept {sorted(kept)}")

    # --every: the slot is the store's clock's day.
    day = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime())
    if time.time() % 86400 < 10 or time.time() % 86400 > 86390:
        log("too close to midnight UTC for --every 1d: skipped")
        return
    name = t.unique("every")
    procs = [env.copy(f"e-c{j}", name, ["--every", "1d"]) for j in range(3)]
    check(wait_exit(procs) == [0, 0, 0], "--every exit codes")
    check_outcomes(procs, ["ran", "already_done", "already_done"], "--every")
    check_slot(env, name, day, "succeeded", attempts=1)

    # --deadline: today's slot began hours ago; a copy that comes now does not start it.
    name = t.unique("late")
    before = len(env.read_events())
    procs = [env.copy(f"d-c{j}", name, ["--every", "1d", "--deadline", "5s"]) for j in range(2)]
    check(wait_exit(procs) == [0, 0], "--deadline exit codes")
    check_outcomes(procs, ["late", "late"], "--deadline")
    check(len(env.read_events()) == before, "a late copy ran the job")
    check(not env.runs(name), "a late copy recorded something")


def restart(env, server, n):
    """The store restarted, crashed, and away for longer than the lease under a running job
    (held until the store is back, so that it cannot finish during the outage: docs/slots.md
    says what happens then)."""
    t = env.t
    name = t.unique("restart")
    for fault in ("restart", "crash", "outage"):
        key = fault
        procs = {}
        for j in range(n):
            label = f"{key}-c{j}"
            procs[label] = env.copy(label, name, ["--slot", key], job_env={"JOB_HOLD": "1"})
        first = wait_for(lambda: env.starts(name, key), f"slot {key}: a job to start")[0]
        runner = procs[first[3]]
        if env.store == "zk":
            server.stop_server(1)
            if fault == "outage":
                wait_for(lambda: "demoted" in runner.err(), f"{runner.label} to demote itself")
            server.start_server(1)
        elif fault == "restart":
            server.do("restart")
        elif fault == "crash":
            server.do("kill-server")
            server.do("start-server")
        else:
            server.do("stop-server")
            try:
                wait_for(lambda: "demoted" in runner.err(), f"{runner.label} to demote itself")
            finally:
                server.do("start-server")
        env.release(name, key)
        rcs = wait_exit(list(procs.values()))
        check(rcs == [0] * n, f"slot {key}: exit codes {rcs}")
        rec = check_slot(env, name, key, "succeeded")
        log(f"slot {key}: {len(rec['runs'])} attempt(s) through the {fault}")
        if fault == "outage":
            check(len(rec["runs"]) == 2, f"slot {key}: the stopped attempt was not retried")


def body(t, store, scenario):
    server = None
    if scenario == "restart":
        if store == "zk":
            server = t.zk_servers("zk", 1)
        elif store == "sqlite":
            raise Failure("a SQLite file has no server to restart")
        else:
            server = sqle.SqlServer(t, store, "server")
    env = Env(t, store, server)
    if scenario == "basic":
        basic(env, 3, 3)
        basic(env, 10, 2)
    elif scenario == "kill":
        kill_retry(env, 3, 2)
        kill_retry(env, 10, 1)
        kill_at_most_once(env, 3)
    elif scenario == "stop":
        stop(env, 3, 2)
    elif scenario == "options":
        options(env)
    else:
        restart(env, server, 3)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in STORES or sys.argv[2] not in SCENARIOS:
        sys.exit(f"usage: test_slots.py {'|'.join(STORES)} {'|'.join(SCENARIOS)}")
    store, scenario = sys.argv[1], sys.argv[2]
    runner = sqle.main if store != "zk" else e2elib.main
    runner(f"slots_{store}_{scenario}", lambda t: body(t, store, scenario))


if __name__ == "__main__":
    main()
