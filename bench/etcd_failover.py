#!/usr/bin/python3
"""etcd_failover.py - the failover benchmark on etcd.

On one throwaway single-member etcd (scripts/etcd.sh, stopped at the end, on an error and on
Ctrl-C), with 3 and 50 candidate processes in one election, for each of:

  reign      `reign --uri etcd://...?session_timeout_ms=N campaign NAME --id X` (etcd's gRPC
             API over HTTP/2, src/etcd/), with its guardian (the default) and with REIGN_GUARDIAN=off
  etcdctl    `etcdctl elect NAME PROPOSAL` (etcd's own election, the concurrency package, over
             gRPC; its session's TTL is 60 s and etcdctl has no flag to change it)
  lock       python-etcd3's lock (bench/ref/etcd3_lock_candidate.py, Debian's python3-etcd3)

it measures:

  graceful   SIGTERM to the leader until another candidate's `elected` line; the candidates'
             own CLOCK_MONOTONIC stamps (etcdctl prints none: the moment the harness read its
             first line, which the harness also keeps for the others, so that the comparison
             with etcdctl is like for like), and the library's part (the old leader's `demoted`
             stamp to the new `elected` stamp)
  crash      SIGKILL to the leader until another candidate's `elected` line: reign with its
             guardian (it revokes the dead process's lease), reign with REIGN_GUARDIAN=off and
             2 s sessions (the lease runs out), etcdctl (its 60 s TTL: few trials), the lock
             with a 2 s TTL
  requests   per failover, as etcd counts them: grpc_server_handled_total of /metrics, summed
             over the methods, before the kill (everything standing, nothing but heartbeats
             moving) and after it (the same again), heartbeats (LeaseKeepAlive) apart
  at rest    calls and heartbeat messages per second with nothing happening
  memory     VmRSS and RssAnon of each candidate process (and of reign's guardian)

then 10,000 elections in one process on the same member (bench/many_elections.c through
many_elections.py's EtcdStore: join time, peak memory, requests per join, requests per second
at rest), and, as the house reference, reign on a throwaway ZooKeeper (scripts/zk.sh) with the
same rounds through bench/failover.py's trials (benchlib): graceful with 30 s sessions, crash
with 2 s sessions with and without the guardian.

It writes the section "## etcd" of docs/benchmarks.md and leaves the rest of the file alone.
Python stdlib only (the lock candidate needs python3-etcd3).  It measures, it never asserts:
the targets are reported next to the numbers.
"""

import argparse
import os
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log, percentile  # noqa: E402
import many_elections as me  # noqa: E402

SECTION = "## etcd"
IMPLS = ("reign", "etcdctl", "lock")
LABEL = {"reign": "reign campaign", "etcdctl": "etcdctl elect", "lock": "python-etcd3 lock",
         "zk": "reign on ZooKeeper"}
PYTHON = "/usr/bin/python3"  # Debian's, which has python3-etcd3
LOCK_CANDIDATE = bl.BENCH / "ref" / "etcd3_lock_candidate.py"
ETCDCTL_TTL_S = 60  # concurrency.NewSession's default; `etcdctl elect` has no flag for it
GUARDIAN_RE = re.compile(r"reign-guardian\[\d+\]: process (\d+) died: (.*) \(([\d.]+) ms\)")
LINE_RE = re.compile(r"^(elected|demoted|standing) (\S+)(.*)$")
# The targets of the issue (reported, not asserted).
TARGET_GRACEFUL_MS = 5.0
TARGET_VS_ETCDCTL = 2.0
TARGET_CRASH_MS = 10.0
TARGET_RSS_MB = 4.0


# ---- candidates ---------------------------------------------------------------------------------

class EtcdCandidate(bl.Candidate):
    """A candidate process of one implementation.  reign and the lock print `elected`/`demoted`
    lines with their own stamps (the lock also `standing` once its first try found the lock
    held); etcdctl prints the leader's key and its proposal when elected, and nothing else: its
    first line is its election, stamped when read."""

    LINE_RE = LINE_RE

    def __init__(self, fleet, cid, argv, err_path, impl, on_err_line=None, env=None):
        self.impl = impl
        self.standing_ns = None
        self.said = False
        super().__init__(fleet, cid, argv, err_path, on_err_line, env)

    def on_line(self, line, recv):
        if self.impl != "etcdctl":
            super().on_line(line, recv)
        elif line and not self.said:
            self.said = True
            self.fleet.events.put(bl.Event("elected", self, recv, recv, {"key": line}))

    def on_stamped(self, kind, ns, recv, fields):
        if kind == "standing":
            self.standing_ns = ns
        else:
            super().on_stamped(kind, ns, recv, fields)

    def guardian(self):
        """The pid of this candidate's guardian (reign only), or None."""
        return bl.guardians().get(self.pid)


class EtcdFleet(bl.StoreFleet):
    """N candidates of one implementation in one election on the etcd member, kept at N.
    Fleet's event handling, kill_leader() and stop() work on it; what differs is how a candidate
    is known to stand, and that quiet is etcd's /metrics standing still."""

    def __init__(self, args, etcd, impl, n, label, ttl_s, workdir, env=None, session_ms=None):
        super().__init__(args, impl, n, label, workdir, env)
        self.etcd, self.impl = etcd, impl
        self.ttl_s, self.session_ms = ttl_s, session_ms
        self.terms = impl == "reign"  # reign's `elected` lines carry a term
        self.guardian = {}       # reign: pid of a dead process -> (what its guardian did, ms)
        self.guardian_pids = set()
        self.spawned_pids = []
        base = etcd.sample()
        self.base_keys = base.gauge("etcd_debugging_mvcc_keys_total")
        self.base_watchers = base.gauge("etcd_debugging_mvcc_watcher_total")

    def argv(self, cid):
        if self.impl == "reign":
            return [self.args.reign, "--uri", "%s?session_timeout_ms=%d" % (
                self.etcd.uri, self.session_ms), "--log-level", "info", "campaign",
                self.election, "--id", cid]
        if self.impl == "etcdctl":
            return [self.args.etcdctl, "--endpoints=" + self.etcd.endpoints, "elect",
                    self.election, cid]
        return [PYTHON, str(LOCK_CANDIDATE), "--endpoint", self.etcd.connect.split(",")[0],
                "--name", self.election, "--ttl", str(self.ttl_s), "--id", cid]

    def spawn(self):
        self.serial += 1
        cid = "%s-%d-%s-%d" % (self.impl, self.n, self.label, self.serial)
        env = dict(self.env or os.environ)
        if self.impl == "etcdctl":
            env["ETCDCTL_API"] = "3"
        c = EtcdCandidate(self, cid, self.argv(cid), self.workdir / (cid + ".err"), self.impl,
                          self.on_err_line if self.impl == "reign" else None, env)
        self.cands.append(c)
        self.spawned_pids.append(c.pid)
        return c

    def on_err_line(self, cand, line, read_ns):
        """On the candidate's stderr reader thread (its guardian writes there too)."""
        if bl.READY_TEXT in line:
            self.ready[cand.id] = read_ns
            return
        m = GUARDIAN_RE.search(line)
        if m:
            self.guardian[int(m.group(1))] = (m.group(2), float(m.group(3)))

    def is_ready(self, c):
        if c is self.leader:
            return True
        if self.impl == "reign":
            return c.id in self.ready
        if self.impl == "lock":
            return c.standing_ns is not None
        return True  # etcdctl: counted by its keys

    def standing(self, n_alive, s):
        if self.leader is None or self.leader not in self.cands:
            return False
        if not all(self.is_ready(c) for c in self.cands):
            return False
        if self.impl == "etcdctl":
            # One key per candidate (its own, on its session), the dead ones' gone.
            return s.gauge("etcd_debugging_mvcc_keys_total") == self.base_keys + n_alive
        if self.impl == "lock":
            # Every waiter watches the lock's key.
            return (s.gauge("etcd_debugging_mvcc_watcher_total")
                    >= self.base_watchers + n_alive - 1)
        return True

    def wait_quiet(self, n_alive, timeout_s=120, quiet_ms=None):
        """Until every candidate stands, a live leader is known, and nothing but heartbeats
        reaches the server for quiet_ms.  Returns the last sample."""
        quiet_ms = self.args.quiet_ms if quiet_ms is None else quiet_ms
        deadline = time.monotonic() + timeout_s
        first_same, last_key = None, None
        while True:
            self.drain_alive()
            s = self.etcd.sample()
            ready = self.standing(n_alive, s)
            key = s.quiet_key()
            if ready and key == last_key:
                if first_same is None:
                    first_same = s.ns
                elif (s.ns - first_same) / 1e6 >= quiet_ms:
                    return s
            else:
                first_same = s.ns if ready else None
            last_key = key
            if time.monotonic() > deadline:
                raise BenchError(
                    "not standing and quiet after %.0f s: leader %s, %d of %d ready, keys %d "
                    "(base %d), watchers %d (base %d)" % (
                        timeout_s, self.leader.id if self.leader else None,
                        sum(self.is_ready(c) for c in self.cands), len(self.cands),
                        s.gauge("etcd_debugging_mvcc_keys_total"), self.base_keys,
                        s.gauge("etcd_debugging_mvcc_watcher_total"), self.base_watchers))
            time.sleep(self.args.poll_ms / 1000.0)

    def start(self):
        """Start all N, a batch at a time, and wait until they all stand."""
        t0 = time.monotonic()
        batch = {"reign": 25, "etcdctl": 10, "lock": 5}[self.impl]
        while len(self.cands) < self.n:
            new = [self.spawn() for _ in range(min(batch, self.n - len(self.cands)))]
            deadline = time.monotonic() + 90
            while True:
                if time.monotonic() > deadline:
                    raise BenchError("%d of %d candidates standing after 90 s, leader %s" % (
                        sum(self.is_ready(c) for c in self.cands), len(self.cands),
                        self.leader.id if self.leader else None))
                self.drain_alive(" at start")
                if self.leader is not None and all(
                        self.is_ready(c) for c in new if self.impl != "etcdctl"):
                    break
                time.sleep(0.02)
        self.wait_quiet(self.n, timeout_s=90, quiet_ms=max(self.args.quiet_ms, 500))
        return time.monotonic() - t0

    def stop(self):
        mine = set(self.spawned_pids)
        gpids = set(self.guardian_pids) | {g for c, g in bl.guardians().items() if c in mine}
        super().stop()
        # Every process this fleet started is gone, guardians included (they end with their
        # process; one that did not is named and ended here, by its pid).
        deadline = time.monotonic() + 10
        left = [p for p in gpids if bl.is_guardian(p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in left if bl.is_guardian(p)]
        for p in left:
            log("guardian %d still running after its process ended: SIGTERM" % p)
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        return left


# ---- measurements -------------------------------------------------------------------------------

def measure_rss(fleet):
    out = bl.measure_rss(fleet)
    if fleet.impl == "reign":
        g = []
        of = bl.guardians()
        for c in fleet.cands:
            p = of.get(c.pid)
            if p:
                fleet.guardian_pids.add(p)
                v = bl.status_kb(p, "VmRSS")
                if v:
                    g.append(v)
        out["guardian_vmrss_kb_median"] = statistics.median(g) if g else None
        out["guardians"] = len(g)
    return out


def measure_rest(fleet, seconds):
    """Calls and heartbeat messages per second while nothing happens."""
    fleet.wait_quiet(fleet.n)
    leader = fleet.leader
    a = fleet.etcd.sample()
    time.sleep(seconds)
    b = fleet.etcd.sample()
    fleet.drain()
    d = bl.etcd_delta(a, b)
    w = d["window_s"]
    return {"window_s": w, "all_per_s": d["all"] / w, "requests_per_s": d["requests"] / w,
            "keepalives_per_s": d["keepalives"] / w,
            "keepalive_messages_per_s": d["keepalive_messages"] / w,
            "per_candidate_per_s": (d["requests"] + d["keepalive_messages"]) / w / fleet.n,
            "by_method": d["by_method"],
            "leadership_changed": fleet.leader is not leader}


def one_trial(fleet, kind, rng, args):
    fleet.wait_quiet(fleet.n)
    # A kill at no fixed point of the heartbeats; nothing else moves meanwhile.
    time.sleep(rng.uniform(0, args.settle_s))
    fleet.drain()
    before = fleet.etcd.sample()
    limit_s = 30 if kind == "graceful" else fleet.ttl_s * 2 + 30
    guardian = fleet.leader.guardian() if fleet.impl == "reign" else None
    if guardian:
        fleet.guardian_pids.add(guardian)
    old, elected, t_kill, rc = bl.kill_leader(fleet, kind, limit_s)
    after = fleet.wait_quiet(fleet.n - 1)
    d = bl.etcd_delta(before, after)
    g = fleet.guardian.get(old.pid)
    r = {
        "latency_ms": (elected.ns - t_kill) / 1e6,
        "read_ms": (elected.recv_ns - t_kill) / 1e6,
        "handoff_ms": (elected.ns - old.demoted_ns) / 1e6 if old.demoted_ns else None,
        "requests": d["requests"], "keepalives": d["keepalives"], "all": d["all"],
        "by_method": d["by_method"], "codes": d["codes"], "started": d["started"],
        "messages": d["messages"], "proposals": d["proposals"],
        "leases_granted": d["leases_granted"], "leases_revoked": d["leases_revoked"],
        "leases_expired": d["leases_expired"], "window_s": d["window_s"],
        "since_elected_s": max(0, after.ns - elected.ns) / 1e9,
        "guardian_ms": g[1] if g else None, "guardian_said": g[0] if g else None,
        "guardian_pid": guardian,
        "exit": rc,
    }
    fleet.spawn()  # the replacement; the next wait_quiet() waits until it stands
    return r


def run_fleet(etcd, impl, n, label, ttl_s, plan, args, workdir, res, rng, env=None,
              session_ms=None):
    """One set of candidates: start, memory, then the plan's steps: ("rest",), (kind, count)."""
    ph = {"ttl_s": ttl_s, "session_ms": session_ms,
          "guardian": impl == "reign" and (env or {}).get("REIGN_GUARDIAN") != "off"}
    res["fleets"][label] = ph
    fleet = None
    try:
        fleet = EtcdFleet(args, etcd, impl, n, label, ttl_s,
                          workdir / ("%s-%d-%s" % (impl, n, label)), env, session_ms)
        log("%s n=%d %s: starting" % (impl, n, label))
        ph["start_s"] = fleet.start()
        time.sleep(1.0)  # let start-up allocations settle before reading memory
        ph["rss"] = measure_rss(fleet)
        if impl == "reign":
            ph["smaps"] = me.sqlf.smaps_by_file(fleet.cands[0].pid)
        log("%s n=%d %s: all standing after %.1f s; VmRSS median %.1f MB%s" % (
            impl, n, label, ph["start_s"], (ph["rss"]["vmrss_kb_median"] or 0) / 1024.0,
            "; guardian %.1f MB" % (ph["rss"]["guardian_vmrss_kb_median"] / 1024.0)
            if ph["rss"].get("guardian_vmrss_kb_median") else ""))
        for step in plan:
            if step[0] == "rest":
                if args.rest_s > 0:
                    ph["rest"] = measure_rest(fleet, args.rest_s)
                    log("%s n=%d at rest: %.2f calls/s (%.2f heartbeat calls, %.2f heartbeat "
                        "messages), %.3f per candidate" % (
                            impl, n, ph["rest"]["all_per_s"], ph["rest"]["keepalives_per_s"],
                            ph["rest"]["keepalive_messages_per_s"],
                            ph["rest"]["per_candidate_per_s"]))
                continue
            kind, count = step
            if count <= 0:
                continue
            key = "%s_%s" % (kind, label)
            ts = bl.run_trials(
                res, key, kind, count, args, lambda: one_trial(fleet, kind, rng, args),
                lambda i, t: "  %s %s n=%d #%d: %.2f ms (read %.2f, hand-off %s), %d requests, "
                "%d heartbeats%s" % (impl, key, n, i, t["latency_ms"], t["read_ms"],
                                     fmt(t["handoff_ms"]), t["requests"], t["keepalives"],
                                     ", guardian %.1f ms" % t["guardian_ms"]
                                     if t["guardian_ms"] else ""))
            lat = [t["latency_ms"] for t in ts]
            log("%s n=%d %s: p50 %.2f ms, p90 %.2f ms over %d; requests median %s" % (
                impl, n, key, percentile(lat, 50), percentile(lat, 90), len(lat),
                fmt(statistics.median(t["requests"] for t in ts), 1)))
    except BenchError as e:
        log("%s n=%d %s: %s" % (impl, n, label, e))
        res["errors"].append("%s: %s" % (label, e))
    finally:
        if fleet is not None:
            fleet.add_checks(res)
            left = fleet.stop()
            if left:
                res["errors"].append("%s: guardians %s outlived their processes" % (label, left))


def run_etcd(args, workdir, rng):
    """Every implementation's fleets on one member, then the many elections on it."""
    etcd = bl.Etcd(workdir / "etcd")
    results, many = [], {"samples": []}
    info = {}
    try:
        etcd.start()
        info["version"] = etcd.version()
        info["args"] = etcd.args()
        log("etcd %s at %s" % (info["version"], etcd.uri))
        for n in args.counts:
            for impl in args.impls:
                res = {"impl": impl, "n": n, "fleets": {}, "errors": [], "clock_violations": 0,
                       "overlaps": 0, "term_violations": 0}
                results.append(res)
                if impl == "reign":
                    run_fleet(etcd, impl, n, "long", args.graceful_session_ms // 1000,
                              [("rest",), ("graceful", args.graceful), ("crash", args.crash)],
                              args, workdir, res, rng, session_ms=args.graceful_session_ms)
                    run_fleet(etcd, impl, n, "short", args.session_ms // 1000,
                              [("crash", args.crash)], args, workdir, res, rng,
                              env=dict(os.environ, REIGN_GUARDIAN="off"),
                              session_ms=args.session_ms)
                elif impl == "etcdctl":
                    # Its crash trials wait for its 60 s TTL: at the smallest count only.
                    crash = args.etcdctl_crash if n == min(args.counts) else 0
                    run_fleet(etcd, impl, n, "long", ETCDCTL_TTL_S,
                              [("rest",), ("graceful", args.graceful), ("crash", crash)],
                              args, workdir, res, rng)
                else:
                    run_fleet(etcd, impl, n, "long", args.graceful_session_ms // 1000,
                              [("rest",), ("graceful", args.graceful)], args, workdir, res,
                              rng)
                    run_fleet(etcd, impl, n, "short", args.session_ms // 1000,
                              [("crash", args.crash)], args, workdir, res, rng)
        if args.many_counts and args.many_binary:
            many = run_many(etcd, args, workdir)
        elif args.many_counts:
            many["error"] = "no many-elections binary (build bench/, or pass --many-binary)"
    finally:
        etcd.stop()
    return info, results, many


def run_many(etcd, args, workdir):
    """bench/many_elections.py's runs, on this member: its EtcdStore, its one_run()."""
    store = me.EtcdStore(workdir / "many", etcd)
    (workdir / "many").mkdir(parents=True, exist_ok=True)
    store.start()
    ns = argparse.Namespace(binary=args.many_binary, no_follow=args.many_no_follow,
                            settle_s=args.many_settle_s, timeout_s=args.many_timeout_s)
    out = {"samples": [], "timeout_s": {}}
    for n in args.many_counts:
        out["timeout_s"][n] = me.phase_timeout(ns, n)
        for i in range(1, args.many_runs + 1):
            r = me.one_run(store, ns, workdir / "many", n, i, args.many_rest_s if i == 1 else 0)
            out["samples"].append(r)
            log(me.run_line(r))
            if "error" in r and "timed out" in r["error"]:
                break
    out["summary"] = me.summarize_store(out["samples"])
    return out


def run_zk(args, workdir):
    """reign on ZooKeeper, the reference: bench/failover.py's own trials and statistics, and
    its crash trials again without the guardian."""
    def without_guardian(zk, n, ns, res):
        off = bl.Impl("reign", ns, workdir)
        off.env = dict(os.environ, REIGN_GUARDIAN="off")
        res_off = {"impl": "reign", "n": n, "graceful": [], "crash": [], "errors": [],
                   "phases": {}, "clock_violations": 0, "overlaps": 0}
        if args.crash > 0:
            bl.run_phase(off, zk, n, "crash", args.crash, args.session_ms, ns,
                         workdir / "zk-runs-off", res_off)
        res["crash_off"] = res_off["crash"]
        res["errors"] += ["no guardian: " + e for e in res_off["errors"]]
        res["clock_violations"] += res_off["clock_violations"]
        res["overlaps"] += res_off["overlaps"]

    return bl.zk_reference(args, workdir, args.crash, args.session_ms,
                           args.graceful_session_ms, without_guardian)


# ---- summary ------------------------------------------------------------------------------------

def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"p50": percentile(xs, 50), "p90": percentile(xs, 90), "p99": percentile(xs, 99),
            "max": max(xs), "min": min(xs), "n": len(xs)}


def summarize(res):
    out = {}
    for key, ts in res.items():
        if not isinstance(ts, list) or not ts or not isinstance(ts[0], dict) or \
                "latency_ms" not in ts[0]:
            continue
        ts = [t for t in ts if not t.get("warmup")]
        if not ts:
            continue
        methods = sorted(set().union(*(t.get("by_method", {}) for t in ts)))
        out[key] = {
            "latency": stats(t["latency_ms"] for t in ts),
            "read": stats(t.get("read_ms") for t in ts),
            "handoff": stats(t.get("handoff_ms") for t in ts),
            "guardian": stats(t.get("guardian_ms") for t in ts),
        }
        if "by_method" in ts[0]:
            out[key].update({
                "requests": statistics.median(t["requests"] for t in ts),
                "requests_min": min(t["requests"] for t in ts),
                "requests_max": max(t["requests"] for t in ts),
                "all": statistics.median(t["all"] for t in ts),
                "proposals": statistics.median(t["proposals"] for t in ts),
                "by_method_mean": {m: sum(t["by_method"].get(m, 0) for t in ts) / len(ts)
                                   for m in methods},
                "bad_exits": sum(1 for t in ts if key.startswith("graceful")
                                 and t["exit"] != 0),
            })
    return out


def zk_summary(res):
    s = bl.summarize(res)
    off = [t for t in res.get("crash_off", []) if not t.get("warmup")]
    out = {}
    g, c = s.get("graceful"), s.get("crash")
    if g:
        out["graceful"] = {"latency": {k: g[k] for k in ("p50", "p90", "p99", "max")},
                           "handoff": {"p50": g["handoff_p50"]},
                           "requests": g["requests"], "writes": g["writes"]}
    if c:
        out["crash"] = {"latency": {k: c[k] for k in ("p50", "p90", "p99", "max")}}
    if off:
        out["crash_off"] = {"latency": stats(t["latency_ms"] for t in off)}
    out["rss"] = (res.get("phases", {}).get("graceful") or {}).get("rss")
    return out


# ---- report -------------------------------------------------------------------------------------

METHOD = """### Method (etcd)

**The member.** One etcd from `scripts/etcd.sh start DIR 1` (Debian's etcd-server, no fsync,
etcd 3.4's defaults otherwise: heartbeat 100 ms, no compaction), on loopback, used by nothing
but the run; stopped at its end.  reign speaks etcd's gRPC API (HTTP/2 through libnghttp2), as
etcdctl and python-etcd3 do, on the same port.

**Candidates.** For each implementation and count, the harness starts that many processes in a
new election, a batch at a time, and waits until every one stands (reign: its `standing in
election` log line at `--log-level info`; the lock: its `standing` line and a watcher per
waiter on the server; etcdctl: a key per candidate on the server), a leader is known, and
nothing but heartbeats reaches the server for 500 ms.  reign's first set of candidates has
30 s sessions and its guardians (the default) and serves the memory reading, the window at
rest, the graceful trials and the crash trials with the guardian; a second set with 2 s
sessions (`session_timeout_ms=2000`, etcd grants the TTL asked) and `REIGN_GUARDIAN=off` serves
the crash trials without it.  The lock: a 30 s TTL for the graceful trials, 2 s for the crash
trials.  etcdctl: one set, its session's 60 s TTL (`concurrency.NewSession`'s default, which
`etcdctl elect` does not let one change), so its crash trials each wait a minute and are few.

**A trial.** Wait until everyone stands and the server is quiet (no call but heartbeats for
300 ms), a random pause of up to `--settle-s`, a /metrics reading, SIGTERM or SIGKILL to the
leader, then another candidate's `elected` line (etcdctl: its first line), the old leader's
exit, and the server quiet again; a second reading; then a new candidate replaces the old
leader.  The latency is the `elected` line's CLOCK_MONOTONIC stamp minus the moment of the
kill; the read latency, the moment the harness read that line minus the kill (the only one
etcdctl has; it is what the ratio with etcdctl uses for both); the hand-off, the `elected`
stamp minus the old leader's `demoted` stamp.

**Requests.** `grpc_server_handled_total` of etcd's /metrics, summed over methods and codes,
between the two readings: every gRPC call the server finished in the trial (with `api=gateway`
the gateway's too: it makes a gRPC call of each HTTP request).  A stream counts when it ends: a killed
or resigned candidate's watch stream is counted, the survivors' open streams are not (their
messages are in `grpc_server_msg_received_total`, in the JSON).  LeaseKeepAlive, the session's
heartbeat, is kept apart, as ZooKeeper's pings are in the sections above: the trial's window
(kill, election, 300 ms of quiet) holds some of each candidate's heartbeats whatever happens.

**Memory.** VmRSS and RssAnon (/proc/PID/status) of each candidate process once all stand,
median; reign's guardian, a process of its own per candidate, apart.

**Many elections.** `many-elections` (bench/many_elections.c) joins N elections on one client
on the same member; bench/many_elections.py's `one_run` with its etcd store: a leader process,
then a follower of the same N; the server's calls from /metrics (heartbeats apart) per join; the
first run of each N holds both for a window at rest.  reign's default session (10 s).

**ZooKeeper.** reign on a throwaway standalone ZooKeeper (`scripts/zk.sh`), through
bench/failover.py's trials (benchlib's `run_config` and `run_phase`): the same counts and
rounds, graceful with 30 s sessions, crash with 2 s sessions with and without the guardian.

**Noise.** The machine is a shared 2-core virtual machine: etcd, the harness, every candidate
and other people's work compete for the CPUs.  Percentiles are nearest-rank; read the
medians and the ratios."""


def render(run):
    a, info = run["args"], run["machine"]
    counts, impls = a["counts"], a["impls"]
    by = {(r["impl"], r["n"]): r for r in run["results"]}
    summ = {k: summarize(v) for k, v in by.items()}
    zk = {r["n"]: zk_summary(r) for r in run.get("zk_results", [])}
    L = []
    w = L.append

    def get(impl, n, key, what, p="p50"):
        v = (summ.get((impl, n), {}).get(key) or {}).get(what)
        return v.get(p) if isinstance(v, dict) else v

    def fleet(impl, n, label):
        return by.get((impl, n), {}).get("fleets", {}).get(label, {})

    def zget(n, key, p="p50", what="latency"):
        return (((zk.get(n) or {}).get(key) or {}).get(what) or {}).get(p)

    def cols(first):
        w("")
        w("| %s | %s |" % (first, " | ".join("%d candidates" % n for n in counts)))
        w("|---|" + "---|" * len(counts))

    def pp(impl, n, key, what="latency"):
        p50, p90 = get(impl, n, key, what), get(impl, n, key, what, "p90")
        return "not run" if p50 is None else "%s / %s" % (fmt(p50), fmt(p90))

    w(SECTION)
    w("")
    w("Generated by `bench/etcd_failover.py` on %s; do not edit by hand, run it again (see "
      "`bench/README.md`).  It measures; nothing here is asserted by a test." % info["date"])
    w("")
    w("reign on etcd (docs/etcd.md) against etcd's own election (`etcdctl elect`) and "
      "python-etcd3's lock on the same member, with %s candidate processes in one election: "
      "how long an election is without a leader when its leader resigns (SIGTERM) or dies "
      "(SIGKILL), what a failover costs etcd in requests, what a candidate costs its host; "
      "many elections in one process; and reign on ZooKeeper in the same run, the house "
      "reference." % " and ".join(str(n) for n in counts))
    L += bl.command_lines(run)
    e = run.get("etcd", {})
    w("")
    w("Machine: %s, %d CPUs (`nproc`), %s RAM; %s, Linux %s.  etcd %s, one member "
      "(`scripts/etcd.sh`: no fsync, otherwise etcd 3.4's defaults), etcdctl %s, python-etcd3 "
      "%s (grpcio %s, Python %s), ZooKeeper %s (`scripts/zk.sh`), each used by nothing else, on "
      "loopback.  reign at commit %s.  Total run time %.1f min; load average (1 min) %s at the "
      "start, %s at the end." % (
          info["cpu"], info["nproc"], info["memory"], info["os"], info["kernel"],
          e.get("version", "?"), run.get("versions", {}).get("etcdctl", "?"),
          run.get("versions", {}).get("python3-etcd3", "?"),
          run.get("versions", {}).get("python3-grpcio", "?"), info["python"],
          run.get("zk_info", {}).get("version", "?"), info["commit"],
          run["elapsed_s"] / 60.0, fmt(run["loadavg"]["start"][0]),
          fmt(run["loadavg"]["end"][0])))
    w("")
    w("Trials per set of candidates: %d graceful (after %d discarded warm-up trials); %d crash "
      "with reign's guardian; %d crash without it (`REIGN_GUARDIAN=off`, %d ms sessions); %d "
      "crash for the lock (%d s TTL) and %d for etcdctl (its 60 s TTL; at %d candidates "
      "only); ZooKeeper the same rounds.  Graceful trials with %d ms sessions (reign, and "
      "the lock's TTL).  %.0f s at rest per set." % (
          a["graceful"], a["warmup"], a["crash"], a["crash"], a["session_ms"], a["crash"],
          a["session_ms"] // 1000, a["etcdctl_crash"], min(counts), a["graceful_session_ms"],
          a["rest_s"]))

    # --- targets
    w("")
    w("### Targets")
    w("")
    w("The issue's targets against the medians measured (reported, not asserted).")
    w("")
    w("| target | candidates | measured | met? |")
    w("|---|---|---|---|")
    for n in counts:
        p50 = get("reign", n, "graceful_long", "latency")
        w("| graceful p50 <= %g ms (SIGTERM to `elected`) | %d | p50 %s ms, p90 %s ms (hand-off "
          "%s ms) | %s |" % (TARGET_GRACEFUL_MS, n, fmt(p50),
                             fmt(get("reign", n, "graceful_long", "latency", "p90")),
                             fmt(get("reign", n, "graceful_long", "handoff")),
                             bl.yes(None if p50 is None else p50 <= TARGET_GRACEFUL_MS)))
    for n in counts:
        r, c = get("reign", n, "graceful_long", "read"), get("etcdctl", n, "graceful_long",
                                                             "read")
        x = c / r if r and c else None
        w("| graceful >= %gx faster than `etcdctl elect` (p50, as read) | %d | reign %s ms, "
          "etcdctl %s ms: %s | %s |" % (TARGET_VS_ETCDCTL, n, fmt(r), fmt(c),
                                        "%.2fx" % x if x else "–",
                                        bl.yes(None if x is None else x >= TARGET_VS_ETCDCTL)))
    for n in counts:
        p50 = get("reign", n, "crash_long", "latency")
        w("| crash takeover with the guardian p50 <= %g ms | %d | p50 %s ms, p90 %s ms | %s |"
          % (TARGET_CRASH_MS, n, fmt(p50), fmt(get("reign", n, "crash_long", "latency", "p90")),
             bl.yes(None if p50 is None else p50 <= TARGET_CRASH_MS)))
    rss = [(n, (fleet("reign", n, "long").get("rss") or {}).get("vmrss_kb_median"))
           for n in counts]
    rss = [(n, v / 1024.0) for n, v in rss if v]
    if rss:
        worst = max(v for _, v in rss)
        g = [(fleet("reign", n, "long").get("rss") or {}).get("guardian_vmrss_kb_median")
             for n in counts]
        g = [v / 1024.0 for v in g if v]
        w("| <= %g MB resident per `reign campaign` | %s | median VmRSS %s MB%s | %s |" % (
            TARGET_RSS_MB, "/".join(str(n) for n, _ in rss),
            "/".join("%.1f" % v for _, v in rss),
            " (its guardian, a process of its own: %.1f MB more)" % max(g) if g else "",
            bl.yes(worst <= TARGET_RSS_MB)))
    req = [(n, get("reign", n, "graceful_long", "requests"),
            get("reign", n, "crash_long", "requests")) for n in counts]
    req = [x for x in req if x[1] is not None]
    if len(req) > 1:
        flat = all(x[1] == req[0][1] for x in req) and all(
            x[2] == req[0][2] for x in req if x[2] is not None)
        w("| requests per failover flat in the number of candidates | %s | graceful %s, crash "
          "with the guardian %s (medians, heartbeats apart) | %s |" % (
              "/".join(str(x[0]) for x in req), "/".join(fmt(x[1], 1) for x in req),
              "/".join(fmt(x[2], 1) for x in req), bl.yes(flat)))

    # --- what stands out
    notes = findings(run, summ, zk, get, zget, fleet) + list(run.get("findings") or [])
    if notes:
        w("")
        w("### What stands out")
        w("")
        for f in notes:
            w("- " + f)

    # --- graceful
    w("")
    w("### Graceful handoff")
    w("")
    w("Milliseconds, p50 / p90.  SIGTERM to the next `elected` stamp; below, the same as read "
      "by the harness (etcdctl prints no stamp: its first line, read), and the hand-off, the "
      "old leader's `demoted` stamp to the new `elected` stamp (the library's part).")
    cols("SIGTERM to elected (stamp)")
    for impl in impls:
        if impl != "etcdctl":
            w("| %s | %s |" % (LABEL[impl], " | ".join(pp(impl, n, "graceful_long")
                                                      for n in counts)))
    if zk:
        w("| %s | %s |" % (LABEL["zk"], " | ".join(
            "%s / %s" % (fmt(zget(n, "graceful")), fmt(zget(n, "graceful", "p90")))
            for n in counts)))
    cols("SIGTERM to elected (read)")
    for impl in impls:
        w("| %s | %s |" % (LABEL[impl], " | ".join(pp(impl, n, "graceful_long", "read")
                                                  for n in counts)))
    if "etcdctl" in impls:
        for impl in impls:
            if impl == "etcdctl":
                continue
            w("| etcdctl : %s (p50, read) | %s |" % (LABEL[impl], " | ".join(
                bl.ratio(get("etcdctl", n, "graceful_long", "read"),
                         get(impl, n, "graceful_long", "read")) for n in counts)))
    if zk:
        w("| %s : reign on ZooKeeper (p50, stamp) | %s |" % (LABEL["reign"], " | ".join(
            bl.ratio(get("reign", n, "graceful_long", "latency"), zget(n, "graceful"))
            for n in counts)))
    cols("hand-off, demoted to elected")
    for impl in impls:
        if impl != "etcdctl":
            w("| %s | %s |" % (LABEL[impl], " | ".join(pp(impl, n, "graceful_long", "handoff")
                                                      for n in counts)))
    if zk:
        w("| %s | %s |" % (LABEL["zk"], " | ".join(
            "%s / –" % fmt(zget(n, "graceful", what="handoff")) for n in counts)))

    # --- crash
    w("")
    w("### Crash takeover")
    w("")
    w("Milliseconds from SIGKILL to the leader until another candidate's `elected` line, p50 / "
      "p90 (etcdctl: as read; its trials are few, each a 60 s TTL).")
    cols("SIGKILL to elected")
    rows = [("reign", "crash_long", "reign, guardian"),
            ("reign", "crash_short", "reign, no guardian, %d ms sessions" % a["session_ms"]),
            ("lock", "crash_short", "python-etcd3 lock, %d s TTL" % (a["session_ms"] // 1000)),
            ("etcdctl", "crash_long", "etcdctl elect, 60 s TTL")]
    for impl, key, label in rows:
        if impl in impls:
            w("| %s | %s |" % (label, " | ".join(
                pp(impl, n, key, "read" if impl == "etcdctl" else "latency") for n in counts)))
    if zk:
        w("| reign on ZooKeeper, guardian, %d ms sessions | %s |" % (a["session_ms"], " | ".join(
            "%s / %s" % (fmt(zget(n, "crash")), fmt(zget(n, "crash", "p90"))) for n in counts)))
        w("| reign on ZooKeeper, no guardian | %s |" % " | ".join(
            "%s / %s" % (fmt(zget(n, "crash_off")), fmt(zget(n, "crash_off", "p90")))
            for n in counts))
    gms = [(n, get("reign", n, "crash_long", "guardian"),
            get("reign", n, "crash_long", "guardian", "p90")) for n in counts]
    gms = [x for x in gms if x[1] is not None]
    if gms:
        w("")
        w("The guardian's own time (from its line `process P died: revoked etcd lease ... (X "
          "ms)`: from its process's death until etcd answered the revoke), p50 / p90: %s ms at "
          "%s candidates." % ("; ".join("%s / %s" % (fmt(x[1]), fmt(x[2])) for x in gms),
                              "/".join(str(x[0]) for x in gms)))

    # --- requests
    w("")
    w("### Requests per failover")
    w("")
    w("gRPC calls etcd handled (`grpc_server_handled_total`, every method but the "
      "LeaseKeepAlive heartbeat), median (min–max) per failover, and the raft proposals "
      "committed (writes, lease grants and revocations); then the mean per method.")
    cols("calls (min–max); proposals")
    for impl, key, label in [("reign", "graceful_long", "reign, graceful"),
                             ("reign", "crash_long", "reign, crash, guardian"),
                             ("reign", "crash_short", "reign, crash, no guardian"),
                             ("etcdctl", "graceful_long", "etcdctl elect, graceful"),
                             ("etcdctl", "crash_long", "etcdctl elect, crash"),
                             ("lock", "graceful_long", "python-etcd3 lock, graceful"),
                             ("lock", "crash_short", "python-etcd3 lock, crash")]:
        if impl not in impls:
            continue
        cells = []
        for n in counts:
            s = summ.get((impl, n), {}).get(key)
            cells.append("not run" if not s else "%s (%s–%s); %s" % (
                fmt(float(s["requests"]), 1), s["requests_min"], s["requests_max"],
                fmt(float(s["proposals"]), 1)))
        w("| %s | %s |" % (label, " | ".join(cells)))
    if zk:
        w("| reign on ZooKeeper, graceful (requests; writes) | %s |" % " | ".join(
            "%s; %s" % (fmt((zk[n].get("graceful") or {}).get("requests"), 1),
                        fmt((zk[n].get("graceful") or {}).get("writes"), 1))
            if zk.get(n) else "not run" for n in counts))
    w("")
    for impl, key in (("reign", "graceful_long"), ("etcdctl", "graceful_long"),
                      ("lock", "graceful_long"), ("reign", "crash_long")):
        if impl not in impls:
            continue
        parts = []
        for n in counts:
            s = summ.get((impl, n), {}).get(key)
            if s:
                parts.append("%d: %s" % (n, ", ".join(
                    "%s %.1f" % (m, v) for m, v in sorted(s["by_method_mean"].items())
                    if m != "LeaseKeepAlive" and v)))
        if parts:
            w("- %s, %s: %s." % (LABEL[impl], key.split("_")[0] if key.startswith("graceful")
                                 else "crash with the guardian", "; ".join(parts)))

    # --- at rest and memory
    w("")
    w("### At rest and memory")
    w("")
    w("Per second over %.0f s with nothing happening (30 s sessions; etcdctl 60 s): gRPC calls "
      "handled but heartbeats; heartbeat calls (a reign heartbeat, or python-etcd3's "
      "refresh, is a LeaseKeepAlive call of its own); heartbeat messages (etcdctl keeps one "
      "stream: messages only); and per candidate, calls and heartbeat messages together." %
      a["rest_s"])
    cols("calls; heartbeat calls; heartbeat messages; per candidate, /s")
    for impl in impls:
        cells = []
        for n in counts:
            r = fleet(impl, n, "long").get("rest")
            cells.append("%.2f; %.2f; %.2f; %.3f" % (
                r["requests_per_s"], r["keepalives_per_s"], r["keepalive_messages_per_s"],
                r["per_candidate_per_s"]) if r else "–")
        w("| %s | %s |" % (LABEL[impl], " | ".join(cells)))
    w("")
    w("Median VmRSS / RssAnon of a candidate process once all stand, MB; reign's guardian, a "
      "process of its own beside each candidate, in brackets.")
    cols("VmRSS / RssAnon, MB")
    for impl in impls:
        cells = []
        for n in counts:
            m = fleet(impl, n, "long").get("rss")
            if not m or not m.get("vmrss_kb_median"):
                cells.append("–")
                continue
            txt = "%.1f / %.1f" % (m["vmrss_kb_median"] / 1024.0,
                                   (m.get("rssanon_kb_median") or 0) / 1024.0)
            if m.get("guardian_vmrss_kb_median"):
                txt += " (guardian %.1f)" % (m["guardian_vmrss_kb_median"] / 1024.0)
            cells.append(txt)
        w("| %s | %s |" % (LABEL[impl], " | ".join(cells)))
    if zk:
        w("| %s | %s |" % (LABEL["zk"], " | ".join(
            "%.1f / %.1f" % (zk[n]["rss"]["vmrss_kb_median"] / 1024.0,
                             (zk[n]["rss"].get("rssanon_kb_median") or 0) / 1024.0)
            if zk.get(n) and zk[n].get("rss") else "not run" for n in counts)))

    # --- many elections
    many = run.get("many") or {}
    if many.get("samples") or many.get("error"):
        w("")
        w("### Many elections in one process")
        w("")
        w("`many-elections` (bench/many_elections.c) joins N elections on one client, as their "
          "sole candidate (leader), then a second process joins the same N behind it "
          "(follower); time from the first join to the last ELECTED (READY), peak resident "
          "memory (VmHWM), etcd's calls per join (heartbeats apart) and its raft proposals per "
          "join; then, both holding, the server's calls per second at rest (heartbeats "
          "included) over %s s.  reign's default session (10 s).  A process that has not "
          "decided within the time-out (60 s + N/1000 s) is recorded as such." % fmt(
              a.get("many_rest_s"), 0))
        if many.get("error"):
            w("")
            w("Not run: %s." % many["error"])
        w("")
        w("| N | run | leader: ms to all ELECTED | follower: ms to all READY | VmHWM, MB: leader "
          "/ follower | calls / join: leader / follower | proposals / join: leader | at rest, "
          "calls/s (heartbeat calls/s) | VmRSS at rest, MB | failures |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in many.get("samples", []):
            ld, fo, rest = r.get("leader") or {}, r.get("follower") or {}, r.get("rest") or {}
            w("| %s | %d | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s |" % (
                "{:,}".format(r["n"]), r["run"], fmt(ld.get("total_ms"), 0),
                fmt(fo.get("total_ms"), 0), fmt(me.mb(ld.get("hwm_kb")), 1),
                fmt(me.mb(fo.get("hwm_kb")), 1), fmt(ld.get("requests_per_join"), 2),
                fmt(fo.get("requests_per_join"), 2), fmt(ld.get("writes_per_join"), 2),
                "%s (%s)" % (fmt(rest.get("server_per_s"), 2), fmt(rest.get("keepalives_per_s"),
                                                                    2)) if rest else "–",
                "%s / %s" % (fmt(me.mb((rest.get("leader") or {}).get("vmrss_kb")), 1),
                             fmt(me.mb((rest.get("follower") or {}).get("vmrss_kb")), 1))
                if rest else "–", r.get("error", "")))

    # --- checks
    notes = bl.fleet_notes(impls, counts, by, summ, LABEL, "long") + bl.zk_notes(run)
    for r in many.get("samples", []):
        if r.get("error"):
            notes.append("Many elections, N = %s, run %d: %s." % ("{:,}".format(r["n"]),
                                                                   r["run"], r["error"]))
    if many.get("error"):
        notes.append("Many elections: %s." % many["error"])
    L += bl.checks_lines(notes, "No failed trial or run; no overlap of leaderships (a new "
                         "`elected` stamp before the old leader's `demoted`), every reign term "
                         "above the one before it, every `elected` stamp between the kill and "
                         "the moment the harness read it; every resigned leader exited with "
                         "status 0.")
    return bl.finish_report(L, METHOD)


def findings(run, summ, zk, get, zget, fleet):
    """What a reader should not miss, from the numbers."""
    a = run["args"]
    counts = a["counts"]
    out = []
    r = [(n, get("reign", n, "graceful_long", "read"), get("etcdctl", n, "graceful_long",
                                                            "read")) for n in counts]
    r = [x for x in r if x[1] and x[2]]
    if r:
        out.append("A graceful handoff (SIGTERM to `elected`, as read) takes reign %s ms and "
                   "`etcdctl elect` %s ms at %s candidates: etcdctl takes %s times reign's "
                   "time." % ("/".join(fmt(x[1]) for x in r), "/".join(fmt(x[2]) for x in r),
                              "/".join(str(x[0]) for x in r),
                              "/".join("%.2f" % (x[2] / x[1]) for x in r)))
    z = [(n, get("reign", n, "graceful_long", "latency"), zget(n, "graceful")) for n in counts]
    z = [x for x in z if x[1] and x[2]]
    if z:
        out.append("reign's graceful handoff is %s times its time on ZooKeeper in the same run "
                   "(p50 %s ms on etcd, %s ms on ZooKeeper, at %s candidates)." % (
                       "/".join("%.1f" % (x[1] / x[2]) for x in z),
                       "/".join(fmt(x[1]) for x in z), "/".join(fmt(x[2]) for x in z),
                       "/".join(str(x[0]) for x in z)))
    lk = [(n, summ.get(("lock", n), {}).get("graceful_long", {}).get("requests"),
           summ.get(("reign", n), {}).get("graceful_long", {}).get("requests"))
          for n in counts]
    lk = [x for x in lk if x[1] is not None]
    if len(lk) > 1:
        out.append("Calls per graceful failover: python-etcd3's lock %s at %s candidates (every "
                   "waiter wakes on the key's deletion, grants a lease and tries its txn), "
                   "reign %s." % ("/".join(fmt(x[1], 1) for x in lk),
                                  "/".join(str(x[0]) for x in lk),
                                  "/".join(fmt(x[2], 1) for x in lk)))
    rss = [(n, (fleet("reign", n, "long").get("rss") or {}).get("vmrss_kb_median"),
            ((zk.get(n) or {}).get("rss") or {}).get("vmrss_kb_median")) for n in counts]
    rss = [x for x in rss if x[1]]
    sm = fleet("reign", counts[0], "long").get("smaps") or {}
    if rss and sm:
        total = sum(v[0] for v in sm.values())
        top = sorted(sm.items(), key=lambda kv: -kv[1][0])[:8]
        text = ("A `reign campaign` process on etcd is %s MB resident (VmRSS, median, at %s "
                "candidates)" % ("/".join("%.1f" % (x[1] / 1024.0) for x in rss),
                                 "/".join(str(x[0]) for x in rss)))
        if any(x[2] for x in rss):
            text += ", the same binary on ZooKeeper %s MB" % "/".join(
                "%.1f" % (x[2] / 1024.0) for x in rss if x[2])
        text += ("; of one process's %.1f MB (/proc/PID/smaps), the largest mappings: %s "
                 "(MB resident / of it anonymous)." % (total / 1024.0, ", ".join(
                     "%s %.1f/%.1f" % (k, v[0] / 1024.0, v[1] / 1024.0) for k, v in top)))
        out.append(text)
    return out


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Failover on etcd: reign, etcdctl elect, python-etcd3's lock, and reign on "
                    "ZooKeeper as the reference; many elections on etcd.")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help="comma-separated, of %s (default: all)" % ",".join(IMPLS))
    ap.add_argument("--no-zk", action="store_true", help="leave out the ZooKeeper reference")
    ap.add_argument("--counts", default="3,50", help="candidate counts (default 3,50)")
    ap.add_argument("--graceful", type=int, default=30, help="graceful trials (default 30)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="graceful warm-up trials discarded (default 3)")
    ap.add_argument("--crash", type=int, default=15,
                    help="crash trials per kind: reign with and without the guardian, the lock, "
                         "ZooKeeper (default 15)")
    ap.add_argument("--etcdctl-crash", type=int, default=1,
                    help="crash trials of etcdctl elect, at the smallest count only: each "
                         "waits for its session's 60 s TTL (default 1)")
    ap.add_argument("--session-ms", type=int, default=2000,
                    help="reign's session and the lock's TTL for crash trials without a "
                         "guardian; ZooKeeper's crash sessions (default 2000)")
    ap.add_argument("--graceful-session-ms", type=int, default=30000,
                    help="the same for the graceful trials (default 30000: few heartbeats)")
    ap.add_argument("--rest-s", type=float, default=10.0,
                    help="window at rest per set of candidates, seconds (default 10; 0: none)")
    ap.add_argument("--settle-s", type=float, default=0.2,
                    help="a random pause of up to this before each kill (default 0.2)")
    ap.add_argument("--quiet-ms", type=int, default=300,
                    help="quiet: nothing but heartbeats for this long (default 300)")
    ap.add_argument("--poll-ms", type=int, default=30, help="how often /metrics is read")
    ap.add_argument("--many-counts", default="1000,10000",
                    help="elections in one process on etcd (default 1000,10000; '' for none)")
    ap.add_argument("--many-runs", type=int, default=1, help="runs per count (default 1)")
    ap.add_argument("--many-rest-s", type=float, default=10.0,
                    help="window at rest with both processes holding N (default 10)")
    ap.add_argument("--many-settle-s", type=float, default=3.0,
                    help="wait this long after the follower's decision (default 3)")
    ap.add_argument("--many-timeout-s", type=float, default=0,
                    help="a process must decide within this (default 60 + N/1000 s)")
    ap.add_argument("--many-no-follow", action="store_true", help="many elections: leaders only")
    ap.add_argument("--many-binary", default=me.default_binary(),
                    help="the many-elections program (default: build/bench/many-elections)")
    ap.add_argument("--etcdctl", default="etcdctl", help="the etcdctl binary")
    ap.add_argument("--built-from", metavar="REV",
                    help="the binaries were built from a clean export of REV (`git archive`), "
                         "not from the working tree: say so in the report")
    ap.add_argument("--seed", type=int, default=5, help="seed of the random pauses")
    ap.add_argument("--findings", help="a text file of paragraphs (blank-line separated) added "
                    "under 'What stands out'; kept in the JSON")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 3 candidates, few trials, 1000 elections")
    bl.add_run_args(ap, section=SECTION)
    args = ap.parse_args(argv)
    if args.quick:
        args.counts, args.graceful, args.warmup, args.crash = "3", 5, 1, 2
        args.etcdctl_crash, args.rest_s, args.many_counts = 0, 3.0, "1000"
        args.many_rest_s = 3.0
    args.counts = [int(x) for x in args.counts.split(",") if x]
    args.impls = [x for x in args.impls.split(",") if x]
    args.many_counts = [int(x) for x in args.many_counts.split(",") if x]
    for x in args.impls:
        if x not in IMPLS:
            ap.error("unknown implementation '%s'" % x)
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender_section(args, SECTION, render)
    if "reign" in args.impls and (not args.reign or not os.access(args.reign, os.X_OK)):
        raise BenchError("no reign binary (build it, or pass --reign)")
    if "lock" in args.impls and subprocess.run(
            [PYTHON, "-c", "import etcd3"], stderr=subprocess.DEVNULL).returncode != 0:
        raise BenchError("no python3-etcd3 for %s (apt-get install python3-etcd3, or "
                         "--impls reign,etcdctl)" % PYTHON)
    t_start = time.monotonic()
    commit = bl.source_state(args.reign)
    if args.built_from:
        built = commit.split("; ", 1)[1] if "; " in commit else ""
        commit = "%s, a clean export (`git archive %s`) built apart from the working tree%s" % (
            args.built_from, args.built_from, "; " + built if built else "")
    workdir = bl.start_run(args, "reign-etcd-")
    rng = random.Random(args.seed)
    load = {"start": os.getloadavg()}
    etcd_info, results, many = run_etcd(args, workdir, rng)
    zk_info, zk_results = ({}, []) if args.no_zk else run_zk(args, workdir)
    load["end"] = os.getloadavg()
    machine = bl.machine_info(zk_info.get("version", "?"), commit)
    run = {
        "command": "bench/etcd_failover.py " + " ".join(shlex.quote(x) for x in argv),
        "args": {k: getattr(args, k) for k in (
            "impls", "counts", "graceful", "warmup", "crash", "etcdctl_crash", "session_ms",
            "graceful_session_ms", "rest_s", "settle_s", "quiet_ms", "many_counts",
            "many_runs", "many_rest_s", "many_settle_s", "many_timeout_s", "seed")},
        "machine": machine,
        "versions": {"etcd-server": bl.dpkg_version("etcd-server"),
                     "etcdctl": bl.dpkg_version("etcd-client"),
                     "python3-etcd3": bl.dpkg_version("python3-etcd3"),
                     "python3-grpcio": bl.dpkg_version("python3-grpcio")},
        "etcd": etcd_info,
        "results": results,
        "many": many,
        "zk_info": zk_info,
        "zk_results": zk_results,
        "loadavg": load,
        "findings": bl.findings_of(args.findings),
        "elapsed_s": time.monotonic() - t_start,
    }
    errors = any(r["errors"] for r in results + zk_results) or any(
        "error" in s for s in many.get("samples", []))
    bl.end_run(run, args, workdir, errors, bl.section_writer(SECTION, render), t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
