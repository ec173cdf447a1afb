#!/usr/bin/python3
"""tasks.py - the task queue's throughput against this machine's raw ZooKeeper write
rate, on a throwaway standalone ZooKeeper (scripts/zk.sh, stopped at the end).

  raw    bench/tasks_bench.c (`tasks-bench raw`): creates of 100-byte nodes through the
         ZooKeeper C client libreign uses, a window of them in flight, on 1 session and on 16
         (the queue writes from several sessions at once, which the server commits together):
         the better of the two medians is the limit, in writes/s.
  queue  `tasks-bench queue`: a master, W workers (1, 4, 16) and 4 submitters, one session each,
         in one process; tasks submitted with a window in flight, each timed from submit until
         its result is read; the workers answer each task at once, so the queue is measured,
         not a command.  Writes per task are counted by the server (zxid before and after).
  ops    `tasks-bench ops`: what one request of each type (create, exists, get, children, a
         multi like the queue's) costs the server, in its CPU time (/proc), against which the
         queue's CPU time per task is set: the server charges by the request, reads too.
  ref    the reference, in the same rounds on the same server: kazoo's LockingQueue
         (bench/ref/kazoo_queue.py, Debian's python3-kazoo), as many consumers as workers and
         as many producers as submitters, the same window, items timed from put to consume.

Each configuration runs several times; the report gives medians, every run's value, and the
ratio to the issue's target: tasks/s >= 50% of (raw writes/s / writes per task).  The machine
is shared: a run far off its siblings is run again (at most twice) and the report says so.

It writes the section "## Task queue throughput" of docs/benchmarks.md with
benchlib's section writer, and leaves the rest of the file alone.  It measures, it never
asserts.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Task queue throughput"
SERVER_JVM = ("-Xms256m", "-Xmx2g", "-XX:+UseSerialGC", "-XX:-UsePerfData",
              "-XX:+ExitOnOutOfMemoryError", "-Djava.net.preferIPv4Stack=true",
              "-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false")
OPS = ("create", "exists", "get", "children", "multi")
KAZOO_QUEUE = Path(__file__).resolve().parent / "ref" / "kazoo_queue.py"
PYTHON = "/usr/bin/python3"  # Debian's, which has python3-kazoo
OP_NAMES = {"create": "create (100 bytes)", "exists": "exists", "get": "get (100 bytes)",
            "children": "children (none)", "multi": "multi: 2 checks + 2 creates"}


def run_bench(args, *argv, timeout=600):
    """One tasks-bench run: its JSON line, with the CPU time it used (client_cpu_s)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([args.binary, *map(str, argv)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise BenchError("tasks-bench %s failed (%d): %s" % (argv[0], r.returncode,
                                                              r.stderr.strip()[-500:]))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["client_cpu_s"] = (ru2.ru_utime - ru.ru_utime) + (ru2.ru_stime - ru.ru_stime)
    return out


def run_ref(args, zk, consumers):
    """One run of the reference (kazoo's LockingQueue), with the server's CPU time per item."""
    t0 = server_cpu_s(zk)
    r = subprocess.run([PYTHON, str(KAZOO_QUEUE), "--connect", zk.connect, "--items",
                        str(args.ref_items), "--window", str(args.window), "--consumers",
                        str(consumers), "--producers", str(args.submitters)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if r.returncode != 0:
        raise BenchError("kazoo_queue.py failed (%d): %s" % (r.returncode,
                                                             r.stderr.strip()[-500:]))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["server_us_per_task"] = (server_cpu_s(zk) - t0) * 1e6 / out["tasks"]
    return out


def steady(take, key, samples, what):
    """The samples of take(); a sample more than 40% off the median of the others is taken
    again (at most twice per configuration): the machine is shared and noisy."""
    samples, rerun = list(samples), 0
    while rerun < 2 and len(samples) >= 3:
        vals = [s[key] for s in samples]
        med = statistics.median(vals)
        worst = max(range(len(vals)), key=lambda i: abs(vals[i] - med))
        if abs(vals[worst] - med) <= 0.4 * med:
            break
        log("%s: %s=%.1f is off the median %.1f; running it again" % (what, key, vals[worst],
                                                                       med))
        samples[worst] = take()
        rerun += 1
    return samples, rerun


def server_cpu_s(zk):
    """The server's CPU time so far (user + system, all its threads), in seconds."""
    pid = int((zk.state_dir / "s1" / "pid").read_text().split()[0])
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_cpu(args, zk, count_key, per_key, *argv):
    """run_bench(args, *argv), with the server's CPU time per request (or task), in us."""
    t0 = server_cpu_s(zk)
    r = run_bench(args, *argv)
    r[per_key] = (server_cpu_s(zk) - t0) * 1e6 / r[count_key]
    return r


def queue_run(args, zk, workers):
    """One queue run, with the server's own count of the requests it received and the packets
    it sent (answers and watch notifications) during it, per task.  The counts include the
    run's setup (sessions, the election, the registrations: a few dozen requests) and pings."""
    before = zk.mntr()
    r = with_cpu(args, zk, "tasks", "server_us_per_task", "queue", zk.connect, args.tasks,
                 args.window, workers, args.concurrency, args.submitters)
    after = zk.mntr()
    for key, name in (("zk_packets_received", "requests_per_task"),
                      ("zk_packets_sent", "packets_sent_per_task")):
        if isinstance(before.get(key), int) and isinstance(after.get(key), int):
            r[name] = (after[key] - before[key]) / r["tasks"]
    return r


def measure(args, zk):
    """Every configuration once per round, `runs` rounds: the raw rate and the queue's are
    measured side by side, so that a slow minute of the shared machine falls on all of them
    rather than on one configuration."""
    def per_request(mode, *argv):
        return with_cpu(args, zk, "writes", "server_us_per_request", mode, zk.connect, *argv)

    takes = [("raw", n, "writes_per_s", "raw on %d session(s)" % n,
              lambda n=n: per_request("raw", args.raw_writes, args.raw_window, n))
             for n in args.raw_sessions]
    takes += [("ops", t, "writes_per_s", "%s requests" % t,
               lambda t=t: per_request("ops", t, args.raw_writes, args.raw_window))
              for t in OPS]
    takes += [("queue", w, "tasks_per_s", "%d workers" % w, lambda w=w: queue_run(args, zk, w))
              for w in args.workers]
    if args.ref_items:
        takes += [("ref", w, "tasks_per_s", "kazoo, %d consumers" % w,
                   lambda w=w: run_ref(args, zk, w)) for w in args.workers]
    got = {(kind, n): [] for kind, n, _, _, _ in takes}
    for i in range(args.runs):
        for kind, n, key, what, take in takes:
            r = take()
            got[(kind, n)].append(r)
            if kind == "raw":
                log("round %d: raw, %d session(s): %.0f writes/s, server %.0f us/write" % (
                    i + 1, n, r[key], r["server_us_per_request"]))
            elif kind == "ops":
                log("round %d: %s: %.0f requests/s, server %.0f us/request" % (
                    i + 1, n, r[key], r["server_us_per_request"]))
            elif kind == "ref":
                log("round %d: kazoo LockingQueue, %d consumers: %.0f items/s, %.2f "
                    "writes/item, p50 %.1f ms" % (i + 1, n, r[key], r["writes_per_task"],
                                                  r["latency_p50_ms"]))
            else:
                log("round %d: %d workers: %.0f tasks/s, %.2f writes/task, %.2f requests/task, "
                    "server %.0f us/task, p50 %.1f ms" % (
                        i + 1, n, r[key], r["writes_per_task"], r.get("requests_per_task", 0),
                        r["server_us_per_task"], r["latency_p50_ms"]))
    out = {"raw": {}, "queue": {}, "ops": {}, "ref": {}}
    for kind, n, key, what, take in takes:
        samples, reruns = steady(take, key, got[(kind, n)], what)
        out[kind][str(n)] = {"samples": samples, "reruns": reruns}
    return out


def summarize(m):
    per = {n: statistics.median(r["writes_per_s"] for r in x["samples"])
           for n, x in m["raw"].items()}
    best = max(per, key=lambda n: per[n])
    raw = per[best]
    s = {"raw_writes_per_s": raw, "raw_sessions": int(best), "raw_by_sessions": per,
         "workers": {}, "ops": {}}
    for t, x in m.get("ops", {}).items():
        s["ops"][t] = {
            "per_s": statistics.median(r["writes_per_s"] for r in x["samples"]),
            "server_us": statistics.median(r["server_us_per_request"] for r in x["samples"])}
    for w, q in m["queue"].items():
        xs = q["samples"]
        tps = statistics.median(x["tasks_per_s"] for x in xs)
        wpt = statistics.median(x["writes_per_task"] for x in xs)
        limit = raw / wpt
        s["workers"][w] = {
            "tasks_per_s": tps, "all": [x["tasks_per_s"] for x in xs], "writes_per_task": wpt,
            "p50_ms": statistics.median(x["latency_p50_ms"] for x in xs),
            "p99_ms": statistics.median(x["latency_p99_ms"] for x in xs),
            "limit_tasks_per_s": limit, "ratio": tps / limit, "reruns": q["reruns"],
            "ratio_one_session": tps / (per["1"] / wpt) if "1" in per else None}
        if all("server_us_per_task" in x for x in xs):
            s["workers"][w]["server_us_per_task"] = statistics.median(
                x["server_us_per_task"] for x in xs)
        if all("client_cpu_s" in x for x in xs):
            s["workers"][w]["client_cpus"] = statistics.median(
                x["client_cpu_s"] / x["seconds"] for x in xs)
        if all("requests_per_task" in x for x in xs):
            s["workers"][w]["requests_per_task"] = statistics.median(
                x["requests_per_task"] for x in xs)
            s["workers"][w]["packets_sent_per_task"] = statistics.median(
                x["packets_sent_per_task"] for x in xs)
    s["ref"] = {}
    for w, q in m.get("ref", {}).items():
        xs = q["samples"]
        tps = statistics.median(x["tasks_per_s"] for x in xs)
        wpt = statistics.median(x["writes_per_task"] for x in xs)
        s["ref"][w] = {
            "tasks_per_s": tps, "all": [x["tasks_per_s"] for x in xs], "writes_per_task": wpt,
            "p50_ms": statistics.median(x["latency_p50_ms"] for x in xs),
            "p99_ms": statistics.median(x["latency_p99_ms"] for x in xs),
            "ratio": tps / (raw / wpt), "reruns": q["reruns"],
            "server_us_per_task": statistics.median(x["server_us_per_task"] for x in xs)}
    return s


def render(run):
    s, m, a = run["summary"], run["machine"], run["args"]
    lines = []
    w = lines.append
    w(SECTION)
    w("")
    w("The limit first: creates of 100-byte nodes through the ZooKeeper C client that libreign "
      "uses (libzookeeper_mt), %d in flight (`bench/tasks_bench.c raw`), medians of %d runs:" % (
          a["raw_window"], a["runs"]))
    w("")
    w("| sessions | writes/s (runs) |")
    w("|---|---|")
    for n in sorted(run["samples"]["raw"], key=int):
        x = run["samples"]["raw"][n]
        w("| %s | %s (%s)%s |" % (
            n, fmt(s["raw_by_sessions"][n], 0),
            ", ".join(fmt(r["writes_per_s"], 0) for r in x["samples"]),
            " (%d rerun)" % x["reruns"] if x["reruns"] else ""))
    w("")
    w("The limit is the better one, **%s writes/s** (%d session(s)): the queue writes from "
      "several sessions at once, which the server commits together." % (
          fmt(s["raw_writes_per_s"], 0), s["raw_sessions"]))
    w("")
    unit = raw_write_us(run)
    if s.get("ops"):
        w("What one request costs the server, by type (`tasks_bench.c ops`: %d requests on one "
          "session, %d in flight; the server's CPU time, all its threads, read from /proc "
          "before and after), medians of %d runs:" % (a["raw_writes"], a["raw_window"],
                                                        a["runs"]))
        w("")
        create = s["ops"].get("create", {}).get("server_us")
        w("| request | requests/s | server CPU per request, us | vs a create |")
        w("|---|---|---|---|")
        for t in OPS:
            if t not in s["ops"]:
                continue
            x = s["ops"][t]
            w("| %s | %s | %s | %s |" % (
                OP_NAMES.get(t, t), fmt(x["per_s"], 0), fmt(x["server_us"], 0),
                fmt(x["server_us"] / create, 2) if create else "–"))
        w("")
        if unit:
            w("One session is the dearest way to send requests; in the limit's runs (%d "
              "sessions) a raw write cost the server %s us, the unit of the queue's column "
              "below." % (s["raw_sessions"], fmt(unit, 0)))
            w("")
    w("Then the queue end to end (`tasks_bench.c queue`): a master, W workers and %d "
      "submitting clients, each on its own session, in one process; %d tasks per run, %d in "
      "flight, each timed "
      "from `reign_tasks_submit()` until `reign_tasks_wait()` returned its result; each worker "
      "runs %d tasks at once (its prefetch is the default, 4 x that) and answers each at "
      "once (no command is run: the queue is measured).  Writes per task are the server's transactions (zxid before and after) "
      "divided by the tasks; requests per task are the server's count of the requests it "
      "received during the run (mntr's zk_packets_received: writes, reads, listings, pings and "
      "the run's setup), packets sent per task its answers and watch notifications.  Target: tasks/s >= 50%% of raw writes/s / writes per "
      "task.  Medians of %d runs, on one server (java -Xmx%s, serial collector).  Every configuration, raw ones included, is run once first "
      "and not counted (the server's JIT compiles each path only after thousands of "
      "requests), and the runs go in rounds - each configuration once per round - so that a "
      "slow minute of the shared machine falls on all of them." % (
          a["submitters"], a["tasks"], a["window"], a["concurrency"], a["runs"],
          a.get("server_heap", "256 MB")))
    w("")
    w("| workers | tasks/s (runs) | writes / task | requests / task | packets sent / task | "
      "server CPU / task, us (in raw writes) | "
      "limit: raw / writes per task | tasks/s vs limit | target (>= 50%) | vs the 1-session "
      "rate | latency p50 / p99, ms |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(s["workers"], key=int):
        x = s["workers"][k]
        cpu = x.get("server_us_per_task")
        w("| %s | **%s** (%s)%s | %s | %s | %s | %s | %s | %s%% | %s | %s | %s / %s |" % (
            k, fmt(x["tasks_per_s"], 0), ", ".join(fmt(v, 0) for v in x["all"]),
            " (%d rerun)" % x["reruns"] if x["reruns"] else "", fmt(x["writes_per_task"], 2),
            fmt(x["requests_per_task"], 2) if "requests_per_task" in x else "–",
            fmt(x["packets_sent_per_task"], 2) if "packets_sent_per_task" in x else "–",
            "–" if cpu is None else "%s (%s)" % (fmt(cpu, 0), fmt(cpu / unit, 2) if unit
                                                 else "–"),
            fmt(x["limit_tasks_per_s"], 0), fmt(100 * x["ratio"], 0),
            "met" if x["ratio"] >= 0.5 else "**not met**",
            "%s%%" % fmt(100 * x["ratio_one_session"], 0) if x.get("ratio_one_session") else "–",
            fmt(x["p50_ms"], 1),
            fmt(x["p99_ms"], 1)))
    w("")
    if s.get("ref"):
        w("The reference, in the same rounds on the same server: kazoo's LockingQueue "
          "(Debian's python3-kazoo; `bench/ref/kazoo_queue.py`), the job queue of the "
          "reference client - %d producer processes putting %d items with %d in flight (put "
          "and not yet consumed), W consumer processes each taking items with `get()` and "
          "`consume()` (a consumer locks an entry with an ephemeral node, reads it, deletes "
          "entry and lock in one transaction); each item timed from its put to its consume.  It "
          "returns no result to the producer, so it does less than reign's queue.  Medians of "
          "%d runs:" % (a["submitters"], a.get("ref_items", 0), a["window"], a["runs"]))
        w("")
        w("| consumers | items/s (runs) | writes / item | server CPU / item, us | limit: raw / "
          "writes per item | items/s vs limit | reign's tasks/s, same W | latency p50 / p99, "
          "ms |")
        w("|---|---|---|---|---|---|---|---|")
        for k in sorted(s["ref"], key=int):
            x = s["ref"][k]
            ours = s["workers"].get(k, {}).get("tasks_per_s")
            w("| %s | %s (%s)%s | %s | %s | %s | %s%% | %s | %s / %s |" % (
                k, fmt(x["tasks_per_s"], 0), ", ".join(fmt(v, 0) for v in x["all"]),
                " (%d rerun)" % x["reruns"] if x["reruns"] else "",
                fmt(x["writes_per_task"], 2), fmt(x["server_us_per_task"], 0),
                fmt(s["raw_writes_per_s"] / x["writes_per_task"], 0), fmt(100 * x["ratio"], 0),
                "%s (%s x)" % (fmt(ours, 0), fmt(ours / x["tasks_per_s"], 1)) if ours else "–",
                fmt(x["p50_ms"], 1), fmt(x["p99_ms"], 1)))
        w("")
    for para in run.get("notes", []):  # about the table's numbers: other runs, before/after
        w(para)
        w("")
    wpt = statistics.median(x["writes_per_task"] for x in s["workers"].values())
    w("%s writes per task (the server's count): the submit's multi (create tasks/T + create "
      "data/<tag>/<guid>, the payload's node), the master's multi (its election node exists + "
      "data/<tag>/<guid> exists + create assign/W/T + delete tasks/T) and the worker's multi "
      "(assign/W/T exists + create status/T + delete assign/W/T + delete data/<tag>/<guid>); "
      "docs/tasks.md says why each part is there.  Latency is mostly queueing: %d tasks are in "
      "flight, so the median is about the window divided by the rate." % (
          fmt(wpt, 2), a["window"]))
    w("")
    reqs = [x["requests_per_task"] for x in s["workers"].values() if "requests_per_task" in x]
    if reqs:
        w("Where the time goes: per task the queue sends the 3 writes and 2 reads - the "
          "worker's read of the payload and the waiting client's read of the result; the "
          "master reads nothing per task, and a waiting client learns that results are there "
          "from one watch on its bucket data/<tag> (the payload nodes of the tasks it "
          "submitted, which the results' multis delete).  The rest (%s to %s requests per "
          "task in all) are listings - of data/<tag> by each waiting client when told of a "
          "change, of tasks/ by the master, of assign/W by each worker when told of a change, "
          "and of assign/W by the master only when its count says W is full - and the run's "
          "setup and pings." % (
              fmt(min(reqs), 2), fmt(max(reqs), 2)))
        w("")
    cpus = [(k, x["server_us_per_task"]) for k, x in s["workers"].items()
            if "server_us_per_task" in x]
    create = s.get("ops", {}).get("create", {}).get("server_us")
    if unit and cpus and create:
        reads = [s["ops"][t]["server_us"] / create for t in ("exists", "get", "children")
                 if t in s["ops"]]
        multi = s["ops"].get("multi", {}).get("server_us")
        busy = [s["workers"][k]["tasks_per_s"] * c / 1e6 for k, c in cpus]
        client = [x["client_cpus"] for x in s["workers"].values() if "client_cpus" in x]
        w("The CPUs are the bottleneck, and the server takes most of them: during the queue "
          "runs it used %s to %s of the machine's %d%s.  And it charges by the request, not by "
          "the write: sent the same way, a read costs it %s to %s of a create%s.  A task costs "
          "the server what %s to %s raw writes cost (the column above): its 3 writes, its 2 "
          "reads and its share of the listings.  That is why the ratio the issue sets (raw "
          "writes/s against writes per task) sits near 50%%, and it moves by several points "
          "with what a request costs the server at the moment (the raw runs and the queue's "
          "are seconds to minutes apart on a shared machine).  To be well above it the queue "
          "must send fewer requests per task that are not writes.  With ZooKeeper 3.8's C "
          "client (no persistent watches, no multi-read) the 2 reads are the floor: the "
          "waiting client must read the result, and the worker a payload the master never "
          "saw." % (
              fmt(min(busy), 2), fmt(max(busy), 2), run["machine"]["nproc"],
              " (the benchmark process, every client's threads, %s to %s)" % (
                  fmt(min(client), 2), fmt(max(client), 2)) if client else "",
              fmt(min(reads), 2), fmt(max(reads), 2),
              ", a multi of two checks and two creates %s" % fmt(multi / create, 2)
              if multi else "",
              fmt(min(c for _, c in cpus) / unit, 1), fmt(max(c for _, c in cpus) / unit, 1)))
        w("")
    w("Command: `%s` (%.1f min).  Machine: %s, %d CPUs, %s, %s, ZooKeeper %s, "
      "libzookeeper-mt %s; commit %s; %s.  The machine is shared with other builds: medians, "
      "and a run far off the others is run again." % (
          run["command"], run["duration_min"], m["cpu"], m["nproc"], m["memory"], m["os"],
          m["zookeeper"], m["libzookeeper"], m["commit"], m["date"]))
    return "\n".join(lines) + "\n"


def raw_write_us(run):
    """The server's CPU time per raw write on the limit's session count (None for runs made
    before it was measured)."""
    raw = run["samples"]["raw"].get(str(run["summary"]["raw_sessions"]), {})
    xs = [r["server_us_per_request"] for r in raw.get("samples", [])
          if "server_us_per_request" in r]
    return statistics.median(xs) if xs else None


def write_section(path, run):
    bl.write_other_section(path, SECTION, render(run))


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Task queue throughput.")
    ap.add_argument("--binary", default=str(ROOT / "build" / "bench" / "tasks-bench"),
                    help="the tasks-bench program (default: build/bench/tasks-bench)")
    ap.add_argument("--workers", default="1,4,16", help="worker counts (default 1,4,16)")
    ap.add_argument("--tasks", type=int, default=3000, help="tasks per run (default 3000)")
    ap.add_argument("--window", type=int, default=256, help="tasks in flight (default 256)")
    ap.add_argument("--concurrency", type=int, default=32,
                    help="tasks per worker at once (default 32)")
    ap.add_argument("--submitters", type=int, default=4,
                    help="submitting clients, sharing the window (default 4)")
    ap.add_argument("--raw-writes", type=int, default=10000, help="creates per raw run")
    ap.add_argument("--raw-window", type=int, default=256, help="raw creates in flight")
    ap.add_argument("--raw-sessions", default="1,16", help="raw sessions (default 1,16)")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (default 3)")
    ap.add_argument("--ref-items", type=int, default=1000,
                    help="items per run of the reference, kazoo's LockingQueue (0: none)")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"),
                    help="the report whose section '%s' is rewritten ('-' for none)" % SECTION)
    ap.add_argument("--json", help="every run's numbers (default: in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a --json file")
    ap.add_argument("--note", action="append", default=[],
                    help="with --render: a paragraph to add (kept in the JSON); repeatable")
    args = ap.parse_args(argv)
    args.workers = [int(x) for x in args.workers.split(",") if x]
    args.raw_sessions = [int(x) for x in args.raw_sessions.split(",") if x]
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender(args, write_section, "section '%s'" % SECTION, notes=args.note)
    if not os.access(args.binary, os.X_OK):
        raise BenchError("no tasks-bench binary (build bench/, or pass --binary)")
    t_start = time.monotonic()
    commit = bl.source_state(args.binary)
    workdir = bl.start_run(args, "reign-tasks-")
    zk = bl.ZooKeeper(workdir / "zk")
    # The runs leave their nodes (every result, every raw create: near a million in a full
    # run), more than the 256 MB heap scripts/zk.sh gives test servers holds; its other flags
    # stay.
    os.environ.setdefault("REIGN_ZK_JAVA_OPTS", " ".join(SERVER_JVM))
    try:
        zk.start()
        bl.warm_server(zk, 5)
        # The server's JIT compiles the paths a run takes only after thousands of requests
        # (the first full queue run on a new server was measured up to 40% slower than the
        # next): one run of every configuration first, not counted.
        log("warm-up: one run of each configuration, not counted")
        for n in args.raw_sessions:
            run_bench(args, "raw", zk.connect, args.raw_writes, args.raw_window, n)
        for t in OPS:
            run_bench(args, "ops", zk.connect, t, args.raw_writes, args.raw_window)
        for w in args.workers:
            run_bench(args, "queue", zk.connect, args.tasks, args.window, w, args.concurrency,
                      args.submitters)
            if args.ref_items:
                run_ref(args, zk, w)
        samples = measure(args, zk)
        zk_version = zk.mntr().get("zk_version", "?").split("-")[0].split(",")[0]
    finally:
        zk.stop()
    heap = [f[4:] for f in os.environ["REIGN_ZK_JAVA_OPTS"].split() if f.startswith("-Xmx")]
    run = {"args": dict({k: getattr(args, k) for k in ("tasks", "window", "concurrency", "runs",
                                                        "submitters", "raw_writes", "raw_window",
                                                        "raw_sessions", "workers",
                                                        "ref_items")},
                        server_heap=heap[-1] if heap else "?"),
           "samples": samples, "summary": summarize(samples),
           "machine": bl.machine_info(zk_version, commit),
           "command": " ".join(["bench/tasks.py"] + argv),
           "duration_min": (time.monotonic() - t_start) / 60.0}
    bl.end_run(run, args, workdir, 0, write_section, t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
