#!/usr/bin/python3
"""designate.py - designation latency: from an operator's command until the named
candidate's elected callback, through the library and through the CLI, with the ZooKeeper
requests a designation costs.

On a throwaway standalone ZooKeeper (scripts/zk.sh, stopped at the end), with N candidates
(default 3) and 30 s sessions (few pings, so requests count exactly):

  library   bench/designate.c (`designate-latency`): N candidate clients and an operator client
            in one process, each its own session.  Per round it picks a candidate that does not
            lead, takes t0, calls reign_election_designate() and turns every client's loop until
            the target's ELECTED; the request (done callback), the old leader's DEMOTED and the
            target's ELECTED are timed from t0 with CLOCK_MONOTONIC in that process.  Several
            runs (new election each), the server's requests counted around each run's rounds
            (benchlib's request_delta(): mntr's reads and writes, pings excluded) and divided
            by the rounds.
  CLI       N `reign campaign` processes (benchlib's Fleet); per round t0 =
            time.monotonic_ns() right before spawning `reign designate NAME ID`, latency = the
            target's `elected` line's monotonic_ns - t0 (the same clock), and the time until the
            designate process exited.  The server is quiet before and after each round, and the
            round's requests are counted (the designate process's own session included).
  reference neither Curator's LeaderLatch nor kazoo's Election can name a leader.  The nearest
            figure is a graceful handoff (the leader resigns, the next candidate is elected),
            which failover.py measures: its run_config() (benchlib) is run here with N
            candidates, graceful trials only, for reign, Curator and kazoo, and shown next to the
            designation as an analogue, not as the same operation.

It writes the section "## Designation latency" of docs/benchmarks.md and leaves the
rest of the file alone (--render rewrites that section from a --json file).  This measures, it
never asserts: the target (p50 <= 2 ms) is reported next to the numbers, not checked.

  floor     bench/handoff_floor.c's `designate` chain (`handoff-floor-mt ... designate`): the
            same requests and watches made by bare C client code on libzookeeper_mt, three
            sessions in one process (operator, leader, target), the same gap between rounds:
            how long this server and client library need for a designation with nothing of
            reign's around it.
"""

import argparse
import json
import os
import queue
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
import many_elections as me  # noqa: E402  (Proc, wait_quiet)
from benchlib import BenchError, fmt, log, percentile  # noqa: E402

ROOT = bl.ROOT
SECTION = "## Designation latency"
TARGET_P50_MS = 2.0
SESSION_MS = 30000
DESIGNATED_RE = re.compile(r"^designated (\S+) term=(\d+) token=(\d+) \(was (\S+) term=(\d+)\)$")


def default_binary():
    for d in ("build", "build-bench"):
        p = ROOT / d / "bench" / "designate-latency"
        if os.access(p, os.X_OK):
            return str(p)
    return None


def stats(xs):
    """Nearest-rank p50/p90/p99 and the max of xs (ms), and how many."""
    if not xs:
        return None
    return {"n": len(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
            "p99": percentile(xs, 99), "max": max(xs)}


# ---- the library: bench/designate.c -------------------------------------------------------------

def wait_line(p, word, timeout_s):
    """The rest of the next stdout line of `p` (many_elections.Proc) that starts with `word`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = p.lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise BenchError("designate-latency: no `%s` line within %d s" % (word, timeout_s))
        if line is None:
            raise BenchError("designate-latency exited with %s before `%s` (see %s)"
                             % (p.proc.wait(), word, p.err.name))
        if line.startswith(word + " "):
            return line[len(word) + 1:]


def floor_run(zk, args):
    """The bare client's designation chain (bench/handoff_floor.c), args.rounds rounds."""
    if not args.floor_binary or not os.access(args.floor_binary, os.X_OK):
        log("no handoff-floor-mt (build bench/): the bare client's chain is not measured")
        return None
    me.wait_quiet(zk)
    out = subprocess.run([args.floor_binary, zk.connect, str(args.rounds), str(args.gap_ms),
                          "designate"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise BenchError("handoff-floor-mt designate exited %d: %s" % (out.returncode,
                                                                      out.stderr.strip()))
    return json.loads(out.stdout)


def library_run(zk, args, workdir, run_no):
    uri = "zk://%s?session_timeout_ms=%d" % (zk.connect, SESSION_MS)
    rounds = args.rounds + args.warmup
    argv = [args.binary, "--uri", uri, "--candidates", str(args.candidates),
            "--rounds", str(args.rounds), "--warmup", str(args.warmup),
            "--gap-ms", str(args.gap_ms), "--seed", str(run_no),
            "--name", "bench.designate.lib.%d.%d" % (os.getpid(), run_no), "--pause"]
    # --pause: it stands, says `ready`, starts on SIGUSR1, says `result`, resigns on SIGTERM.
    p = me.Proc(argv, workdir / ("lib-%d.err" % run_no))
    try:
        wait_line(p, "ready", 60)
        me.wait_quiet(zk)
        before = bl.Sample(zk)
        p.proc.send_signal(signal.SIGUSR1)
        out = json.loads(wait_line(p, "result", 30 + rounds))
        me.wait_quiet(zk)
        after = bl.Sample(zk)
    finally:
        rc = p.stop()
    if rc != 0:
        raise BenchError("designate-latency run %d exited %s (see %s)" % (run_no, rc,
                                                                          p.err.name))
    # Not request_delta(): its ping count takes each session's last xid as that session's
    # request count, but libzookeeper numbers xids with one counter per process, so with five
    # sessions in one process every xid moves with every session's requests.  The server's
    # reads + writes are counted as they are; the pings among them are bounded instead (an idle
    # session of the C client pings every third of its timeout).
    reads = after.mntr["zk_cnt_readlatency"] - before.mntr["zk_cnt_readlatency"]
    writes = after.mntr["zk_cnt_updatelatency"] - before.mntr["zk_cnt_updatelatency"]
    window_s = (after.ns - before.ns) / 1e9
    pings_max = (args.candidates + 1) * int(window_s / (SESSION_MS / 3000.0) + 1)
    watches = sum(after.mntr.get(k, 0) - before.mntr.get(k, 0) for k in bl.WATCH_KEYS)
    out.update(run=run_no, requests=reads + writes, writes=writes, reads=reads,
               pings_max=pings_max, watch_events=watches, window_s=window_s,
               requests_per_designation=(reads + writes) / float(rounds),
               pings_max_per_designation=pings_max / float(rounds),
               writes_per_designation=writes / float(rounds),
               watch_events_per_designation=watches / float(rounds))
    return out


# Milestones of a designation in the library's log lines (designate-latency --trace), in order.
MILESTONES = (("heard", "designated (the leader was"),
              ("handing", "handing over to"))


def traced_run(zk, args, workdir):
    """One more library run with --trace (not counted above: logging costs a little), for
    where the time goes: per round, when the request was written, when the target read that it
    is designated, when the leader read the request and handed over, was demoted, and when the
    target was elected, all in ms after the call."""
    uri = "zk://%s?session_timeout_ms=%d" % (zk.connect, SESSION_MS)
    argv = [args.binary, "--uri", uri, "--candidates", str(args.candidates),
            "--rounds", str(args.trace_rounds), "--warmup", str(args.warmup),
            "--gap-ms", str(args.gap_ms), "--seed", "99", "--trace",
            "--name", "bench.designate.trace.%d" % os.getpid()]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60 + 2 * args.trace_rounds)
    (workdir / "trace.err").write_bytes(r.stderr)
    if r.returncode != 0:
        raise BenchError("designate-latency --trace exited %d (see %s)" % (
            r.returncode, workdir / "trace.err"))
    out = json.loads(r.stdout)
    marks = {}
    for line in r.stderr.decode("utf-8", "replace").splitlines():
        f = line.split(" ", 4)
        if len(f) < 5 or f[0] != "trace" or f[1] == "-":
            continue
        for key, text in MILESTONES:
            if text in f[4]:
                marks.setdefault(int(f[1]), {}).setdefault(key, float(f[2]))
    rows = []
    for smp in out["samples"]:
        if smp["warmup"]:
            continue
        m = dict(marks.get(smp["round"], {}))
        m.update(request=smp["request_ms"], demoted=smp["demoted_ms"],
                 elected=smp["elected_ms"])
        rows.append(m)
    return {"rounds": len(rows), "rows": rows,
            "elected_p50": out["summary"]["elected_ms"]["p50"]}


# ---- the CLI: `reign designate` against `reign campaign` processes ----------------------------

def fleet_args(args):
    """What benchlib's Fleet and run_config read from their args."""
    return argparse.Namespace(reign=args.reign, quiet_ms=300, poll_ms=50, verbose=args.verbose,
                              graceful=args.ref_trials, crash=0, warmup=args.ref_warmup,
                              graceful_session_timeout=SESSION_MS, session_timeout=2000,
                              idle_s=1.0)


def cli_round(fleet, args, rng, workdir, i):
    before = fleet.wait_quiet(fleet.n, timeout_s=60)
    old = fleet.leader
    target = rng.choice([c for c in fleet.cands if c is not old])
    old.demoted_ns = None
    argv = [args.reign, "--uri", "zk://" + fleet.zk.connect, "designate", fleet.election,
            target.id]
    exited = []
    t0 = time.monotonic_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)

    def waiter():
        proc.wait()
        exited.append(time.monotonic_ns())

    w = threading.Thread(target=waiter, daemon=True)
    w.start()
    elected = None
    deadline = t0 + 30 * 10**9
    while elected is None or old.demoted_ns is None:
        ev = fleet.next_event(deadline)
        if ev is None:
            proc.kill()
            raise BenchError("CLI round %d: %s not elected (or %s not demoted) within 30 s"
                             % (i, target.id, old.id))
        if ev.kind == "elected" and ev.cand is target and ev.ns >= t0:
            elected = ev
        elif ev.kind == "elected":
            raise BenchError("CLI round %d: %s elected instead of %s" % (i, ev.cand.id, target.id))
    out, err = proc.communicate(timeout=30)
    w.join(timeout=10)
    m = DESIGNATED_RE.match(out.decode("utf-8", "replace").strip())
    if proc.returncode != 0 or not m or m.group(1) != target.id:
        (workdir / ("cli-designate-%d.err" % i)).write_bytes(err)
        raise BenchError("CLI round %d: `reign designate` exited %s, printed %r" % (
            i, proc.returncode, out))
    after = fleet.wait_quiet(fleet.n, timeout_s=60)
    d = bl.request_delta(before, after)
    return {"round": i, "from": old.id, "target": target.id, "term": int(m.group(2)),
            "elected_ms": (elected.ns - t0) / 1e6,
            "exit_ms": (exited[0] - t0) / 1e6 if exited else None,
            "handoff_ms": (elected.ns - old.demoted_ns) / 1e6,
            "demoted_ms": (old.demoted_ns - t0) / 1e6,
            "requests": d["requests"], "writes": d["writes"], "reads": d["reads"],
            "watch_events": d["watch_events"], "departed_requests": d["departed_requests"]}


def spawn_cost(args, n=30):
    """p50 of starting and reaping `reign --version`, ms: the share of the CLI rows that is
    only a process starting (exec, the dynamic loader, exit)."""
    xs = []
    for _ in range(n):
        t0 = time.monotonic_ns()
        subprocess.run([args.reign, "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        xs.append((time.monotonic_ns() - t0) / 1e6)
    return percentile(xs, 50)


def cli_phase(zk, args, workdir):
    fa = fleet_args(args)
    impl = bl.Impl("reign", fa, workdir)
    impl.prepare()
    if impl.reason_missing:
        raise BenchError(impl.reason_missing)
    fleet = bl.Fleet(impl, zk, args.candidates, SESSION_MS, fa,
                     workdir / "cli")
    fleet.election = "bench.designate.cli.%d" % os.getpid()
    rng = random.Random(1)
    rows = []
    try:
        fleet.start()
        for i in range(args.cli_warmup + args.cli_rounds):
            r = cli_round(fleet, args, rng, workdir, i)
            r["warmup"] = i < args.cli_warmup
            rows.append(r)
            if args.verbose:
                log("  CLI #%d %s -> %s: elected %.2f ms, exit %.2f ms, %.1f requests" % (
                    i, r["from"], r["target"], r["elected_ms"], r["exit_ms"], r["requests"]))
    finally:
        fleet.stop()
    return rows


# ---- the analogue: failover.py's graceful handoff ---------------------------------------------

def reference_phase(zk, args, workdir):
    fa = fleet_args(args)
    out, missing = {}, {}
    for name in args.ref_impls:
        impl = bl.Impl(name, fa, workdir)
        impl.prepare()
        if impl.reason_missing:
            missing[name] = impl.reason_missing
            log("reference: skipping %s: %s" % (name, impl.reason_missing))
            continue
        res = bl.run_config(impl, zk, args.candidates, fa, workdir)
        out[name] = {"summary": bl.summarize(res).get("graceful"), "errors": res["errors"],
                     "trials": res["graceful"], "overlaps": res["overlaps"],
                     "clock_violations": res["clock_violations"]}
    return out, missing


# ---- summary and report -------------------------------------------------------------------------

def summarize(run):
    lib = [s for r in run["library"] for s in r["samples"] if not s["warmup"]]
    cli = [r for r in run["cli"] if not r["warmup"]]
    s = {"library": {k: stats([x[k] for x in lib])
                     for k in ("request_ms", "demoted_ms", "elected_ms")}}
    s["library"]["handoff_ms"] = stats([x["elected_ms"] - x["demoted_ms"] for x in lib])
    s["library"]["run_p50s"] = [r["summary"]["elected_ms"]["p50"] for r in run["library"]]
    for k in ("requests_per_designation", "writes_per_designation",
              "watch_events_per_designation", "pings_max_per_designation"):
        s["library"][k] = statistics.median(r[k] for r in run["library"])
    s["cli"] = {k: stats([x[k] for x in cli if x[k] is not None])
                for k in ("elected_ms", "exit_ms", "demoted_ms", "handoff_ms")}
    if cli:
        for k in ("requests", "writes", "watch_events"):
            s["cli"][k] = statistics.median(x[k] for x in cli)
        s["cli"]["requests_min"] = min(x["requests"] for x in cli)
        s["cli"]["requests_max"] = max(x["requests"] for x in cli)
    return s


def own_share(lib_p50, floor_p50):
    """What reign adds to the bare client's chain, in words."""
    if lib_p50 is None:
        return "reign's own share is unknown (no library run)"
    d = lib_p50 - floor_p50
    if d <= 0.05 * floor_p50:
        return ("reign's p50 is within %s ms of it (%s): reign adds nothing this machine can "
                "measure" % (fmt(abs(d)), "below" if d < 0 else "above"))
    return "reign adds %s ms (%.0f%% of its p50)" % (fmt(d), 100.0 * d / lib_p50)


def met(v):
    return "met" if v is not None and v <= TARGET_P50_MS else "**not met**"


def row(w, path, frm, to, st, extra="", bold=False):
    if not st:
        w("| %s | %s | %s | not run | | | | | %s |" % (path, frm, to, extra))
        return
    p50 = fmt(st["p50"])
    w("| %s | %s | %s | %d | %s | %s | %s | %s | %s |" % (
        path, frm, to, st["n"], "**%s**" % p50 if bold else p50, fmt(st["p90"]),
        fmt(st["p99"]), fmt(st["max"]), extra))


def render_reference(w, run):
    ref = run.get("reference") or {}
    if not ref and not run.get("reference_missing"):
        w("The graceful-handoff analogue was not run with this run (`--no-reference`); see the "
          "failover benchmark's section above for it.")
        w("")
        return
    w("| implementation | trials | SIGTERM to elected: p50 / p90 / max, ms | old leader's "
      "demoted to new elected: p50, ms | requests per handoff (writes) |")
    w("|---|---|---|---|---|")
    for name in run["args"]["ref_impls"]:
        x = ref.get(name)
        if not x or not x["summary"]:
            why = (run.get("reference_missing") or {}).get(name) or "; ".join(
                (x or {}).get("errors") or ["not run"])
            w("| %s | not run: %s | | | |" % (bl.LABEL[name], why))
            continue
        g = x["summary"]
        w("| %s | %d | %s / %s / %s | %s | %s (%s) |" % (
            bl.LABEL[name], g["trials"], fmt(g["p50"]), fmt(g["p90"]), fmt(g["max"]),
            fmt(g["handoff_p50"]), fmt(g["requests"], 1), fmt(g["writes"], 1)))
    w("")


STEPS = (("request", "the operator's request is written (done callback)"),
         ("heard", "the target read that it is designated (\"designated (the leader was\")"),
         ("handing", "the leader read the request (\"handing over to\")"),
         ("demoted", "the leader's DEMOTED"),
         ("elected", "the target's ELECTED"))


def render_trace(w, tr):
    if not tr or not tr["rows"]:
        return
    w("One more library run with the library's log lines on (`designate-latency --trace`, %d "
      "rounds, p50 call to ELECTED %s ms): each milestone in ms after the call, and the step "
      "from the milestone before it, over the rounds that logged both (the target and the "
      "leader hear of the request at about the same time, so the step between those two can "
      "be negative)." % (tr["rounds"], fmt(tr["elected_p50"])))
    w("")
    w("| milestone | rounds | p50 after the call, ms | p50 step, ms |")
    w("|---|---|---|---|")
    prev = None
    for key, text in STEPS:
        at = [r[key] for r in tr["rows"] if key in r]
        steps = at if prev is None else [r[key] - r[prev] for r in tr["rows"]
                                          if key in r and prev in r]
        w("| %s | %d | %s | %s |" % (text, len(at), fmt(percentile(at, 50)),
                                     fmt(percentile(steps, 50))))
        prev = key
    w("")


def render(run):
    s, m, a = run["summary"], run["machine"], run["args"]
    lib, cli = s["library"], s["cli"]
    L = []
    w = L.append
    w(SECTION)
    w("")
    w("An operator names the leader of an election (`reign_election_designate()`, `reign "
      "designate NAME ID`): the operator lists the candidates and reads the term (one round "
      "trip; the target is found by the id tag in its node's name), then one multi tells the "
      "target it is designated and asks the leader, on its behalf, to hand over; the leader "
      "demotes itself (reason handoff) and names the target next in the leader node, and the "
      "target takes the leader node over with the next term.  Timed here "
      "from the command until the "
      "new leader's elected callback, with %d candidates, each its own ZooKeeper session (30 s "
      "sessions), on a throwaway standalone server; the target is a random candidate that does "
      "not lead (so targets come from every place in the line)." % a["candidates"])
    w("")
    w("- **library**: `bench/designate.c` holds the candidates and an operator client in one "
      "process (every client its own session) and turns all their loops; t0 is taken right "
      "before `reign_election_designate()`, and the request (done callback), the old leader's "
      "DEMOTED and the target's ELECTED `at_ns` are measured from it on the same "
      "CLOCK_MONOTONIC.  %d runs of %d rounds (after %d warm-up rounds each), %d ms between "
      "rounds; percentiles over all %d rounds." % (
          len(run["library"]), a["rounds"], a["warmup"], a["gap_ms"],
          lib["elected_ms"]["n"] if lib["elected_ms"] else 0))
    w("- **CLI end to end**: %d `reign campaign` processes; t0 = `time.monotonic_ns()` right "
      "before spawning `reign designate NAME ID`, the latency is the target's `elected` line's "
      "`monotonic_ns` minus t0, so it includes starting the process (`reign --version` takes "
      "%s ms p50 to start and exit here), its connection (a new session) and its first read of "
      "the election.  %d rounds after %d warm-up, the server quiet before and after each." % (
          a["candidates"], fmt(run.get("spawn_ms")), a["cli_rounds"], a["cli_warmup"]))
    w("")
    w("| path | from | to | rounds | p50, ms | p90 | p99 | max | ZooKeeper requests per "
      "designation |")
    w("|---|---|---|---|---|---|---|---|---|")
    reqs = "%s (%s writes, %s watch events; pings at most %s of them)" % (
        fmt(lib["requests_per_designation"], 1), fmt(lib["writes_per_designation"], 1),
        fmt(lib["watch_events_per_designation"], 1), fmt(lib["pings_max_per_designation"], 2))
    row(w, "library", "`designate()` call", "request written (done callback)",
        lib["request_ms"])
    row(w, "library", "`designate()` call", "old leader's DEMOTED (handoff)", lib["demoted_ms"])
    row(w, "library", "`designate()` call", "**target's ELECTED**", lib["elected_ms"], reqs,
        bold=True)
    row(w, "library", "old leader's DEMOTED", "target's ELECTED", lib["handoff_ms"])
    fl_chain = run.get("floor_chain")
    if fl_chain:
        row(w, "bare C client", "the operator's first request", "the target's takeover answered",
            stats(fl_chain["ms"]), "the same chain, no reign (`bench/handoff_floor.c`)")
    creqs = "–"
    if cli.get("requests") is not None:
        creqs = "%s (%s writes; range %s-%s), the designate process's session included" % (
            fmt(cli["requests"], 1), fmt(cli["writes"], 1), fmt(cli["requests_min"], 0),
            fmt(cli["requests_max"], 0))
    row(w, "CLI", "spawning `reign designate`", "**target's `elected` line**",
        cli["elected_ms"], creqs, bold=True)
    row(w, "CLI", "spawning `reign designate`", "old leader's `demoted` line",
        cli["demoted_ms"])
    row(w, "CLI", "spawning `reign designate`", "`reign designate` exited", cli["exit_ms"])
    row(w, "CLI", "old leader's `demoted`", "target's `elected`", cli["handoff_ms"])
    w("")
    lp50 = lib["elected_ms"]["p50"] if lib["elected_ms"] else None
    cp50 = cli["elected_ms"]["p50"] if cli["elected_ms"] else None
    w("The target: designation p50 <= %.0f ms, command until the new leader's elected "
      "callback.  Library call to ELECTED: p50 %s ms, %s (per run: %s ms).  End to end through "
      "the CLI (process start and connection included): p50 %s ms, %s." % (
          TARGET_P50_MS, fmt(lp50), met(lp50),
          ", ".join(fmt(v) for v in lib["run_p50s"]), fmt(cp50), met(cp50)))
    if fl_chain:
        fp50 = stats(fl_chain["ms"])["p50"]
        w("")
        w("The bare C client needs p50 %s ms for the same chain on the same server in the same "
          "run (%d rounds, %d ms apart): five round trips one after the other (the operator's "
          "read, its multi, the leader's read of its node, its rewrite of the leader node, the "
          "target's takeover) and two watch notifications; %s.  A designation cannot be shorter without one of those steps going, and each "
          "is there for safety: the leader must demote itself and say so in the leader node "
          "before the target may take over, and a watch notification carries no data, so the "
          "leader has to read what was asked of it." % (
              fmt(fp50), len(fl_chain["ms"]), a["gap_ms"], own_share(lp50, fp50)))
    w("")
    w("### The nearest reference: a graceful handoff (not the same operation)")
    w("")
    w("Neither Curator's `LeaderLatch` nor kazoo's `Election` can name a leader: there is no "
      "operation to compare with.  The nearest figure is a graceful handoff, where the leader "
      "resigns and the next candidate in line is elected, which `bench/failover.py` measures.  "
      "Its `run_config()` was run in the same run on the same server with %d candidates, "
      "graceful trials only (%d after %d warm-up, 30 s sessions): SIGTERM to the leader until "
      "the next `elected` line.  A designation does more (the operator's read of the election, "
      "its request, the leader's handover and the target's takeover), and a handoff lets the next in "
      "line win, not a chosen one; read these as the floor a designation builds on." % (
          a["candidates"], a["ref_trials"], a["ref_warmup"]))
    w("")
    render_reference(w, run)
    if run.get("findings") or run.get("trace"):
        w("### Where the time goes")
        w("")
        render_trace(w, run.get("trace"))
        for para in run.get("findings") or []:
            w(para)
            w("")
    fl = run.get("floor") or {}
    if fl.get("start") and fl.get("end"):
        w("The floor: a bare ZooKeeper round trip with no client library (failover.py's "
          "measure_floor(), p50): read %s / write %s ms at the start, %s / %s ms at the end.  "
          "Load average (1 min): %s at the start, %s at the end (a shared 2-core machine; "
          "others were building and testing)." % (
              fmt(fl["start"]["read"]["p50"]), fmt(fl["start"]["write"]["p50"]),
              fmt(fl["end"]["read"]["p50"]), fmt(fl["end"]["write"]["p50"]),
              fmt(run["loadavg"]["start"][0], 1), fmt(run["loadavg"]["end"][0], 1)))
        w("")
    refs = "; references: %s, Curator %s, kazoo %s" % (m["java"], m["curator"], m["kazoo"]) \
        if a["ref_impls"] else ""
    w("Run on %s (%.1f min) with `%s`; every round is in `bench/results/designate.json`.  "
      "Machine: %s (%d CPUs, %s), %s; ZooKeeper %s (standalone, `scripts/zk.sh`), "
      "libzookeeper-mt %s%s.  reign at commit %s." % (
          m["date"], run["duration_min"], run["command"], m["cpu"], m["nproc"], m["memory"],
          m["os"], m["zookeeper"], m["libzookeeper"], refs, m["commit"]))
    return "\n".join(L) + "\n"


def write_section(path, run):
    # docs/benchmarks.md gets this run's section; failover.py's and the others' stay.
    return bl.write_other_section(path, SECTION, render(run))


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Designation latency.")
    ap.add_argument("--binary", default=default_binary(),
                    help="the designate-latency program (default: build/bench/designate-latency)")
    ap.add_argument("--floor-binary", default=str(ROOT / "build" / "bench" / "handoff-floor-mt"),
                    help="bench/handoff_floor.c's program, for the bare client's chain "
                    "(default: build/bench/handoff-floor-mt)")
    ap.add_argument("--candidates", type=int, default=3, help="candidates (default 3)")
    ap.add_argument("--runs", type=int, default=3, help="library runs (default 3)")
    ap.add_argument("--rounds", type=int, default=300, help="rounds per library run (default 300)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="warm-up rounds per library run, not counted (default 20)")
    ap.add_argument("--gap-ms", type=int, default=20,
                    help="pause between library rounds, ms (default 20)")
    ap.add_argument("--trace-rounds", type=int, default=100,
                    help="rounds of the traced library run (0: none; default 100)")
    ap.add_argument("--cli-rounds", type=int, default=40, help="CLI rounds (default 40)")
    ap.add_argument("--cli-warmup", type=int, default=3, help="CLI warm-up rounds (default 3)")
    ap.add_argument("--ref-impls", default=",".join(bl.IMPLS),
                    help="graceful-handoff references, of reign,curator,kazoo (default: all)")
    ap.add_argument("--ref-trials", type=int, default=20,
                    help="graceful trials per reference (default 20)")
    ap.add_argument("--ref-warmup", type=int, default=3,
                    help="graceful warm-up trials per reference (default 3)")
    ap.add_argument("--no-reference", action="store_true", help="skip the references")
    ap.add_argument("--findings", help="a text file of paragraphs (blank-line separated) for "
                    "the section's 'Where the time goes'; kept in the JSON")
    bl.add_run_args(ap, "the report whose section '%s' is rewritten ('-' for none)" % SECTION,
                    "rewrite the section from a --json file")
    args = ap.parse_args(argv)
    args.ref_impls = [] if args.no_reference else [x for x in args.ref_impls.split(",") if x]
    for i in args.ref_impls:
        if i not in bl.IMPLS:
            ap.error("unknown implementation '%s'" % i)
    if args.candidates < 2:
        ap.error("--candidates needs at least 2")
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender(args, write_section, "section '%s'" % SECTION,
                           findings=bl.findings_of(args.findings))
    if not args.binary or not os.access(args.binary, os.X_OK):
        raise BenchError("no designate-latency binary (build bench/, or pass --binary)")
    if not args.reign or not os.access(args.reign, os.X_OK):
        raise BenchError("no reign binary (build it, or pass --reign)")
    t_start = time.monotonic()
    commit = bl.source_state(args.reign)
    workdir = bl.start_run(args, "reign-designate-")
    zk = bl.ZooKeeper(workdir / "zk")
    run = {"command": " ".join(["bench/designate.py"] + [shlex.quote(a) for a in argv]),
           "args": {k: getattr(args, k) for k in (
               "candidates", "runs", "rounds", "warmup", "gap_ms", "cli_rounds", "cli_warmup",
               "trace_rounds", "ref_impls", "ref_trials", "ref_warmup")},
           "library": [], "cli": [], "reference": {}, "reference_missing": {},
           "floor": {}, "loadavg": {}, "findings": bl.findings_of(args.findings)}
    try:
        zk.start()
        log("ZooKeeper at %s" % zk.connect)
        bl.warm_server(zk, 5)
        run["floor"]["start"] = bl.measure_floor(zk, 200)
        run["loadavg"]["start"] = os.getloadavg()
        for i in range(1, args.runs + 1):
            r = library_run(zk, args, workdir, i)
            run["library"].append(r)
            e = r["summary"]["elected_ms"]
            log("library run %d: call to elected p50 %.2f ms, p90 %.2f, max %.2f; %.1f "
                "requests/designation" % (i, e["p50"], e["p90"], e["max"],
                                          r["requests_per_designation"]))
        run["floor_chain"] = floor_run(zk, args)
        if run["floor_chain"]:
            log("bare client: designation chain p50 %.2f ms" % (
                percentile(run["floor_chain"]["ms"], 50)))
        if args.trace_rounds > 0:
            run["trace"] = traced_run(zk, args, workdir)
        run["spawn_ms"] = spawn_cost(args)
        run["cli"] = cli_phase(zk, args, workdir)
        el = [x["elected_ms"] for x in run["cli"] if not x["warmup"]]
        log("CLI: spawn to elected p50 %.2f ms, max %.2f over %d" % (
            percentile(el, 50), max(el), len(el)))
        if args.ref_impls:
            run["reference"], run["reference_missing"] = reference_phase(zk, args, workdir)
        run["floor"]["end"] = bl.measure_floor(zk, 200)
        run["loadavg"]["end"] = os.getloadavg()
        zk_version = zk.mntr().get("zk_version", "?").split("-")[0].split(",")[0]
    finally:
        zk.stop()
    run.update(summary=summarize(run), machine=bl.machine_info(zk_version, commit),
               duration_min=(time.monotonic() - t_start) / 60.0)
    errors = any(x["errors"] for x in run["reference"].values())
    bl.end_run(run, args, workdir, errors, write_section, t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
