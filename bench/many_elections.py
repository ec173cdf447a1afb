#!/usr/bin/python3
"""many_elections.py - many elections per process: one client joins N elections, timed, on
each store (SQLite, PostgreSQL, MariaDB, ZooKeeper), with its peak memory, what the joins cost
the store, and what the process costs the store at rest.

For each store (a SQLite file per run; throwaway PostgreSQL, MariaDB and ZooKeeper servers from
scripts/pg.sh, scripts/mariadb.sh and scripts/zk.sh, one at a time, each stopped when its part
is over, also on an error or Ctrl-C; etcd from scripts/etcd.sh when `--stores` names it, its
requests from its /metrics, bench/benchlib/etcd.py), each N (default 1, 1000 and 10,000, and
100,000 on ZooKeeper only) and each run (default 3):

  leader    bench/many_elections.c (`many-elections`) joins N new elections as the sole
            candidate of each; the time is from its first reign_election_join() until the loop
            turn in which the last one reported ELECTED (the client connects before the clock
            starts);
  follower  a second process joins the same N elections while the first still leads them all;
            its time runs until the last READY (each stands in line behind the leader);
  memory    each process's peak resident set (VmHWM) once all its elections were decided, less
            its VmRSS before the first join, per election;
  at rest   (first run of each N only) with both processes holding the N elections, after
            --settle-s, the statements the store's server counted over --rest-s (MariaDB
            `Questions`, PostgreSQL `xact_commit`, less the harness's own readings), per second;
            split per process by the client-side count below; on ZooKeeper the server's
            requests (mntr, pings apart) and each session's packets (cons).

Client-side count: `many-elections` has no log, so the harness counts the statements each
process sends through the store's client library: reign loads the library with dlopen() and
opens, instead of the library, the file named by REIGN_TEST_LIBSQLITE3 / REIGN_TEST_LIBPQ /
REIGN_TEST_LIBMARIADB when set (src/sql/dl.h's test hook).  The harness compiles a small shim
(SHIM_C below) that needs the real library, so every function resolves to the real one except
the few it wraps to count: an execution of a prepared statement (sqlite3_step on a statement not
yet stepped since its reset) and sqlite3_exec; PQsendQueryParams and PQsendQueryPrepared (and
PQsendPrepare, kept apart); mysql_real_query, mysql_real_query_start and mysql_stmt_execute (and
mysql_stmt_prepare, apart).  The counts live in a small file per process that the harness reads
(mmap'ed shared counters).  For SQLite, which has no server, that count is the only one.

On ZooKeeper it also keeps the existing measurements: the server's requests per join from
mntr/cons (benchlib's request_delta(), pings excluded), watches and znodes per join, the
server's CPU time; there the server is left to become quiet between samples.

It writes the section "## Many elections on one session" of docs/benchmarks.md and leaves the
rest of the file alone (--render rewrites that section from a --json file).  A run that fails or
times out is recorded in the JSON and the table, and the run goes on.  This measures, it never
asserts: the targets are reported next to the numbers, not checked.
"""

import argparse
import json
import os
import queue
import shlex
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log  # noqa: E402
import sql_failover as sqlf  # noqa: E402  (its Store: the throwaway servers and their counters)

ROOT = bl.ROOT
SECTION = "## Many elections on one session"
STORES = ("sqlite", "postgres", "mariadb", "zk", "etcd")
DEFAULT_STORES = ("sqlite", "postgres", "mariadb", "zk")  # etcd: asked for, or etcd_failover.py
LABEL = {"sqlite": "SQLite", "postgres": "PostgreSQL", "mariadb": "MariaDB",
         "zk": "ZooKeeper", "etcd": "etcd"}
SESSION_MS = 30000  # ZooKeeper: few pings, so the request counts stay exact
# The targets (p50 on this machine).
TARGET_JOIN_MS = 5000           # 10,000 on every SQL store, 100,000 on ZooKeeper
TARGET_SQL_N, TARGET_ZK_N = 10000, 100000
TARGET_REST_PER_S = 1.0         # statements per second per process at rest, default lease
TARGET_BYTES = 2048             # memory per election

# ---- the client-side statement count ------------------------------------------------------------

SHIM_ENV = {"sqlite": "REIGN_TEST_LIBSQLITE3", "postgres": "REIGN_TEST_LIBPQ",
            "mariadb": "REIGN_TEST_LIBMARIADB"}
SHIM_LIB = {"sqlite": "libsqlite3.so.0", "postgres": "libpq.so.5", "mariadb": "libmariadb.so.3"}
SHIM_DEF = {"sqlite": "SHIM_SQLITE", "postgres": "SHIM_PQ", "mariadb": "SHIM_MARIA"}
COUNT_ENV = "REIGN_BENCH_STMT_COUNT"
# Slot 0 is the total of statements executed; the others, by function (prepares only there).
SLOTS = {"sqlite": ("statements", "sqlite3_step", "sqlite3_exec"),
         "postgres": ("statements", "PQsendQueryParams", "PQsendQueryPrepared",
                      "PQsendPrepare"),
         "mariadb": ("statements", "mysql_real_query", "mysql_real_query_start",
                     "mysql_stmt_execute", "mysql_stmt_prepare")}
NSLOTS = 8

SHIM_C = r"""
/* The harness's counting shim (bench/many_elections.py): needs the real client library, wraps
 * the functions that send a statement, counts them in a shared file, and calls the real ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile uint64_t *slots;
static uint64_t dummy[8];
static void *real;

__attribute__((constructor)) static void shim_init(void)
{
    slots = dummy;
    const char *path = getenv("REIGN_BENCH_STMT_COUNT");
    if (path && *path) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0 && ftruncate(fd, sizeof dummy) == 0) {
            void *p = mmap(NULL, sizeof dummy, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED)
                slots = p;
        }
        if (fd >= 0)
            close(fd);
    }
    real = dlopen(SHIM_SONAME, RTLD_NOW | RTLD_LOCAL);
}

static void *fn(const char *name)
{
    return real ? dlsym(real, name) : NULL;
}

static void count(int slot, int total)
{
    __atomic_fetch_add(&slots[slot], 1, __ATOMIC_RELAXED);
    if (total)
        __atomic_fetch_add(&slots[0], 1, __ATOMIC_RELAXED);
}

#ifdef SHIM_SQLITE
static __thread int in_exec;
int sqlite3_step(void *st)
{
    static int (*f)(void *), (*busy)(void *);
    if (!f) {
        busy = (int (*)(void *))fn("sqlite3_stmt_busy");
        f = (int (*)(void *))fn("sqlite3_step");
    }
    if (!in_exec && busy && !busy(st))
        count(1, 1); /* a new execution, not the next row of one */
    return f(st);
}

int sqlite3_exec(void *db, const char *sql, void *cb, void *arg, char **err)
{
    static int (*f)(void *, const char *, void *, void *, char **);
    if (!f)
        f = (int (*)(void *, const char *, void *, void *, char **))fn("sqlite3_exec");
    count(2, 1);
    in_exec++;
    int r = f(db, sql, cb, arg, err);
    in_exec--;
    return r;
}
#endif

#ifdef SHIM_PQ
int PQsendQueryParams(void *c, const char *q, int n, const unsigned *t, const char *const *v,
                      const int *l, const int *fmts, int rf)
{
    static int (*f)(void *, const char *, int, const unsigned *, const char *const *,
                    const int *, const int *, int);
    if (!f)
        f = (int (*)(void *, const char *, int, const unsigned *, const char *const *,
                     const int *, const int *, int))fn("PQsendQueryParams");
    count(1, 1);
    return f(c, q, n, t, v, l, fmts, rf);
}

int PQsendQueryPrepared(void *c, const char *name, int n, const char *const *v, const int *l,
                        const int *fmts, int rf)
{
    static int (*f)(void *, const char *, int, const char *const *, const int *, const int *,
                    int);
    if (!f)
        f = (int (*)(void *, const char *, int, const char *const *, const int *, const int *,
                     int))fn("PQsendQueryPrepared");
    count(2, 1);
    return f(c, name, n, v, l, fmts, rf);
}

int PQsendPrepare(void *c, const char *name, const char *q, int n, const unsigned *t)
{
    static int (*f)(void *, const char *, const char *, int, const unsigned *);
    if (!f)
        f = (int (*)(void *, const char *, const char *, int, const unsigned *))fn(
            "PQsendPrepare");
    count(3, 0);
    return f(c, name, q, n, t);
}
#endif

#ifdef SHIM_MARIA
int mysql_real_query(void *m, const char *q, unsigned long len)
{
    static int (*f)(void *, const char *, unsigned long);
    if (!f)
        f = (int (*)(void *, const char *, unsigned long))fn("mysql_real_query");
    count(1, 1);
    return f(m, q, len);
}

int mysql_real_query_start(int *ret, void *m, const char *q, unsigned long len)
{
    static int (*f)(int *, void *, const char *, unsigned long);
    if (!f)
        f = (int (*)(int *, void *, const char *, unsigned long))fn("mysql_real_query_start");
    count(2, 1);
    return f(ret, m, q, len);
}

int mysql_stmt_execute(void *st)
{
    static int (*f)(void *);
    if (!f)
        f = (int (*)(void *))fn("mysql_stmt_execute");
    count(3, 1);
    return f(st);
}

int mysql_stmt_prepare(void *st, const char *q, unsigned long len)
{
    static int (*f)(void *, const char *, unsigned long);
    if (!f)
        f = (int (*)(void *, const char *, unsigned long))fn("mysql_stmt_prepare");
    count(4, 0);
    return f(st, q, len);
}
#endif
"""


def build_shim(kind, workdir):
    """Compiles the counting shim for one store; None (and a log line) if it cannot be."""
    src = workdir / "stmt-shim.c"
    src.write_text(SHIM_C)
    out = workdir / ("stmt-shim-%s.so" % kind)
    argv = ["cc", "-shared", "-fPIC", "-O2", "-o", str(out), str(src),
            "-D%s" % SHIM_DEF[kind], '-DSHIM_SONAME="%s"' % SHIM_LIB[kind],
            "-Wl,--no-as-needed", "-l:%s" % SHIM_LIB[kind], "-ldl"]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        log("%s: no client-side count (the shim did not build: %s)" % (kind, r.stdout.strip()))
        return None
    return out


def read_counts(path, kind):
    """The shim's counters of one process, by name; None if there are none."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if len(data) < 8 * NSLOTS:
        return None
    vals = struct.unpack("<%dQ" % NSLOTS, data[:8 * NSLOTS])
    return {name: vals[i] for i, name in enumerate(SLOTS[kind])}


def count_delta(a, b):
    if a is None or b is None:
        return None
    return {k: b[k] - a[k] for k in b}


# ---- one many-elections process -----------------------------------------------------------------

def default_binary():
    for d in ("build", "build-bench"):
        p = ROOT / d / "bench" / "many-elections"
        if os.access(p, os.X_OK):
            return str(p)
    return None


class Proc:
    """One many-elections process; its stdout lines in a queue."""

    def __init__(self, argv, err_path, env=None):
        self.err = open(err_path, "wb")
        self.err_path = err_path
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.err, start_new_session=True, env=env)
        self.pid = self.proc.pid
        self.lines = queue.Queue()
        self.count_file = (env or {}).get(COUNT_ENV)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def _why(self):
        try:
            tail = Path(self.err_path).read_text(errors="replace").strip().splitlines()[-3:]
        except OSError:
            tail = []
        return "; ".join(tail)

    def wait_decided(self, timeout_s):
        """The JSON of the `decided` line."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError("timed out: no `decided` line within %.0f s" % timeout_s)
            if line is None:
                raise BenchError("many-elections exited with %s before deciding%s" % (
                    self.proc.wait(), (": " + self._why()) if self._why() else ""))
            if line.startswith("decided "):
                return json.loads(line[len("decided "):])

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout_s=60):
        """SIGTERM (every election resigns), then SIGKILL after timeout_s.  Returns the exit
        status and how long it took, ms."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.err.close()
        return rc, (time.monotonic() - t0) * 1000.0


def add_memory(out, n):
    """Peak resident memory grown by the joins, per election."""
    if out.get("hwm_kb") is not None and out.get("rss_before_kb") is not None:
        out["grown_kb"] = out["hwm_kb"] - out["rss_before_kb"]
        out["bytes_per_election"] = out["grown_kb"] * 1024.0 / n


# ---- ZooKeeper: the server's requests ----------------------------------------------------------

def wait_quiet(zk, quiet_s=0.5, timeout_s=60):
    """Waits until the server's write, node and watch counts stop moving for quiet_s."""
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


# ---- the stores ---------------------------------------------------------------------------------

class ZkStore:
    kind = "zk"

    def __init__(self, workdir):
        self.zk = bl.ZooKeeper(workdir / "zk")
        self.version = None
        self.shim = None

    def start(self, heap):
        # scripts/zk.sh's default heap (256 MB, for several small servers at once) is too
        # small for 100,000 elections: the server ends with an OutOfMemoryError.  Its own flags,
        # but a larger heap, unless REIGN_ZK_JAVA_OPTS says otherwise.
        if heap and not os.environ.get("REIGN_ZK_JAVA_OPTS"):
            os.environ["REIGN_ZK_JAVA_OPTS"] = (
                "-Xms256m -Xmx%s -XX:+UseSerialGC -XX:-UsePerfData -XX:+ExitOnOutOfMemoryError "
                "-Djava.net.preferIPv4Stack=true -Dzookeeper.jmx.log4j.disable=true "
                "-Dzookeeper.admin.enableServer=false" % heap)
        self.java_opts = os.environ.get("REIGN_ZK_JAVA_OPTS")
        self.zk.start()
        self.version = self.zk.mntr().get("zk_version", "?").split("-")[0].split(",")[0]
        bl.warm_server(self.zk, 5)

    def stop(self):
        self.zk.stop()

    def uri(self, label):
        return "zk://%s?session_timeout_ms=%d" % (self.zk.connect, SESSION_MS)

    def env(self, count_file):
        return None

    def sids(self):
        return set(self.zk.cons())

    def phase_begin(self):
        return {"sample": bl.Sample(self.zk), "cpu": server_cpu_ms(self.zk),
                "sids": self.sids()}

    def phase_end(self, b, out, n):
        cpu1 = server_cpu_ms(self.zk)
        wait_quiet(self.zk)
        after = bl.Sample(self.zk)
        before = b["sample"]
        d = bl.request_delta(before, after)
        m0, m1 = before.mntr, after.mntr
        out.update(requests=d["requests"], writes=d["writes"], reads=d["reads"],
                   pings=d["pings"], watch_events=d["watch_events"],
                   watches=m1["zk_watch_count"] - m0["zk_watch_count"],
                   znodes=m1["zk_znode_count"] - m0["zk_znode_count"],
                   packets=m1["zk_packets_received"] - m0["zk_packets_received"])
        if b["cpu"] is not None and cpu1 is not None:
            out["server_cpu_ms"] = cpu1 - b["cpu"]  # from the process's start to its decision
        for k in ("requests", "writes", "reads", "watches", "znodes"):
            out[k + "_per_join"] = out[k] / float(n)
        return set(after.cons) - b["sids"]  # this process's session

    def rest(self, procs, seconds):
        a = bl.Sample(self.zk)
        time.sleep(seconds)
        b = bl.Sample(self.zk)
        d = bl.request_delta(a, b)
        w = d["window_s"]
        out = {"window_s": w, "requests": d["requests"], "pings": d["pings"],
               "requests_per_s": d["requests"] / w, "pings_per_s": d["pings"] / w,
               "server_per_s": (d["requests"] + d["pings"]) / w}
        for role, p in procs.items():
            sids = [s for s in getattr(p, "sids", ()) if s in a.cons and s in b.cons]
            if sids:
                pk = sum(b.cons[s]["recved"] - a.cons[s]["recved"] for s in sids)
                xid = sum(b.cons[s]["lcxid"] - a.cons[s]["lcxid"] for s in sids)
                out[role] = {"packets_per_s": pk / w, "requests_per_s": xid / w,
                             "pings_per_s": (pk - xid) / w}
        return out


class SqlStore:
    def __init__(self, kind, workdir):
        self.kind = kind
        self.store = sqlf.Store(kind, workdir)
        self.workdir = workdir
        self.version = None
        self.shim = None

    def start(self, heap=None):
        self.store.start()
        self.version = self.store.version
        self.shim = build_shim(self.kind, self.workdir)

    def stop(self):
        self.store.stop()

    def uri(self, label):
        return self.store.uri(label, {})  # the default lease: no lease_ms, renew_ms, poll_ms

    def env(self, count_file):
        if not self.shim:
            return None
        return dict(os.environ, **{SHIM_ENV[self.kind]: str(self.shim), COUNT_ENV: count_file})

    def counter(self):
        return self.store.counter()

    def phase_begin(self):
        return {"server": self.counter()}

    def phase_end(self, b, out, n, proc=None):
        c1 = self.counter()
        if b["server"] is not None and c1 is not None:
            # From the process's start to its decision: the other process's traffic included.
            out["server_count"] = c1 - b["server"] - self.store.counter_overhead
        return set()

    def rest(self, procs, seconds):
        a = {role: read_counts(p.count_file, self.kind) if p.count_file else None
             for role, p in procs.items()}
        c0 = self.counter()
        t0 = time.monotonic()
        time.sleep(seconds)
        c1 = self.counter()
        w = time.monotonic() - t0
        b = {role: read_counts(p.count_file, self.kind) if p.count_file else None
             for role, p in procs.items()}
        out = {"window_s": w}
        if c0 is not None and c1 is not None:
            out["server_count"] = c1 - c0 - self.store.counter_overhead
            out["server_per_s"] = out["server_count"] / w
        for role in procs:
            d = count_delta(a[role], b[role])
            if d is not None:
                out[role] = {"client_per_s": d["statements"] / w,
                             "ops_per_s": {k: v / w for k, v in d.items()}}
        return out


class EtcdStore:
    """A throwaway etcd member (scripts/etcd.sh), or one the caller started and stops
    (bench/etcd_failover.py runs its many elections on the member of its failover trials).  The
    server's count is etcd's /metrics: gRPC calls handled, the JSON gateway's included, with the
    heartbeat (LeaseKeepAlive) apart; reign's default session (10 s), as for the SQL stores'
    default lease."""
    kind = "etcd"

    def __init__(self, workdir, etcd=None):
        self.owned = etcd is None
        self.etcd = etcd or bl.Etcd(workdir / "etcd")
        self.version = None
        self.shim = None

    def start(self, heap=None):
        if self.owned:
            self.etcd.start()
        self.version = self.etcd.version()

    def stop(self):
        if self.owned:
            self.etcd.stop()

    def uri(self, label):
        return self.etcd.uri

    def env(self, count_file):
        return None

    def phase_begin(self):
        return {"sample": bl.etcd_wait_quiet(self.etcd, 0.3), "cpu": self.etcd.cpu_ms()}

    def phase_end(self, b, out, n):
        cpu1 = self.etcd.cpu_ms()
        after = bl.etcd_wait_quiet(self.etcd, 0.5)
        d = bl.etcd_delta(b["sample"], after)
        out.update(requests=d["requests"], keepalives=d["keepalives"], writes=d["proposals"],
                   by_method=d["by_method"], revisions=d["revisions"])
        if b["cpu"] is not None and cpu1 is not None:
            out["server_cpu_ms"] = cpu1 - b["cpu"]  # from the process's start to its decision
        for k in ("requests", "writes"):
            out[k + "_per_join"] = out[k] / float(n)
        return set()

    def rest(self, procs, seconds):
        a = self.etcd.sample()
        time.sleep(seconds)
        b = self.etcd.sample()
        d = bl.etcd_delta(a, b)
        w = d["window_s"]
        return {"window_s": w, "server_count": d["all"], "server_per_s": d["all"] / w,
                "requests_per_s": d["requests"] / w, "keepalives_per_s": d["keepalives"] / w,
                "by_method": d["by_method"]}


def make_store(kind, workdir):
    if kind == "etcd":
        return EtcdStore(workdir)
    return ZkStore(workdir) if kind == "zk" else SqlStore(kind, workdir)


# ---- one run ------------------------------------------------------------------------------------

def phase_timeout(args, n):
    return args.timeout_s if args.timeout_s else 60 + n / 1000.0


def phase(store, args, workdir, n, run_no, role, extra):
    """Starts one process and waits for its decision.  Returns the process (still holding its
    elections) and its numbers."""
    tag = "%s-%d-%s-r%d" % (store.kind, n, role, run_no)
    count_file = str(workdir / (tag + ".count"))
    label = "many-n%d-r%d" % (n, run_no)  # the SQLite file: one per run
    prefix = "bench.many.r%dn%d." % (run_no, n)
    argv = [args.binary, "--uri", store.uri(label), "--count", str(n), "--prefix", prefix,
            "--id", role] + extra
    env = store.env(count_file)
    b = store.phase_begin()
    p = Proc(argv, workdir / (tag + ".err"), env)
    try:
        out = p.wait_decided(phase_timeout(args, n))
        c = read_counts(count_file, store.kind) if env else None
        if c is not None:
            out["client_statements"] = c["statements"]
            out["client_ops"] = c
            out["client_per_join"] = c["statements"] / float(n)
        p.sids = store.phase_end(b, out, n)
        add_memory(out, n)
    except BaseException:
        rc, _ = p.stop(10)
        raise
    return p, out


def one_run(store, args, workdir, n, run_no, rest_s):
    res = {"store": store.kind, "n": n, "run": run_no, "loadavg_1m": os.getloadavg()[0]}
    procs = {}
    try:
        try:
            procs["leader"], res["leader"] = phase(store, args, workdir, n, run_no, "leader", [])
            if not args.no_follow:
                procs["follower"], res["follower"] = phase(store, args, workdir, n, run_no,
                                                           "follower", ["--follow"])
            if rest_s:
                time.sleep(args.settle_s)  # the start-up is not rest
                dead = [r for r, p in procs.items() if not p.alive()]
                if dead:
                    raise BenchError("%s exited before the window at rest" % dead[0])
                res["rest"] = store.rest(procs, rest_s)
                res["rest"]["processes"] = len(procs)
                dead = [r for r, p in procs.items() if not p.alive()]
                if dead:
                    res["rest"]["error"] = "%s exited during the window" % dead[0]
                for role, p in procs.items():
                    res["rest"].setdefault(role, {})["vmrss_kb"] = bl.status_kb(p.pid, "VmRSS")
        except (BenchError, OSError, ValueError, KeyError) as e:
            res["error"] = str(e) or type(e).__name__
            log("%s N=%d run %d: %s" % (store.kind, n, run_no, res["error"]))
    finally:
        for role in ("follower", "leader"):
            if role in procs:
                rc, ms = procs[role].stop()
                res[role + "_rc"], res[role + "_stop_ms"] = rc, ms
    if store.kind == "zk":
        try:
            wait_quiet(store.zk)
        except (BenchError, OSError) as e:
            log("zk: %s" % e)
    return res


def run_store(kind, args, workdir):
    store = make_store(kind, workdir / kind)
    (workdir / kind).mkdir(parents=True, exist_ok=True)
    info, samples = {}, []
    try:
        store.start(args.zk_heap)
        info["version"] = store.version
        if kind == "zk":
            info["java_opts"] = store.java_opts
        info["client_count"] = bool(store.shim) if kind not in ("zk", "etcd") else None
        if isinstance(store, SqlStore):
            info["counter_overhead"] = store.store.counter_overhead
        log("%s: %s" % (kind, store.version))
        if args.warmup:
            r = one_run(store, args, workdir / kind, args.warmup, 0, 0)
            log("%s: warm-up, %d elections, not counted%s" % (
                kind, args.warmup, (": " + r["error"]) if "error" in r else ""))
        counts = list(args.counts) + (list(args.zk_counts) if kind == "zk" else [])
        for n in counts:
            rest_s = args.rest_s if n in args.counts else 0
            for i in range(1, args.runs + 1):
                r = one_run(store, args, workdir / kind, n, i, rest_s if i == 1 else 0)
                samples.append(r)
                log(run_line(r))
                checkpoint(workdir, kind, samples)
                if "error" in r and "timed out" in r["error"]:
                    for j in range(i + 1, args.runs + 1):
                        samples.append({"store": kind, "n": n, "run": j,
                                        "error": "skipped after a time-out"})
                    break
    except (BenchError, OSError, ValueError, KeyError, subprocess.SubprocessError) as e:
        info["error"] = str(e) or type(e).__name__
        log("%s: %s" % (kind, info["error"]))
    finally:
        store.stop()
    return info, samples


def checkpoint(workdir, kind, samples):
    """Every run so far, in the scratch directory: what a run that dies half-way leaves."""
    try:
        (workdir / ("partial-%s.json" % kind)).write_text(json.dumps(samples) + "\n")
    except OSError:
        pass


def run_line(r):
    def role(x):
        s = "%.0f ms, %s B/election" % (x["total_ms"], fmt(x.get("bytes_per_election"), 0))
        if "requests_per_join" in x:
            s += ", %.2f requests/join" % x["requests_per_join"]
        if "client_per_join" in x:
            s += ", %.2f statements/join" % x["client_per_join"]
        return s
    parts = ["%s N=%d run %d:" % (r["store"], r["n"], r["run"])]
    for k in ("leader", "follower"):
        if k in r:
            parts.append("%s %s;" % (k, role(r[k])))
    if "rest" in r:
        x = r["rest"]
        parts.append("at rest server %s/s, leader %s/s, follower %s/s (client)" % (
            fmt(x.get("server_per_s"), 1), fmt(rest_client(x, "leader"), 2),
            fmt(rest_client(x, "follower"), 2)))
    if "error" in r:
        parts.append("ERROR " + r["error"])
    return " ".join(parts)


def rest_client(x, role):
    """One process's count at rest, per second: the client-side statements (SQL) or the session's
    packets, pings included (ZooKeeper)."""
    y = x.get(role) or {}
    return y.get("client_per_s", y.get("packets_per_s"))


# ---- summary and report -------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize_store(samples):
    """Per (store, N): medians of every numeric field of each role, the runs' times, failures,
    and the window at rest."""
    out = {}
    for key in sorted({(r["store"], r["n"]) for r in samples}, key=lambda k: (k[0], k[1])):
        rows = [r for r in samples if (r["store"], r["n"]) == key]
        s = {"runs": len(rows), "errors": [("run %d: " % r["run"]) + r["error"]
                                           for r in rows if "error" in r]}
        for role in ("leader", "follower"):
            got = [r[role] for r in rows if role in r]
            if not got:
                continue
            keys = [k for k, v in got[0].items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)]
            s[role] = {k: med([g.get(k) for g in got]) for k in keys}
            s[role]["runs"] = len(got)
            s[role]["total_ms_all"] = [g["total_ms"] for g in got]
        rest = [r["rest"] for r in rows if "rest" in r]
        if rest:
            s["rest"] = rest[0]
        out["%s/%d" % key] = s
    return out


def legacy_summary(samples):
    """The ZooKeeper rows in the form bench/before_after.py reads: "N/role" -> medians."""
    out = {}
    for key, s in summarize_store([r for r in samples if r["store"] == "zk"]).items():
        n = key.split("/")[1]
        for role in ("leader", "follower"):
            if role in s:
                out["%s/%s" % (n, role)] = s[role]
    return out


def yes(ok):
    return "–" if ok is None else ("met" if ok else "**not met**")


def render(run):
    a, m = run["args"], run["machine"]
    s = run["stores_summary"]
    stores = [k for k in a["stores"]]
    infos = run["stores"]
    L = []
    w = L.append

    def get(kind, n):
        return s.get("%s/%d" % (kind, n))

    def keys_of(kind):
        return sorted((int(k.split("/")[1]) for k in s if k.split("/")[0] == kind))

    w(SECTION)
    w("")
    w("Generated by `bench/many_elections.py`; do not edit by hand, run it again (see "
      "`bench/README.md`).  It measures; nothing here is asserted by a test.")
    w("")
    w("Many elections per process: one process (`bench/many_elections.c`, one `reign_client`: "
      "one ZooKeeper session or one SQL connection) joins N new elections as the sole candidate "
      "of each; then a second process joins the same N elections as a follower while the first "
      "leads them all.  **Join time**: from the first `reign_election_join()` until the loop "
      "turn in which the last election reported ELECTED (leader) or READY (follower); the "
      "client is connected before the clock starts.  **Memory**: the process's peak resident "
      "set (VmHWM) once all were decided, less its VmRSS before the first join, per election.  "
      "**At rest** (first run of each N): with both processes holding the N elections, "
      "%s s after the follower's last READY, the statements over %s s at the default lease "
      "(no `lease_ms`, `renew_ms` or `poll_ms` in the URI), counted by the server: MariaDB "
      "`Questions` and PostgreSQL `xact_commit` (transactions, each statement of reign's its "
      "own or a few in one), less the harness's own readings; ZooKeeper's requests and pings "
      "(mntr).  The server counts the two processes together; the split per process is the "
      "client-side count: the statements each process handed its client library, counted by "
      "a shim the harness loads in place of the library through reign's test hook "
      "(`REIGN_TEST_LIBSQLITE3`/`LIBPQ`/`LIBMARIADB`, src/sql/dl.h): executions of a prepared "
      "statement and `sqlite3_exec` calls; `PQsendQueryParams`/`PQsendQueryPrepared`; "
      "`mysql_real_query(_start)`/`mysql_stmt_execute` (prepares not counted).  SQLite has no "
      "server: its count is that client-side count only.  On ZooKeeper, each session's packets "
      "(`cons`, pings included, session timeout %d ms).  Every run uses new election names (and "
      "a new SQLite file), so the leader also creates each election: the cold case.  Medians of "
      "%d runs." % (fmt(a["settle_s"], 0), fmt(a["rest_s"], 0), SESSION_MS, a["runs"]))
    w("")
    w("Command:")
    w("")
    w("    " + run["command"])
    w("")
    sv = ", ".join("%s %s" % (LABEL[k], short_version(infos.get(k, {}).get("version") or "?"))
                   for k in stores)
    w("Machine: %s, %d cores (`nproc`), %s RAM, %s (Debian %s), Linux %s.  Stores: %s; each a "
      "throwaway server (`scripts/pg.sh`, `scripts/mariadb.sh`, `scripts/zk.sh`) or file used "
      "by nothing else, one after the other, on loopback%s.  Commit %s.  %s; the run took %.1f "
      "min%s." % (m["cpu"], m["nproc"], m["memory"], m["os"], m.get("debian", "?"),
                 m.get("kernel", "?"), sv, heap_text(infos),
                 m["commit"].replace("`reign` binary", "`many-elections` binary"), m["date"],
                 run["duration_min"],
                 load_text(run)))
    for k in stores:
        if infos.get(k, {}).get("error"):
            w("")
            w("**%s failed**: %s" % (LABEL[k], infos[k]["error"]))

    # --- join time and memory
    w("")
    w("### Join time and memory")
    w("")
    w("| store | N | leader: to all ELECTED, ms (runs) | follower: to all READY, ms (runs) "
      "| memory per election, bytes: leader / follower | peak RSS (VmHWM), MB: leader / follower "
      "| statements (ZooKeeper: requests) per join: leader / follower | failures |")
    w("|---|---|---|---|---|---|---|---|")
    for k in stores:
        for n in keys_of(k):
            x = get(k, n)
            lead, fol = x.get("leader") or {}, x.get("follower") or {}

            def t(r):
                if not r:
                    return "–"
                return "**%s** (%s)" % (fmt(r["total_ms"], 0),
                                        ", ".join(fmt(v, 0) for v in r["total_ms_all"]))

            def per_join(r):
                v = r.get("requests_per_join", r.get("client_per_join"))
                return fmt(v, 2)

            w("| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s |" % (
                LABEL[k], "{:,}".format(n), t(lead), t(fol),
                fmt(lead.get("bytes_per_election"), 0), fmt(fol.get("bytes_per_election"), 0),
                fmt(mb(lead.get("hwm_kb")), 1), fmt(mb(fol.get("hwm_kb")), 1),
                per_join(lead), per_join(fol),
                "; ".join(x["errors"]) if x["errors"] else ""))

    # --- at rest
    w("")
    w("### At rest")
    w("")
    w("Both processes holding N elections each; per second over the window.  \"Per process\" is "
      "the server's count divided by the 2 processes; leader and follower are each process's "
      "own client-side count (ZooKeeper: its session's packets, pings included).")
    w("")
    w("| store | N | server count, /s (2 processes) | per process, /s | leader, /s | "
      "follower, /s | VmRSS at rest, MB: leader / follower |")
    w("|---|---|---|---|---|---|---|")
    for k in stores:
        for n in keys_of(k):
            r = (get(k, n) or {}).get("rest")
            if not r:
                continue
            srv = r.get("server_per_s")
            procs = r.get("processes", 2)
            w("| %s | %s | %s | %s | %s | %s | %s / %s |%s" % (
                LABEL[k], "{:,}".format(n),
                fmt(srv, 1 if srv >= 10 else 2) + (" (%s requests + %s pings)" % (
                    fmt(r["requests_per_s"], 2), fmt(r["pings_per_s"], 2))
                    if k == "zk" else "") if srv is not None else "– (no server)",
                fmt(srv / procs, 2) if srv is not None else "–",
                fmt(rest_client(r, "leader"), 2), fmt(rest_client(r, "follower"), 2),
                fmt(mb((r.get("leader") or {}).get("vmrss_kb")), 1),
                fmt(mb((r.get("follower") or {}).get("vmrss_kb")), 1),
                " " + r["error"] if r.get("error") else ""))

    # --- targets
    w("")
    w("### Targets")
    w("")
    w("p50 on this machine; reported, not asserted.")
    w("")
    w("| target | store | measured | |")
    w("|---|---|---|---|")
    for k in stores:
        n = TARGET_ZK_N if k == "zk" else TARGET_SQL_N
        x = get(k, n)
        if x is None:
            continue
        for role, what in (("leader", "ELECTED"), ("follower", "READY")):
            r = x.get(role)
            v = r["total_ms"] if r else None
            w("| %s elections per process joined <= %d s (%s) | %s | %s | %s |" % (
                "{:,}".format(n), TARGET_JOIN_MS // 1000, role, LABEL[k],
                ("%s ms to the last %s (%s of the target)" % (
                    fmt(v, 0), what, ratio(v, TARGET_JOIN_MS))) if v is not None
                else "failed: " + "; ".join(x["errors"]),
                yes(v <= TARGET_JOIN_MS) if v is not None else yes(False)))
    for k in stores:
        if k == "zk":
            continue
        for n in keys_of(k):
            r = (get(k, n) or {}).get("rest")
            if not r or n not in a["counts"]:
                continue
            srv = r.get("server_per_s")
            per = srv / r.get("processes", 2) if srv is not None else None
            vals = [v for v in (rest_client(r, "leader"), rest_client(r, "follower"))
                    if v is not None]
            worst = max(vals) if vals else None
            judged = per if per is not None else worst
            w("| <= %s statement/s per process at rest, default lease, N = %s | %s | %s | "
              "%s |" % (fmt(TARGET_REST_PER_S, 0), "{:,}".format(n), LABEL[k],
                        "server %s/s per process; busiest process %s/s (client-side); "
                        "%s of the target" % (fmt(per, 2), fmt(worst, 2),
                                              ratio(judged, TARGET_REST_PER_S)),
                        yes(None if judged is None else judged <= TARGET_REST_PER_S)))
    for k in stores:
        n = max(keys_of(k) or [0])
        x = get(k, n)
        if not x:
            continue
        vals = [(x.get(role) or {}).get("bytes_per_election") for role in ("leader", "follower")]
        vals = [v for v in vals if v is not None]
        if not vals:
            continue
        w("| memory per election <= %d KB, N = %s | %s | %s bytes (the larger of leader "
          "and follower; %s of the target) | %s |" % (
              TARGET_BYTES // 1024, "{:,}".format(n), LABEL[k], fmt(max(vals), 0),
              ratio(max(vals), TARGET_BYTES), yes(max(vals) <= TARGET_BYTES)))
    w("")
    w("The rest target is judged on the server's count per process where there is a server "
      "(SQLite: on the busier process's client-side count); the join target on each role's "
      "median.")

    # --- ZooKeeper's details
    zks = [n for n in keys_of("zk")] if "zk" in stores else []
    if zks:
        w("")
        w("### ZooKeeper: requests, loop and CPU")
        w("")
        w("Requests: the server's reads and writes during the phase (mntr, pings excluded, the "
          "session's createSession included), per election; the server left to become quiet "
          "before the next sample.")
        w("")
        w("| N | role | join calls, ms | first / median decided, ms | requests / join (writes) "
          "| watches / join | in `process()`, ms | loop turns | CPU, ms: client / server |")
        w("|---|---|---|---|---|---|---|---|---|")
        for n in zks:
            x = get("zk", n)
            for role in ("leader", "follower"):
                r = x.get(role)
                if not r:
                    continue
                w("| %s | %s | %s | %s / %s | %s (%s) | %s | %s | %s | %s / %s |" % (
                    "{:,}".format(n), role, fmt(r.get("join_ms"), 0), fmt(r.get("first_ms"), 0),
                    fmt(r.get("p50_ms"), 0), fmt(r.get("requests_per_join"), 2),
                    fmt(r.get("writes_per_join"), 2), fmt(r.get("watches_per_join"), 2),
                    fmt(r.get("process_ms"), 0), fmt(r.get("turns"), 0),
                    fmt(r.get("cpu_ms"), 0), fmt(r.get("server_cpu_ms"), 0)))
    if run.get("findings"):
        w("")
        w("### Findings")
        w("")
        for para in run["findings"]:
            w(para)
            w("")
    return bl.finish_report(L, "")


def heap_text(infos):
    opts = (infos.get("zk") or {}).get("java_opts") or ""
    heap = [o[len("-Xmx"):] for o in opts.split() if o.startswith("-Xmx")]
    return "; the ZooKeeper server with `-Xmx%s`" % heap[0] if heap else ""


def load_text(run):
    """The machine's load during the run: the 1-minute load average at the start and the end,
    and its median over the runs (the machine is shared: other work shows here)."""
    la = run.get("loadavg")
    per = med([r.get("loadavg_1m") for r in run["samples"]])
    if not la:
        return ""
    return ("; load average (1 min) %.1f at the start, %.1f at the end, median %s at the start "
            "of a run" % (la["start"][0], la["end"][0], fmt(per, 1)))


def ratio(v, target):
    """v as a multiple of its target: '0.34x'."""
    if v is None:
        return "–"
    return ("%.2fx" if v < 10 * target else "%.0fx") % (v / float(target))


def mb(kb):
    return kb / 1024.0 if kb is not None else None


def short_version(v):
    v = sqlf.short_version(v)
    return v.split(" (")[0] if v.startswith("1") and "(" in v else v


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Many elections per process, on every store.")
    ap.add_argument("--binary", default=default_binary(),
                    help="the many-elections program (default: build/bench/many-elections)")
    ap.add_argument("--stores", default=",".join(DEFAULT_STORES),
                    help="comma-separated, of %s (default: %s)" % (",".join(STORES),
                                                                  ",".join(DEFAULT_STORES)))
    ap.add_argument("--counts", default="1,1000,10000",
                    help="election counts on every store, each also measured at rest "
                         "(default 1,1000,10000)")
    ap.add_argument("--zk-counts", default="100000",
                    help="more counts on ZooKeeper only, join and memory (default 100000; "
                         "'' for none)")
    ap.add_argument("--runs", type=int, default=3, help="runs per count (default 3)")
    ap.add_argument("--rest-s", type=float, default=20.0,
                    help="window at rest, seconds, in the first run of each count of --counts "
                         "(default 20; 0: none)")
    ap.add_argument("--settle-s", type=float, default=5.0,
                    help="wait this long after the follower's decision before the window at "
                         "rest (default 5)")
    ap.add_argument("--timeout-s", type=float, default=0,
                    help="a process must decide within this (default 60 + N/1000 s); a time-out "
                         "is recorded and the count's further runs are skipped")
    ap.add_argument("--warmup", type=int, default=1000,
                    help="elections in one warm-up run per store, not counted (default 1000; "
                         "0: none)")
    ap.add_argument("--zk-heap", default="2g",
                    help="the ZooKeeper server's -Xmx (default 2g; scripts/zk.sh's 256m runs out "
                         "at 100,000 elections; '' for zk.sh's own)")
    ap.add_argument("--no-follow", action="store_true", help="leaders only")
    ap.add_argument("--findings", help="a text file of paragraphs (blank-line separated) for "
                    "the section's 'Findings'; kept in the JSON")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"),
                    help="the report whose section '%s' is rewritten ('-' for none)" % SECTION)
    ap.add_argument("--json", help="every run's numbers (default: in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a --json file")
    ap.add_argument("-v", "--verbose", action="store_true", help="(every run is logged anyway)")
    args = ap.parse_args(argv)
    args.counts = [int(c) for c in args.counts.split(",") if c]
    args.zk_counts = [int(c) for c in args.zk_counts.split(",") if c]
    args.stores = [x for x in args.stores.split(",") if x]
    for k in args.stores:
        if k not in STORES:
            ap.error("unknown store '%s'" % k)
    return args


def debian_version():
    try:
        return Path("/etc/debian_version").read_text().strip()
    except OSError:
        return "?"


def main(argv):
    args = parse_args(argv)
    if args.render:
        return bl.rerender_section(args, SECTION, render)
    if not args.binary or not os.access(args.binary, os.X_OK):
        raise BenchError("no many-elections binary (build bench/, or pass --binary)")
    t_start = time.monotonic()
    load = {"start": os.getloadavg()}
    commit = bl.source_state(args.binary)
    workdir = bl.start_run(args, "reign-many-")
    infos, samples = {}, []
    for k in args.stores:
        info, got = run_store(k, args, workdir)
        infos[k] = info
        samples += got
    load["end"] = os.getloadavg()
    errors = sum(1 for r in samples if "error" in r) + sum(1 for i in infos.values()
                                                          if i.get("error"))
    machine = bl.machine_info((infos.get("zk") or {}).get("version", "?"), commit)
    machine["debian"] = debian_version()
    run = {"format": 2,
           "args": {k: getattr(args, k) for k in ("stores", "counts", "zk_counts", "runs",
                                                   "rest_s", "settle_s", "timeout_s", "warmup",
                                                   "no_follow")},
           "runs": args.runs, "counts": args.counts, "stores": infos, "samples": samples,
           "stores_summary": summarize_store(samples), "summary": legacy_summary(samples),
           "machine": machine, "loadavg": load,
           "command": " ".join(["bench/many_elections.py"] + [shlex.quote(x) for x in argv]),
           "duration_min": (time.monotonic() - t_start) / 60.0,
           "findings": bl.findings_of(args.findings)}
    bl.end_run(run, args, workdir, errors, bl.section_writer(SECTION, render), t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
