#!/usr/bin/env python3
"""test_tasks.py - the task queue (`reign tasks`) end to end, on a real ZooKeeper.

    test_tasks.py basic | kill_worker | kill_master | kill_worker_guardian | zk_restart |
                  submit_cutoff [mariadb | postgres]

Every task's command appends its id to a file after a short sleep; the tests check that every
submitted task reached exactly one result (the queue lists it done once) and that its command
ran to completion exactly once (its id is in the file once):

  basic        tasks submitted before any worker waits for one; N tasks over M workers and two
               masters all finish once; a failing command's status is reported (submit --wait
               exits with it); status (output that ends in a newline shown as text) and
               list --json and delete; results deleted after
               --retention.
  kill_worker  kill -9 a worker while it runs tasks: its tasks go to the others (the master
               says "from=" the dead worker); its running command dies with it.
  kill_master  kill -9 the leading master while it assigns a burst; the standby takes over,
               recovers, and no task is lost or run twice.
  kill_worker_guardian  kill -9 a worker (20 s session) while two tasks' commands hang, each
               with a child of its own: the worker's guardian kills both commands' groups and
               closes the session, and the master moves both tasks to the other worker at once,
               long before the session could have expired; each runs to completion once, there.
  stop_worker  SIGSTOP a worker (2 s session or lease; also on MariaDB and PostgreSQL) while its
               task's command runs: the command is
               killed by the worker's leash before the session could expire, so before the
               master can give the task to the other worker - its stamps (CLOCK_MONOTONIC,
               every 5 ms) end before the other's command's start; SIGCONT later.
  zk_restart   the (own) ZooKeeper server is stopped and started again mid-run.
  submit_cutoff  submits through reign_tcpproxy while the proxy keeps resetting every
               connection: no submit ever makes two tasks (task names carry the submit's guid).
               Also on MariaDB and PostgreSQL (`test_tasks.py submit_cutoff postgres`).
  faults       on a SQL store only (`test_tasks.py faults sqlite|mariadb|postgres`): many tasks
               (200; 60 on SQLite) through SIGKILLs and SIGSTOPs (longer than the lease) of
               workers and of the leading master: every task done once, its command completed
               once (twice only where a killed or stopped worker's command may have finished
               with its result unrecorded; never only where the leash killed it, the result
               then signal 9).
"""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2elib import check, env_path, log, main, process_runs, wait_for  # noqa: E402
import test_guardian as guardian  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
import sqle  # noqa: E402

# The command each worker runs: payload on stdin; REIGN_TASK_ID from the worker; IDS and DELAY
# from the test.  A constant script: no data is ever put into it.
TASK_SH = ('p=$(cat); sleep "$DELAY"; echo "$REIGN_TASK_ID" >> "$IDS"; '
           'if [ "$p" = fail ]; then echo "failed:$p"; exit 3; fi; echo "out:$p"')


class Queue:
    def __init__(self, t, hosts, session_ms=10000, delay="0.05", uri=None):
        self.t, self.hosts = t, hosts
        self.uri = uri or t.uri(hosts)
        self.name = t.unique("tq")
        self.session_ms = session_ms
        self.ids_path = os.path.join(t.dir, "ids")
        open(self.ids_path, "w").close()
        self.env = {"IDS": self.ids_path, "DELAY": delay}

    def args(self, *rest, uri=None):
        return [self.t.cli, "--uri", uri or self.uri, "--session-timeout", str(self.session_ms),
                "--log-level", "info", "tasks", *rest]

    def master(self, label):
        return self.t.spawn(label, self.args("master", self.name, "--id", label))

    def worker(self, label, concurrency=2, script=TASK_SH):
        return self.t.spawn(label, self.args("worker", self.name, "--id", label, "--concurrency",
                                             str(concurrency), "--", "sh", "-c", script),
                            env=self.env)

    def submit(self, data, wait=False, uri=None, timeout=60):
        extra = ["--wait"] if wait else []
        r = subprocess.run(self.args("submit", self.name, *extra, data, uri=uri),
                           capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.decode(), r.stderr.decode()

    def submit_many(self, n, prefix="p", parallel=8):
        """Submits n tasks, `parallel` at a time; returns their ids."""
        ids, lock = [], threading.Lock()

        def one(i):
            rc, out, err = self.submit(f"{prefix}{i}")
            check(rc == 0, f"submit {prefix}{i} failed ({rc}): {err.strip()}")
            with lock:
                ids.append(out.split()[0])

        for start in range(0, n, parallel):
            threads = [threading.Thread(target=one, args=(i,))
                       for i in range(start, min(n, start + parallel))]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        check(len(ids) == n and len(set(ids)) == n, f"{len(set(ids))} distinct ids for {n} submits")
        return ids

    def listing(self):
        rc, out, err = self.t.reign(["--uri", self.uri, "tasks", "list", self.name, "--json"])
        check(rc == 0, f"tasks list failed ({rc}): {err.strip()}")
        return json.loads(out)

    def wait_done(self, ids, timeout=120):
        want = set(ids)

        def all_done():
            tasks = self.listing()
            names = [x["task"] for x in tasks]
            check(len(names) == len(set(names)), "a task listed twice")
            done = {x["task"] for x in tasks if x["state"] == "done"}
            return want <= done

        wait_for(all_done, f"{len(want)} tasks done", timeout=timeout, interval=0.3)
        return {x["task"]: x for x in self.listing()}

    def ran(self):
        with open(self.ids_path) as f:
            return collections.Counter(line.strip() for line in f if line.strip())


def check_once(q, ids, allowed_twice=(), unrecorded=None, leashed=()):
    """Every id has one result, and its command completed once (or at most twice for ids in
    allowed_twice: a command whose worker was killed after it appended its id but before the
    result was recorded; or at most once more per run that no worker recorded: unrecorded, a
    Counter by id; or never for ids in leashed, whose result must then be signal 9)."""
    tasks = q.wait_done(ids)
    for i in ids:
        check(tasks[i]["state"] == "done", f"{i} not done")
    for i in leashed:
        check(tasks[i]["signal"] == 9, f"{i}, killed by the leash, recorded {tasks[i]}")
    ran = q.ran()
    missing = [i for i in ids if ran[i] == 0 and i not in leashed]
    check(not missing, f"{len(missing)} task(s) never completed: {missing[:5]}")
    unrecorded = unrecorded or collections.Counter()
    twice = [i for i in ids
             if ran[i] > 1 + max(unrecorded[i], 1 if i in allowed_twice else 0)]
    check(not twice, f"task(s) run more than once: {twice[:5]}")
    extra = set(ran) - set(ids) - set(tasks)
    check(not extra, f"ids of unknown tasks ran: {sorted(extra)[:5]}")
    log(f"{len(ids)} tasks: each done once, each command completed "
        f"{'once' if not allowed_twice and not unrecorded else 'once (or again where allowed)'}")
    return tasks


def lines_of(proc, word):
    return [ln.split() for ln in proc.lines() if ln.startswith(word + " ")]


def basic(t):
    q = Queue(t, t.shared_hosts())
    m1, m2 = q.master("m1"), q.master("m2")
    wait_for(lambda: any(ln.startswith("recovered") for p in (m1, m2) for ln in p.lines()),
             "a master recovered")
    early = q.submit_many(5, prefix="early")
    time.sleep(0.5)
    check(all(x["state"] == "pending" for x in q.listing()), "tasks assigned with no worker")
    workers = [q.worker(f"w{i}") for i in range(3)]
    later = q.submit_many(35)
    tasks = check_once(q, early + later)
    used = {tasks[i]["worker"] for i in early + later}
    log(f"workers used: {sorted(used)}")
    check(len(used) >= 2, f"only {used} ran tasks (least-loaded should spread them)")

    rc, out, err = q.submit("fail", wait=True)
    check(rc == 3, f"submit --wait of a failing task exited {rc}, not 3: {err.strip()}")
    fid = out.split()[0]
    check("failed:fail" in out, f"the failing task's output missing: {out!r}")
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "status", q.name, fid, "--json"])
    check(rc == 0, f"status failed: {err.strip()}")
    st = json.loads(out)
    check(st["state"] == "done" and st["exit"] == 3 and st["signal"] == 0,
          f"status of the failing task: {st}")
    rc, out, err = q.submit("hello", wait=True)
    check(rc == 0 and "out:hello" in out, f"submit --wait hello: {rc} {out!r} {err.strip()}")
    hid = out.split()[0]
    # What `echo` wrote is text, not base64: without its newline on the line, exact in JSON.
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "status", q.name, hid])
    check(rc == 0 and out.rstrip("\n").endswith(" output=out:hello"),
          f"status of the hello task: {rc} {out!r} {err.strip()}")
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "status", q.name, hid, "--json"])
    check(rc == 0 and json.loads(out).get("output") == "out:hello\n",
          f"status --json of the hello task: {rc} {out!r} {err.strip()}")
    # The payload from stdin; a payload larger than a pipe holds (written as CMD reads it) and
    # an output larger than --max-output (cut to it, CMD not blocked).
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "submit", q.name, "--wait", "-"],
                           stdin=b"from-stdin")
    check(rc == 0 and "out:from-stdin" in out, f"submit --wait -: {rc} {out!r} {err.strip()}")
    big = "x" * 300000
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "submit", q.name, "--wait", "-"],
                           stdin=big.encode())
    check(rc == 0, f"a 300 kB payload: {rc} {err.strip()}")
    result = out.split("\n", 1)[1]
    check(len(result) == 65536 and result.startswith("out:xxx"),
          f"a 300 kB output was not cut to 65536 bytes: {len(result)}")
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "delete", q.name, hid])
    check(rc == 0, f"delete failed: {err.strip()}")
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "status", q.name, hid])
    check(rc == 1, f"status after delete exited {rc}")
    rc, out, err = t.reign(["--uri", q.uri, "tasks", "status", q.name, "nonsense"])
    check(rc == 1 and "illegal task id" in err, f"a bad task id: {rc} {err.strip()}")
    # Bad input: one line naming what was wrong, exit 1 (2 for usage), nothing changed.
    for args, code, words in (
            (["tasks", "submit", "bad/queue", "x"], 1, "illegal queue name"),
            (["tasks", "worker", q.name, "--", "true"], 2, "missing --id"),
            (["tasks", "worker", q.name, "--id", "w9", "--", "/nonexistent/cmd"], 1,
             "not found"),
            (["tasks", "worker", q.name, "--id", "w9"], 2, "missing the command"),
            (["tasks", "worker", q.name, "--id", "w9", "--prefetch", "0", "--", "true"], 2,
             "--prefetch"),
            (["tasks", "worker", q.name, "--id", "w9", "--concurrency", "4", "--prefetch", "2",
              "--", "true"], 2, "below --concurrency"),
            (["tasks", "worker", q.name, "--id", "w9", "--prefetch", "40001", "--", "true"], 2,
             "--prefetch"),
            (["tasks", "worker", q.name, "--id", "w9", "--prefetch", "x", "--", "true"], 2,
             "--prefetch"),
            (["tasks", "worker", q.name, "--id", "w9", "--prefetch", "-1", "--", "true"], 2,
             "--prefetch"),
            (["tasks", "worker", q.name, "--id", "w9", "--prefetch"], 2, "needs a value"),
            (["tasks", "frob", q.name], 2, "unknown tasks subcommand")):
        rc, out, err = t.reign(["--uri", q.uri, *args])
        check(rc == code and words in err, f"reign {' '.join(args)}: {rc} {err.strip()!r}")
    sqlite = "sqlite://" + os.path.join(t.dir, "x.db")
    rc, out, err = t.reign(["--uri", sqlite, "tasks", "list", q.name])
    check(rc == 0 and out == "", f"tasks list on SQLite: {rc} {out!r} {err.strip()!r}")
    for p in (m1, m2, *workers):
        check(p.alive(), f"{p.label} died: {p.err()[-500:]}")
        p.send(signal.SIGTERM)
    for p in (m1, m2, *workers):
        check(p.wait() == 0, f"{p.label} exited {p.returncode()}")
    # Each leadership a master printed ends with a demoted line of its term, as `reign
    # campaign`'s do: the one it held when SIGTERM came with reason=resigned.
    for p in (m1, m2):
        ups, downs = lines_of(p, "elected"), lines_of(p, "demoted")
        check(len(ups) == len(downs) and all(u[1] == d[1] for u, d in zip(ups, downs)),
              f"{p.label}: elected and demoted lines do not pair: {p.lines()}")
    check(any(d[-1] == "reason=resigned" for p in (m1, m2) for d in lines_of(p, "demoted")),
          f"no master said it resigned: {m1.lines()} {m2.lines()}")

    # Retention: a master with --retention 1 deletes results older than a second.
    r = Queue(t, t.shared_hosts())
    rm = t.spawn("rm", r.args("master", r.name, "--id", "rm", "--retention", "1"))
    rw = r.worker("rw")
    rc, out, err = r.submit("kept-a-second", wait=True)
    check(rc == 0, f"submit --wait on the retention queue: {rc} {err.strip()}")
    rid = out.split()[0]
    wait_for(lambda: not r.listing(), f"{rid}'s result deleted by the retention sweep")
    log(f"{rid}'s result was deleted after the retention time")
    for p in (rm, rw):
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{p.label} exited {p.returncode()}")


def kill_worker(t):
    q = Queue(t, t.shared_hosts(), session_ms=3000, delay="0.4")
    m = q.master("m1")
    ws = [q.worker(f"w{i}") for i in range(3)]
    wait_for(lambda: all(lines_of(w, "registered") for w in ws), "workers registered")
    ids = q.submit_many(30)
    victim = ws[0]

    def busy():
        runs = {x[1] for x in lines_of(victim, "run")}
        dones = {x[1] for x in lines_of(victim, "done")}
        return len(dones) >= 1 and runs - dones

    wait_for(busy, "w0 running a task after finishing one", interval=0.01)
    running = {x[1] for x in lines_of(victim, "run")} - {x[1] for x in lines_of(victim, "done")}
    victim.kill9()
    victim.wait()
    # What w0 started and did not see recorded, read again after the kill: it may have started
    # more between the look above and the SIGKILL, and a task whose command finished ("done")
    # may have been killed with its result still being written: those may run again elsewhere.
    running = ({x[1] for x in lines_of(victim, "run")} -
               {x[1] for x in lines_of(victim, "recorded")})
    log(f"killed w0 while it ran or recorded {sorted(running)}")
    tasks = check_once(q, ids, allowed_twice=running)
    moved = [ln for ln in m.lines() if " from=w0" in ln]
    check(moved, "no task was moved from the dead worker")
    # A task w0 was seen running may still have been recorded by w0: its result can land
    # between the harness reading w0's lines and the SIGKILL.  Exactly once is what matters.
    late = [i for i in running if tasks[i]["worker"] == "w0"]
    if late:
        log(f"{late} finished by w0 just before the kill")
    log(f"{len(moved)} task(s) moved from w0")


def kill_master(t):
    q = Queue(t, t.shared_hosts(), session_ms=3000, delay="0.02")
    m1 = q.master("m1")
    wait_for(lambda: lines_of(m1, "recovered"), "m1 recovered")
    m2 = q.master("m2")
    ws = [q.worker(f"w{i}", concurrency=2) for i in range(3)]
    wait_for(lambda: all(lines_of(w, "registered") for w in ws), "workers registered")
    ids = []
    th = threading.Thread(target=lambda: ids.extend(q.submit_many(60, parallel=12)))
    th.start()
    wait_for(lambda: len(lines_of(m1, "assigned")) >= 5, "m1 assigning")
    m1.kill9()
    log(f"killed m1 after {len(lines_of(m1, 'assigned'))} assignments")
    th.join()
    check_once(q, ids)
    # The workers may finish what m1 assigned before m2 has taken over and said so.
    wait_for(lambda: lines_of(m2, "recovered"), "m2 to take over")


# kill_worker_guardian's command: on w0 it hangs (waiting for a child of its own) until killed.
HANG_SH = ('p=$(cat); if [ "$REIGN_WORKER_ID" = w0 ]; then sleep 1000 & wait; fi; '
           'echo "$REIGN_TASK_ID" >> "$IDS"; echo "out:$p"')


def kill_worker_guardian(t):
    q = Queue(t, t.shared_hosts(), session_ms=guardian.HOLD_MS)
    m = q.master("m1")
    w0 = q.worker("w0", concurrency=2, script=HANG_SH)
    wait_for(lambda: lines_of(m, "recovered") and lines_of(w0, "registered"), "m1 and w0 up")
    tasks = []
    for data in ("p0", "p1"):
        rc, out, err = q.submit(data)
        check(rc == 0, f"submit failed ({rc}): {err.strip()}")
        tasks.append(out.split()[0])
    runs = wait_for(lambda: (lambda r: r if len(r) == 2 else None)(lines_of(w0, "run")),
                    "w0 running both tasks")
    check(sorted(r[1] for r in runs) == sorted(tasks), f"w0 runs {runs}, not {tasks}")
    groups = [int(r[2].split("=")[1]) for r in runs]  # each command leads a group of its own
    for g in groups:
        members = wait_for(lambda: (lambda m: m if len(m) >= 2 else None)(
            guardian.group_members(g)), "a command and its child")
        t.extra_pids.extend(members)
    w1 = q.worker("w1", concurrency=2, script=HANG_SH)
    wait_for(lambda: lines_of(w1, "registered"), "w1 registered")

    killed_ns = w0.kill9()
    wait_for(lambda: {x[1] for x in lines_of(m, "assigned")
                      if x[2:] == ["worker=w1", "from=w0"]} == set(tasks), "both tasks moved",
             interval=0.005)
    seen_ns = time.monotonic_ns()  # no earlier than the moves: enough for the evidence below
    guardian.the_guardian_line(w0, [f"killed process group {g}" for g in groups] +
                               [guardian.zk_ended(w0)])
    left = [p for g in groups for p in guardian.group_members(g)]
    check(not left, f"w0's tasks still run: {left}")
    guardian.before_expiry(seen_ns, killed_ns, "both tasks seen moved")
    done = check_once(q, tasks)
    check(all(done[x]["worker"] == "w1" for x in tasks), f"done by {done}")
    for p in (m, w1):
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{p.label} exited {p.returncode()}")


# stop_worker's command: stamps the shared file STAMPS every 5 ms (one write per line, O_APPEND)
# until the file RELEASE exists, then exits 0.  Constant: data comes from the environment.
STAMP_PY = r"""
import os, time
fd = os.open(os.environ["STAMPS"], os.O_WRONLY | os.O_APPEND)
who = f"{os.environ['REIGN_WORKER_ID']} {os.environ['REIGN_TASK_ID']} {os.getpid()}"
kind = "start"
while not os.path.exists(os.environ["RELEASE"]):
    os.write(fd, f"{kind} {who} {time.monotonic_ns()}\n".encode())
    kind = "stamp"
    time.sleep(0.005)
"""


def sql_queue(t, store, **kw):
    """A queue on a SQL store (tests/e2e_sql/sqle.py's: its shared server, or a SQLite file in
    the test's directory) with the short lease; and the store."""
    s = sqle.Store(t, store, table=sqle.table_name("tq"))
    return Queue(t, None, uri=s.uri(), session_ms=sqle.LEASE["lease_ms"], **kw), s


def stop_worker(t, store="zk"):
    q = Queue(t, t.shared_hosts(), session_ms=2000) if store == "zk" else sql_queue(t, store)[0]
    stamps, release = os.path.join(t.dir, "stamps"), os.path.join(t.dir, "release")
    open(stamps, "w").close()
    q.env.update(STAMPS=stamps, RELEASE=release)
    script = [sys.executable, "-c", STAMP_PY]

    def jobs():
        """{pid: [worker, task, first ns, last ns]}, from complete lines."""
        with open(stamps) as f:
            data = f.read()
        out = {}
        for line in data[:data.rfind("\n") + 1].splitlines():
            kind, worker, task, pid, ns = line.split()
            if kind == "start":
                out[pid] = [worker, task, int(ns), int(ns)]
            else:
                out[pid][3] = int(ns)
        return out

    def worker(label):
        return t.spawn(label, q.args("worker", q.name, "--id", label, "--concurrency", "1",
                                     "--", *script), env=q.env)

    m = q.master("m1")
    w0 = worker("w0")
    wait_for(lambda: lines_of(w0, "registered"), "w0 registered")
    rc, out, err = q.submit("x")
    check(rc == 0, f"submit failed ({rc}): {err.strip()}")
    task = out.split()[0]
    first = wait_for(lambda: [(p, j) for p, j in jobs().items() if j[0] == "w0"],
                     "w0's command to start")[0]
    pid0 = int(first[0])
    t.extra_pids.append(pid0)
    w1 = worker("w1")
    wait_for(lambda: lines_of(w1, "registered"), "w1 registered")
    w0.send(signal.SIGSTOP)
    moved = wait_for(lambda: [(p, j) for p, j in jobs().items() if j[0] == "w1"],
                     "the task to run on w1")[0]
    t.extra_pids.append(int(moved[0]))
    check(moved[1][1] == task, f"w1 ran {moved[1][1]}, want {task}")
    check(not process_runs(pid0), "w0's command still runs beside w1's")
    j0 = jobs()[first[0]]
    check(j0[3] < moved[1][2], f"w0's command stamped {(j0[3] - moved[1][2]) / 1e6:.1f} ms after "
          "w1's started: the task ran twice at once")
    check([ln for ln in m.lines() if " from=w0" in ln], "the master did not move it from w0")
    log(f"w0's command ended {(moved[1][2] - j0[3]) / 1e6:.0f} ms before w1's started")
    w0.send(signal.SIGCONT)
    open(release, "w").close()
    tasks = q.wait_done([task])
    check(tasks[task]["worker"] == "w1", f"{task}'s result from {tasks[task]['worker']}")
    check(tasks[task]["exit"] == 0, f"{task}: {tasks[task]}")
    for p in (m, w0, w1):
        p.send(signal.SIGTERM)
    for p in (m, w0, w1):
        check(p.wait() == 0, f"{p.label} exited {p.returncode()}")


def zk_restart(t):
    zk = t.zk_servers("zk", 1)
    q = Queue(t, zk.hosts, session_ms=20000, delay="0.1")
    m = q.master("m1")
    ws = [q.worker(f"w{i}") for i in range(2)]
    wait_for(lambda: lines_of(m, "recovered") and all(lines_of(w, "registered") for w in ws),
             "master and workers up")
    ids = q.submit_many(20)
    wait_for(lambda: sum(len(lines_of(w, "recorded")) for w in ws) >= 3, "some tasks done")
    zk.stop_server(1)
    time.sleep(2)
    zk.start_server(1)
    ids += q.submit_many(20, prefix="after")
    check_once(q, ids)
    for p in (m, *ws):
        check(p.alive(), f"{p.label} died across the restart: {p.err()[-500:]}")


def submit_cutoff(t, store="zk"):
    """On ZooKeeper, or on a SQL server (store mariadb or postgres: tests/e2e_sql/sqle.py's
    shared servers), whose submit is one transaction that finds the row of its guid."""
    if store == "zk":
        hosts = t.shared_hosts()
        check("," not in hosts, f"a single server expected, got {hosts}")
        q = Queue(t, hosts)
        period = 0.015
    else:
        s = sqle.Store(t, store, table=sqle.table_name("tq"))
        hosts = f"127.0.0.1:{s.port}"
        q = Queue(t, None, uri=s.uri())
        # A SQL connection needs a few round trips (authentication, the table's check) before
        # its first statement, and PostgreSQL forks a process for it: reset less often, or no
        # submit would get through.
        period = 0.05 if store == "mariadb" else 0.2
    proxy = t.spawn("proxy", [env_path("REIGN_TCPPROXY"), "0", hosts])
    port = int(wait_for(lambda: proxy.lines(), "the proxy's port")[0])
    via = t.uri(f"127.0.0.1:{port}") if store == "zk" else \
        s.uri(base=s.base.replace(f"127.0.0.1:{s.port}/", f"127.0.0.1:{port}/"))
    check(q.submit("first")[0] == 0, "the first submit failed")  # the queue exists
    stop = threading.Event()

    def resets():
        while not stop.is_set():
            time.sleep(period)
            proxy.popen.send_signal(signal.SIGHUP)

    th = threading.Thread(target=resets)
    th.start()
    printed, failed, lost = [], 0, 0
    try:
        for i in range(40):
            rc, out, err = q.submit(f"cut{i}", uri=via, timeout=120)
            if "answer lost" in err:
                lost += 1
            if rc == 0:
                printed.append(out.split()[0])
            else:
                failed += 1
                log(f"submit {i} failed ({rc}): {err.strip()}")
    finally:
        stop.set()
        th.join()
    log(f"{len(printed)} submits through the resetting proxy printed an id, {failed} failed, "
        f"{lost} lost the answer to their create and looked for it")
    check(len(printed) >= 20, "too few submits got through to test anything")
    names = [x["task"] for x in q.listing()]
    guids = collections.Counter(n.split("_")[1] for n in names)
    dup = [g for g, c in guids.items() if c > 1]
    check(not dup, f"a submit created two tasks (guids {dup})")
    check(set(printed) <= set(names), "a printed id is not in the queue")
    check(len(names) <= 1 + len(printed) + failed, f"{len(names)} tasks for {1 + 40} submits")


def faults(t, store):
    lease_s = sqle.LEASE["lease_ms"] / 1000
    q = sql_queue(t, store, delay="0.05")[0]
    n = 60 if store == "sqlite" else 200
    ms = [q.master(f"m{i}") for i in range(2)]
    ws = [q.worker(f"w{i}") for i in range(4)]
    wait_for(lambda: any(lines_of(m, "recovered") for m in ms) and
             all(lines_of(w, "registered") for w in ws), "a master and the workers up")

    def leader():
        """The master that said recovered last without a demoted line after it."""
        for m in ms:
            if m.alive() and len(lines_of(m, "recovered")) > len(lines_of(m, "demoted")):
                return m
        return None

    def done_by(procs):
        return sum(len(lines_of(p, "recorded")) for p in procs)

    ids = []
    th = threading.Thread(target=lambda: ids.extend(q.submit_many(n, parallel=8)))
    th.start()
    wait_for(lambda: done_by(ws) >= n // 10, "some tasks done")
    ws[0].kill9()
    ws[0].wait()
    log("killed w0")
    m = wait_for(leader, "a leading master")
    m.kill9()
    log(f"killed the leading master {m.label}")
    ms.append(q.master("m2"))
    wait_for(lambda: done_by(ws) >= n // 4, "more tasks done")
    ws[1].send(signal.SIGSTOP)
    m = wait_for(leader, "a leading master")
    m.send(signal.SIGSTOP)
    log(f"stopped w1 and the leading master {m.label} for {2 * lease_s:.0f} s")
    time.sleep(2 * lease_s)
    ws[1].send(signal.SIGCONT)
    m.send(signal.SIGCONT)
    ws.append(q.worker("w4"))
    th.join()
    # A command may complete and its result go unrecorded: its worker killed, or stopped (the
    # command, in a group of its own, runs on; the leash kills it, if it has not ended, before
    # the session's bound), or its session lost (on SQLite, a process stopped while it holds the
    # file's write lock stalls every other, and their sessions run out too).  Such a task runs
    # again elsewhere: once more per run that no worker recorded, never more.
    unrecorded = collections.Counter()
    for w in ws:
        unrecorded.update(x[1] for x in lines_of(w, "run"))
        unrecorded.subtract(x[1] for x in lines_of(w, "recorded"))
    # A command the leash killed while its worker's session survived (a pause just long enough:
    # on a loaded machine, renewals late by more than a tenth of the lease) is recorded as
    # killed by signal 9 (docs/tasks.md, "Workers"): done once, its command never completed.
    # Only such a task may lack a completed command: the pid of its run got the leash's SIGKILL.
    leashed = set()
    for w in ws:
        killed = set(re.findall(r"leash: SIGKILL to process group (\d+)", w.err()))
        runs = {x[2][len("pid="):]: x[1] for x in lines_of(w, "run") if len(x) > 2}
        by_signal = {x[1] for x in lines_of(w, "done") if "signal=9" in x}
        by_signal &= {x[1] for x in lines_of(w, "recorded")}  # its result, not another's
        leashed |= {runs[pid] for pid in killed if runs.get(pid) in by_signal}
    tasks = check_once(q, ids, unrecorded=unrecorded, leashed=leashed)
    recorded = collections.Counter(x[1] for w in ws for x in lines_of(w, "recorded"))
    twice = [i for i, c in recorded.items() if c > 1]
    check(not twice, f"task(s) recorded twice: {twice[:5]}")
    log(f"{sum(1 for i in ids if unrecorded[i] > 0)} task(s) ran unrecorded somewhere first, "
        f"{len(leashed)} killed by the leash; done by {sorted({tasks[i]['worker'] for i in ids})}")
    for p in [p for p in ms + ws if p not in (ws[0],)]:
        if p.alive():
            p.send(signal.SIGTERM)
            p.wait()


SCENARIOS = {f.__name__: f for f in (basic, kill_worker, kill_master, kill_worker_guardian,
                                      stop_worker, zk_restart, submit_cutoff, faults)}

# The scenarios that run on a SQL store (a second argument), and on which; faults only there.
# stop_worker not on SQLite: a worker stopped while it holds the file's write lock stalls every
# writer (docs/sql-leases.md), which is not what the scenario is about.
ON_SQL = {"submit_cutoff": ("mariadb", "postgres"), "faults": ("sqlite", "mariadb", "postgres"),
          "stop_worker": ("mariadb", "postgres")}

if __name__ == "__main__":
    store = sys.argv[2] if len(sys.argv) == 3 else "zk"
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in SCENARIOS or \
            (store != "zk" and store not in ON_SQL.get(sys.argv[1], ())) or \
            (store == "zk" and sys.argv[1] == "faults"):
        on_sql = ", ".join(k + " on " + "|".join(v) for k, v in ON_SQL.items())
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(SCENARIOS)} [sqlite|mariadb|postgres: {on_sql}]")
    suffix = "" if store == "zk" else f"_{store}"
    main(f"tasks_{sys.argv[1]}{suffix}", lambda t: SCENARIOS[sys.argv[1]](t, store)
         if store != "zk" else SCENARIOS[sys.argv[1]](t))
