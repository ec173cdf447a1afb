#!/usr/bin/python3
"""sql_failover.py - the benchmark of SQL lease elections.

For each SQL backend (a SQLite file, a throwaway MariaDB from scripts/mariadb.sh, a throwaway
PostgreSQL from scripts/pg.sh) and each number of candidates, it runs that many `reign campaign`
processes in one election and measures:

  at rest    the SQL statements each candidate sends while nothing happens (leader and followers
             apart), from the library's debug lines, checked against the server's own counter
             (MariaDB `Questions`, PostgreSQL `xact_commit`) on a server used by nothing else
  graceful   SIGTERM to the leader until another candidate's `elected` line; and the library's
             part, the old leader's `demoted` time to the new leader's `elected` time
  crash      SIGKILL to the leader until another candidate's `elected` line: with the default
             lease and the candidates' guardians (the default: the guardian releases the dead
             leader's lease at once), and with a short lease and no guardian
             (REIGN_GUARDIAN=off: a dead host's case, taken over after the lease), against
             lease + one poll period
  memory     resident memory of a `reign campaign` process

and, as the reference point, reign on ZooKeeper in the same run, through bench/failover.py's
own trials (benchlib's run_config: graceful and crash trials).  Its report is the section
"## SQL lease elections" of docs/benchmarks.md; the rest of that file is bench/failover.py's and
stays as it is.

Times come from the CLOCK_MONOTONIC stamps of the candidates' own `elected`/`demoted` lines.
Statements are counted from the debug line the library logs for each one it sends
(`sql: <op> <name> term=<n> -> <rc> (<ms> ms)`), stamped when the harness reads it.  Python
stdlib only; it measures, it never asserts: targets are reported, not checked.
"""

import argparse
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log, percentile  # noqa: E402

ROOT = bl.ROOT
SECTION = bl.OTHER_SECTIONS[0]
BACKENDS = ("sqlite", "mariadb", "postgres")
LABEL = {"sqlite": "SQLite", "mariadb": "MariaDB", "postgres": "PostgreSQL",
         "zk": "ZooKeeper (reference)"}
SCRIPT = {"mariadb": "mariadb.sh", "postgres": "pg.sh"}
# Followers are told of a release: the notice file, LISTEN/NOTIFY, MariaDB's wake-up lock.
NOTIFIES = ("sqlite", "postgres", "mariadb")

# "call" lines are the worker's calls: a session's beat ("session"), its keeper's look at the
# sessions ("session look"), a candidates row ("candidate"), a rank read before a take (the
# election's name); each counts as one statement (a SQLite look is three: BEGIN IMMEDIATE,
# SELECT, ROLLBACK, on the local file).
SQL_RE = re.compile(r"\bsql: (read|insert|take|renew|release|depose|listen|call) (.+?) "
                    r"term=(\d+) -> (-?\d+) \(([\d.]+) ms\)")
SETTINGS_RE = re.compile(r"\(lease (\d+) ms, renew every (\d+) ms, poll every (\d+) ms, "
                         r"worst-case takeover after a crash (\d+) ms\)")


# ---- the stores ---------------------------------------------------------------------------------

class Store:
    """Where the lease table lives: a SQLite file per fleet, or a throwaway server."""

    def __init__(self, kind, workdir):
        self.kind = kind
        self.dir = Path(workdir) / kind
        self.script = ROOT / "scripts" / SCRIPT[kind] if kind in SCRIPT else None
        self.base_uri = None
        self.counter_overhead = None
        self.version = None
        self.started = False

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.kind == "sqlite":
            self.version = bl.dpkg_version("libsqlite3-0")
            return
        env = dict(os.environ, REIGN_SQL_OWNER_PID=str(os.getpid()))
        self.started = True  # stop() from here on, even if start fails half-way
        r = subprocess.run(["bash", str(self.script), "start", str(self.dir / "state")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=180)
        if r.returncode != 0:
            raise BenchError("scripts/%s start failed:\n%s" % (SCRIPT[self.kind], r.stderr))
        self.base_uri = (self.dir / "state" / "uri").read_text().strip()
        self.version = self.sql("SELECT VERSION()").strip()
        # What reading the counter costs the counter itself (the admin client's statements): the
        # server runs nothing else, so two readings in a row differ by exactly that.
        a = self.counter()
        b = self.counter()
        self.counter_overhead = b - a

    def stop(self):
        if self.started:
            subprocess.run(["bash", str(self.script), "stop", str(self.dir / "state")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
            self.started = False

    def uri(self, label, params):
        """The URI for one fleet: the password by file, never on a command line."""
        q = dict(params)
        if self.kind == "sqlite":
            base = "sqlite://" + str(self.dir / (label + ".db"))
        else:
            base = self.base_uri
            q["password_file"] = str(self.dir / "state" / "password")
        return base + ("?" + "&".join("%s=%s" % kv for kv in sorted(q.items())) if q else "")

    def sql(self, query):
        r = subprocess.run(["bash", str(self.script), "sql", str(self.dir / "state"), query],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        if r.returncode != 0:
            raise BenchError("scripts/%s sql failed: %s" % (SCRIPT[self.kind], r.stderr.strip()))
        return r.stdout

    def counter(self):
        """The server's own count of statements (MariaDB) or transactions (PostgreSQL)."""
        if self.kind == "mariadb":
            out = self.sql("SHOW GLOBAL STATUS LIKE 'Questions'")
        elif self.kind == "postgres":
            out = self.sql("SELECT xact_commit FROM pg_stat_database "
                           "WHERE datname = current_database()")
        else:
            return None
        return int(out.split()[-1])


# ---- candidates ---------------------------------------------------------------------------------

class SqlFleet(bl.StoreFleet):
    """N `reign campaign` processes in one election on one SQL store, kept at N.  The event
    handling (elected/demoted lines, the leader, the terms) and stop() are benchlib's;
    what differs is how a candidate is known to stand (its READY log line, not a ZooKeeper
    node) and that every candidate's SQL statements are recorded from its debug log."""

    def __init__(self, args, store, uri, n, label, workdir, env=None):
        super().__init__(args, store.kind, n, label, workdir, env)
        self.store, self.uri = store, uri
        self.stmts = {}     # candidate id -> [(read_ns, op, rc, ms)]
        self.settings = None

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
        """On the candidate's stderr reader thread: record, never block."""
        m = SQL_RE.search(line)
        if m:
            self.stmts[cand.id].append((read_ns, m.group(1), int(m.group(4)),
                                        float(m.group(5))))
        elif bl.READY_TEXT in line:
            self.ready[cand.id] = read_ns
        elif self.settings is None:
            s = SETTINGS_RE.search(line)
            if s:
                self.settings = dict(zip(("lease_ms", "renew_ms", "poll_ms", "worst_case_ms"),
                                         (int(x) for x in s.groups())))

    def wait_settled(self, timeout_s=120):
        """Until every candidate stands and a live leader is known."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.drain_alive()
            if (self.leader is not None and self.leader in self.cands
                    and all(c.id in self.ready for c in self.cands)):
                return
            if time.monotonic() > deadline:
                raise BenchError("%d of %d candidates standing after %.0f s, leader %s" % (
                    sum(c.id in self.ready for c in self.cands), len(self.cands), timeout_s,
                    self.leader.id if self.leader else None))
            time.sleep(0.01)

    def start(self, rng, spread):
        """Starts the first candidate, learns the poll period from its log, then starts the
        others at random moments within `spread` poll periods, as independent hosts would
        start (the library itself puts each candidate's first poll at a random point of the
        period, so --start-spread 0 is a fair case too)."""
        t0 = time.monotonic()
        first = self.spawn()
        deadline = time.monotonic() + 30
        while self.settings is None:
            if time.monotonic() > deadline or not first.alive():
                raise BenchError("no settings line from %s (see %s)" % (
                    first.id, self.workdir / (first.id + ".err")))
            time.sleep(0.005)
        window = spread * self.settings["poll_ms"] / 1000.0
        t1 = time.monotonic()
        for at in sorted(rng.uniform(0, window) for _ in range(self.n - 1)):
            time.sleep(max(0.0, t1 + at - time.monotonic()))
            self.spawn()
        self.wait_settled()
        return time.monotonic() - t0

    def count(self, t0, t1, cids=None):
        """Statements read between t0 and t1 (ns), of the given candidates or all."""
        n = 0
        for cid, xs in list(self.stmts.items()):
            if cids is None or cid in cids:
                n += sum(1 for x in list(xs) if t0 <= x[0] < t1)
        return n

    def rate(self, t0, t1, cid):
        """One candidate's statements per second between t0 and t1, from the first to the last
        one in the window ((k - 1) / span), so that where the window's edges fall in a period
        does not count; None with fewer than two."""
        ts = sorted(x[0] for x in list(self.stmts.get(cid, ())) if t0 <= x[0] < t1)
        if len(ts) < 2 or ts[-1] == ts[0]:
            return None
        return (len(ts) - 1) / ((ts[-1] - ts[0]) / 1e9)

    def ops(self, t0, t1, cids=None):
        out = {}
        for cid, xs in list(self.stmts.items()):
            if cids is None or cid in cids:
                for x in list(xs):
                    if t0 <= x[0] < t1:
                        out[x[1]] = out.get(x[1], 0) + 1
        return out


# ---- measurements -------------------------------------------------------------------------------

# Libraries a `reign` process maps only because libpq and libmariadb need them (TLS, Kerberos,
# LDAP, and what those need), whatever store it uses.
TLS_AUTH_LIBS = ("libcrypto", "libssl", "libgnutls", "libp11-kit", "libkrb5", "libk5crypto",
                 "libgssapi_krb5", "libkrb5support", "libldap", "liblber", "libsasl2",
                 "libnettle", "libhogweed", "libgmp", "libtasn1", "libidn2", "libunistring",
                 "libffi", "libkeyutils", "libcom_err", "libresolv")


def smaps_by_file(pid):
    """Resident and private (anonymous) kB of a process per mapped file, from /proc/PID/smaps
    ('[anon]' for the heap, stacks and other unnamed mappings)."""
    out, cur = {}, None
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):
                    cols = line.split()
                    cur = cols[5].rsplit("/", 1)[-1] if len(cols) > 5 else "[anon]"
                    out.setdefault(cur, [0, 0])
                elif line.startswith("Rss:"):
                    out[cur][0] += int(line.split()[1])
                elif line.startswith("Anonymous:"):
                    out[cur][1] += int(line.split()[1])
    except OSError:
        pass
    return out


def settle(fleet, rng, args):
    """Everyone standing, then a pause of random length, so that a kill falls at no fixed point
    of the followers' timers.  Where followers learn of a release only by polling (MariaDB with
    wakeup=poll), the pause spans a whole poll period: a trial takes about that long, so a
    shorter pause would kill at much the same point of their polls every time."""
    fleet.wait_settled()
    spread = args.settle_s
    if fleet.store.kind not in NOTIFIES or "wakeup=poll" in fleet.uri:
        spread = fleet.settings["poll_ms"] / 1000.0
    time.sleep(args.settle_s + rng.uniform(0, spread))
    fleet.drain()


def measure_rest(fleet, seconds):
    """Statements per second per candidate while nothing happens, and the server's count."""
    fleet.wait_settled()
    time.sleep(2.0)  # the newest candidates' first reads are not rest
    fleet.drain()
    leader = fleet.leader
    c0 = fleet.store.counter()
    t0 = time.monotonic_ns()
    time.sleep(seconds)
    t1 = time.monotonic_ns()
    c1 = fleet.store.counter()
    fleet.drain()
    window = (t1 - t0) / 1e9
    changed = fleet.leader is not leader or any(not c.alive() for c in fleet.cands)
    followers = [c.id for c in fleet.cands if c is not leader]
    per_follower = [fleet.rate(t0, t1, cid) for cid in followers]
    per_follower = [r for r in per_follower if r is not None]
    total = fleet.count(t0, t1)
    out = {
        "window_s": window,
        "leader_per_s": fleet.rate(t0, t1, leader.id),
        "follower_per_s_median": statistics.median(per_follower) if per_follower else None,
        "follower_per_s_max": max(per_follower) if per_follower else None,
        "follower_per_s_min": min(per_follower) if per_follower else None,
        "total_per_s": total / window,
        "leader_ops": fleet.ops(t0, t1, {leader.id}),
        "follower_ops": fleet.ops(t0, t1, set(followers)),
        "lines": total,
        "leadership_changed": changed,
    }
    if c0 is not None:
        out["server_count"] = c1 - c0 - fleet.store.counter_overhead
    return out


def last_claim_ns(fleet, cid, before_ns):
    """When the harness read the last successful insert/take/renew of candidate cid: the lease
    it holds runs out a lease after the statement ran, which was no later than that."""
    ts = [x[0] for x in list(fleet.stmts.get(cid, ()))
          if x[0] < before_ns and x[1] in ("insert", "take", "renew") and x[2] == 1]
    return max(ts) if ts else None


def sql_trial(fleet, kind, rng, args):
    settle(fleet, rng, args)
    lease_ms = fleet.settings["lease_ms"]
    limit_s = 30 if kind == "graceful" else lease_ms / 1000.0 * 3 + 30
    old_id = fleet.leader.id
    old, elected, t_kill, rc = bl.kill_leader(fleet, kind, limit_s)
    claimed = last_claim_ns(fleet, old_id, t_kill)
    # Statements the failover cost: from the kill until a moment after the election, when the
    # losers of the race have looked again.  (At rest, the same window holds a few polls.)
    time.sleep(max(0.0, (elected.recv_ns + int(args.tail_s * 1e9) - time.monotonic_ns()) / 1e9))
    t_end = time.monotonic_ns()
    r = {
        "latency_ms": (elected.ns - t_kill) / 1e6,
        "handoff_ms": (elected.ns - old.demoted_ns) / 1e6 if old.demoted_ns else None,
        "after_lease_ms": (elected.ns - claimed - lease_ms * 1_000_000) / 1e6
        if claimed and kind == "crash" else None,
        "statements": fleet.count(t_kill, t_end),
        "ops": fleet.ops(t_kill, t_end),
        "window_ms": (t_end - t_kill) / 1e6,
        "exit": rc,
    }
    fleet.spawn()  # the replacement; the next settle() waits until it stands
    return r


def op_latencies(fleet):
    """p50 of each kind of statement, as the library timed it, over the fleet's life."""
    by = {}
    for xs in list(fleet.stmts.values()):
        for x in list(xs):
            by.setdefault(x[1], []).append(x[3])
    return {op: {"p50": percentile(v, 50), "p90": percentile(v, 90), "n": len(v)}
            for op, v in by.items()}


def run_fleet(store, n, label, params, plan, args, workdir, res, rng, env=None):
    """One fleet: start, then the phases in plan: ("rest",), ("graceful", k), ("crash", k)."""
    fleet = SqlFleet(args, store, store.uri("%d-%s" % (n, label), params), n, label,
                     workdir / ("%s-%d-%s" % (store.kind, n, label)), env)
    ph = {"params": params}
    res["fleets"][label] = ph
    try:
        ph["start_s"] = fleet.start(rng, args.start_spread)
        ph["settings"] = fleet.settings
        time.sleep(1.0)
        ph["rss"] = bl.measure_rss(fleet)
        ph["smaps"] = smaps_by_file(fleet.cands[0].pid)
        log("%s n=%d %s: all standing after %.2f s (%s); VmRSS median %.1f MB" % (
            store.kind, n, label, ph["start_s"], fleet.settings,
            (ph["rss"]["vmrss_kb_median"] or 0) / 1024.0))
        for step in plan:
            if step[0] == "rest":
                ph["rest"] = measure_rest(fleet, args.rest_s)
                r = ph["rest"]
                log("%s n=%d at rest: leader %.2f/s, followers median %.2f/s (max %.2f), "
                    "total %.2f/s, server %s over %.0f s" % (
                        store.kind, n, r["leader_per_s"] or 0, r["follower_per_s_median"] or 0,
                        r["follower_per_s_max"] or 0, r["total_per_s"],
                        r.get("server_count", "-"), r["window_s"]))
                continue
            kind, count = step
            key = "%s_%s" % (kind, label)
            ts = bl.run_trials(
                res, key, kind, count, args, lambda: sql_trial(fleet, kind, rng, args),
                lambda i, t: "  %s %s n=%d #%d: %.2f ms (hand-off %s ms, %s after the lease), "
                "%d statements" % (store.kind, key, n, i, t["latency_ms"], fmt(t["handoff_ms"]),
                                   fmt(t["after_lease_ms"]), t["statements"]))
            lat = [t["latency_ms"] for t in ts]
            hand = [t["handoff_ms"] for t in ts if t["handoff_ms"]]
            log("%s n=%d %s: p50 %.2f ms, max %.2f ms over %d%s" % (
                store.kind, n, key, percentile(lat, 50), max(lat), len(lat),
                "; hand-off p50 %.2f ms" % percentile(hand, 50) if hand else ""))
        ph["op_ms"] = op_latencies(fleet)
    except BenchError as e:
        log("%s n=%d %s: %s" % (store.kind, n, label, e))
        res["errors"].append("%s: %s" % (label, e))
    finally:
        fleet.add_checks(res)
        fleet.stop()


def run_backend(kind, args, workdir, rng):
    store = Store(kind, workdir)
    results = []
    try:
        store.start()
        log("%s: %s%s" % (kind, store.version, ", " + store.base_uri if store.base_uri else ""))
        for n in args.counts:
            res = {"backend": kind, "n": n, "fleets": {}, "errors": [], "clock_violations": 0,
                   "overlaps": 0, "term_violations": 0}
            results.append(res)
            run_fleet(store, n, "default", {},
                      [("rest",), ("graceful", args.graceful), ("crash", args.crash)],
                      args, workdir, res, rng)
            if args.crash_short:
                run_fleet(store, n, "short", {"lease_ms": args.short_lease},
                          [("crash", args.crash_short)], args, workdir, res, rng,
                          env=dict(os.environ, REIGN_GUARDIAN="off"))
    finally:
        store.stop()
    return {"version": store.version, "counter_overhead": store.counter_overhead}, results


def run_zk(args, workdir):
    """reign on ZooKeeper, the reference: bench/failover.py's own trials and statistics."""
    return bl.zk_reference(args, workdir, args.zk_crash, args.short_lease, 30000)


# ---- report -------------------------------------------------------------------------------------

def trials(res, key):
    return [t for t in res.get(key, []) if not t["warmup"]]


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return {}
    return {"p50": percentile(xs, 50), "p90": percentile(xs, 90), "p99": percentile(xs, 99),
            "max": max(xs), "n": len(xs)}


def summarize(res):
    out = {}
    for key in ("graceful_default", "crash_default", "crash_short"):
        ts = trials(res, key)
        if ts:
            out[key] = {"latency": stats(t["latency_ms"] for t in ts),
                        "handoff": stats(t["handoff_ms"] for t in ts),
                        "after_lease": stats(t["after_lease_ms"] for t in ts),
                        "statements": statistics.median(t["statements"] for t in ts),
                        "ops_mean": {op: sum(t["ops"].get(op, 0) for t in ts) / len(ts)
                                     for op in sorted(set().union(*(t["ops"] for t in ts)))},
                        "bad_exits": sum(1 for t in ts if key.startswith("graceful")
                                         and t["exit"] != 0)}
    return out


def zk_summary(res):
    s = bl.summarize(res)
    g, c = s.get("graceful", {}), s.get("crash", {})
    return {"graceful_default": {"latency": {k: g.get(k) for k in ("p50", "p90", "p99", "max")},
                                 "handoff": {"p50": g.get("handoff_p50"),
                                             "p99": g.get("handoff_p99")}} if g else None,
            "crash_short": {"latency": {k: c.get(k) for k in ("p50", "p90", "p99", "max")}}
            if c else None,
            "rss": (res.get("phases", {}).get("graceful") or {}).get("rss")}


def render(run):
    a, info = run["args"], run["machine"]
    counts = a["counts"]
    backends = [b for b in a["backends"] if b in BACKENDS]
    by = {(r["backend"], r["n"]): r for r in run["results"]}
    summ = {k: summarize(v) for k, v in by.items()}
    zk = {r["n"]: zk_summary(r) for r in run.get("zk_results", [])}
    L = []
    w = L.append

    def get(b, n, key, what, p):
        v = summ.get((b, n), {}).get(key, {}).get(what, {})
        return v.get(p) if isinstance(v, dict) else None

    def fleet(b, n, label):
        return by.get((b, n), {}).get("fleets", {}).get(label, {})

    def settings(b, n, label):
        return fleet(b, n, label).get("settings") or {}

    def zget(n, key, what, p):
        return ((zk.get(n) or {}).get(key) or {}).get(what, {}).get(p)

    def header(first):
        w("")
        w("| " + first + " | " + " | ".join("%d candidates" % n for n in counts) + " |")
        w("|---|" + "---|" * len(counts))

    w(SECTION)
    w("")
    w("Generated by `bench/sql_failover.py` on %s; do not edit by hand, run it again (see "
      "`bench/README.md`).  It measures; nothing here is asserted by a test." % info["date"])
    w("")
    w("SQL lease elections (docs/sql-leases.md) on each store, with %s candidate processes "
      "(`reign campaign`) in one election: how long an election is without a leader when its "
      "leader resigns (SIGTERM) or dies (SIGKILL), how many SQL statements a candidate sends "
      "when nothing happens, and what a candidate process costs in memory; reign on ZooKeeper "
      "in the same run is the reference." % " and ".join(str(n) for n in counts))
    L += bl.command_lines(run)
    sv = run.get("stores", {})
    w("")
    w("Machine: %s, %d CPUs (`nproc`), %s RAM; %s, Linux %s.  Stores: SQLite %s (a file on the "
      "local disk, one per set of candidates), MariaDB %s (`scripts/mariadb.sh`), PostgreSQL "
      "%s (`scripts/pg.sh`: fsync off, synchronous_commit on), ZooKeeper %s (`scripts/zk.sh`), "
      "each started for its own part of the run and used by nothing else, on loopback.  reign "
      "at commit %s.  Total run time %.1f min; load average (1 min) %s at the start, %s at the "
      "end." % (
          info["cpu"], info["nproc"], info["memory"], info["os"], info["kernel"],
          sv.get("sqlite", {}).get("version", "?"), sv.get("mariadb", {}).get("version", "?"),
          short_version(sv.get("postgres", {}).get("version", "?")),
          sv.get("zk", {}).get("version", "?"),
          info["commit"], run["elapsed_s"] / 60.0, fmt(run["loadavg"]["start"][0]),
          fmt(run["loadavg"]["end"][0])))
    s0 = next((settings(b, n, "default") for b in backends for n in counts
               if settings(b, n, "default")), {})
    s1 = next((settings(b, n, "short") for b in backends for n in counts
               if settings(b, n, "short")), {})
    w("")
    w("Lease settings, as the candidates reported them: default lease %s ms (renew every %s ms, "
      "followers poll every %s ms); short lease `lease_ms=%s` (renew %s ms, poll %s ms, the "
      "defaults that follow from it).  Trials per set of candidates: %d graceful (after %d "
      "discarded warm-up trials) and %d crash with the default lease, the candidates' guardians "
      "on (the default); %d crash with the short lease and no guardians (`REIGN_GUARDIAN=off`); "
      "%.0f s at rest.  Candidates started within %s poll period(s) of each other.  "
      "ZooKeeper: the same graceful trials with 30 s sessions, %d crash trials with %d ms "
      "sessions." % (
          s0.get("lease_ms", "?"), s0.get("renew_ms", "?"), s0.get("poll_ms", "?"),
          s1.get("lease_ms", "?"), s1.get("renew_ms", "?"), s1.get("poll_ms", "?"),
          a["graceful"], a["warmup"], a["crash"], a["crash_short"], a["rest_s"],
          fmt(a.get("start_spread", 0.0), 1), a["zk_crash"], a["short_lease"]))

    # --- targets
    w("")
    w("### Targets")
    w("")
    w("The SQL stores' targets against the medians measured (reported, not asserted).")
    w("")
    w("| target | store | candidates | measured | met? |")
    w("|---|---|---|---|---|")
    for b in backends:
        for n in counts:
            p50 = get(b, n, "graceful_default", "handoff", "p50")
            lim, text = 10, "graceful hand-off p50 <= 10 ms"
            ok = None if p50 is None else p50 <= lim
            w("| %s | %s | %d | p50 %s ms (SIGTERM to elected: p50 %s ms) | %s |" % (
                text, LABEL[b], n, fmt(p50),
                fmt(get(b, n, "graceful_default", "latency", "p50")), bl.yes(ok)))
    for b in backends:
        for n in counts:
            p50 = get(b, n, "crash_default", "latency", "p50")
            if p50 is not None:
                w("| crash takeover, guardian, p50 <= 10 ms | %s | %d | p50 %s ms, p99 %s ms, "
                  "max %s ms | %s |" % (LABEL[b], n, fmt(p50),
                                        fmt(get(b, n, "crash_default", "latency", "p99")),
                                        fmt(get(b, n, "crash_default", "latency", "max")),
                                        bl.yes(p50 <= 10)))
    for label in ("short",):
        for b in backends:
            for n in counts:
                st = settings(b, n, label)
                key = "crash_" + label
                p50 = get(b, n, key, "latency", "p50")
                mx = get(b, n, key, "latency", "max")
                if not st or p50 is None:
                    continue
                lim = st["lease_ms"] + st["poll_ms"]
                w("| crash takeover, no guardian, <= lease + one poll (%d + %d ms) | %s | %d | "
                  "p50 %s ms, max %s ms | %s |" % (st["lease_ms"], st["poll_ms"], LABEL[b], n, fmt(p50, 0),
                                    fmt(mx, 0), bl.yes(mx <= lim) if p50 <= lim else bl.yes(False)))
    for b in backends:
        for n in counts:
            r = fleet(b, n, "default").get("rest")
            st = settings(b, n, "default")
            if not r or not st:
                continue
            lead = (r["leader_per_s"] or 0) * st["renew_ms"] / 1000.0
            fol = (r["follower_per_s_max"] or 0) * st["poll_ms"] / 1000.0
            # The server's count holds what the library's lease lines do not (the listing).
            srv = (r["server_count"] / r["window_s"] / n * st["renew_ms"] / 1000.0
                   if "server_count" in r else None)
            w("| at rest <= 1 statement per candidate per renew/poll period | %s | %d | leader "
              "%.2f per renew period, followers %.2f per poll period (the busiest; median %.2f)%s "
              "| %s |" % (LABEL[b], n, lead, fol,
                          (r["follower_per_s_median"] or 0) * st["poll_ms"] / 1000.0,
                          "; the server counted %.2f per candidate per period" % srv
                          if srv is not None else "",
                          bl.yes(lead <= 1.02 and fol <= 1.02 and (srv is None or srv <= 1.02))))
    w("")
    w("Crash takeover without a guardian is met when the median and the maximum are within the "
      "bound.  At rest, "
      "each candidate's rate is its statements in the window from its first to its last, "
      "(k - 1) / span, times the period; up to 2% over one is taken as one (timers fire a "
      "little late, never early).")

    # --- what stands out
    w("")
    w("### What stands out")
    w("")
    for f in findings(backends, counts, summ, fleet, settings, zk, get, zget,
                      run.get("zk_report_rss")):
        w("- " + f)

    # --- graceful
    w("")
    w("### Graceful hand-off")
    w("")
    w("Milliseconds from the old leader's `demoted ... reason=resigned` stamp to the new "
      "leader's `elected` stamp, p50 / p90 / p99 (the library's part: release, notification or "
      "poll, read, take), and below it the whole failover from the SIGTERM sent, p50 / p90 / "
      "p99.  ZooKeeper: the same trials by bench/failover.py (which keeps no p90 of the hand-off).")
    header("hand-off (demoted to elected)")
    for b in backends:
        w("| %s | %s |" % (LABEL[b], " | ".join(" / ".join(
            fmt(get(b, n, "graceful_default", "handoff", p)) for p in ("p50", "p90", "p99"))
            for n in counts)))
    if zk:
        w("| %s | %s |" % (LABEL["zk"], " | ".join(
            "%s / – / %s" % (fmt(zget(n, "graceful_default", "handoff", "p50")),
                             fmt(zget(n, "graceful_default", "handoff", "p99")))
            for n in counts)))
    header("SIGTERM to elected")
    for b in backends:
        w("| %s | %s |" % (LABEL[b], " | ".join(" / ".join(
            fmt(get(b, n, "graceful_default", "latency", p)) for p in ("p50", "p90", "p99"))
            for n in counts)))
    if zk:
        w("| %s | %s |" % (LABEL["zk"], " | ".join(" / ".join(
            fmt(zget(n, "graceful_default", "latency", p)) for p in ("p50", "p90", "p99"))
            for n in counts)))
        for b in backends:
            w("| %s : ZooKeeper (p50) | %s |" % (LABEL[b], " | ".join(
                bl.ratio(get(b, n, "graceful_default", "latency", "p50"),
                         zget(n, "graceful_default", "latency", "p50")) for n in counts)))
    w("")
    w("SQL statements per graceful failover (median, all candidates, from the SIGTERM to "
      "%.0f ms after the election; the new candidate that replaces the old leader is not "
      "counted):" % (a["tail_s"] * 1000) + " " + "; ".join(
          "%s %s" % (LABEL[b], "/".join(fmt(get2, 0) for get2 in (
              summ.get((b, n), {}).get("graceful_default", {}).get("statements")
              for n in counts))) for b in backends) + " (at %s candidates)." % "/".join(
        str(n) for n in counts))

    # --- crash
    w("")
    w("### Crash takeover")
    w("")
    w("Milliseconds from SIGKILL to the leader until another candidate's `elected` line.  With "
      "the guardians (the default; default lease): p50 / p90 / p99, the dead leader's guardian "
      "releasing its lease.  Without them (`REIGN_GUARDIAN=off`, a dead host's case; short "
      "lease): p50 / max, the bound lease + one poll period, and the new leader's `elected` "
      "stamp minus (the moment the harness read the dead leader's last successful renewal + the "
      "lease), p50: roughly how long after the lease ran out the takeover came (a little more "
      "than that, as the renewal ran before its log line was read).")
    for label in ("default", "short"):
        key = "crash_" + label
        if label == "short" and zk:
            # ZooKeeper's crash trials run with the guardian: they belong with the first table.
            w("| %s, %d ms sessions | %s |" % (LABEL["zk"], a["short_lease"], " | ".join(
                "%s / – / %s" % (fmt(zget(n, "crash_short", "latency", "p50")),
                                 fmt(zget(n, "crash_short", "latency", "max")))
                for n in counts)))
        header("guardian, default lease" if label == "default" else "no guardian, short lease")
        for b in backends:
            cells = []
            for n in counts:
                st = settings(b, n, label)
                p50 = get(b, n, key, "latency", "p50")
                if p50 is None or not st:
                    cells.append("not run")
                elif label == "default":
                    cells.append(" / ".join(fmt(get(b, n, key, "latency", p))
                                            for p in ("p50", "p90", "p99")))
                else:
                    cells.append("%s / %s (bound %d); +%s after the lease" % (
                        fmt(p50, 0), fmt(get(b, n, key, "latency", "max"), 0),
                        st["lease_ms"] + st["poll_ms"],
                        fmt(get(b, n, key, "after_lease", "p50"), 0)))
            w("| %s | %s |" % (LABEL[b], " | ".join(cells)))

    # --- at rest
    w("")
    w("### Statements at rest")
    w("")
    w("SQL statements per second with nothing happening, over %.0f s with the default lease: "
      "the leader's; the followers' median and busiest (each one's own rate); the whole "
      "election's, from the debug lines; and the server's own count over the same window "
      "(MariaDB `Questions`, PostgreSQL `xact_commit` of the database, less what reading them "
      "costs), per second.  The target, one statement per candidate per period, is %s per "
      "second with these settings." % (
          a["rest_s"], fmt(1000.0 / s0["renew_ms"]) if s0.get("renew_ms") else "?"))
    header("leader; followers median (busiest); election; server")
    for b in backends:
        cells = []
        for n in counts:
            r = fleet(b, n, "default").get("rest")
            if not r:
                cells.append("not run")
                continue
            srv = ("%.2f" % (r["server_count"] / r["window_s"])) if "server_count" in r else "–"
            cells.append("%.2f; %.2f (%.2f); %.2f; %s" % (
                r["leader_per_s"] or 0, r["follower_per_s_median"] or 0,
                r["follower_per_s_max"] or 0,
                r["total_per_s"], srv))
        w("| %s | %s |" % (LABEL[b], " | ".join(cells)))
    w("")
    parts = []
    for b in backends:
        cells = []
        for n in counts:
            cells.append(fmt(per_renewal(fleet(b, n, "default").get("rest"))))
        parts.append("%s %s" % (LABEL[b], "/".join(cells)))
    w("Follower statements per leader renewal at rest (the followers' median rate / the leader's "
      "rate), at %s candidates: %s.  One follower statement per "
      "renewal is one per poll period with these settings (a session's beat or its keeper's "
      "look); no store tells of renewals." % (
          "/".join(str(n) for n in counts), "; ".join(parts)))
    w("")
    w("What the followers sent at rest, by kind (all followers, whole window): " + "; ".join(
        "%s %s" % (LABEL[b], ", ".join(
            "%d: %s" % (n, " ".join("%s %d" % kv for kv in sorted(
                (fleet(b, n, "default").get("rest") or {}).get("follower_ops", {}).items())))
            for n in counts)) for b in backends) + ".")

    # --- memory and statement times
    w("")
    w("### Memory and statement times")
    w("")
    w("Median VmRSS / RssAnon of a `reign campaign` process, MB (once all candidates stand, "
      "default lease), and the median time of one statement as the library logged it (read / "
      "take / renew / release, ms, over the whole default-lease run).")
    header("VmRSS / RssAnon; read / take / renew / release")
    for b in backends:
        cells = []
        for n in counts:
            f = fleet(b, n, "default")
            r, om = f.get("rss"), f.get("op_ms", {})
            if not r:
                cells.append("not run")
                continue
            cells.append("%.1f / %.1f; %s" % (
                r["vmrss_kb_median"] / 1024.0, (r["rssanon_kb_median"] or 0) / 1024.0,
                " / ".join(fmt((om.get(op) or {}).get("p50")) for op in
                           ("read", "take", "renew", "release"))))
        w("| %s | %s |" % (LABEL[b], " | ".join(cells)))
    if zk:
        w("| %s | %s |" % ("ZooKeeper (same binary)", " | ".join(
            "%.1f / %.1f; –" % (zk[n]["rss"]["vmrss_kb_median"] / 1024.0,
                                (zk[n]["rss"]["rssanon_kb_median"] or 0) / 1024.0)
            if zk.get(n) and zk[n].get("rss") else "not run" for n in counts)))

    libs = run.get("shared_libraries")
    if libs:
        w("")
        w("The `reign` binary measured loads %d shared libraries (`ldd`), whatever the store: "
          "%s." % (len(libs), ", ".join("`%s`" % x for x in libs)))

    # --- what went wrong
    notes = (bl.fleet_notes(backends, counts, by, summ, LABEL, "default") +
             bl.zk_notes(run, " (see bench/failover.py)"))
    L += bl.checks_lines(notes, "No failed trial; no overlap of leaderships (a new `elected` "
                         "stamp before the old leader's `demoted`), every term above the one "
                         "before it, every `elected` stamp between the kill and the moment the "
                         "harness read it; every resigned leader exited with status 0.")
    return bl.finish_report(L, METHOD)


def per_renewal(rest):
    """A follower's statements per leader renewal at rest (median follower rate / leader rate)."""
    if not rest or not rest.get("leader_per_s") or rest.get("follower_per_s_median") is None:
        return None
    return rest["follower_per_s_median"] / rest["leader_per_s"]


def short_version(v):
    """'PostgreSQL 15.20 (Debian ...) on x86_64-pc-linux-gnu, compiled by ...' -> '15.20 (...)'."""
    v = v.split(" on ")[0]
    return v[len("PostgreSQL "):] if v.startswith("PostgreSQL ") else v


def zk_report_rss():
    """reign's resident memory in the committed ZooKeeper report (bench/results/failover.json),
    MB, and when that run was made; None if there is none.  A run keeps what it found in its
    JSON, so that --render compares with the same report."""
    try:
        old = json.loads((ROOT / "bench" / "results" / "failover.json").read_text())
    except (OSError, ValueError):
        return None
    for r in old.get("results", []):
        rss = (r.get("phases", {}).get("graceful") or {}).get("rss") or {}
        if r.get("impl") == "reign" and rss.get("vmrss_kb_median"):
            m = old.get("machine", {})
            return (rss["vmrss_kb_median"] / 1024.0, (rss.get("rssanon_kb_median") or 0) / 1024.0,
                    "%s, reign at commit %s" % (m.get("date", "?"),
                                                m.get("commit", "?").split()[0].rstrip(";")))
    return None


def findings(backends, counts, summ, fleet, settings, zk, get, zget, old):
    """What a reader should not miss, from the numbers (the causes named were diagnosed on the
    build measured, see the text)."""
    out = []
    for b in backends:
        per = []
        for n in counts:
            x = per_renewal(fleet(b, n, "default").get("rest"))
            if x is not None:
                per.append((n, x))
        worst = max((x for _, x in per), default=0)
        if worst <= 1.02:
            continue
        text = ("%s misses the at-rest target: a follower sends %s statements per leader renewal "
                "(at %s candidates), where one read per poll period was the aim." % (
                    LABEL[b], "/".join("%.2f" % x for _, x in per),
                    "/".join(str(n) for n, _ in per)))
        text += (" A follower sends its own session's beat and its keeper's look at the "
                 "leader's session, one each per period, where the leader sends its beat alone: "
                 "the look cannot ride on the beat in one statement on every store.")
        out.append(text)
    srv = []
    for b in backends:
        for n in counts:
            r, st = fleet(b, n, "default").get("rest"), settings(b, n, "default")
            if r and st and "server_count" in r:
                srv.append((LABEL[b], n, r["server_count"] / r["window_s"] / n,
                            r["total_per_s"] / n))
    if srv:
        out.append(
            "At rest a candidate sends its session's beat every renew period and, while it "
            "follows a lease held in another's session, its keeper's look every poll period; "
            "listed (the row `reign status` and designation read, `<table>_candidates`), its "
            "row lives in its session and costs nothing more (%s per candidate a second, "
            "server / library lines).  No store tells of a beat: SQLite's followers hear only "
            "the notices reign's writers append beside the file." % (
                ", ".join("%s %d: %.2f / %.2f" % x for x in srv) or "-"))
    mg = [(n, get("mariadb", n, "graceful_default", "handoff", "p50"),
           get("mariadb", n, "crash_default", "latency", "p50")) for n in counts]
    mg = [x for x in mg if x[1] is not None]
    if mg:
        out.append(
            "MariaDB has no notification; its followers wait for the named lock their leader "
            "holds (`GET_LOCK`, docs/sql-leases.md) and are woken when the leader gives it "
            "back after its release, or when the server ends a killed leader's session: "
            "graceful hand-off p50 %s ms, crash takeover with the guardian p50 %s ms (at %s "
            "candidates), where a follower's next poll (up to one poll period) was the bound "
            "before (p50 96 to 794 ms on the graceful hand-off, 2 s poll period)." % (
                "/".join(fmt(x[1]) for x in mg), "/".join(fmt(x[2]) for x in mg),
                "/".join(str(x[0]) for x in mg)))
    n = counts[-1]
    herd = []
    for b in backends:
        g = summ.get((b, n), {}).get("graceful_default")
        if g and g.get("ops_mean"):
            herd.append("%s %.0f (%s)" % (LABEL[b], g["statements"], ", ".join(
                "%.1f %ss" % (v, op) for op, v in sorted(g["ops_mean"].items()))))
    if herd and n > 3:
        out.append("A release wakes every follower: each tries to take the lease it saw at "
                   "once, the one whose take lands leads, the others read again.  Statements per graceful failover with %d "
                   "candidates, median (mean per kind): %s." % (n, "; ".join(herd)))
    lag = [get(b, n, "crash_short", "after_lease", "p50") for b in backends for n in counts]
    lag = [x for x in lag if x is not None]
    if lag:
        out.append("Without a guardian, takeover comes once the dead leader's session has run "
                   "out (p50 %.0f to %.0f ms after the lease ran out by the database's clock): "
                   "a follower's keeper that has seen the session's beat stand still for a whole "
                   "lease reaps it at its next look, and the followers read and take, so every "
                   "takeover was within lease + one poll." % (min(lag), max(lag)))
    ratios = []
    for b in ("sqlite", "postgres"):
        for n in counts:
            a_, z_ = (get(b, n, "graceful_default", "latency", "p50"),
                      zget(n, "graceful_default", "latency", "p50"))
            if a_ and z_:
                ratios.append(a_ / z_)
    if ratios:
        out.append("On SQLite and PostgreSQL a graceful failover takes about as long as reign's "
                   "on ZooKeeper in the same run (SIGTERM to elected, p50 ratio %.2f to %.2f): "
                   "release, notification, read and take are four short steps on loopback."
                   % (min(ratios), max(ratios)))
    rss = [fleet(b, n, "default").get("rss", {}).get("vmrss_kb_median") for b in backends
           for n in counts]
    rss = [x / 1024.0 for x in rss if x]
    zk_rss = [zk[n]["rss"]["vmrss_kb_median"] / 1024.0 for n in counts
              if zk.get(n) and zk[n].get("rss")]
    if rss:
        text = ("A `reign campaign` process is %.1f to %.1f MB resident on the SQL stores" % (
            min(rss), max(rss)))
        if zk_rss:
            text += " and %.1f MB on ZooKeeper in this run" % statistics.median(zk_rss)
        text += "."
        if old and zk_rss and statistics.median(zk_rss) > old[0] * 1.5:
            text += (" The ZooKeeper sections above (run %s) measured %.1f MB VmRSS / %.1f MB "
                     "RssAnon for the same command on ZooKeeper." % (old[2], old[0], old[1]))
        sm = fleet("sqlite", counts[0], "default").get("smaps") or {}
        lib = [v for k, v in sm.items() if k.split(".so")[0] in TLS_AUTH_LIBS]
        if lib:
            text += (" Of a SQLite candidate's %.1f MB, %.1f MB (%.1f MB of it private) are the "
                     "TLS, Kerberos and LDAP libraries that libpq and libmariadb depend on "
                     "(OpenSSL, and GnuTLS through libldap, among the %d listed below): the "
                     "binary links every store's client library, so every process maps and "
                     "relocates them whichever store it uses (from /proc/PID/smaps of one "
                     "process)." % (sum(v[0] for v in sm.values()) / 1024.0,
                                    sum(v[0] for v in lib) / 1024.0,
                                    sum(v[1] for v in lib) / 1024.0, len(lib)))
        out.append(text)
    return out


METHOD = """### Method (SQL)

**Candidates.** For each store and each number of candidates, the harness starts that many
`reign --uri URI --log-level debug campaign NAME --id ID` processes in a new election, the first
one, then the others at random moments within one poll period (`--start-spread`: candidates
started at the same moment would start their polls together, though the library spreads each
candidate's first poll over the period)
(MariaDB and PostgreSQL: the password from a file named in the URI, `password_file=`; SQLite: a
new database file) and waits until each has logged that it stands and one has printed
`elected`.  One set with the default lease serves the memory reading, the window at rest, the
graceful trials and then the crash trials with the guardians (each candidate's, the default); a
second set with `lease_ms` set short and `REIGN_GUARDIAN=off` serves the crash trials without
them.  Only one set runs at a time, and only one store's server
is up at a time.

**A trial.** Wait until every candidate stands and a leader is known, then a random pause
(`--settle-s` plus up to as much again; on MariaDB with `wakeup=poll`, whose followers only
poll, plus up to one poll period), so that a kill falls at no fixed point of the followers'
timers; send SIGTERM or SIGKILL to the leader and wait for another
candidate's `elected` line, then for the old leader's exit.  The latency is that line's own
CLOCK_MONOTONIC stamp minus the time of the kill; the hand-off is the same stamp minus the old
leader's `demoted` stamp.  Then a new candidate replaces the old leader (it joins as a follower),
so the count stays the same.  The checks above are made on every trial.

**Counting statements.** With `--log-level debug` the library logs one line per SQL statement
it sends (`sql: <op> <name> term=<n> -> <rc> (<ms> ms)`); the harness reads each candidate's
stderr as it comes and stamps each line.  One line is one lease statement; on SQLite the writes
are wrapped in `BEGIN IMMEDIATE ... COMMIT`, and on PostgreSQL a release is followed by a
`NOTIFY`, which the line does not count separately.  The server's own counter is read before
and after the window at rest with the store's `sql` script (two readings in a row at the start
measure what one reading adds, which is subtracted); PostgreSQL counts transactions
(`xact_commit`, autocommit: one per statement), and its backends report them to the statistics
at most once a second, so its count can lag the window's edges by a statement or two per
candidate.

**ZooKeeper.** reign on a throwaway standalone ZooKeeper, through bench/failover.py's
`run_config` (its graceful trials with 30 s sessions, its crash trials with sessions as long as
the short lease; see the sections above for its method).  The SQL runs log at debug level and the
ZooKeeper ones do not; a log line costs microseconds.

**Noise.** The machine is a shared 2-core virtual machine: the store's server, the harness (one
Python process reading every candidate's output), all candidates and other people's builds
compete for the CPUs.  Percentiles are nearest-rank over the trials (p99 of 30 is the largest);
read the medians."""


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="SQL lease election benchmark: SQLite, MariaDB, PostgreSQL, and "
                    "reign on ZooKeeper as the reference.")
    ap.add_argument("--backends", default="sqlite,mariadb,postgres,zk",
                    help="comma-separated, of sqlite,mariadb,postgres,zk (default: all)")
    ap.add_argument("--counts", default="3,20", help="candidate counts (default 3,20)")
    ap.add_argument("--graceful", type=int, default=30, help="graceful trials (default 30)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="graceful warm-up trials discarded (default 3)")
    ap.add_argument("--crash", type=int, default=20,
                    help="crash trials with the default lease, guardians on (default 20)")
    ap.add_argument("--crash-short", type=int, default=5,
                    help="crash trials with the short lease, no guardian (default 5; 0: none)")
    ap.add_argument("--short-lease", type=int, default=2000,
                    help="the short lease, ms (default 2000; also ZooKeeper's crash session)")
    ap.add_argument("--zk-crash", type=int, default=5,
                    help="ZooKeeper crash trials (default 5)")
    ap.add_argument("--rest-s", type=float, default=20.0,
                    help="window at rest, seconds (default 20)")
    ap.add_argument("--settle-s", type=float, default=0.3,
                    help="pause before a kill: between this and twice this (default 0.3)")
    ap.add_argument("--tail-s", type=float, default=0.3,
                    help="statements of a failover are counted until this long after the "
                         "election (default 0.3)")
    ap.add_argument("--start-spread", type=float, default=1.0,
                    help="start the candidates at random moments within this many poll "
                         "periods (default 1; 0: all at once)")
    ap.add_argument("--seed", type=int, default=3, help="seed of the random pauses")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 3 candidates, few trials, short window at rest")
    bl.add_run_args(ap, section=SECTION)
    args = ap.parse_args(argv)
    if args.quick:
        args.counts, args.graceful, args.warmup, args.crash = "3", 5, 1, 1
        args.crash_short, args.zk_crash, args.rest_s = 2, 1, 5.0
    args.counts = [int(x) for x in args.counts.split(",") if x]
    args.backends = [x for x in args.backends.split(",") if x]
    for b in args.backends:
        if b not in BACKENDS + ("zk",):
            ap.error("unknown backend '%s'" % b)
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender_section(args, SECTION, render)
    if not args.reign or not os.access(args.reign, os.X_OK):
        raise BenchError("no reign binary (build it, or pass --reign)")
    t_start = time.monotonic()
    commit = bl.source_state(args.reign)
    workdir = bl.start_run(args, "reign-sql-")
    rng = random.Random(args.seed)
    load = {"start": os.getloadavg()}
    results, stores, zk_info, zk_results = [], {}, {}, []
    for b in args.backends:
        if b == "zk":
            zk_info, zk_results = run_zk(args, workdir)
            stores["zk"] = zk_info
        else:
            stores[b], res = run_backend(b, args, workdir, rng)
            results += res
    load["end"] = os.getloadavg()
    machine = bl.machine_info(stores.get("zk", {}).get("version", "?"), commit)
    ldd = subprocess.run(["ldd", args.reign], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout.split("\n")
    libs = [x.split()[0] for x in ldd if "=>" in x]
    run = {
        "command": "bench/sql_failover.py " + " ".join(shlex.quote(x) for x in argv),
        "args": {k: getattr(args, k) for k in (
            "counts", "backends", "graceful", "warmup", "crash", "crash_short", "short_lease",
            "zk_crash", "rest_s", "settle_s", "tail_s", "start_spread", "seed")},
        "machine": machine,
        "zk_report_rss": zk_report_rss(),
        "stores": stores,
        "results": results,
        "zk_info": zk_info,
        "zk_results": zk_results,
        "loadavg": load,
        "shared_libraries": libs,
        "elapsed_s": time.monotonic() - t_start,
    }
    bl.end_run(run, args, workdir, any(r["errors"] for r in results + zk_results),
               bl.section_writer(SECTION, render), t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
