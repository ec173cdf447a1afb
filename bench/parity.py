#!/usr/bin/env python3
"""parity.py - every capability on every store, measured in one run: what membership,
designation and the task queue cost on SQLite, PostgreSQL and MariaDB beside ZooKeeper.

    bench/parity.py [--stores zk,sqlite,postgres,mariadb] [--member-rounds 50]
                    [--designate-rounds 100] [--tasks 2000] [--output docs/benchmarks.md]

Per store, on a throwaway server of its own (scripts/zk.sh, pg.sh, mariadb.sh; SQLite: a file):

* membership (bench/members.c, `members-latency`): a member process joins, until a watcher
  sees it ADDED; the member is killed with SIGKILL, until the watcher sees it REMOVED (its
  guardian removes it).  Both on one CLOCK_MONOTONIC, no harness delay in them.
* designation (bench/designate.c, `designate-latency`): 3 candidates, a random one that does
  not lead is named, from reign_election_designate() until its ELECTED.
* the task queue (bench/tasks_bench.c, `tasks-bench queue-uri`): a master, 1, 4 and 16
  workers and 4 submitting clients, tasks timed from submit to result, the median of 3 runs;
  and on PostgreSQL the floor the queue is held to: what one connection commits per second
  (pgbench, one client, one single-row INSERT per transaction, no prepared statements), in
  the same run.

A store that lacks a capability is reported as such (the tool's own one-line refusal), never
as a number.  The section "Every capability on every store" of docs/benchmarks.md is written
by this script; nothing else in the file changes.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, log  # noqa: E402
from sql_failover import Store  # noqa: E402

ROOT = bl.ROOT
SECTION = "## Every capability on every store"
STORES = ("zk", "sqlite", "postgres", "mariadb")
NAMES = {"zk": "ZooKeeper", "sqlite": "SQLite", "postgres": "PostgreSQL", "mariadb": "MariaDB"}
WORKERS = (1, 4, 16)
TASK_RUNS = 3  # per worker count; the median is reported
# Tasks per run: a run of a few tenths of a second measures its own start (the first round's
# statements prepared, the window filled at once) more than the queue.  MariaDB's queue moves at
# its poll (a few hundred tasks per second): fewer there, so a run stays a few seconds.
TASKS_POLLING = 2000
# SQL stores: a 2 s lease (renew and poll every 400 ms), short enough for a bench's dead host,
# the same on every SQL store; ZooKeeper: 10 s sessions.
SQL_PARAMS = {"lease_ms": "2000"}
ZK_PARAMS = "session_timeout_ms=10000"


def build_dir(args):
    return Path(args.build)


def binary(args, name):
    p = build_dir(args) / "bench" / name
    if not os.access(p, os.X_OK):
        raise BenchError("no %s (build bench/ first: scripts/build.sh build)" % p)
    return str(p)


class ZkStore:
    """The same face as sql_failover.Store, for ZooKeeper."""

    def __init__(self, workdir):
        self.kind = "zk"
        self.zk = bl.ZooKeeper(Path(workdir) / "zk")
        self.version = None

    def start(self):
        self.zk.start()
        self.version = self.zk.fourlw("srvr").splitlines()[0].split(":", 1)[1].split("-")[0].strip()

    def stop(self):
        self.zk.stop()

    def uri(self, label, params):
        return "zk://%s:%d?%s" % (self.zk.host, self.zk.port, ZK_PARAMS)


def run_json(argv, timeout, what):
    """Runs a bench program; its stdout's last line is JSON.  (None, refusal) when the store
    does not support what it measures."""
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        err = r.stderr.strip().splitlines()
        msg = err[-1] if err else "exit %d" % r.returncode
        if "not supported" in r.stderr or "ENOTSUP" in r.stderr:
            return None, msg
        raise BenchError("%s exited %d: %s" % (what, r.returncode, "\n".join(err[-5:])))
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def measure_members(store, args, workdir):
    uri = store.uri("members", SQL_PARAMS)
    out, refused = run_json([binary(args, "members-latency"), "--uri", uri, "--rounds",
                             str(args.member_rounds), "--warmup", "3", "--gap-ms", "50",
                             "--group", "bench.members.%d" % os.getpid()],
                            600, "members-latency")
    return out if out else {"refused": refused}


def measure_designate(store, args, workdir):
    uri = store.uri("designate", SQL_PARAMS)
    out, refused = run_json([binary(args, "designate-latency"), "--uri", uri, "--candidates",
                             "3", "--rounds", str(args.designate_rounds), "--warmup", "5",
                             "--gap-ms", "50", "--name", "bench.designate.%d" % os.getpid()],
                            900, "designate-latency")
    return out if out else {"refused": refused}


def measure_tasks(store, args, workdir):
    """Per worker count, TASK_RUNS runs on queues of their own: the run of the median rate, with
    every run's rate in "runs" (one run of a few thousand tasks moves with the machine)."""
    res = {"tasks_per_run": tasks_per_run(store.kind, args)}
    for w in WORKERS:
        outs = []
        for k in range(TASK_RUNS):
            uri = store.uri("tasks%d_%d" % (w, k), SQL_PARAMS)
            out, refused = run_json([binary(args, "tasks-bench"), "queue-uri", uri,
                                     str(res["tasks_per_run"]), "256", str(w), "32", "4"], 900,
                                    "tasks-bench")
            if refused or out is None:
                return {"refused": refused}
            outs.append(out)
        outs.sort(key=lambda o: o["tasks_per_s"])
        res[str(w)] = dict(outs[len(outs) // 2], runs=[o["tasks_per_s"] for o in outs])
    return res


def tasks_per_run(kind, args):
    return min(args.tasks, TASKS_POLLING) if kind == "mariadb" else args.tasks


def pg_commit_floor(store, workdir):
    """Transactions per second of one connection, each one single-row INSERT (pgbench)."""
    script = Path(workdir) / "insert.sql"
    script.write_text("INSERT INTO bench_floor (v) VALUES ('0123456789');\n")
    uri = store.base_uri
    m = re.match(r"postgres(?:ql)?://([^@/]+)@([^:/]+):(\d+)/([^?]+)", uri)
    if not m:
        raise BenchError("cannot read %s" % uri)
    user, host, port, db = m.groups()
    env = dict(os.environ, PGPASSWORD=(store.dir / "state" / "password").read_text().strip())
    # Made by the user that inserts, as reign's tables are (the server script's `sql` is the
    # superuser's, whose table the user could not write).
    r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port,
                        "-U", user, "-c", "CREATE TABLE IF NOT EXISTS bench_floor "
                        "(id bigserial PRIMARY KEY, v text)", db], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 0:
        raise BenchError("psql: " + r.stderr.strip())
    runs = []
    for _ in range(3):
        r = subprocess.run(["pgbench", "-n", "-c", "1", "-T", "5", "-f", str(script), "-h", host,
                            "-p", port, "-U", user, db], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            raise BenchError("pgbench: " + r.stderr.strip())
        m = re.search(r"tps = ([\d.]+)", r.stdout)
        runs.append(float(m.group(1)))
    return {"runs": runs, "tps": statistics.median(runs)}


def run_store(kind, args, workdir):
    store = ZkStore(workdir) if kind == "zk" else Store(kind, workdir)
    res = {"store": kind}
    try:
        store.start()
        res["version"] = store.version
        log("%s: membership" % kind)
        res["members"] = measure_members(store, args, workdir)
        log("%s: designation" % kind)
        res["designate"] = measure_designate(store, args, workdir)
        if args.tasks:
            log("%s: task queue" % kind)
            res["tasks"] = measure_tasks(store, args, workdir)
            if kind == "postgres":
                res["floor"] = pg_commit_floor(store, workdir)
    finally:
        store.stop()
    return res


# ---- the report ---------------------------------------------------------------------------

def cell(d, key, p):
    if not d or "refused" in d:
        return "-"
    return "%.2f" % d[key][p]


def render(run):
    lines = [SECTION, ""]
    lines.append(
        "What membership, designation and the task queue cost on each store, measured in one "
        "run on one machine, each store on a throwaway server of its own (`scripts/zk.sh`, "
        "`pg.sh`, `mariadb.sh`; SQLite a file).  SQL stores: a 2 s lease (renew and poll every "
        "400 ms); ZooKeeper: 10 s sessions.  Medians and percentiles in ms; a store that lacks "
        "a capability shows `-` and its refusal below.")
    lines += ["", "| store | join p50 | join p90 | death (SIGKILL) p50 | death p90 | "
              "designation p50 | designation p90 | designation p99 |", "|---|---|---|---|---|---|---|---|"]
    refusals = []
    for r in run["stores"]:
        m, d = r.get("members"), r.get("designate")
        dl = d["summary"]["elected_ms"] if d and "refused" not in d else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            NAMES[r["store"]], cell(m, "join_ms", "p50"), cell(m, "join_ms", "p90"),
            cell(m, "death_ms", "p50"), cell(m, "death_ms", "p90"),
            "%.2f" % dl["p50"] if dl else "-", "%.2f" % dl["p90"] if dl else "-",
            "%.2f" % dl["p99"] if dl else "-"))
        for what, v in (("membership", m), ("designation", d)):
            if v and "refused" in v:
                refusals.append("* %s, %s: %s" % (NAMES[r["store"]], what, v["refused"]))
    if any("tasks" in r for r in run["stores"]):
        by_count = {}  # tasks per run -> the stores that ran that many
        for r in run["stores"]:
            if r.get("tasks") and "refused" not in r["tasks"]:
                n = r["tasks"].get("tasks_per_run", run.get("tasks_per_run", 2000))
                by_count.setdefault(n, []).append(NAMES[r["store"]])
        counts = ["{:,}".format(n) + (" tasks" if not i else "") +
                  (" on " + ", ".join(v) if len(by_count) > 1 else "")
                  for i, (n, v) in enumerate(sorted(by_count.items(), reverse=True))]
        lines += ["", "Task queue, tasks per second (submit to result; 4 submitting clients, "
                  "256 in flight, each worker 32 at once; the median of %d run(s) of %s):" %
                  (run.get("task_runs", 1), "; ".join(counts)), "",
                  "| store | " + " | ".join("%d worker%s" % (w, "s" if w > 1 else "")
                                           for w in WORKERS) + " | floor: one connection's "
                  "commits/s | 1 worker vs floor |", "|---" * (len(WORKERS) + 3) + "|"]
        for r in run["stores"]:
            t = r.get("tasks")
            if not t:
                continue
            if "refused" in t:
                refusals.append("* %s, task queue: %s" % (NAMES[r["store"]], t["refused"]))
                continue
            rates = [t[str(w)]["tasks_per_s"] for w in WORKERS]
            floor = r.get("floor", {}).get("tps")
            lines.append("| %s | %s | %s | %s |" % (
                NAMES[r["store"]], " | ".join("%.0f" % x for x in rates),
                "%.0f" % floor if floor else "-",
                "%.0f%%" % (100.0 * rates[0] / floor) if floor else "-"))
    if refusals:
        lines += ["", "Not measured, with the store's own refusal:", ""] + refusals
    for note in run.get("notes", []):  # findings kept in the JSON (--render keeps them)
        lines += ["", note]
    lines += ["", "Command: `%s`.  Machine: %s.  Stores: %s.  reign at %s; %s." % (
        run["command"], run["machine"],
        ", ".join("%s %s" % (NAMES[r["store"]], r.get("version", "?")) for r in run["stores"]),
        run["commit"], run["date"])]
    return "\n".join(lines) + "\n"


def machine():
    m = bl.machine_info("", "")
    return "%s, %s CPUs, %s" % (m.get("cpu", "?"), m.get("nproc", "?"), m.get("os", "?"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", default=",".join(STORES))
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--member-rounds", type=int, default=50)
    ap.add_argument("--designate-rounds", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=10000,
                    help="tasks per run (MariaDB: at most %d); 0: no queue" % TASKS_POLLING)
    ap.add_argument("--workdir")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "parity.json"))
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a saved run")
    args = ap.parse_args(argv)
    if args.render:
        run = json.loads(Path(args.render).read_text())
    else:
        workdir = Path(args.workdir) if args.workdir else Path(
            subprocess.check_output(["mktemp", "-d", "/tmp/parity.XXXX"], text=True).strip())
        t0 = time.monotonic()
        run = {"command": " ".join(["bench/parity.py"] + argv), "machine": machine(),
               "commit": bl.source_state(None),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "stores": [],
               "task_runs": TASK_RUNS, "tasks_per_run": args.tasks}
        for kind in args.stores.split(","):
            run["stores"].append(run_store(kind, args, workdir))
        run["minutes"] = (time.monotonic() - t0) / 60
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n")
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.output != "-":
        bl.write_other_section(args.output, SECTION, render(run))
    else:
        sys.stdout.write(render(run))
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
