#!/usr/bin/python3
"""guardian.py - crash failover with the guardian, against the old path and the references.

A `reign` process runs a guardian by default (include/reign/client.h, "The guardian"): a small
helper process that, when its client's process dies, ends the client's leaderships at once (it
closes the ZooKeeper session, or releases the SQL leases).  This harness measures, in one run:

  ZooKeeper   one throwaway standalone server (scripts/zk.sh), 2 s sessions; for each number
              of candidates, one set of candidates after another: `reign campaign` with its
              guardian (the default), `reign campaign` with REIGN_GUARDIAN=off (the old path:
              the session expires), Curator's LeaderLatch and kazoo's Election
              (bench/ref/), each set's leader SIGKILLed over and over
  SQL         SQLite (a file), PostgreSQL and MariaDB (scripts/pg.sh, scripts/mariadb.sh, one
              server at a time), 2 s leases, `reign campaign` with and without its guardian

and, per trial, the time from the SIGKILL to another candidate's `elected` line (the line's own
CLOCK_MONOTONIC stamp, as bench/failover.py does), and the guardian's own account of its work:
the "(X ms)" at the end of the line it prints when it acts.  With --trace, a few more trials
per store run the leader's guardian under `strace -ttt -f`, which shows where the time goes
(they are reported apart: strace slows every system call).

It also measures what a guardian costs: its resident memory (VmRSS; Pss, private and shared
pages from /proc/PID/smaps_rollup), its CPU time and its wake-ups (context switches) over a
window at rest, and how much later a `reign campaign` is elected, and how long it takes to
exit, with a guardian to start and stop than without.

The candidates and the statistics are bench/benchlib's and bench/sql_failover.py's: this
file only adds the guardian's variants and readings.  Its report is the section "## Crash
failover with the guardian" of docs/benchmarks.md; the rest of the file stays as it is.  Python
stdlib only; run it with /usr/bin/python3 (kazoo's candidates need Debian's python3-kazoo).  It
measures, it never asserts: the targets are reported, not checked.
"""

import argparse
import json
import os
import random
import re
import select
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
import sql_failover as sf  # noqa: E402  (the SQL stores and their fleet)
from benchlib import BenchError, fmt, log, percentile  # noqa: E402

ROOT = bl.ROOT
SECTION = "## Crash failover with the guardian"
STORES = ("zk", "sqlite", "postgres", "mariadb")
ZK_IMPLS = ("guardian", "off", "curator", "kazoo")
SQL_VARIANTS = ("guardian", "off")
# --preload: an experiment, not a mode of reign: the guardian started through a wrapper that
# LD_PRELOADs the store's client library, so that nothing is loaded after the death (reign's
# guardian loads it with dlopen() when it acts).  Its time and memory say what loading the
# library ahead would gain and cost.
PRELOAD_LIB = {"sqlite": "libsqlite3.so.0", "postgres": "libpq.so.5",
               "mariadb": "libmariadb.so.3"}
STORE_LABEL = {"zk": "ZooKeeper", "sqlite": "SQLite", "postgres": "PostgreSQL",
               "mariadb": "MariaDB"}
LABEL = {"guardian": "reign, guardian (default)", "off": "reign, `REIGN_GUARDIAN=off`",
         "preload": "reign, guardian with the client library preloaded (experiment)",
         "curator": "Curator LeaderLatch", "kazoo": "kazoo Election"}
PEERS = ("curator", "kazoo")

GUARDIAN_RE = re.compile(r"reign-guardian\[(\d+)\]: process (\d+) died: (.*) \(([\d.]+) ms\)\s*$")
STRACE_RE = re.compile(r"^(\d+) +(\d+\.\d+) (.*)$")

# Targets of the work item, in ms (reported, not asserted).
TARGET_P50, TARGET_P99, TARGET_RATIO, TARGET_RSS_KB = 20.0, 100.0, 50.0, 1024


def env_for(variant, helper=None):
    """The candidates' environment: REIGN_GUARDIAN=off for the control, unset otherwise;
    REIGN_GUARDIAN_PATH=helper if given."""
    env = dict(os.environ)
    env.pop("REIGN_GUARDIAN", None)
    if variant == "off":
        env["REIGN_GUARDIAN"] = "off"
    if helper:
        env["REIGN_GUARDIAN_PATH"] = str(helper)
    return env


def preload_helper(args, workdir, kind):
    """A wrapper around the real reign-guardian that LD_PRELOADs the store's client library."""
    real = os.environ.get("REIGN_GUARDIAN_PATH") or str(
        Path(args.reign).resolve().parent.parent / "reign-guardian")
    if not os.access(real, os.X_OK):
        raise BenchError("--preload: no reign-guardian at %s (set REIGN_GUARDIAN_PATH)" % real)
    path = Path(workdir) / ("guardian-preload-%s.sh" % kind)
    path.write_text("#!/bin/sh\n# bench/guardian.py --preload: %s loaded before the death\n"
                    "LD_PRELOAD=%s exec %s \"$@\"\n" % (PRELOAD_LIB[kind], PRELOAD_LIB[kind],
                                                       shlex.quote(real)))
    path.chmod(0o755)
    return path


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return {}
    return {"n": len(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
            "p99": percentile(xs, 99), "max": max(xs), "min": min(xs),
            "mean": statistics.fmean(xs)}


# ---- processes: guardians, memory, CPU ----------------------------------------------------------

def each_proc(name):
    """(pid, contents of /proc/PID/name as bytes) for every process that still has it."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/%s" % (d, name), "rb") as f:
                    yield int(d), f.read()
            except OSError:
                pass


def ticks_of(stat):
    """utime + stime from the contents of /proc/PID/stat (the fields after the command name)."""
    rest = stat[stat.rindex(b")") + 2:].split()
    return int(rest[11]) + int(rest[12])


def proc_reading(pid):
    """CPU ticks, threads, context switches and memory of one process, or None if it is gone."""
    r = {}
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
        rest = data[data.rindex(")") + 2:].split()
        r["state"] = rest[0]
        r["utime"], r["stime"] = int(rest[11]), int(rest[12])
        r["threads"] = int(rest[17])
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    r[k] = int(v.split()[0])
                elif k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                    r[k] = int(v)
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean", "Shared_Dirty",
                         "Private_Clean", "Private_Dirty", "Anonymous"):
                    r["smaps_" + k] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    r["private_kb"] = r.get("smaps_Private_Clean", 0) + r.get("smaps_Private_Dirty", 0)
    return r


def rest_cost(pairs, seconds):
    """Each guardian's (and, for scale, its client's) memory, and what it spent over `seconds`
    with nothing happening: CPU ticks (utime + stime, 1/CLK_TCK s each) and context switches
    (voluntary ones are wake-ups from a wait).  pairs: [(client pid, guardian pid)]."""
    pids = [p for pair in pairs for p in pair]
    a = {p: proc_reading(p) for p in pids}
    t0 = time.monotonic()
    time.sleep(seconds)
    b = {p: proc_reading(p) for p in pids}
    window = time.monotonic() - t0

    def delta(pid, *keys):
        if not a.get(pid) or not b.get(pid):
            return None
        return sum(b[pid][k] - a[pid][k] for k in keys)

    out = {"window_s": window, "clk_tck": os.sysconf("SC_CLK_TCK"), "guardians": [],
           "clients": []}
    for client, guardian in pairs:
        for role, pid in (("guardians", guardian), ("clients", client)):
            if not b.get(pid):
                continue
            x = dict(b[pid], pid=pid)
            x["ticks_at_rest"] = delta(pid, "utime", "stime")
            x["voluntary_at_rest"] = delta(pid, "voluntary_ctxt_switches")
            x["nonvoluntary_at_rest"] = delta(pid, "nonvoluntary_ctxt_switches")
            x["ticks_since_start"] = b[pid]["utime"] + b[pid]["stime"]
            out[role].append(x)
    return out


def pair_guardians(cands, want, timeout_s=5.0):
    """[(client pid, guardian pid)] for the candidates; a BenchError if a candidate that should
    have a guardian has none (or one that should not has one)."""
    deadline = time.monotonic() + timeout_s
    while True:
        g = bl.guardians()
        have = [(c.pid, g.get(c.pid)) for c in cands]
        missing = [c for c, gp in have if gp is None]
        if not want:
            if len(missing) != len(have):
                raise BenchError("REIGN_GUARDIAN=off, yet %d candidates run a guardian"
                                 % (len(have) - len(missing)))
            return []
        if not missing:
            return have
        if time.monotonic() > deadline:
            raise BenchError("%d of %d candidates run no guardian (is reign-guardian built "
                             "beside libreign?)" % (len(missing), len(have)))
        time.sleep(0.05)


# ---- strace: where the guardian's time goes ----------------------------------------------------

class Tracer:
    """strace -ttt -f attached to one guardian until it exits."""

    def __init__(self, gpid, path):
        self.path, self.gpid = path, gpid
        path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(["strace", "-ttt", "-f", "-s", "256", "-p", str(gpid),
                                      "-o", str(path)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        said = []
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if r:
                line = self.proc.stderr.readline().decode("utf-8", "replace")
                if "attached" in line:
                    # Keep reading its stderr so that it never blocks on a full pipe.
                    threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                    return
                if not line:
                    break
                said.append(line.strip())
        self.proc.kill()
        self.proc.wait()
        raise BenchError("strace could not attach to the guardian %d: %s" % (
            gpid, " ".join(said) or "no answer"))

    def finish(self):
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.path.read_text(errors="replace")


def timeline(text, gpid, kill_real_ns):
    """Milestones of one traced guardian, in ms after the SIGKILL (strace's -ttt stamps are
    CLOCK_REALTIME; kill_real_ns is the kill on that clock).

      wake      its first system call after the wait for its client's death returned
      libs      the first and last shared library it opened after waking (libpq, libmariadb
                and what they need are loaded with dlopen() when first used)
      connect   its connect() to the store (TCP), or its open() of the SQLite file
      answer    the store's first answer on that connection
      closed    its close() of that connection (for ZooKeeper: after closeSession's answer)
      report    its write of the line on stderr
      exit      its exit
    """
    ev = {}
    fd = None
    main = str(gpid)
    waking = True
    syscalls = 0
    for line in text.splitlines():
        m = STRACE_RE.match(line)
        if not m:
            continue
        pid, ts, call = m.group(1), float(m.group(2)), m.group(3)
        ms = (int(round(ts * 1e6)) * 1000 - kill_real_ns) / 1e6
        if waking:
            if call.startswith(("restart_syscall", "poll(", "ppoll(", "<... poll")):
                continue
            waking = False
            ev["wake"] = ms
        syscalls += 1
        if call.startswith("openat(") and ".so" in call and "= -1" not in call:
            ev.setdefault("libs_first", ms)
            ev["libs_last"] = ms
        if fd is None:
            c = re.match(r"connect\((\d+), \{sa_family=AF_INET6?,", call)
            o = re.match(r"openat\(AT_FDCWD, \"[^\"]*\.db\", .*\) = (\d+)", call)
            if c or o:
                fd = (c or o).group(1)
                ev["connect"] = ms
        elif "answer" not in ev and re.match(r"(recvfrom|recvmsg|read|pread64)\(%s," % fd, call):
            ev["answer"] = ms
        elif re.match(r"close\(%s\)" % fd, call):
            ev.setdefault("closed", ms)
        if call.startswith('write(2, "reign-guardian'):
            ev["report"] = ms
        if pid == main and call.startswith("+++ exited"):
            ev["exit"] = ms
    ev["syscalls"] = syscalls
    return ev


MILESTONES = ("wake", "libs_first", "libs_last", "connect", "answer", "closed", "report", "exit")


# ---- ZooKeeper ---------------------------------------------------------------------------------

def zk_ns(args):
    """What benchlib's Impl and Fleet read from their arguments."""
    return argparse.Namespace(reign=args.reign, quiet_ms=300, poll_ms=50, verbose=args.verbose)


def guardian_line(path, client_pid, timeout_s=5.0):
    """The guardian's line in the dead client's stderr file (the guardian inherits it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            for line in Path(path).read_text(errors="replace").splitlines():
                m = GUARDIAN_RE.search(line)
                if m and int(m.group(2)) == client_pid:
                    return {"pid": int(m.group(1)), "ms": float(m.group(4)),
                            "text": m.group(3)}
        except OSError:
            pass
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def kill_and_time(fleet, lease_s, tracer_dir=None):
    """SIGKILL the leader (through benchlib's kill_leader), optionally with strace on
    its guardian.  Returns (old candidate, the `elected` Event, kill time, trace or None)."""
    old = fleet.leader
    tracer = None
    if tracer_dir is not None:
        gpid = bl.guardians().get(old.pid)
        if gpid is None:
            raise BenchError("the leader %s has no guardian to trace" % old.id)
        tracer = Tracer(gpid, tracer_dir / ("strace-%s.txt" % old.id))
    # The realtime clock at the kill, for strace's stamps (read right before kill_leader's own
    # monotonic stamp; the two reads are microseconds apart).
    real_ns = time.time_ns()
    mono_ns = time.monotonic_ns()
    old, elected, t_kill, _rc = bl.kill_leader(fleet, "crash", lease_s * 3 + 30)
    trace = None
    if tracer is not None:
        text = tracer.finish()
        kill_real = real_ns + (t_kill - mono_ns)
        trace = timeline(text, tracer.gpid, kill_real)
        trace["elected"] = (elected.ns - t_kill) / 1e6
    return old, elected, t_kill, trace


def zk_trial(fleet, variant, args, rng, trace_dir=None):
    before = fleet.wait_quiet(fleet.n, timeout_s=120)
    pause = rng.uniform(0, args.jitter_s)  # so that a kill falls at no fixed point of a timer
    time.sleep(pause)
    fleet.drain()
    if fleet.leader is None:
        raise BenchError("no leader before the kill")
    old, elected, t_kill, trace = kill_and_time(fleet, fleet.session_timeout / 1000.0,
                                                trace_dir)
    after = fleet.wait_quiet(fleet.n - 1, timeout_s=120)
    d = bl.request_delta(before, after)
    r = {"latency_ms": (elected.ns - t_kill) / 1e6, "pause_s": pause,
         "requests": d["survivor_requests"], "writes": d["writes"],
         "watch_events": d["watch_events"], "term": elected.fields.get("term")}
    if variant == "guardian":
        r["guardian"] = guardian_line(old.err_path, old.pid)
    if trace is not None:
        r["trace"] = trace
    fleet.spawn()  # the replacement; the next trial's wait_quiet waits until it stands
    return r


def run_zk_config(impl, variant, zk, n, trials, args, workdir, rng, trace):
    fleet = bl.Fleet(impl, zk, n, args.session_timeout, zk_ns(args),
                     workdir / ("zk-%s-%d" % (variant, n)))
    fleet.election = "guardian-bench-%s-%d-%d" % (variant, n, os.getpid())
    res = {"store": "zk", "variant": variant, "n": n, "trials": [], "traced": [],
           "errors": [], "clock_violations": 0, "overlaps": 0, "load_start": os.getloadavg()}
    try:
        log("zk %s: starting %d candidates" % (variant, n))
        res["start_s"], _ = fleet.start()
        time.sleep(1.0)
        res["rss"] = bl.measure_rss(fleet)
        s = fleet.wait_quiet(n, timeout_s=60)
        res["timeouts_ms"] = sorted(set(c["to"] for c in s.cons.values()))
        if variant in ("guardian", "off"):
            pairs = pair_guardians(fleet.cands, variant == "guardian")
            if pairs:
                res["guardian_smaps"] = sf.smaps_by_file(pairs[0][1])
            if pairs and args.rest_s > 0:
                log("zk %s n=%d: %.0f s at rest" % (variant, n, args.rest_s))
                res["rest"] = rest_cost(pairs, args.rest_s)
        for i in range(trials):
            t = zk_trial(fleet, variant, args, rng)
            res["trials"].append(t)
            if args.verbose:
                g = t.get("guardian") or {}
                log("  zk %s n=%d #%d: %.2f ms (guardian %s ms)" % (
                    variant, n, i, t["latency_ms"], fmt(g.get("ms"))))
        for i in range(trace):
            res["traced"].append(zk_trial(fleet, variant, args, rng, workdir / "traces"))
        lat = [t["latency_ms"] for t in res["trials"]]
        if lat:
            log("zk %s n=%d: p50 %.2f ms, p99 %.2f ms over %d" % (
                variant, n, percentile(lat, 50), percentile(lat, 99), len(lat)))
    except BenchError as e:
        log("zk %s n=%d: %s" % (variant, n, e))
        res["errors"].append(str(e))
    finally:
        fleet.add_checks(res)
        fleet.stop()
        res["load_end"] = os.getloadavg()
    return res


def zk_startup(zk, args, rng):
    def argv(election):
        return [args.reign, "--uri", "zk://" + zk.connect, "--session-timeout",
                str(args.session_timeout), "campaign", election, "--id", "startup"]
    return startup(argv, args.startup, rng)


def run_zk(args, workdir, rng, trace):
    impls = {}
    missing = {}
    ns = zk_ns(args)
    for name in args.zk_impls:
        impl = bl.Impl("reign" if name in ("guardian", "off") else name, ns, workdir)
        impl.prepare()
        if impl.reason_missing:
            missing[name] = impl.reason_missing
            log("skipping %s: %s" % (name, impl.reason_missing))
            continue
        if name in ("guardian", "off"):
            impl.env = env_for(name)
        impls[name] = impl
    zk = bl.ZooKeeper(workdir / "zk")
    results, info = [], {"missing": missing}
    try:
        zk.start()
        log("ZooKeeper at %s" % zk.connect)
        info["version"] = zk.mntr().get("zk_version", "?").split("-")[0]
        info["conf"] = dict(zk.zoo_cfg(), **zk.conf())
        bl.warm_server(zk, args.warm_s)
        info["floor"] = bl.measure_floor(zk, 200)
        if args.startup and "guardian" in impls:
            info["startup"] = zk_startup(zk, args, rng)
        if args.death:
            info["death"] = death_notice(lambda e: [
                args.reign, "--uri", "zk://" + zk.connect, "--session-timeout",
                str(args.session_timeout), "campaign", e, "--id", "death"], args.death)
        order = [x for x in args.zk_impls if x in impls]
        for k, n in enumerate(args.counts):
            # Rotate the order from one count to the next, as bench/failover.py does.
            rot = order[k % len(order):] + order[:k % len(order)]
            for name in rot:
                count = args.trials if name == "guardian" else args.slow_trials_for(n)
                results.append(run_zk_config(impls[name], name, zk, n, count, args, workdir,
                                             rng, trace if n == args.counts[0] and
                                             name == "guardian" else 0))
    finally:
        zk.stop()
    return info, results


# ---- SQL ----------------------------------------------------------------------------------------

class GuardedSqlFleet(sf.SqlFleet):
    """bench/sql_failover.py's fleet, with the candidates' environment chosen (guardian or not)
    and the guardian's line caught on the dead candidate's stderr (the guardian inherits it)."""

    def __init__(self, args, store, uri, n, label, workdir, env):
        super().__init__(args, store, uri, n, label, workdir)
        self.env = env
        self.glines = {}

    def spawn(self):
        self.serial += 1
        cid = "%s-%d-%s-%d" % (self.store.kind, self.n, self.label, self.serial)
        self.stmts[cid] = []
        argv = [self.args.reign, "--uri", self.uri, "--log-level", "debug", "campaign",
                self.election, "--id", cid]
        c = bl.Candidate(self, cid, argv, self.workdir / (cid + ".err"), self.on_err_line,
                         env=self.env)
        self.cands.append(c)
        return c

    def on_err_line(self, cand, line, read_ns):
        m = GUARDIAN_RE.search(line)
        if m:
            self.glines[int(m.group(2))] = {"pid": int(m.group(1)), "ms": float(m.group(4)),
                                            "text": m.group(3)}
            return
        super().on_err_line(cand, line, read_ns)


def sql_trial(fleet, variant, args, rng, trace_dir=None):
    sf.settle(fleet, rng, args)
    if fleet.leader is None or fleet.leader not in fleet.cands:
        raise BenchError("no leader before the kill")
    lease_s = fleet.settings["lease_ms"] / 1000.0
    old, elected, t_kill, trace = kill_and_time(fleet, lease_s, trace_dir)
    r = {"latency_ms": (elected.ns - t_kill) / 1e6, "term": elected.fields.get("term")}
    if variant != "off":
        # kill_leader has joined the old candidate's stderr reader, which ends when the guardian
        # (holding the same pipe) exits: its line has been read if it printed one.
        r["guardian"] = fleet.glines.get(old.pid)
    if trace is not None:
        r["trace"] = trace
    fleet.spawn()
    return r


def run_sql_config(store, variant, n, trials, args, workdir, rng, trace, rest_s=None):
    label = variant
    helper = preload_helper(args, workdir, store.kind) if variant == "preload" else None
    rest_s = args.rest_s if rest_s is None else rest_s
    fleet = GuardedSqlFleet(args, store, store.uri("%d-%s" % (n, label),
                                                   {"lease_ms": args.lease_ms}),
                            n, label, workdir / ("%s-%s-%d" % (store.kind, variant, n)),
                            env_for(variant, helper))
    res = {"store": store.kind, "variant": variant, "n": n, "trials": [], "traced": [],
           "errors": [], "clock_violations": 0, "overlaps": 0, "term_violations": 0,
           "load_start": os.getloadavg()}
    try:
        log("%s %s: starting %d candidates" % (store.kind, variant, n))
        res["start_s"] = fleet.start(rng, args.start_spread)
        res["settings"] = fleet.settings
        time.sleep(1.0)
        res["rss"] = bl.measure_rss(fleet)
        pairs = pair_guardians(fleet.cands, variant != "off")
        if pairs:
            res["guardian_smaps"] = sf.smaps_by_file(pairs[0][1])
        if pairs and rest_s > 0:
            fleet.wait_settled()
            log("%s %s n=%d: %.0f s at rest" % (store.kind, variant, n, rest_s))
            res["rest"] = rest_cost(pairs, rest_s)
        for i in range(trials):
            t = sql_trial(fleet, variant, args, rng)
            res["trials"].append(t)
            if args.verbose:
                g = t.get("guardian") or {}
                log("  %s %s n=%d #%d: %.2f ms (guardian %s ms)" % (
                    store.kind, variant, n, i, t["latency_ms"], fmt(g.get("ms"))))
        for i in range(trace):
            res["traced"].append(sql_trial(fleet, variant, args, rng, workdir / "traces"))
        lat = [t["latency_ms"] for t in res["trials"]]
        if lat:
            log("%s %s n=%d: p50 %.2f ms, p99 %.2f ms over %d" % (
                store.kind, variant, n, percentile(lat, 50), percentile(lat, 99), len(lat)))
    except BenchError as e:
        log("%s %s n=%d: %s" % (store.kind, variant, n, e))
        res["errors"].append(str(e))
    finally:
        fleet.add_checks(res)
        fleet.stop()
        res["load_end"] = os.getloadavg()
    return res


def run_sql(kind, args, workdir, rng, trace):
    store = sf.Store(kind, workdir)
    results, info = [], {}
    try:
        store.start()
        info["version"] = store.version
        log("%s: %s" % (kind, store.version))
        if args.startup:
            def argv(election):
                return [args.reign, "--uri", store.uri("startup", {"lease_ms": args.lease_ms}),
                        "campaign", election, "--id", "startup"]
            info["startup"] = startup(argv, args.startup, rng)
        if args.death:
            info["death"] = death_notice(lambda e: [
                args.reign, "--uri", store.uri("death", {"lease_ms": args.lease_ms}),
                "campaign", e, "--id", "death"], args.death)
        for k, n in enumerate(args.counts):
            order = SQL_VARIANTS if k % 2 == 0 else tuple(reversed(SQL_VARIANTS))
            for variant in order:
                count = args.trials if variant == "guardian" else args.slow_trials_for(n)
                results.append(run_sql_config(store, variant, n, count, args, workdir, rng,
                                              trace if n == args.counts[0] and
                                              variant == "guardian" else 0))
        if args.preload:
            # The experiment at the first count only, with a short window at rest (its memory).
            results.append(run_sql_config(store, "preload", args.counts[0], args.trials, args,
                                          workdir, rng, args.trace, rest_s=min(args.rest_s, 5)))
    finally:
        store.stop()
    return info, results


# ---- start-up and exit of a client, with and without its guardian ------------------------------

def startup(argv_for, rounds, rng):
    """A sole `reign campaign` in a new election, `rounds` times with a guardian and as many
    without, in random order: from its start to its `elected` line (the guardian is spawned,
    and its first process reaped, while the client is made), and from SIGTERM to its exit (a
    clean end tells the guardian "bye")."""
    plan = [v for v in SQL_VARIANTS for _ in range(rounds)]
    rng.shuffle(plan)
    out = {v: [] for v in SQL_VARIANTS}
    for i, variant in enumerate(plan):
        election = "startup-%s-%d-%d" % (variant, i, os.getpid())
        t0 = time.monotonic_ns()
        p = subprocess.Popen(argv_for(election), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env_for(variant),
                             start_new_session=True)
        try:
            elected = None
            deadline = time.monotonic() + 30
            while elected is None and time.monotonic() < deadline:
                r, _, _ = select.select([p.stdout], [], [], 1.0)
                if not r:
                    continue
                line = p.stdout.readline().decode("utf-8", "replace")
                if not line:
                    break
                m = re.search(r"^elected .*monotonic_ns=(\d+)", line)
                if m:
                    elected = int(m.group(1))
            if elected is None:
                raise BenchError("a sole candidate was not elected within 30 s (%s)"
                                 % " ".join(argv_for(election)))
            have = p.pid in bl.guardians()
            t1 = time.monotonic_ns()
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
            t2 = time.monotonic_ns()
            out[variant].append({"elected_ms": (elected - t0) / 1e6, "exit_ms": (t2 - t1) / 1e6,
                                 "guardian": have})
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
    return out


def death_notice(argv_for, rounds):
    """How long the kernel takes to report a `reign campaign`'s death: a sole candidate
    (without a guardian, so that nothing else runs), SIGKILLed once elected; from the kill
    until its stdout pipe reads end of file (its descriptors are being closed, lowest first)
    and until a pidfd of it reads ready (it has exited: what wakes a guardian)."""
    out = []
    for i in range(rounds):
        election = "death-%d-%d" % (i, os.getpid())
        p = subprocess.Popen(argv_for(election), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env_for("off"),
                             start_new_session=True)
        pidfd = -1
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                r, _, _ = select.select([p.stdout], [], [], 1.0)
                if r and p.stdout.readline().startswith(b"elected "):
                    break
            else:
                raise BenchError("a sole candidate was not elected within 30 s")
            time.sleep(0.2)
            pidfd = os.pidfd_open(p.pid)
            po = select.poll()
            po.register(pidfd, select.POLLIN)
            po.register(p.stdout.fileno(), select.POLLIN)
            got = {}
            t0 = time.monotonic_ns()
            os.kill(p.pid, signal.SIGKILL)
            while len(got) < 2:
                for fd, _ in po.poll(10000):
                    got.setdefault(fd, time.monotonic_ns())
                    po.unregister(fd)
            out.append({"eof_ms": (got[p.stdout.fileno()] - t0) / 1e6,
                        "pidfd_ms": (got[pidfd] - t0) / 1e6})
        finally:
            if pidfd >= 0:
                os.close(pidfd)
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
    return out


# ---- the machine's load while the run lasts ----------------------------------------------------

class LoadSampler:
    """The machine's load while the run lasts: /proc/loadavg every 10 s, and every 2 minutes
    which processes used the CPUs over 2 s (this run's, and other sessions')."""

    def __init__(self, mine):
        self.mine = mine  # substrings of the command lines of this run's processes
        self.samples, self.snapshots = [], []
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        k = 0
        while not self.stop_ev.is_set():
            self.samples.append(os.getloadavg()[0])
            if k % 12 == 0:
                self.snapshots.append(self.snapshot())
            k += 1
            self.stop_ev.wait(10.0)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_ev.set()
        self.thread.join(timeout=15)

    @staticmethod
    def _ticks():
        out = {}
        for pid, stat in each_proc("stat"):
            try:
                out[pid] = ticks_of(stat)
            except (ValueError, IndexError):
                pass
        return out

    def snapshot(self, window_s=2.0):
        """Processes by share of a CPU over window_s; `mine` marks this run's."""
        a = self._ticks()
        t0 = time.monotonic()
        time.sleep(window_s)
        b = self._ticks()
        span = (time.monotonic() - t0) * os.sysconf("SC_CLK_TCK")
        procs = []
        for pid, t in b.items():
            d = t - a.get(pid, t)
            if d <= 0:
                continue
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                cmd = "?"
            mine = any(m in cmd for m in self.mine) or cmd.startswith("reign-guardian")
            procs.append({"cpu_pct": 100.0 * d / span, "cmd": cmd[:160], "mine": mine})
        procs.sort(key=lambda x: -x["cpu_pct"])
        return {"loadavg": os.getloadavg()[0], "others_pct": sum(
            x["cpu_pct"] for x in procs if not x["mine"]), "top": procs[:10]}


# ---- report -------------------------------------------------------------------------------------

def summarize(res):
    lat = [t["latency_ms"] for t in res["trials"]]
    g = [t.get("guardian") for t in res["trials"]]
    gms = [x["ms"] for x in g if x]
    rest = [t["latency_ms"] - t["guardian"]["ms"] for t in res["trials"] if t.get("guardian")]
    out = {"latency": stats(lat), "guardian_ms": stats(gms), "outside_guardian": stats(rest),
           "guardian_lines": len(gms),
           "guardian_failed": sum(1 for x in g if x and not re.search(
               r"closed ZooKeeper session|released", x["text"]))}
    if res.get("traced"):
        tl = [t["trace"] for t in res["traced"] if t.get("trace")]
        out["trace"] = {k: stats(x.get(k) for x in tl)
                        for k in MILESTONES + ("elected", "syscalls")}
        out["trace_guardian_ms"] = stats((t.get("guardian") or {}).get("ms")
                                         for t in res["traced"])
    return out


def render(run):
    a, info = run["args"], run["machine"]
    counts = a["counts"]
    by = {(r["store"], r["variant"], r["n"]): r for r in run["results"]}
    summ = {k: summarize(v) for k, v in by.items()}
    stores = [s for s in STORES if s in a["stores"]]
    L = []
    w = L.append

    def lat(store, variant, n, p="p50"):
        return summ.get((store, variant, n), {}).get("latency", {}).get(p)

    def settings(store, n):
        for v in SQL_VARIANTS:
            s = by.get((store, v, n), {}).get("settings")
            if s:
                return s
        return {}

    def header(first, cols):
        w("")
        w("| " + first + " | " + " | ".join(cols) + " |")
        w("|---|" + "---|" * len(cols))

    w(SECTION)
    w("")
    w("Generated by `bench/guardian.py` on %s; do not edit by hand, run it again (see "
      "`bench/README.md`).  It measures; nothing here is asserted by a test." % info["date"])
    w("")
    w("When the leading `reign campaign` process is killed (SIGKILL: it runs no code), its "
      "guardian (`reign-guardian`, see reign(1) and include/reign/client.h) ends its "
      "leadership at once: it closes the ZooKeeper session, or releases the SQL lease.  "
      "Measured here: the time from the SIGKILL to another candidate's `elected` line, with the "
      "guardian (the default), without it (`REIGN_GUARDIAN=off`: the session or lease has to "
      "time out, as before), and, on the same ZooKeeper server in the same run, for Curator's "
      "`LeaderLatch` and kazoo's `Election`, which have no such helper; then what a guardian "
      "costs.  Sessions and leases of %d ms; %s candidates." % (
          a["session_timeout"], " and ".join(str(n) for n in counts)))
    L += bl.command_lines(run)
    si = run["stores"]
    w("")
    w("Machine: %s, %d CPUs (`nproc`), %s RAM; %s, Linux %s.  Stores on loopback, each started "
      "for its part of the run and used by nothing else: ZooKeeper %s (`scripts/zk.sh`, "
      "standalone, tickTime %s ms), SQLite %s (a file per set of candidates), PostgreSQL %s "
      "(`scripts/pg.sh`), MariaDB %s (`scripts/mariadb.sh`).  %s; Curator %s, kazoo %s.  reign at "
      "commit %s.  Total run time %.0f min." % (
          info["cpu"], info["nproc"], info["memory"], info["os"], info["kernel"],
          si.get("zk", {}).get("version", "?"),
          si.get("zk", {}).get("conf", {}).get("tickTime", "?"),
          si.get("sqlite", {}).get("version", "?"),
          sf.short_version(si.get("postgres", {}).get("version", "?")),
          si.get("mariadb", {}).get("version", "?"), info["java"], info["curator"],
          info["kazoo"], info["commit"], run["elapsed_s"] / 60.0))
    ld = run["load"]
    others = [x["others_pct"] for x in ld.get("snapshots", [])]
    seen = {}
    for snap in ld.get("snapshots", []):
        for x in snap["top"]:
            if not x["mine"] and x["cpu_pct"] >= 10:
                name = busy_name(x["cmd"])
                seen[name] = max(seen.get(name, 0), x["cpu_pct"])
    w("")
    w("Load: the machine is shared (other sessions build and test on it).  1-minute load "
      "average sampled every 10 s through the run: median %s, max %s (%d samples; %s at the "
      "start, %s at the end).  Processes outside this run used a median %s%% of one CPU "
      "(max %s%%) in %d two-second looks spread over the run%s." % (
          fmt(statistics.median(ld["samples"]) if ld["samples"] else None, 1),
          fmt(max(ld["samples"]) if ld["samples"] else None, 1), len(ld["samples"]),
          fmt(ld["start"][0], 1), fmt(ld["end"][0], 1),
          fmt(statistics.median(others) if others else None, 0),
          fmt(max(others) if others else None, 0), len(others),
          "; among them, at 10%% of a CPU or more: %s" % ", ".join(
              "%s (up to %.0f%%)" % kv for kv in sorted(seen.items(), key=lambda kv: -kv[1])[:6])
          if seen else ""))
    s0 = next((settings(s, n) for s in stores for n in counts if settings(s, n)), {})
    w("")
    w("Trials: %d SIGKILLs per set of candidates with the guardian; without it (and for "
      "Curator and kazoo) %s.  Each trial waits until every candidate stands, pauses a random "
      "0-%d ms (ZooKeeper; on SQL bench/sql_failover.py's settle: %.1f s plus up to as much "
      "again, plus up to one poll period on MariaDB), kills the leader, waits for the next "
      "`elected`, then starts a replacement candidate.  SQL leases: `lease_ms=%s` (renew every "
      "%s ms, followers poll every %s ms).  ZooKeeper sessions: %d ms requested, %s granted." % (
          a["trials"], ", ".join("%d at %d candidates" % (a["slow_trials"].get(str(n),
                                                                             a["trials"]), n)
                                 for n in counts),
          a["jitter_s"] * 1000, a["settle_s"], s0.get("lease_ms", "?"), s0.get("renew_ms", "?"),
          s0.get("poll_ms", "?"), a["session_timeout"], ", ".join(sorted(set(
              str(t) for r in run["results"] if r["store"] == "zk"
              for t in r.get("timeouts_ms", []))) or "?")))

    # --- targets
    w("")
    w("### Targets")
    w("")
    w("Reported, not asserted.  \"Faster than the peers\" compares reign's median with the "
      "median crash failover of Curator's `LeaderLatch` and kazoo's `Election` on ZooKeeper "
      "in this run at the same number of candidates.")
    header("target", ["store", "candidates", "measured", "met?"])
    for s in stores:
        for n in counts:
            p50, p99 = lat(s, "guardian", n), lat(s, "guardian", n, "p99")
            if p50 is None:
                continue
            if s == "mariadb":
                poll = settings(s, n).get("poll_ms")
                w("| within one poll period (%s ms) | %s | %d | p50 %s ms, p99 %s ms, max %s "
                  "ms | %s |" % (fmt(poll), STORE_LABEL[s], n, fmt(p50, 1), fmt(p99, 1),
                                 fmt(lat(s, "guardian", n, "max"), 1),
                                 bl.yes(None if not poll else p99 <= poll)))
                continue
            w("| p50 <= %.0f ms, p99 <= %.0f ms | %s | %d | p50 %s ms, p99 %s ms | %s |" % (
                TARGET_P50, TARGET_P99, STORE_LABEL[s], n, fmt(p50, 1), fmt(p99, 1),
                bl.yes(p50 <= TARGET_P50 and p99 <= TARGET_P99)))
            ratios = []
            for peer in PEERS:
                pp = lat("zk", peer, n)
                if pp:
                    ratios.append((peer, pp / p50))
            if ratios:
                w("| >= %.0f x faster than Curator and kazoo | %s | %d | %s | %s |" % (
                    TARGET_RATIO, STORE_LABEL[s], n, ", ".join(
                        "%.0f x %s (%s ms)" % (r, bl.SHORT[peer], fmt(lat("zk", peer, n), 0))
                        for peer, r in ratios),
                    bl.yes(all(r >= TARGET_RATIO for _, r in ratios) and len(ratios) == 2)))
    mem = [m for m in memory_rows(run) if m["variant"] == "guardian"]
    if mem:
        worst = max(m["vmrss_max"] for m in mem)
        pss = max(m["pss_max"] for m in mem)
        priv = max(m["private_max"] for m in mem)
        w("| <= 1 MB resident per guardian | all | all | VmRSS %d kB at most; Pss %d kB, "
          "private %d kB at most | by VmRSS %s; by Pss and private pages %s |" % (
              worst, pss, priv, bl.yes(worst <= TARGET_RSS_KB),
              bl.yes(pss <= TARGET_RSS_KB and priv <= TARGET_RSS_KB)))
        ticks = sum(m["ticks_sum"] for m in mem)
        wakes = sum(m["voluntary_sum"] + m["nonvoluntary_sum"] for m in mem)
        nguard = sum(m["guardians"] for m in mem)
        w("| nothing measurable at rest | all | all | %d CPU ticks and %d context switches in "
          "all, %d guardians over %.0f s each | %s |" % (
              ticks, wakes, nguard, a["rest_s"], bl.yes(ticks == 0 and wakes == 0)))

    # --- latency
    w("")
    w("### SIGKILL to elected")
    w("")
    w("Milliseconds from SIGKILL to the leader until another candidate's `elected` line: "
      "p50 / p90 / p99 / max (nearest rank; trials in brackets).")
    cols = ["%d candidates" % n for n in counts]
    header("", cols)
    for s in stores:
        variants = ZK_IMPLS if s == "zk" else ("guardian", "preload", "off")
        for v in variants:
            if not any((s, v, n) in by for n in counts):
                continue
            cells = []
            for n in counts:
                st = summ.get((s, v, n), {}).get("latency")
                if not st:
                    cells.append("not run")
                    continue
                d = 1 if v in ("guardian", "preload") else 0
                cells.append("%s / %s / %s / %s (%d)" % (fmt(st["p50"], d), fmt(st["p90"], d),
                                                        fmt(st["p99"], d), fmt(st["max"], d),
                                                        st["n"]))
            w("| %s: %s | %s |" % (STORE_LABEL[s], LABEL[v], " | ".join(cells)))
    w("")
    w("Ratios of medians (how many times faster reign with its guardian was):")
    header("", cols)
    for s in stores:
        for other, where in (("off", s), ("curator", "zk"), ("kazoo", "zk")):
            if s == "mariadb" and other != "off":
                continue
            cells = [bl.ratio(lat(where, other, n), lat(s, "guardian", n)) for n in counts]
            if all(c == "–" for c in cells):
                continue
            w("| %s: %s%s : guardian | %s |" % (
                STORE_LABEL[s], LABEL[other], "" if where == s else " on ZooKeeper",
                " | ".join(cells)))

    # --- where the time goes
    w("")
    w("### Where the time goes")
    w("")
    w("The guardian's own account: the \"(X ms)\" of the line it prints when it acts, from the "
      "moment it saw its client's death (its pidfd became readable) until its work was done "
      "(for ZooKeeper, closeSession answered; for SQL, the lease released and the connection "
      "closed).  The rest of SIGKILL-to-elected is before it (the kernel ends the killed "
      "process, the guardian is scheduled) and after it (the store tells the successor: a "
      "watch, a NOTIFY, a line in SQLite's notice file or the next poll; the successor claims).  p50 / p90 / "
      "p99, ms.")
    header("", ["candidates", "SIGKILL to elected", "guardian's (X ms)", "the rest",
                "guardian lines / failed"])
    for s in stores:
        for v in ("guardian", "preload"):
            for n in counts:
                x = summ.get((s, v, n))
                if not x:
                    continue
                w("| %s%s | %d | %s | %s | %s | %d / %d |" % (
                    STORE_LABEL[s], " (preloaded, experiment)" if v == "preload" else "", n,
                    p3(x["latency"]), p3(x["guardian_ms"]), p3(x["outside_guardian"]),
                    x["guardian_lines"], x["guardian_failed"]))
    dn = {s: si.get(s, {}).get("death") for s in stores if si.get(s, {}).get("death")}
    if dn:
        w("")
        w("Before the guardian can act, the kernel must report the death.  A sole `reign "
          "campaign` on each store (without a guardian), SIGKILLed %d times once elected: ms "
          "from the kill until its stdout pipe reads end of file (its descriptors are being "
          "closed) and until a pidfd of it reads ready (it has exited: what wakes a guardian), "
          "p50 / p90 / p99 / max." % a.get("death", 0))
        header("", ["stdout end of file", "pidfd ready"])
        for s, xs in dn.items():
            e, d = stats(x["eof_ms"] for x in xs), stats(x["pidfd_ms"] for x in xs)
            w("| %s | %s / %s | %s / %s |" % (STORE_LABEL[s], p3(e), fmt(e["max"], 1), p3(d),
                                              fmt(d["max"], 1)))
    traced = [(STORE_LABEL[s] + (" (preloaded, experiment)" if v == "preload" else ""),
               summ[(s, v, a["counts"][0])]) for s in stores for v in ("guardian", "preload")
              if summ.get((s, v, a["counts"][0]), {}).get("trace")]
    if traced:
        w("")
        w("Traced trials (%d per store, %d candidates, reported apart): the leader's guardian "
          "ran under `strace -ttt -f`, which makes every system call slower (compare the "
          "guardian's own time under strace, last column, with the table above).  Median ms "
          "after the SIGKILL at which the guardian: woke (its first system call after its "
          "wait returned); opened its first and last shared library (the SQL client library "
          "and what it needs, loaded with dlopen() when first used); connected to the store "
          "(SQLite: opened the file); read the store's first answer; closed the connection; "
          "wrote its line; exited; and when the successor was elected." % (
              a["trace"], a["counts"][0]))
        header("", ["wake", "libs", "connect", "answer", "closed", "report", "exit",
                    "elected", "guardian's (X ms)"])
        for s, x in traced:
            t = x["trace"]

            def m(k):
                return fmt(t.get(k, {}).get("p50"), 1)
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, m("wake"),
                "%s – %s" % (m("libs_first"), m("libs_last")) if t.get("libs_first") else "–",
                m("connect"), m("answer"), m("closed"), m("report"), m("exit"), m("elected"),
                fmt(x["trace_guardian_ms"].get("p50"), 1)))
    for f in run.get("findings", []):
        w("")
        w(f)

    # --- cost
    w("")
    w("### What a guardian costs")
    w("")
    mem = memory_rows(run)
    if mem:
        w("Memory of each guardian with its client standing (from /proc/PID/status and "
          "/proc/PID/smaps_rollup, kB, median / max over the guardians of a set): VmRSS; Pss "
          "(shared pages divided among the processes that map them); private pages (clean + "
          "dirty: what one more guardian adds).  And over %.0f s at rest, summed over the set's "
          "guardians: CPU ticks (utime + stime, %d per second) and context switches (voluntary: "
          "wake-ups from its wait; involuntary), and for scale the same for their clients "
          "(`reign campaign`, which renew and ping).  Last column: a guardian's CPU ticks from "
          "its start to the end of the window (median / max)." % (
              a["rest_s"], mem[0]["clk_tck"]))
        header("", ["candidates", "VmRSS", "Pss", "private", "guardians at rest: ticks, "
                    "switches", "clients at rest: ticks, switches", "ticks since start"])
        for m in mem:
            w("| %s | %d | %d / %d | %d / %d | %d / %d | %d, %d + %d | %d, %d + %d | %s / %s |" % (
                STORE_LABEL[m["store"]] + (" (preloaded, experiment, %.0f s at rest)" % m[
                    "window_s"] if m["variant"] == "preload" else ""), m["n"], m["vmrss_med"], m["vmrss_max"], m["pss_med"],
                m["pss_max"], m["private_med"], m["private_max"], m["ticks_sum"],
                m["voluntary_sum"], m["nonvoluntary_sum"], m["client_ticks_sum"],
                m["client_voluntary_sum"], m["client_nonvoluntary_sum"],
                fmt(m["start_ticks_med"], 0), fmt(m["start_ticks_max"], 0)))
        sm = next((r["guardian_smaps"] for r in run["results"] if r.get("guardian_smaps")),
                  None)
        if sm:
            tot = sum(v[0] for v in sm.values())
            parts = sorted(sm.items(), key=lambda kv: -kv[1][0])
            w("")
            w("Where a guardian's VmRSS is (one guardian, /proc/PID/smaps, kB resident, of which "
              "anonymous): %s; %d kB in all.  File pages (libc, the dynamic loader and the "
              "helper's own code; a SQL client library is loaded only when a death needs it) "
              "are shared with every process that maps the same files and counted in each "
              "one's VmRSS, libc's mostly because the kernel maps a 64 kB block around each "
              "page a process touches; the anonymous pages (heap, stack) are the guardian's "
              "own." % (
                  ", ".join("%s %d (%d)" % (k, v[0], v[1]) for k, v in parts if v[0] > 0),
                  tot))
        w("")
        rss = [r["rss"]["vmrss_kb_median"] for r in run["results"] if r.get("rss") and
               r["variant"] in ("guardian", "off")]
        cl = {}
        for v in SQL_VARIANTS:
            xs = [r["rss"]["vmrss_kb_median"] for r in run["results"] if r.get("rss") and
                  r["variant"] == v and r["rss"].get("vmrss_kb_median")]
            cl[v] = statistics.median(xs) if xs else None
        if rss and cl["guardian"] and cl["off"]:
            w("The client itself (`reign campaign`, median VmRSS over every set of candidates): "
              "%.0f kB with a guardian, %.0f kB without." % (cl["guardian"], cl["off"]))
    up = {s: si.get(s, {}).get("startup") for s in stores if si.get(s, {}).get("startup")}
    if up:
        w("")
        w("Start and end of a client: a sole `reign campaign` in a new election, %d times with "
          "a guardian and %d without, in random order: from its start (the harness's spawn) to "
          "its `elected` line, and from SIGTERM to its exit; p50 / p90, ms.  With a guardian "
          "the client spawns it (posix_spawn, then reaps the helper's first process, which "
          "forks) when it first holds something (here: its candidate's node or its lease), "
          "and tells it \"bye\" at exit." % (
              a["startup"], a["startup"]))
        header("", ["start to elected, guardian", "without", "difference (p50)",
                    "SIGTERM to exit, guardian", "without"])
        for s, u in up.items():
            g, o = stats(x["elected_ms"] for x in u["guardian"]), stats(
                x["elected_ms"] for x in u["off"])
            ge, oe = stats(x["exit_ms"] for x in u["guardian"]), stats(
                x["exit_ms"] for x in u["off"])
            w("| %s | %s / %s | %s / %s | %+.1f | %s / %s | %s / %s |" % (
                STORE_LABEL[s], fmt(g["p50"], 1), fmt(g["p90"], 1), fmt(o["p50"], 1),
                fmt(o["p90"], 1), g["p50"] - o["p50"], fmt(ge["p50"], 1), fmt(ge["p90"], 1),
                fmt(oe["p50"], 1), fmt(oe["p90"], 1)))

    # --- checks and notes
    w("")
    w("### Checks and what was not run")
    w("")
    notes = []
    for r in run["results"]:
        name = "%s, %s, %d candidates" % (STORE_LABEL[r["store"]], LABEL[r["variant"]], r["n"])
        for e in r["errors"]:
            notes.append("%s stopped early: %s" % (name, e))
        if r.get("clock_violations"):
            notes.append("%s: %d `elected` stamps fell outside [kill, read]." % (
                name, r["clock_violations"]))
        if r.get("overlaps"):
            notes.append("%s: %d times the new leader's `elected` preceded the old leader's "
                         "`demoted`." % (name, r["overlaps"]))
        if r.get("term_violations"):
            notes.append("%s: %d terms did not grow." % (name, r["term_violations"]))
        x = summ[(r["store"], r["variant"], r["n"])]
        if r["variant"] in ("guardian", "preload") and x["guardian_lines"] < len(r["trials"]):
            notes.append("%s: the guardian printed no line in %d of %d trials." % (
                name, len(r["trials"]) - x["guardian_lines"], len(r["trials"])))
        if x.get("guardian_failed"):
            notes.append("%s: the guardian's line reported a failure in %d trials." % (
                name, x["guardian_failed"]))
    for name, why in run.get("missing", {}).items():
        notes.append("%s was not run: %s." % (LABEL.get(name, name), why))
    if not notes:
        notes.append("Every trial ended with a new leader; every `elected` stamp fell between "
                     "the kill and the harness's reading of the line; no new leader was elected "
                     "before the old one's `demoted`; SQL terms only grew; every guardian "
                     "printed its line and reported success.")
    for x in notes:
        w("- " + x)
    w("")
    w(METHOD % {"session": a["session_timeout"]})
    return "\n".join(L) + "\n"


def busy_name(cmd):
    """A short name for another session's process: its program, and the worktree it runs in."""
    prog = os.path.basename(cmd.split()[0]) if cmd.split() else "?"
    m = re.search(r"/work/([\w.-]+)", cmd)
    return "`%s`%s" % (prog, " (%s)" % m.group(1) if m else "")


def p3(st):
    if not st:
        return "–"
    return "%s / %s / %s" % (fmt(st["p50"], 1), fmt(st["p90"], 1), fmt(st["p99"], 1))


def memory_rows(run):
    rows = []
    for r in run["results"]:
        rest = r.get("rest")
        if not rest or not rest["guardians"]:
            continue
        g, c = rest["guardians"], rest["clients"]

        def col(xs, k):
            return [x.get(k) or 0 for x in xs]
        rows.append({
            "store": r["store"], "variant": r["variant"], "n": r["n"], "guardians": len(g),
            "clk_tck": rest["clk_tck"], "window_s": rest["window_s"],
            "vmrss_med": statistics.median(col(g, "VmRSS")), "vmrss_max": max(col(g, "VmRSS")),
            "pss_med": statistics.median(col(g, "smaps_Pss")),
            "pss_max": max(col(g, "smaps_Pss")),
            "private_med": statistics.median(col(g, "private_kb")),
            "private_max": max(col(g, "private_kb")),
            "ticks_sum": sum(col(g, "ticks_at_rest")),
            "voluntary_sum": sum(col(g, "voluntary_at_rest")),
            "nonvoluntary_sum": sum(col(g, "nonvoluntary_at_rest")),
            "client_ticks_sum": sum(col(c, "ticks_at_rest")),
            "client_voluntary_sum": sum(col(c, "voluntary_at_rest")),
            "client_nonvoluntary_sum": sum(col(c, "nonvoluntary_at_rest")),
            "start_ticks_med": statistics.median(col(g, "ticks_since_start")),
            "start_ticks_max": max(col(g, "ticks_since_start")),
        })
    return rows


METHOD = """### Method and limits

**What is timed.** Every candidate prints `elected <id> ... monotonic_ns=<CLOCK_MONOTONIC>` when
it becomes leader; the harness stamps the SIGKILL on the same clock just before sending it.  The
latency is the successor's stamp minus the kill's, so neither the harness's reading of pipes
nor its own scheduling counts.  The candidates and the trial loop are bench/failover.py's
(ZooKeeper: `Fleet`, `kill_leader`, `wait_quiet`) and bench/sql_failover.py's (SQL: `SqlFleet`,
`settle`; candidates log at debug level there, as in that harness).  Only one set of
candidates runs at a time; with the guardian, each candidate has one more process, its
guardian, found by its command line (`reign-guardian CLIENT_PID`).

**The guardian's line.** A guardian that acts prints one line on the stderr it inherited from
its client, ending with its own elapsed time (monotonic, from the moment it saw the death to the
end of its work); the harness reads it from the dead candidate's stderr.  "The rest" is
SIGKILL-to-elected minus that time.

**Traces.** `strace -ttt -f -p GUARDIAN` is attached to the leader's guardian before the kill
and follows the threads the ZooKeeper C client starts; its stamps are CLOCK_REALTIME, put on the
monotonic axis by reading both clocks at the kill.  strace stops the traced process at every
system call, so traced trials are slower and are not part of the tables above them; they show
the order and the relative weight of the steps.

**Memory and rest.** Read once every candidate stands, before the trials: each guardian's
VmRSS, and Pss and private pages from /proc/PID/smaps_rollup; then its CPU ticks and context
switches from /proc/PID/stat and /proc/PID/status at the start and at the end of a window with
nothing happening (no kill, no start).  A guardian waits in poll() on two descriptors with no
timeout, so any tick or switch would be a wake-up.

**The host-death case.** The guardian acts only when its client's process dies on a host that
lives on.  When the host dies, loses the network, or the process only stops (SIGSTOP, a
debugger), nothing acts: the session or lease times out exactly as before, which is what the
rows `REIGN_GUARDIAN=off` measure (a %(session)d ms session or lease here; the default is
10 s).

**Noise.** A shared 2-core virtual machine: the store's server, the harness, the candidates, and
other sessions' builds and tests compete for the CPUs, and one context switch at the wrong
moment costs milliseconds.  Percentiles are nearest-rank; read the medians and the ratios first,
and the tails knowing that."""


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Crash failover with the guardian: reign with and without it, Curator "
                    "LeaderLatch and kazoo Election on ZooKeeper; reign on SQLite, PostgreSQL "
                    "and MariaDB.")
    ap.add_argument("--stores", default=",".join(STORES),
                    help="comma-separated, of zk,sqlite,postgres,mariadb (default: all)")
    ap.add_argument("--zk-impls", default=",".join(ZK_IMPLS),
                    help="on ZooKeeper, of guardian,off,curator,kazoo (default: all)")
    ap.add_argument("--counts", default="3,50", help="candidate counts (default 3,50)")
    ap.add_argument("--trials", type=int, default=100,
                    help="SIGKILLs per set of candidates with the guardian (default 100)")
    ap.add_argument("--slow-trials", default="3=100,50=30", metavar="N=K,...",
                    help="SIGKILLs per set without it (and Curator, kazoo), by candidate count; "
                         "a count not listed gets --trials (default 3=100,50=30)")
    ap.add_argument("--session-timeout", type=int, default=2000,
                    help="ZooKeeper session timeout requested, ms (default 2000)")
    ap.add_argument("--lease-ms", type=int, default=2000, help="SQL lease, ms (default 2000)")
    ap.add_argument("--jitter-s", type=float, default=0.3,
                    help="ZooKeeper: random pause before a kill, up to this (default 0.3)")
    ap.add_argument("--settle-s", type=float, default=0.3,
                    help="SQL: pause before a kill as in bench/sql_failover.py (default 0.3)")
    ap.add_argument("--start-spread", type=float, default=1.0,
                    help="SQL: start candidates within this many poll periods (default 1)")
    ap.add_argument("--rest-s", type=float, default=60.0,
                    help="window at rest for the guardians' CPU and wake-ups (default 60; 0: "
                         "none)")
    ap.add_argument("--startup", type=int, default=30,
                    help="start/exit rounds of a sole client, with and without (default 30)")
    ap.add_argument("--death", type=int, default=50,
                    help="SIGKILLs of a sole client per store, timed until the kernel reports "
                         "its death (default 50; 0: none)")
    ap.add_argument("--trace", type=int, default=10,
                    help="traced trials per store, at the first count (default 10; 0: none)")
    ap.add_argument("--preload", action="store_true",
                    help="also, on each SQL store at the first count, an experiment: the "
                         "guardian with its store's client library loaded in advance "
                         "(LD_PRELOAD through a wrapper named by REIGN_GUARDIAN_PATH)")
    ap.add_argument("--warm-s", type=float, default=5.0,
                    help="seconds of bare ZooKeeper requests to warm the server (default 5)")
    ap.add_argument("--findings", metavar="FILE",
                    help="with --render: paragraphs (blank-line separated) to put after the "
                         "traced timeline; kept in the results file")
    ap.add_argument("--seed", type=int, default=7, help="seed of the random pauses")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 3 candidates, 5 trials (3 slow), 5 s at rest")
    bl.add_run_args(ap, section=SECTION)
    args = ap.parse_args(argv)
    if args.quick:
        args.counts, args.trials, args.slow_trials = "3", 5, "3=3"
        args.rest_s, args.startup, args.trace, args.warm_s = 5.0, 3, 2, 2.0
        args.death = 5
    args.counts = [int(x) for x in args.counts.split(",") if x]
    args.stores = [x for x in args.stores.split(",") if x]
    args.zk_impls = [x for x in args.zk_impls.split(",") if x]
    for s in args.stores:
        if s not in STORES:
            ap.error("unknown store '%s'" % s)
    for i in args.zk_impls:
        if i not in ZK_IMPLS:
            ap.error("unknown implementation '%s'" % i)
    slow = {}
    for spec in args.slow_trials.split(","):
        k, _, v = spec.partition("=")
        if not k.isdigit() or not v.isdigit():
            ap.error("--slow-trials wants N=K,..., got '%s'" % spec)
        slow[k] = int(v)
    args.slow_trials = slow
    args.slow_trials_for = lambda n: slow.get(str(n), args.trials)
    if args.trace and not subprocess.run(["which", "strace"], stdout=subprocess.DEVNULL).returncode == 0:
        log("no strace: no traced trials")
        args.trace = 0
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender_section(args, SECTION, render)
    if not args.reign or not os.access(args.reign, os.X_OK):
        raise BenchError("no reign binary (build it, or pass --reign)")
    t_start = time.monotonic()
    commit = bl.source_state(args.reign)
    workdir = bl.start_run(args, "reign-guardian-")
    rng = random.Random(args.seed)
    sampler = LoadSampler([str(ROOT), str(workdir)])
    load = {"start": os.getloadavg()}
    sampler.start()
    results, stores, missing = [], {}, {}
    try:
        for s in args.stores:
            if s == "zk":
                info, res = run_zk(args, workdir, rng, args.trace)
                missing.update(info.pop("missing", {}))
            else:
                info, res = run_sql(s, args, workdir, rng, args.trace)
            stores[s] = info
            results += res
    finally:
        sampler.stop()
    load.update(end=os.getloadavg(), samples=sampler.samples, snapshots=sampler.snapshots)
    machine = bl.machine_info(stores.get("zk", {}).get("version", "?"), commit)
    run = {
        "command": "bench/guardian.py " + " ".join(shlex.quote(x) for x in argv),
        "args": {"counts": args.counts, "stores": args.stores, "zk_impls": args.zk_impls,
                 "trials": args.trials, "slow_trials": args.slow_trials,
                 "session_timeout": args.session_timeout, "lease_ms": args.lease_ms,
                 "jitter_s": args.jitter_s, "settle_s": args.settle_s,
                 "start_spread": args.start_spread, "rest_s": args.rest_s,
                 "startup": args.startup, "trace": args.trace, "seed": args.seed,
                 "death": args.death,
                 "preload": args.preload},
        "machine": machine,
        "stores": stores,
        "missing": missing,
        "results": results,
        "load": load,
        "elapsed_s": time.monotonic() - t_start,
    }
    bl.end_run(run, args, workdir, any(r["errors"] for r in results),
               bl.section_writer(SECTION, render), t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
