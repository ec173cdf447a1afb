#!/usr/bin/python3
"""many_elections.py - many elections on one session: joining N elections on one
ZooKeeper client, timed, with the server's requests counted and the process's peak memory.

For each N (default 1000 and 10000) and each run (default 3), on a throwaway standalone
ZooKeeper (scripts/zk.sh, stopped at the end):

  leader    bench/many_elections.c (`many-elections`) joins N new elections as the sole
            candidate of each; the time is from its first reign_election_join() until the loop
            turn in which the last one reported ELECTED (the client connects before the clock
            starts);
  follower  a second process joins the same N elections while the first still leads them all;
            its time runs until the last READY (each stands in line behind the leader).

Between samples the harness waits until the server is quiet, and counts the requests each
phase cost with benchlib's request_delta() (mntr's reads and writes, pings excluded, the
session's createSession included).  The peak resident memory is the process's VmHWM once all
its elections were decided.  Every election name is new in every run (the prefix carries the run
and N), so each leader run also creates the elections' directories: the cold case.

It writes the section "## Many elections on one session" of docs/benchmarks.md and
leaves the rest of the file alone (--render rewrites that section from a --json file).  This
measures, it never asserts: the issue's targets are reported next to the numbers, not checked.
"""

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log  # noqa: E402

ROOT = bl.ROOT
SECTION = "## Many elections on one session"
TARGET_MS, TARGET_MB, TARGET_N = 2000, 64, 10000
SESSION_MS = 30000  # few pings: the request counts stay exact


def default_binary():
    for d in ("build", "build-bench"):
        p = ROOT / d / "bench" / "many-elections"
        if os.access(p, os.X_OK):
            return str(p)
    return None


class Proc:
    """One many-elections process; its stdout lines in a queue."""

    def __init__(self, argv, err_path):
        self.err = open(err_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.err, start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def wait_decided(self, timeout_s):
        """The JSON of the `decided` line."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError("no `decided` line within %d s" % timeout_s)
            if line is None:
                raise BenchError("many-elections exited with %s before deciding"
                                 % self.proc.wait())
            if line.startswith("decided "):
                return json.loads(line[len("decided "):])

    def stop(self, timeout_s=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.err.close()
        return rc


def wait_quiet(zk, quiet_s=0.5, timeout_s=60):
    """Waits until the server's read and write counts stop moving for quiet_s."""
    def key():
        m = zk.mntr()
        return (m["zk_cnt_updatelatency"], m["zk_znode_count"], m["zk_watch_count"])
    last, since = key(), time.monotonic()
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        time.sleep(0.1)
        k = key()
        if k != last:
            last, since = k, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
    raise BenchError("the server did not become quiet within %d s" % timeout_s)


def server_cpu_ms(zk):
    """CPU time the ZooKeeper server has used so far (every thread), in ms; None if unknown."""
    try:
        pid = int((zk.state_dir / "s1" / "pid").read_text().split()[0])
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def phase(zk, argv, err_path, n, timeout_s):
    """Starts one process, waits for its decision and for the server to settle.  Returns the
    process (still holding its elections) and its numbers with the requests it cost."""
    before = bl.Sample(zk)
    cpu0 = server_cpu_ms(zk)
    p = Proc(argv, err_path)
    try:
        out = p.wait_decided(timeout_s)
        cpu1 = server_cpu_ms(zk)
        wait_quiet(zk)
        after = bl.Sample(zk)
    except BaseException:
        p.stop()
        raise
    d = bl.request_delta(before, after)
    m0, m1 = before.mntr, after.mntr
    out.update(requests=d["requests"], writes=d["writes"], reads=d["reads"],
               pings=d["pings"], watch_events=d["watch_events"],
               watches=m1["zk_watch_count"] - m0["zk_watch_count"],
               znodes=m1["zk_znode_count"] - m0["zk_znode_count"],
               packets=m1["zk_packets_received"] - m0["zk_packets_received"])
    if cpu0 is not None and cpu1 is not None:
        out["server_cpu_ms"] = cpu1 - cpu0  # from the start of the process to its decision
    for k in ("requests", "writes", "reads", "watches", "znodes"):
        out[k + "_per_join"] = out[k] / float(n)
    return p, out


def one_run(zk, args, workdir, n, run_no, follow):
    uri = "zk://%s?session_timeout_ms=%d" % (zk.connect, SESSION_MS)
    prefix = "bench.many.r%dn%d." % (run_no, n)
    base = [args.binary, "--uri", uri, "--count", str(n), "--prefix", prefix]
    timeout_s = max(60, n // 50)
    leader, lead = phase(zk, base + ["--id", "lead"], workdir / ("lead-%d-%d.err" % (n, run_no)),
                         n, timeout_s)
    res = {"n": n, "run": run_no, "leader": lead}
    try:
        if follow:
            f, fol = phase(zk, base + ["--id", "follow", "--follow"],
                           workdir / ("follow-%d-%d.err" % (n, run_no)), n, timeout_s)
            res["follower"] = fol
            res["follower_rc"] = f.stop()
    finally:
        res["leader_rc"] = leader.stop()
    wait_quiet(zk)
    return res


def median(rows, role, key):
    xs = [r[role][key] for r in rows if role in r and key in r[role]]
    return statistics.median(xs) if xs else None


def summarize(runs):
    out = {}
    for n in sorted({r["n"] for r in runs}):
        rows = [r for r in runs if r["n"] == n]
        for role in ("leader", "follower"):
            if not any(role in r for r in rows):
                continue
            keys = rows[0][role].keys()
            out["%d/%s" % (n, role)] = {k: median(rows, role, k) for k in keys
                                        if isinstance(rows[0][role][k], (int, float))
                                        and not isinstance(rows[0][role][k], bool)}
            out["%d/%s" % (n, role)]["runs"] = sum(1 for r in rows if role in r)
            out["%d/%s" % (n, role)]["total_ms_all"] = [r[role]["total_ms"] for r in rows
                                                        if role in r]
    return out


def render(run):
    s = run["summary"]
    m = run["machine"]
    lines = []
    w = lines.append
    w(SECTION)
    w("")
    w("One process joins N elections on one client (one ZooKeeper session), as the sole "
      "candidate of each, and then a second process joins the same N elections as a follower "
      "while the first leads them all (`bench/many_elections.c`, driven by "
      "`bench/many_elections.py`).  Time: from the first `reign_election_join()` until the loop "
      "turn in which the last election reported ELECTED (leader) or READY (follower); the client "
      "is connected before the clock starts.  Requests: the server's reads and writes during the "
      "phase (mntr, pings excluded, the session's createSession included), per election.  "
      "Memory: the process's peak resident set (VmHWM) once all were decided.  Every run uses new "
      "election names, so the leader also creates each election's directory (the cold case).  "
      "Medians of %d runs; session timeout %d ms requested." % (run["runs"], SESSION_MS))
    w("")
    w("| N | role | time to all decided, ms (runs) | join calls, ms | first / median decided, ms "
      "| requests / join (writes) | watches / join | peak RSS (VmHWM), MB | in `process()`, ms "
      "| loop turns | CPU, ms: client / server |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(s, key=lambda k: (int(k.split("/")[0]), k.split("/")[1])):
        n, role = key.split("/")
        x = s[key]
        w("| %s | %s | **%s** (%s) | %s | %s / %s | %s (%s) | %s | **%s** | %s | %s | %s / %s |" % (
            n, role, fmt(x["total_ms"], 0), ", ".join(fmt(v, 0) for v in x["total_ms_all"]),
            fmt(x["join_ms"], 0), fmt(x["first_ms"], 0), fmt(x["p50_ms"], 0),
            fmt(x["requests_per_join"], 2), fmt(x["writes_per_join"], 2),
            fmt(x["watches_per_join"], 2), fmt(x["hwm_kb"] / 1024.0, 1),
            fmt(x["process_ms"], 0), fmt(x["turns"], 0), fmt(x.get("cpu_ms"), 0),
            fmt(x.get("server_cpu_ms"), 0)))
    w("")
    big = s.get("%d/leader" % TARGET_N)
    if big:
        w("The targets for %d elections: joined in <= %d ms (measured: %s ms, %s), with <= "
          "%d MB resident (measured: %s MB, %s)." % (
              TARGET_N, TARGET_MS, fmt(big["total_ms"], 0),
              "met" if big["total_ms"] <= TARGET_MS else "**not met**", TARGET_MB,
              fmt(big["hwm_kb"] / 1024.0, 1),
              "met" if big["hwm_kb"] / 1024.0 <= TARGET_MB else "**not met**"))
        w("")
    if run.get("findings"):
        w("### Where the time goes")
        w("")
        for para in run["findings"]:
            w(para)
            w("")
    w("Command: `%s` (%.1f min).  Machine: %s, %d CPUs, %s, %s, ZooKeeper %s, "
      "libzookeeper-mt %s; commit %s; %s." % (
          run["command"], run["duration_min"], m["cpu"], m["nproc"], m["memory"], m["os"],
          m["zookeeper"], m["libzookeeper"], m["commit"], m["date"]))
    return "\n".join(lines) + "\n"


def write_section(path, run):
    """Replaces (or appends) this harness's section of the report; the rest stays."""
    bl.write_other_section(path, SECTION, render(run))


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Many elections on one session.")
    ap.add_argument("--binary", default=default_binary(),
                    help="the many-elections program (default: build/bench/many-elections)")
    ap.add_argument("--counts", default="1000,10000", help="election counts (default 1000,10000)")
    ap.add_argument("--runs", type=int, default=3, help="runs per count (default 3)")
    ap.add_argument("--no-follow", action="store_true", help="leaders only")
    ap.add_argument("--findings", help="a text file of paragraphs (blank-line separated) for "
                    "the section's 'Where the time goes'; kept in the JSON")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"),
                    help="the report whose section '%s' is rewritten ('-' for none)" % SECTION)
    ap.add_argument("--json", help="every run's numbers (default: in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a --json file")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per run")
    args = ap.parse_args(argv)
    args.counts = [int(c) for c in args.counts.split(",") if c]
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender(args, write_section, "section '%s'" % SECTION,
                           findings=bl.findings_of(args.findings))
    if not args.binary or not os.access(args.binary, os.X_OK):
        raise BenchError("no many-elections binary (build bench/, or pass --binary)")
    t_start = time.monotonic()
    commit = bl.source_state(args.binary)
    workdir = bl.start_run(args, "reign-many-")
    zk = bl.ZooKeeper(workdir / "zk")
    runs, errors = [], 0
    try:
        zk.start()
        bl.warm_server(zk, 5)
        log("warm-up: one run of 1000 elections, not counted")
        one_run(zk, args, workdir, 1000, 0, not args.no_follow)
        for n in args.counts:
            for i in range(1, args.runs + 1):
                r = one_run(zk, args, workdir, n, i, not args.no_follow)
                runs.append(r)
                log("N=%d run %d: leader %.0f ms, %.2f requests/join, %.1f MB peak%s" % (
                    n, i, r["leader"]["total_ms"], r["leader"]["requests_per_join"],
                    r["leader"]["hwm_kb"] / 1024.0,
                    "; follower %.0f ms, %.2f requests/join, %.1f MB" % (
                        r["follower"]["total_ms"], r["follower"]["requests_per_join"],
                        r["follower"]["hwm_kb"] / 1024.0) if "follower" in r else ""))
        zk_version = zk.mntr().get("zk_version", "?").split("-")[0].split(",")[0]
    finally:
        zk.stop()
    run = {"runs": args.runs, "counts": args.counts, "samples": runs,
           "summary": summarize(runs), "machine": bl.machine_info(zk_version, commit),
           "command": " ".join(["bench/many_elections.py"] + argv),
           "duration_min": (time.monotonic() - t_start) / 60.0,
           "findings": bl.findings_of(args.findings)}
    bl.end_run(run, args, workdir, errors, write_section, t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
