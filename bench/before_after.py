#!/usr/bin/python3
"""before_after.py - the same benchmarks on two revisions of reign, measured in one run, so
that a refactor can be shown to leave behaviour and speed as they were.

For --before and --after (git revisions of this checkout; defaults 6700d4d^, the commit just
before the election tables began, and HEAD) it makes a detached git worktree of each under a
scratch directory, builds it (RelWithDebInfo, as scripts/build.sh, without the tests), and then
runs short versions of four harnesses of bench/ on both builds, interleaved:

  failover        failover.py --impls reign: graceful (SIGTERM) and crash (SIGKILL, with the
                  guardian) failover of `reign campaign`, 3 and 50 candidates
  many elections  many_elections.py: one client joins N elections, as leader and as follower
  designation     designate.py --no-reference: reign_election_designate() to the target's
                  ELECTED (library), and `reign designate` end to end (CLI)
  task queue      tasks.py, no reference: tasks/s end to end with W workers, and the raw
                  ZooKeeper write rate of the bare C client (no reign code: a noise control)

The harnesses are the after revision's bench/, committed (an edit in this checkout while the
run lasts changes nothing), for both builds: one harness measures both.  Each is given that
build's binaries, a JSON file in the scratch directory and `--output -`, so none of their own
sections of docs/benchmarks.md is rewritten.  Each round runs every benchmark on
both builds back to back, the order of the two alternating from round to round (before, after;
after, before; ...), so that a slow minute of the shared machine falls on both alike.  Per
figure the report gives the median over the rounds for each build and after/before.

Before measuring it waits until no process matching --wait-for (a test suite, a CI run) is
left.  A benchmark that fails on one build is reported, and the run goes on.  At the end every
worktree is removed (also on an error or Ctrl-C), every ZooKeeper server under the scratch
directory is stopped (the harnesses stop their own; this checks), and any process still
running a binary of the scratch directory is named and ended.

It writes the section "## Before and after the election tables" of docs/benchmarks.md between
its markers and leaves the rest of the file alone (--render rewrites it from a --json file).
It measures, it never asserts; figures off by more than --flag (default 15%) the worse way are
marked in the table.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log  # noqa: E402

ROOT = bl.ROOT
PYTHON = "/usr/bin/python3"  # the harnesses' own interpreter (Debian's)
# What a run compares: its section of docs/benchmarks.md (between its own markers) and the
# sentence that says what changed between the two revisions.
TOPICS = {
    "tables": {
        "section": "## Before and after the election tables",
        "marks": ("<!-- before-after: written by bench/before_after.py -->",
                  "<!-- /before-after -->"),
        "what": "the refactor of the election code (the ZooKeeper candidate on a table of "
                "states and events, one lifecycle under the recipes, the layout in one header)",
        "before": "the commit before the tables began",
        "merged": "in the comparison, not the tables alone",
    },
    "house": {
        "section": "## Before and after the house by concept",
        "marks": ("<!-- before-after-house: written by bench/before_after.py -->",
                  "<!-- /before-after-house -->"),
        "what": "the move of the code into folders by concept and layers (the recipes in a "
                "folder each, the ZooKeeper candidate, the ZooKeeper backend, reignd's service "
                "and the client each split in files that call only downwards)",
        "before": "the commit before the move began",
        "merged": "in the comparison",
    },
    "history": {
        "section": "## Before and after the election history",
        "marks": ("<!-- before-after-history: written by bench/before_after.py -->",
                  "<!-- /before-after-history -->"),
        "what": "the history of leaderships on ZooKeeper (each claim's multi makes a record "
                "node, the leader writes its end just before it lets go, every tenth of the "
                "bound's terms the new leader prunes)",
        "before": "the commit before the history",
        "merged": "in the comparison",
    },
}
SECTION = TOPICS["tables"]["section"]
MARK_BEGIN, MARK_END = TOPICS["tables"]["marks"]
SIDES = ("before", "after")
BENCHES = ("failover", "many", "designate", "tasks")
TITLE = {"failover": "failover", "many": "many elections", "designate": "designation",
         "tasks": "task queue"}
# What the worktrees' builds must hold (paths under the build directory).
BINARIES = {"reign": "src/cli/reign", "many": "bench/many-elections",
            "designate": "bench/designate-latency", "tasks": "bench/tasks-bench"}
# Environment a measured process must not inherit: a trace costs time, and a guardian path
# would make both builds run one guardian.
DROP_ENV = ("REIGN_TRACE", "REIGN_GUARDIAN_PATH")


def git(*argv, check=True):
    r = subprocess.run(["git", "-C", str(ROOT), *argv], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise BenchError("git %s: %s" % (" ".join(argv), r.stderr.strip()))
    return r.stdout.strip()


def resolve(rev):
    full = git("rev-parse", "--verify", "--quiet", rev + "^{commit}", check=False)
    if not full:
        raise BenchError("--before/--after: '%s' is not a commit of %s" % (rev, ROOT))
    return {"rev": rev, "commit": full, "short": git("rev-parse", "--short", full),
            "subject": git("log", "-1", "--format=%s", full)}


# ---- worktrees and builds -----------------------------------------------------------------------

def add_worktree(path, commit):
    """A detached worktree of `commit` at `path`; one already there at that commit is kept (a
    --workdir run again: its build is then incremental)."""
    if (path / ".git").exists():
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
        if head == commit:
            return
        remove_worktree(path)
    git("worktree", "add", "--detach", str(path), commit)


def remove_worktree(path):
    if (path / ".git").exists():
        r = subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            log("git worktree remove %s: %s" % (path, r.stdout.strip()))
    shutil.rmtree(path, ignore_errors=True)


def build(wt, log_path, jobs):
    """scripts/build.sh's configuration (RelWithDebInfo, Debian's python for the tests' kazoo),
    tests off: what is measured is the library, the CLI and bench/."""
    b = wt / "build"
    conf = ["cmake", "-S", str(wt), "-B", str(b), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            "-DBUILD_TESTING=OFF"]
    if os.access(PYTHON, os.X_OK):
        conf.append("-DPython3_EXECUTABLE=" + PYTHON)
    t0 = time.monotonic()
    with open(log_path, "w") as out:
        for argv in (conf, ["cmake", "--build", str(b), "-j%d" % jobs]):
            out.write("$ %s\n" % " ".join(shlex.quote(a) for a in argv))
            out.flush()
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                raise BenchError("build of %s failed (see %s)" % (wt, log_path))
    bins = {k: str(b / v) for k, v in BINARIES.items()}
    missing = [v for v in bins.values() if not os.access(v, os.X_OK)]
    if missing:
        raise BenchError("build of %s made no %s" % (wt, ", ".join(missing)))
    return bins, time.monotonic() - t0


# ---- processes ----------------------------------------------------------------------------------

def matching(pattern):
    r = subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.PIPE, text=True)
    return sorted(int(p) for p in r.stdout.split() if int(p) != os.getpid())


def cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace").strip()
    except OSError:
        return "?"


def wait_machine(pattern, max_s):
    """Waits until nothing matches `pattern` (another session's test suite or CI run), at most
    max_s; returns what was waited for and how long."""
    t0 = time.monotonic()
    pids = matching(pattern) if pattern else []
    if not pids:
        return {"waited_s": 0.0, "busy": []}
    log("waiting for %d process(es) matching '%s' to end, e.g. %d: %s" % (
        len(pids), pattern, pids[0], cmdline(pids[0])[:120]))
    busy = [cmdline(p)[:120] for p in pids[:3]]
    while pids and time.monotonic() - t0 < max_s:
        time.sleep(10)
        pids = matching(pattern)
    waited = time.monotonic() - t0
    if pids:
        log("still %d process(es) matching '%s' after %.0f s; measuring anyway" % (
            len(pids), pattern, waited))
    else:
        log("the machine is ours after %.0f s" % waited)
    return {"waited_s": waited, "busy": busy, "still_busy": len(pids)}


def ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def ours(scratch):
    """Processes the harnesses started: a binary of the worktrees (a candidate, a guardian),
    or a command line naming the harnesses' scratch directories (a ZooKeeper server's zoo.cfg,
    its watchdog).  Never this process or one of its parents."""
    found, mine = [], ancestors()
    prefix, tmp = str(scratch) + "/", str(scratch / "tmp") + "/"
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in mine:
            continue
        try:
            exe = os.readlink(d / "exe")
        except OSError:
            exe = ""
        line = cmdline(int(d.name))
        if exe.startswith(prefix) or tmp in line:
            found.append((int(d.name), line[:160]))
    return found


def stop_leftovers(scratch, when):
    """Stops what a harness left running under the scratch directory: ZooKeeper servers through
    scripts/zk.sh, then any process of ours by its pid.  Returns what was found."""
    left = ours(scratch)
    if not left:
        return []
    for pid, line in left:
        log("%s: left running: %d %s" % (when, pid, line))
    subprocess.run(["bash", str(ROOT / "scripts" / "zk.sh"), "stop-all-under", str(scratch)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for pid, _ in ours(scratch):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return [line for _, line in left]


# ---- the benchmarks -----------------------------------------------------------------------------

def argv_of(name, bins, json_path, args):
    h = args.harness_dir
    if name == "failover":
        return [str(h / "failover.py"), "--impls", "reign", "--reign", bins["reign"],
                "--counts", args.failover_counts, "--graceful", str(args.graceful),
                "--warmup", str(args.warmup), "--crash", str(args.crash),
                "--warm-s", "2", "--floor-rounds", "100", "--idle-s", "1",
                "--output", "-", "--json", json_path]
    if name == "many":
        return [str(h / "many_elections.py"), "--binary", bins["many"],
                "--counts", args.many_counts, "--runs", str(args.many_runs),
                # ZooKeeper only, no window at rest: what this comparison has always measured
                "--stores", "zk", "--rest-s", "0", "--zk-counts", "",
                "--output", "-", "--json", json_path]
    if name == "designate":
        return [str(h / "designate.py"), "--binary", bins["designate"],
                "--reign", bins["reign"], "--no-reference", "--runs", str(args.designate_runs),
                "--rounds", str(args.designate_rounds), "--warmup", "10",
                "--trace-rounds", "0", "--cli-rounds", str(args.cli_rounds),
                "--cli-warmup", "1", "--output", "-", "--json", json_path]
    return [str(h / "tasks.py"), "--binary", bins["tasks"], "--workers", args.tasks_workers,
            "--tasks", str(args.tasks), "--runs", str(args.tasks_runs), "--ref-items", "0",
            "--raw-writes", str(args.raw_writes), "--raw-sessions", "1",
            "--output", "-", "--json", json_path]


def run_one(name, side, rnd, bins, scratch, args, env):
    """One harness run on one build.  Its numbers, or its failure; never raises BenchError."""
    tag = "%s-%s-%d" % (name, side, rnd)
    json_path = scratch / "runs" / (tag + ".json")
    log_path = scratch / "runs" / (tag + ".log")
    argv = [PYTHON] + argv_of(name, bins, str(json_path), args)
    out = {"bench": name, "side": side, "round": rnd, "log": str(log_path),
           "command": " ".join(shlex.quote(a) for a in argv[1:])}
    t0 = time.monotonic()
    out["load"] = os.getloadavg()[0]
    busy = bool(args.wait_for and matching(args.wait_for))
    with open(log_path, "w") as err:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            rc = None
        except BaseException:
            stop_harness(p)
            raise
        if rc is None:
            stop_harness(p)
            out["error"] = "no result within %d s (--run-timeout)" % args.run_timeout
    out["seconds"] = time.monotonic() - t0
    out["busy"] = busy or bool(args.wait_for and matching(args.wait_for))
    out["leftovers"] = stop_leftovers(scratch, tag)
    if "error" not in out and rc != 0:
        tail = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.strip()]
        out["error"] = "exit %d: %s" % (rc, tail[-1][-200:] if tail else "no output")
    if "error" not in out:
        try:
            run = json.loads(json_path.read_text())
            out["figures"], out["errors"] = FIGURES[name](run)
            if not out["figures"]:
                out["error"] = "it measured nothing%s" % (
                    ": " + "; ".join(out["errors"]) if out["errors"] else "")
            zk = run.get("machine", {}).get("zookeeper") or ""
            out["zookeeper"] = zk.split("-")[0].split(",")[0] or None
        except Exception as e:  # one harness's odd JSON must not end the whole run
            out["error"] = "its JSON (%s) could not be read: %r" % (json_path, e)
    if "error" in out:
        log("%s: FAILED, %s (see %s)" % (tag, out["error"], log_path))
    else:
        log("%s: %.0f s%s" % (tag, out["seconds"], "; " + "; ".join(out["errors"])
                              if out["errors"] else ""))
    return out


def stop_harness(p):
    """SIGTERM to the harness (it unwinds like Ctrl-C and stops its servers), SIGKILL to its
    process group if it does not exit within a minute."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    except OSError:
        pass


# Figures: (bench, key) -> how it is shown.  "lower"/"higher": which way is better;
# "count": a request count, where any change is a change of behaviour.
def fig(figs, key, value, label, unit, better):
    if value is not None:
        figs[key] = {"value": value, "label": label, "unit": unit, "better": better}


def figures_failover(run):
    figs = {}
    errors = ["%s not run: %s" % (k, v) for k, v in (run.get("missing") or {}).items()]
    for res in run["results"]:
        n = res["n"]
        s = bl.summarize(res)
        errors += ["n=%d: %s" % (n, e) for e in res["errors"]]
        if res.get("overlaps"):
            errors.append("n=%d: %d overlaps (two leaders at once)" % (n, res["overlaps"]))
        g, c = s.get("graceful"), s.get("crash")
        if g:
            fig(figs, "n%d.graceful.p50" % n, g["p50"], "%d candidates: graceful, SIGTERM to "
                "elected, p50" % n, "ms", "lower")
            fig(figs, "n%d.graceful.p90" % n, g["p90"], "%d candidates: graceful, p90" % n,
                "ms", "lower")
            fig(figs, "n%d.graceful.requests" % n, g["requests"], "%d candidates: requests per "
                "graceful failover" % n, "", "count")
        if c:
            fig(figs, "n%d.crash.p50" % n, c["p50"], "%d candidates: crash, SIGKILL to elected "
                "(guardian), p50" % n, "ms", "lower")
        rss = (res["phases"].get("graceful") or {}).get("rss") or {}
        if rss.get("vmrss_kb_median"):
            fig(figs, "n%d.rss" % n, rss["vmrss_kb_median"] / 1024.0, "%d candidates: VmRSS per "
                "candidate, median" % n, "MB", "lower")
    floor = (run.get("floor") or {}).get("start")
    if floor:
        fig(figs, "floor.read", floor["read"]["p50"], "bare ZooKeeper read, no client library "
            "(noise control), p50", "ms", "lower")
    return figs, errors


def figures_many(run):
    figs = {}
    for key, x in run["summary"].items():
        n, role = key.split("/")
        what = "ELECTED" if role == "leader" else "READY"
        fig(figs, "%s.%s.ms" % (n, role), x["total_ms"], "N=%s, %s: join to the last %s" % (
            n, role, what), "ms", "lower")
        fig(figs, "%s.%s.requests" % (n, role), x["requests_per_join"], "N=%s, %s: requests per "
            "join" % (n, role), "", "count")
        if role == "leader":
            fig(figs, "%s.leader.hwm" % n, x["hwm_kb"] / 1024.0, "N=%s, leader: peak RSS "
                "(VmHWM)" % n, "MB", "lower")
    return figs, []


def figures_designate(run):
    figs = {}
    lib, cli = run["summary"]["library"], run["summary"]["cli"]
    if lib.get("elected_ms"):
        fig(figs, "lib.p50", lib["elected_ms"]["p50"], "library: designate() call to the "
            "target's ELECTED, p50", "ms", "lower")
        fig(figs, "lib.requests", lib["requests_per_designation"], "library: requests per "
            "designation (pings included, at most %s)" % fmt(lib["pings_max_per_designation"]),
            "", "count")
    chain = (run.get("floor_chain") or {}).get("ms")
    if chain:
        fig(figs, "floor.p50", bl.percentile(chain, 50), "the same chain by the bare C client, "
            "no reign code (noise control), p50", "ms", "lower")
    if cli.get("elected_ms"):
        fig(figs, "cli.p50", cli["elected_ms"]["p50"], "CLI: spawning `reign designate` to the "
            "target's `elected`, p50", "ms", "lower")
    return figs, []


def figures_tasks(run):
    figs = {}
    s = run["summary"]
    for w in sorted(s["workers"], key=int):
        x = s["workers"][w]
        fig(figs, "w%s.tps" % w, x["tasks_per_s"], "%s workers: tasks/s end to end" % w,
            "tasks/s", "higher")
        fig(figs, "w%s.writes" % w, x["writes_per_task"], "%s workers: writes per task" % w, "",
            "count")
        fig(figs, "w%s.p50" % w, x["p50_ms"], "%s workers: task latency p50" % w, "ms", "lower")
    fig(figs, "raw", s["raw_writes_per_s"], "raw creates through the bare C client, 1 session "
        "(no reign code: noise control)", "writes/s", "higher")
    return figs, []


FIGURES = {"failover": figures_failover, "many": figures_many, "designate": figures_designate,
           "tasks": figures_tasks}


# ---- summary and report -------------------------------------------------------------------------

def summarize(runs, benches, flag, count_flag):
    """Per benchmark and figure: each build's values over the rounds, their medians, the ratio
    after/before and whether it moved the worse way by more than `flag` (a time, a rate) or
    `count_flag` (a count of requests or writes: exact, or nearly)."""
    out = []
    for name in benches:
        keys = []
        for r in runs:
            if r["bench"] == name:
                for k in r.get("figures", {}):
                    if k not in keys:
                        keys.append(k)
        for k in keys:
            row = {"bench": name, "key": k}
            for side in SIDES:
                xs = [r["figures"][k] for r in runs
                      if r["bench"] == name and r["side"] == side and k in r.get("figures", {})]
                row[side] = [x["value"] for x in xs]
                row[side + "_median"] = statistics.median(row[side]) if xs else None
                if xs:
                    row.update(label=xs[0]["label"], unit=xs[0]["unit"], better=xs[0]["better"])
            b, a = row["before_median"], row["after_median"]
            row["ratio"] = a / b if a is not None and b else None
            r_ = row["ratio"]
            row["worse"] = r_ is not None and (
                (row["better"] == "count" and r_ > 1 + count_flag) or
                (row["better"] == "lower" and r_ > 1 + flag) or
                (row["better"] == "higher" and r_ < 1 / (1 + flag)))
            out.append(row)
    return out


def num(v, unit):
    if v is None:
        return "–"
    if unit in ("tasks/s", "writes/s"):
        return "%.0f" % v
    if unit in ("ms", "MB") and v >= 100:
        return "%.0f" % v
    if unit in ("ms", "MB") and v >= 10:
        return "%.1f" % v
    return "%.2f" % v


HARNESS_NOTE = {"after": "the after revision's, for both builds",
                "checkout": "this checkout's, for both builds"}


def render(run):
    m, b, a = run["machine"], run["revs"]["before"], run["revs"]["after"]
    t = TOPICS[run["args"].get("topic", "tables")]
    L = [t["marks"][0], t["section"], ""]
    w = L.append
    w("Whether %s left its "
      "behaviour and its speed as they were: short runs of four of `bench/`'s harnesses (%s) "
      "on two builds made in the same run, **before** = `%s` (%s, \"%s\"), %s, "
      "and **after** = `%s` (%s, \"%s\").  Everything merged between the two is "
      "%s." % (
          t["what"], HARNESS_NOTE.get(run["args"].get("harness", "checkout"), "those of `%s`" %
                                      run["args"].get("harness")),
          b["rev"], b["short"], b["subject"], t["before"], a["rev"], a["short"], a["subject"],
          t["merged"]))
    w("")
    ar = run["args"]
    w("Each round runs every benchmark on both builds back to back, the order of the two "
      "alternating from round to round, so that the shared machine's slow minutes fall on both "
      "alike; each figure is the median of its %d rounds per build (the values of each round "
      "in brackets), and after/before is the ratio of those medians.  Sizes: failover with %s "
      "candidates, %d graceful trials (after %d warm-up) and %d crash trials per round; many "
      "elections with N = %s, %d run(s) per round (after the harness's warm-up run); %d "
      "designation run(s) of %d rounds and %d CLI rounds; the task queue with %s worker(s), "
      "%d tasks, %d run(s).  Requests and writes are the server's counts (mntr), where any "
      "change is a change of behaviour; times move with the machine.  Marked **worse** "
      "is a ratio more than %d%% the worse way (%d%% for a count: the designation's include "
      "pings); the noise-control rows measure no reign code and show how much the machine "
      "itself moved between the builds' runs." % (
          ar["rounds"], ar["failover_counts"], ar["graceful"], ar["warmup"], ar["crash"],
          ar["many_counts"], ar["many_runs"], ar["designate_runs"], ar["designate_rounds"],
          ar["cli_rounds"], ar["tasks_workers"], ar["tasks"], ar["tasks_runs"],
          round(ar["flag"] * 100), round(ar.get("count_flag", ar["flag"]) * 100)))
    w("")
    w("| benchmark | figure | before | after | after / before |")
    w("|---|---|---|---|---|")
    for row in run["summary"]:
        if row["before_median"] is None and row["after_median"] is None:
            continue
        unit = row["unit"]
        cell = {}
        for side in SIDES:
            vals = ", ".join(num(v, unit) for v in row[side])
            cell[side] = "%s (%s)" % (num(row[side + "_median"], unit), vals) \
                if row[side] else "–"
        ratio = "%.2f" % row["ratio"] if row["ratio"] is not None else "–"
        if row["worse"]:
            ratio = "**%s worse**" % ratio
        w("| %s | %s%s | %s | %s | %s |" % (TITLE[row["bench"]], row["label"],
                                            ", " + unit if unit else "", cell["before"],
                                            cell["after"], ratio))
    w("")
    failed = [r for r in run["runs"] if "error" in r]
    trouble = [r for r in run["runs"] if r.get("errors") or r.get("leftovers")]
    if failed or trouble:
        w("What did not go as planned:")
        w("")
        for r in failed:
            w("- %s on the %s build, round %d: failed, %s." % (
                TITLE[r["bench"]], r["side"], r["round"], r["error"]))
        for r in trouble:
            for e in r.get("errors") or []:
                w("- %s on the %s build, round %d: %s." % (TITLE[r["bench"]], r["side"],
                                                          r["round"], e))
            if r.get("leftovers"):
                w("- %s on the %s build, round %d: left %d process(es) running, stopped "
                  "afterwards." % (TITLE[r["bench"]], r["side"], r["round"],
                                   len(r["leftovers"])))
        w("")
    worse = [row for row in run["summary"] if row["worse"]]
    if worse:
        w("Worse by more than %d%%: %s." % (round(ar["flag"] * 100), "; ".join(
            "%s, %s (%.2f)" % (TITLE[r["bench"]], r["label"], r["ratio"]) for r in worse)))
    else:
        w("No figure moved the worse way by more than %d%%." % round(ar["flag"] * 100))
    w("")
    for note in run.get("notes") or []:
        w(note)
        w("")
    ld = run.get("loadavg") or {}
    wait = run.get("wait") or {}
    busy = sum(1 for r in run["runs"] if r.get("busy"))
    if busy:
        w("%d of the %d harness runs overlapped another session's test suite or CI run "
          "(`pgrep -f '%s'` found one at their start or end)." % (
              busy, len(run["runs"]), run["args"].get("wait_for")))
        w("")
    w("Command: `%s`; %s, %.1f min (builds %s, measuring %.1f min)%s.  Load average (1 min) "
      "%s at the start of the measuring, %s at its end.  Machine: %s, %d CPUs, %s, %s, "
      "kernel %s; ZooKeeper %s (standalone, `scripts/zk.sh`), libzookeeper-mt %s.  Every "
      "round's figures are in `%s`." % (
          run["command"], m["date"], run["duration_min"],
          ", ".join("%s %.0f s" % (s, run["build_s"][s]) for s in SIDES if s in run["build_s"]),
          run["measure_min"],
          "; it first waited %.0f s for another session's run to end" % wait["waited_s"]
          if wait.get("waited_s", 0) >= 1 else "",
          fmt(ld.get("start"), 2), fmt(ld.get("end"), 2), m["cpu"], m["nproc"], m["memory"],
          m["os"], m["kernel"], m["zookeeper"], m["libzookeeper"], run.get("json_name", "?")))
    w("")
    w(t["marks"][1])
    return "\n".join(L) + "\n"


def write_section(path, run):
    if path == "-":
        sys.stdout.write(render(run))
    else:
        t = TOPICS[run["args"].get("topic", "tables")]
        bl.write_marked_section(path, render(run), t["marks"][0], t["marks"][1])


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description="The benchmarks on two revisions, before and "
                                 "after, measured in one run.")
    ap.add_argument("--before", default="6700d4d^",
                    help="revision before (default 6700d4d^: the commit before the tables)")
    ap.add_argument("--after", default="HEAD", help="revision after (default HEAD)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="before/after pairs of every benchmark (default 3)")
    ap.add_argument("--benches", default=",".join(BENCHES),
                    help="of %s (default: all)" % ",".join(BENCHES))
    ap.add_argument("--failover-counts", default="3,50", help="candidates (default 3,50)")
    ap.add_argument("--graceful", type=int, default=20,
                    help="graceful trials per count and round (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="graceful warm-up trials (default 2)")
    ap.add_argument("--crash", type=int, default=8,
                    help="crash trials per count and round (default 8)")
    ap.add_argument("--many-counts", default="1000,10000",
                    help="many elections: N (default 1000,10000)")
    ap.add_argument("--many-runs", type=int, default=1, help="many elections: runs per N "
                    "and round (default 1)")
    ap.add_argument("--designate-runs", type=int, default=1,
                    help="designation: library runs per round (default 1)")
    ap.add_argument("--designate-rounds", type=int, default=200,
                    help="designation: rounds per library run (default 200)")
    ap.add_argument("--cli-rounds", type=int, default=15,
                    help="designation: `reign designate` rounds (default 15)")
    ap.add_argument("--tasks-workers", default="4", help="task queue: workers (default 4)")
    ap.add_argument("--tasks", type=int, default=2000,
                    help="task queue: tasks per run (default 2000)")
    ap.add_argument("--tasks-runs", type=int, default=2,
                    help="task queue: runs per round (default 2)")
    ap.add_argument("--raw-writes", type=int, default=3000,
                    help="task queue: creates per raw and per-request run (default 3000)")
    ap.add_argument("--flag", type=float, default=0.15,
                    help="mark a figure worse by more than this fraction (default 0.15)")
    ap.add_argument("--count-flag", type=float, default=0.05,
                    help="the same for requests and writes (default 0.05)")
    ap.add_argument("--run-timeout", type=int, default=900,
                    help="seconds one harness run may take before it is stopped (default 900)")
    ap.add_argument("--wait-for", default="ctest|ci/run",
                    help="pgrep -f pattern of other work to wait for before measuring "
                    "(default 'ctest|ci/run'; '' for none)")
    ap.add_argument("--wait-max-s", type=int, default=3600,
                    help="wait at most this long, then measure anyway (default 3600)")
    ap.add_argument("--harness", default="after",
                    help="whose bench/*.py run both builds: 'after' (the after worktree's, "
                    "default), 'checkout' (this checkout's, edits included) or a directory")
    ap.add_argument("--jobs", type=int, default=2, help="build jobs (default 2)")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp); "
                    "worktrees already in it at the right commits are reused")
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch directory and its worktrees")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"),
                    help="the report whose section '%s' is rewritten ('-' for none)" % SECTION)
    ap.add_argument("--topic", choices=sorted(TOPICS), default="tables",
                    help="what the two revisions differ by, and so the section written "
                    "(default tables)")
    ap.add_argument("--json", help="every round's figures (default: in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a --json file")
    ap.add_argument("--note", action="append", default=[],
                    help="with --render: a paragraph to add under the table (kept in the JSON)")
    args = ap.parse_args(argv)
    args.benches = [x for x in args.benches.split(",") if x]
    for b in args.benches:
        if b not in BENCHES:
            ap.error("unknown benchmark '%s'" % b)
    if args.rounds < 1:
        ap.error("--rounds needs at least 1")
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender(args, write_section, "its section", notes=args.note)
    t_start = time.monotonic()
    revs = {"before": resolve(args.before), "after": resolve(args.after)}
    for side in SIDES:
        log("%s: %s %s" % (side, revs[side]["short"], revs[side]["subject"]))
    zk_before = set(matching("zookeeper"))
    scratch = Path(args.workdir or tempfile.mkdtemp(prefix="reign-before-after-")).resolve()
    (scratch / "runs").mkdir(parents=True, exist_ok=True)
    (scratch / "tmp").mkdir(exist_ok=True)
    log("scratch directory %s" % scratch)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env["TMPDIR"] = str(scratch / "tmp")  # the harnesses' own scratch dirs land in ours
    env.pop("REIGN_ZK_JAVA_OPTS", None)  # tasks.py sets its own; the others want zk.sh's
    bins, build_s, runs, failed = {}, {}, [], False
    run, done = None, False
    try:
        for side in SIDES:
            wt = scratch / side
            add_worktree(wt, revs[side]["commit"])
            log("building %s (%s) in %s" % (side, revs[side]["short"], wt))
            bins[side], build_s[side] = build(wt, scratch / ("build-%s.log" % side), args.jobs)
            log("built %s in %.0f s" % (side, build_s[side]))
        args.harness_dir = {"after": scratch / "after" / "bench",
                            "checkout": Path(__file__).resolve().parent}.get(
                                args.harness, Path(args.harness).resolve())
        for f in ("failover.py", "many_elections.py", "designate.py", "tasks.py"):
            if not (args.harness_dir / f).exists():
                raise BenchError("--harness: no %s in %s" % (f, args.harness_dir))
        log("harness: %s" % args.harness_dir)
        wait = wait_machine(args.wait_for, args.wait_max_s)
        t_measure = time.monotonic()
        load = {"start": os.getloadavg()[0]}
        for rnd in range(1, args.rounds + 1):
            order = SIDES if rnd % 2 else SIDES[::-1]
            log("round %d of %d: %s first" % (rnd, args.rounds, order[0]))
            for name in args.benches:
                for side in order:
                    runs.append(run_one(name, side, rnd, bins[side], scratch, args, env))
        load["end"] = os.getloadavg()[0]
        measure_min = (time.monotonic() - t_measure) / 60.0
        zk_version = next((r["zookeeper"] for r in runs if r.get("zookeeper")), "?")
        commits = "before %s, after %s" % (revs["before"]["short"], revs["after"]["short"])
        run = {"command": " ".join(["bench/before_after.py"] + [shlex.quote(a) for a in argv]),
               "revs": revs,
               "args": {k: getattr(args, k) for k in (
                   "rounds", "benches", "failover_counts", "graceful", "warmup", "crash",
                   "many_counts", "many_runs", "designate_runs", "designate_rounds",
                   "cli_rounds", "tasks_workers", "tasks", "tasks_runs", "raw_writes",
                   "flag", "count_flag", "wait_for", "harness", "topic")},
               "runs": runs,
               "summary": summarize(runs, args.benches, args.flag, args.count_flag),
               "machine": bl.machine_info(zk_version, commits), "build_s": build_s,
               "wait": wait, "loadavg": load, "measure_min": measure_min}
        failed = any("error" in r for r in runs)
        done = True
    finally:
        for side in SIDES:
            if not args.keep:
                remove_worktree(scratch / side)
        left = stop_leftovers(scratch, "at the end")
        if not args.keep:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"])
        # pgrep -f zookeeper before and after: a server of this run names the scratch
        # directory; one that does not was started meanwhile by another session.
        new_zk = [p for p in sorted(set(matching("zookeeper")) - zk_before)
                  if str(scratch) + "/" in cmdline(p)]
        foreign = sorted(set(matching("zookeeper")) - zk_before - set(new_zk))
        if new_zk:
            log("ZooKeeper left running by this run: %s" % ", ".join(
                "%d (%s)" % (p, cmdline(p)[:100]) for p in new_zk))
        else:
            log("no ZooKeeper process left by this run (pgrep -f zookeeper)")
        if foreign:
            log("started meanwhile by others (not under %s), left alone: %s" % (
                scratch, ", ".join(str(p) for p in foreign)))
        if not done:
            log("scratch directory kept: %s (each harness run's log is in runs/)" % scratch)
    run["leftovers_at_end"] = left
    run["zookeeper_left"] = [cmdline(p)[:160] for p in new_zk]
    run["duration_min"] = (time.monotonic() - t_start) / 60.0
    json_path = Path(args.json) if args.json else scratch / "before_after.json"
    try:
        run["json_name"] = str(json_path.resolve().relative_to(ROOT))
    except ValueError:
        run["json_name"] = str(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(run, indent=1, default=str) + "\n")
    log("figures in %s" % json_path)
    text = render(run)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_section(args.output, run)
        log("section '%s' of %s written" % (TOPICS[args.topic]["section"], args.output))
    if args.keep or args.workdir or failed or not args.json:
        log("scratch directory kept: %s (each harness run's log is in runs/)" % scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    for row in run["summary"]:
        if row["worse"]:
            log("worse: %s, %s: %s -> %s (%.2f)" % (TITLE[row["bench"]], row["label"],
                                                    num(row["before_median"], row["unit"]),
                                                    num(row["after_median"], row["unit"]),
                                                    row["ratio"]))
    log("done in %.1f min" % run["duration_min"])
    return 1 if failed else 0


if __name__ == "__main__":
    bl.run_cli(main)
