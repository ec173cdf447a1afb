"""fleet.py - candidate processes in one ZooKeeper election, and the failover trial on them.

A Candidate is one process that prints `elected ...`/`demoted ...` lines with a CLOCK_MONOTONIC
timestamp; an Impl says how to launch one of reign's (`reign campaign`) or of the reference
recipes' (bench/ref/CuratorCandidate.java, bench/ref/kazoo_candidate.py); a Fleet keeps N of
them standing, and a StoreFleet is the base of the fleets on other stores (SQL, etcd).
kill_leader() and run_config() are bench/failover.py's trials, which the other benchmarks reuse
as their ZooKeeper reference (zk_reference()); summarize() sums them up.  status_kb() and
guardians() read /proc: a process's memory, and which reign-guardian watches which process.
"""

import argparse
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

from .common import BENCH, BenchError, fmt, log, percentile
from .zk import Sample, ZooKeeper, request_delta, warm_server

JARS = ["curator-recipes", "curator-framework", "curator-client", "zookeeper", "zookeeper-jute",
        "guava", "slf4j-api", "slf4j-nop"]
# Small heap, serial GC, C1 only: what lets 200 JVM candidates share a 2-core machine.  The same
# flags at every candidate count, so Curator's rows compare with each other.
JVM_FLAGS = ["-Xmx32m", "-XX:+UseSerialGC", "-Xss256k", "-XX:TieredStopAtLevel=1",
             "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"]
KAZOO_PYTHON = "/usr/bin/python3"

IMPLS = ("reign", "curator", "kazoo")
LABEL = {"reign": "reign", "curator": "Curator LeaderLatch", "kazoo": "kazoo Election"}
SHORT = {"reign": "reign", "curator": "Curator", "kazoo": "kazoo"}

LINE_RE = re.compile(r"^(elected|demoted) (\S+) (.*)$")
# What `reign campaign` logs (--log-level info) once it stands in its election.
READY_TEXT = "standing in election"


def status_kb(pid, field):
    """A kB field of /proc/PID/status (VmRSS, RssAnon, VmHWM...), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def guardians():
    """{client pid: guardian pid} for every live reign-guardian (its argv: reign-guardian PID;
    it forks away from the client at its start, so it is no child of it)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and argv[0].endswith(b"reign-guardian") and argv[1].isdigit():
            out[int(argv[1])] = int(d)
    return out


def is_guardian(pid):
    """Whether pid is (still) a reign-guardian."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[0].endswith(b"reign-guardian")
    except OSError:
        return False


class Event:
    __slots__ = ("kind", "cand", "ns", "recv_ns", "fields")

    def __init__(self, kind, cand, ns, recv_ns, fields):
        self.kind, self.cand, self.ns, self.recv_ns, self.fields = kind, cand, ns, recv_ns, fields


class Candidate:
    """One candidate process.  Its stdout lines become Events in fleet.events; its stderr goes
    to err_path, and with on_err_line also to on_err_line(candidate, line, read_ns) as each line
    is read (bench/sql_failover.py counts the library's debug lines that way).  env: its whole
    environment (default: this process's).  A subclass reads other lines by its own LINE_RE or
    on_line()."""

    LINE_RE = LINE_RE

    def __init__(self, fleet, cid, argv, err_path, on_err_line=None, env=None):
        self.fleet, self.id = fleet, cid
        self.demoted_ns = None
        self.sid = None
        self.err_path = err_path
        self.started_ns = time.monotonic_ns()
        self.err = open(err_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE if on_err_line else self.err,
                                     start_new_session=True, env=env)
        self.pid = self.proc.pid
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_reader = None
        if on_err_line:
            self.err_reader = threading.Thread(target=self._read_err, args=(on_err_line,),
                                               daemon=True)
            self.err_reader.start()

    def _read_err(self, on_line):
        for raw in self.proc.stderr:
            recv = time.monotonic_ns()
            self.err.write(raw)
            on_line(self, raw.decode("utf-8", "replace").rstrip("\n"), recv)

    def _read(self):
        for raw in self.proc.stdout:
            recv = time.monotonic_ns()
            self.on_line(raw.decode("utf-8", "replace").strip(), recv)
        self.fleet.events.put(Event("exit", self, time.monotonic_ns(), time.monotonic_ns(), {}))

    def on_line(self, line, recv):
        """One stdout line, read at recv (ns): a line of LINE_RE with its monotonic_ns stamp is
        passed to on_stamped(); others are not the harness's business."""
        m = self.LINE_RE.match(line)
        if not m:
            return
        fields = dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)
        try:
            ns = int(fields["monotonic_ns"])
        except (KeyError, ValueError):
            return
        self.on_stamped(m.group(1), ns, recv, fields)

    def on_stamped(self, kind, ns, recv, fields):
        self.fleet.events.put(Event(kind, self, ns, recv, fields))

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def socket_inodes(self):
        inodes = set()
        try:
            for fd in os.listdir("/proc/%d/fd" % self.pid):
                try:
                    t = os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
                except OSError:
                    continue
                if t.startswith("socket:["):
                    inodes.add(int(t[8:-1]))
        except OSError:
            pass
        return inodes

    def status(self, field):
        return status_kb(self.pid, field)

    def close(self):
        try:
            self.proc.wait(timeout=0)
        except subprocess.TimeoutExpired:
            pass
        if self.err_reader is not None:
            self.err_reader.join(timeout=10)  # it writes to self.err until stderr's end
        self.err.close()


class Impl:
    """How to launch one implementation's candidate."""

    def __init__(self, name, args, workdir):
        self.name, self.args, self.workdir = name, args, Path(workdir)
        self.reason_missing = None

    def prepare(self):
        if self.name == "reign":
            if not self.args.reign or not os.access(self.args.reign, os.X_OK):
                self.reason_missing = "no reign binary (build it, or pass --reign)"
        elif self.name == "curator":
            missing = [j for j in JARS if not Path("/usr/share/java/%s.jar" % j).exists()]
            if missing or not shutil.which("javac"):
                self.reason_missing = "missing %s (apt-get install libcurator-recipes-java " \
                    "openjdk-17-jdk-headless)" % ", ".join(missing or ["javac"])
                return
            classes = self.workdir / "classes"
            classes.mkdir(parents=True, exist_ok=True)
            self.classpath = ":".join([str(classes)] + ["/usr/share/java/%s.jar" % j
                                                        for j in JARS])
            r = subprocess.run(["javac", "-d", str(classes), "-cp", self.classpath,
                                str(BENCH / "ref" / "CuratorCandidate.java")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise BenchError("javac CuratorCandidate.java failed:\n" + r.stdout)
        elif self.name == "kazoo":
            r = subprocess.run([KAZOO_PYTHON, "-c", "import kazoo"], stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                self.reason_missing = "no kazoo for %s (apt-get install python3-kazoo)" \
                    % KAZOO_PYTHON

    def argv(self, connect, timeout_ms, election, cid):
        if self.name == "reign":
            return [self.args.reign, "--uri", "zk://" + connect, "--session-timeout",
                    str(timeout_ms), "campaign", election, "--id", cid]
        path = "/bench/%s/%s" % (self.name, election)
        if self.name == "curator":
            return (["java"] + JVM_FLAGS + ["-cp", self.classpath, "CuratorCandidate",
                                            "--connect", connect, "--session-timeout",
                                            str(timeout_ms), "--path", path, "--id", cid])
        return [KAZOO_PYTHON, str(BENCH / "ref" / "kazoo_candidate.py"), "--connect", connect,
                "--session-timeout", str(timeout_ms), "--path", path, "--id", cid]

    def batch(self):
        """Candidates started at once: a JVM takes about a CPU-second to come up."""
        return {"reign": 25, "curator": 3, "kazoo": 8}[self.name]


class Fleet:
    """N candidates of one implementation in one election, kept at N."""

    def __init__(self, impl, zk, n, session_timeout, args, workdir):
        self.impl, self.zk, self.n, self.args = impl, zk, n, args
        self.session_timeout = session_timeout
        self.init_state(workdir, "bench-%s-%d-%d-%d" % (impl.name, n, session_timeout,
                                                        os.getpid()))
        self.sid_owner = {}

    def init_state(self, workdir, election):
        """The fields of the event handling, kill_leader() and stop(), whatever the store."""
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.election = election
        self.events = queue.Queue()
        self.cands = []
        self.serial = 0
        self.leader = None
        self.clock_violations = []
        self.overlaps = 0

    def spawn(self):
        self.serial += 1
        cid = "%s-%d-%d-%d" % (self.impl.name, self.n, self.session_timeout, self.serial)
        argv = self.impl.argv(self.zk.connect, self.session_timeout, self.election, cid)
        c = Candidate(self, cid, argv, self.workdir / (cid + ".err"),
                      env=getattr(self.impl, "env", None))
        self.cands.append(c)
        return c

    def handle(self, ev):
        if ev.kind == "elected":
            self.leader = ev.cand
            # The line's time must fall between the process start (or the kill that caused
            # it, checked by the caller) and our reading it: otherwise the clocks differ.
            if not (ev.cand.started_ns <= ev.ns <= ev.recv_ns):
                self.clock_violations.append((ev.cand.id, ev.ns, ev.cand.started_ns, ev.recv_ns))
        elif ev.kind == "demoted":
            ev.cand.demoted_ns = ev.ns
            if self.leader is ev.cand:
                self.leader = None
        elif ev.kind == "exit":
            if self.leader is ev.cand:
                self.leader = None

    def map_sessions(self, sample):
        """Find which candidate owns each session of a sample: cons names the client's port,
        /proc/net/tcp maps the port to a socket inode, /proc/PID/fd the inode to a process."""
        unknown = [sid for sid in sample.cons if sid not in self.sid_owner]
        if not unknown:
            return
        port_inode = {}
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    next(f)
                    for line in f:
                        cols = line.split()
                        lport = int(cols[1].rsplit(":", 1)[1], 16)
                        rport = int(cols[2].rsplit(":", 1)[1], 16)
                        if rport == self.zk.port:
                            port_inode[lport] = int(cols[9])
            except OSError:
                pass
        inode_owner = {}
        for c in self.cands:
            if c.sid is None and c.alive():
                for ino in c.socket_inodes():
                    inode_owner[ino] = c
        for sid in unknown:
            c = inode_owner.get(port_inode.get(sample.cons[sid]["port"]))
            if c is not None:
                c.sid = sid
                self.sid_owner[sid] = c

    def next_event(self, deadline_ns):
        while True:
            left = (deadline_ns - time.monotonic_ns()) / 1e9
            if left <= 0:
                return None
            try:
                ev = self.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            self.handle(ev)
            return ev

    def drain(self):
        while True:
            try:
                self.handle(self.events.get_nowait())
            except queue.Empty:
                return

    def drain_alive(self, when=""):
        """drain(), then a BenchError if a candidate has exited (`when`: " at start")."""
        self.drain()
        dead = [c for c in self.cands if not c.alive()]
        if dead:
            raise BenchError("candidate %s exited%s (see %s)" % (
                dead[0].id, when, self.workdir / (dead[0].id + ".err")))

    def add_checks(self, res):
        """Adds what this fleet's checks counted to res's counts."""
        res["clock_violations"] += len(self.clock_violations)
        res["overlaps"] += self.overlaps

    def wait_quiet(self, n_alive, timeout_s, quiet_ms=None):
        """Wait until n_alive candidates hold n_alive ephemeral nodes, a leader is known, and
        nothing but pings reaches the server for quiet_ms.  Returns the last sample."""
        quiet_ms = self.args.quiet_ms if quiet_ms is None else quiet_ms
        deadline = time.monotonic_ns() + int(timeout_s * 1e9)
        first_same = None
        last_key = None
        while True:
            self.drain()
            s = Sample(self.zk, self)
            m = s.mntr
            # reign's leader also holds the election's leader node (docs/design.md).
            extra = 1 if self.impl.name == "reign" and self.leader is not None else 0
            ready = (m["zk_num_alive_connections"] == n_alive + 1
                     and m["zk_ephemerals_count"] == n_alive + extra
                     and self.leader is not None)
            key = s.quiet_key()
            if ready and key == last_key:
                if first_same is not None and (s.ns - first_same) / 1e6 >= quiet_ms:
                    return s
                if first_same is None:
                    first_same = s.ns
            else:
                first_same = s.ns if ready else None
            last_key = key
            if time.monotonic_ns() > deadline:
                dead = [c.id for c in self.cands if not c.alive()]
                raise BenchError(
                    "not quiet after %.0f s: %d connections, %d ephemerals (want %d), "
                    "leader %s, exited candidates %s" % (
                        timeout_s, m["zk_num_alive_connections"] - 1,
                        m["zk_ephemerals_count"], n_alive + extra,
                        self.leader.id if self.leader else None, dead[:5]))
            time.sleep(self.args.poll_ms / 1000.0)

    def start(self):
        """Start all N, paced, and wait until they all stand."""
        t0 = time.monotonic()
        started = 0
        while started < self.n:
            k = min(self.impl.batch(), self.n - started)
            for _ in range(k):
                self.spawn()
            started += k
            # Pace: let this batch connect before starting the next one.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                self.drain_alive(" at start")
                if self.zk.mntr()["zk_ephemerals_count"] >= started:
                    break
                time.sleep(0.05)
        s = self.wait_quiet(self.n, timeout_s=180, quiet_ms=max(self.args.quiet_ms, 500))
        return time.monotonic() - t0, s

    def stop(self):
        for c in self.cands:
            if c.alive():
                c.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for c in self.cands:
            try:
                c.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                c.signal(signal.SIGKILL)
                c.proc.wait()
            c.close()
        self.cands = []


class StoreFleet(Fleet):
    """N candidates in one election on a store other than ZooKeeper (SQL, etcd), kept at N.
    Fleet's event handling, kill_leader() and stop() work on it; there is no ZooKeeper, a
    subclass says how a candidate starts and when it stands (self.ready: a `reign campaign`'s
    READY_TEXT line, as its stderr reader saw it).  Every leadership's term (the fencing token)
    must exceed every earlier one's, where the `elected` lines carry one (self.terms)."""

    terms = True  # an instance whose candidates print no term sets it False

    def __init__(self, args, kind, n, label, workdir, env=None):
        # Not Fleet.__init__: there is no ZooKeeper here.
        self.args, self.n, self.label = args, n, label
        self.env = env  # the candidates' whole environment (None: this process's)
        self.init_state(workdir, "bench-%s-%d-%s-%d" % (kind, n, label, os.getpid()))
        self.term_violations = 0
        self.last_term = 0
        self.ready = {}  # candidate id -> when its READY line was read

    def handle(self, ev):
        super().handle(ev)
        if ev.kind == "elected" and self.terms:
            term = int(ev.fields.get("term", "0"))
            if term <= self.last_term:
                self.term_violations += 1
            self.last_term = max(self.last_term, term)

    def add_checks(self, res):
        super().add_checks(res)
        res["term_violations"] += self.term_violations


# ---- one configuration --------------------------------------------------------------------------

def measure_rss(fleet):
    rss = [c.status("VmRSS") for c in fleet.cands]
    anon = [c.status("RssAnon") for c in fleet.cands]
    rss = [v for v in rss if v]
    anon = [v for v in anon if v]
    return {"vmrss_kb_median": statistics.median(rss) if rss else None,
            "vmrss_kb_max": max(rss) if rss else None,
            "rssanon_kb_median": statistics.median(anon) if anon else None,
            "processes": len(rss)}


def kill_leader(fleet, kind, limit_s):
    """SIGTERM (graceful) or SIGKILL (crash) to the fleet's leader; wait for another candidate's
    `elected` line, then for the old leader's exit.  The old candidate is reaped, its last lines
    handled, and it leaves fleet.cands.  Returns (old candidate, the `elected` Event, the time
    of the kill, the old leader's exit status)."""
    old = fleet.leader
    sig = signal.SIGTERM if kind == "graceful" else signal.SIGKILL
    t_kill = time.monotonic_ns()
    old.signal(sig)
    deadline = t_kill + int(limit_s * 1e9)
    elected = None
    while elected is None:
        ev = fleet.next_event(deadline)
        if ev is None:
            raise BenchError("%s trial: no new leader %.0f s after the %s" % (
                kind, limit_s, "SIGTERM" if kind == "graceful" else "SIGKILL"))
        if ev.kind == "elected" and ev.cand is not old:
            elected = ev
    if not (t_kill <= elected.ns <= elected.recv_ns):
        fleet.clock_violations.append((elected.cand.id, elected.ns, t_kill, elected.recv_ns))
    try:
        rc = old.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        old.signal(signal.SIGKILL)
        rc = "killed after 30 s"
    old.reader.join(timeout=10)  # its last lines are in the queue now
    fleet.drain()
    old.close()
    fleet.cands.remove(old)
    if old.demoted_ns is not None and elected.ns < old.demoted_ns:
        fleet.overlaps += 1  # elected before the old leader had stepped down
    return old, elected, t_kill, rc


def one_trial(fleet, kind, args):
    """Remove the leader one way or the other; time it and count its requests."""
    before = fleet.wait_quiet(fleet.n, timeout_s=120)
    limit_s = 30 if kind == "graceful" else fleet.session_timeout / 1000.0 * 3 + 30
    old, elected, t_kill, rc = kill_leader(fleet, kind, limit_s)
    demoted_ns = old.demoted_ns
    after = fleet.wait_quiet(fleet.n - 1, timeout_s=120)
    r = request_delta(before, after)
    # The window closes some 300-400 ms after the election; a reign leader's periodic liveness
    # sync (every session/5: 400 ms with 2 s sessions, 6 s with 30 s ones) may fall in it.
    # It is counted, not estimated away: the report says so and shows the idle rate.
    since_elected = max(0, after.ns - elected.ns) / 1e9
    if kind == "crash":
        # A SIGKILLed leader sends nothing more, and the quiet sample before the kill had
        # nothing in flight: count the survivors' requests, which `cons` gives exactly.
        counted = r["survivor_requests"]
    else:
        counted = r["requests"]
    r.update({
        "requests": counted,
        "since_elected_s": since_elected,
        "latency_ms": (elected.ns - t_kill) / 1e6,
        "handoff_ms": (elected.ns - demoted_ns) / 1e6 if demoted_ns else None,
        "exit": rc,
    })
    fleet.spawn()  # replacement; the next trial's wait_quiet waits until it stands
    return r


def run_phase(impl, zk, n, kind, count, session_timeout, args, workdir, res):
    """Start n candidates with one session timeout, measure them at rest, run the trials."""
    fleet = Fleet(impl, zk, n, session_timeout, args,
                  workdir / ("%s-%d-%s" % (impl.name, n, kind)))
    ph = {"session_timeout": session_timeout}
    res["phases"][kind] = ph
    try:
        log("%s: starting %d candidates (session %d ms)" % (impl.name, n, session_timeout))
        ph["start_s"], _ = fleet.start()
        time.sleep(1.0)  # let start-up allocations settle before reading memory
        ph["rss"] = measure_rss(fleet)
        s1 = fleet.wait_quiet(n, timeout_s=60)
        ph["timeouts_ms"] = sorted(set(c["to"] for c in s1.cons.values()))
        # Idle traffic: what the election costs when nothing happens.  No session comes or
        # goes, so `cons` alone counts it exactly: requests move lcxid, pings do not.
        time.sleep(args.idle_s)
        fleet.drain()
        s2 = Sample(zk, fleet)
        idle = request_delta(s1, s2)
        ph["idle"] = {"requests_per_s": idle["survivor_requests"] / idle["window_s"],
                      "pings_per_s": idle["pings"] / idle["window_s"],
                      "leader_requests_per_s": idle["leader_requests"] / idle["window_s"],
                      "window_s": idle["window_s"]}
        log("%s n=%d: all standing after %.1f s; VmRSS median %.1f MB; idle %.1f pings/s, "
            "%.2f requests/s" % (impl.name, n, ph["start_s"],
                                 (ph["rss"]["vmrss_kb_median"] or 0) / 1024.0,
                                 ph["idle"]["pings_per_s"], ph["idle"]["requests_per_s"]))
        counted = run_trials(
            res, kind, kind, count, args, lambda: one_trial(fleet, kind, args),
            lambda i, r: "  %s %s n=%d #%d: %.2f ms (hand-off %s ms), %.1f requests (%d writes), "
            "%d watch events" % (impl.name, kind, n, i, r["latency_ms"], fmt(r["handoff_ms"]),
                                 r["requests"], r["writes"], r["watch_events"]))
        lat = [t["latency_ms"] for t in counted]
        log("%s n=%d %s: p50 %.2f ms, max %.2f ms over %d" % (
            impl.name, n, kind, percentile(lat, 50), max(lat), len(lat)))
    except BenchError as e:
        log("%s n=%d %s: %s" % (impl.name, n, kind, e))
        res["errors"].append("%s trials: %s" % (kind, e))
    finally:
        fleet.add_checks(res)
        fleet.stop()


def run_trials(res, key, kind, count, args, trial, say):
    """count trials on one fleet, after args.warmup discarded ones if kind is "graceful": each
    trial() a dict, marked "warmup" or not and appended to res[key]; with args.verbose, the line
    say(i, that dict) is logged after each.  Returns the trials that count."""
    res.setdefault(key, [])
    warm = args.warmup if kind == "graceful" else 0
    for i in range(warm + count):
        t = trial()
        t["warmup"] = i < warm
        res[key].append(t)
        if args.verbose:
            log(say(i, t))
    return [t for t in res[key] if not t["warmup"]]


def run_config(impl, zk, n, args, workdir):
    """Both kinds of trial for one implementation and count, each with its own candidates:
    graceful ones with a long session (few pings, so requests count exactly), crash ones with
    the short session that bounds their latency."""
    res = {"impl": impl.name, "n": n, "graceful": [], "crash": [], "errors": [], "phases": {},
           "clock_violations": 0, "overlaps": 0}
    for kind, count, timeout in (("graceful", args.graceful, args.graceful_session_timeout),
                                 ("crash", args.crash, args.session_timeout)):
        if count > 0:
            run_phase(impl, zk, n, kind, count, timeout, args, workdir, res)
    return res


def zk_reference(args, workdir, crash, session_timeout, graceful_session_timeout, more=None):
    """reign on a throwaway ZooKeeper, the reference of the benchmarks on other stores: run_config
    at each of args.counts, with args.graceful, args.warmup, args.verbose and args.reign, `crash`
    crash trials with sessions of session_timeout ms, graceful ones with
    graceful_session_timeout.  more(zk, n, ns, res), if given, adds to each count's results
    (ns: the options run_config had).  Returns ({"missing": why}, []) without a reign binary,
    else ({"version", "session_timeout", "graceful_session_timeout"}, the results)."""
    ns = argparse.Namespace(reign=args.reign, graceful=args.graceful, crash=crash,
                            warmup=args.warmup, session_timeout=session_timeout,
                            graceful_session_timeout=graceful_session_timeout, quiet_ms=300,
                            poll_ms=50, idle_s=1.0, verbose=args.verbose)
    impl = Impl("reign", ns, workdir)
    impl.prepare()
    if impl.reason_missing:
        return {"missing": impl.reason_missing}, []
    zk = ZooKeeper(workdir / "zk")
    results, version = [], "?"
    try:
        zk.start()
        version = zk.mntr().get("zk_version", "?").split("-")[0]
        warm_server(zk, 3.0)
        for n in args.counts:
            res = run_config(impl, zk, n, ns, workdir / "zk-runs")
            if more:
                more(zk, n, ns, res)
            results.append(res)
    finally:
        zk.stop()
    return {"version": version, "session_timeout": session_timeout,
            "graceful_session_timeout": graceful_session_timeout}, results


def summarize(res):
    out = {}
    for kind in ("graceful", "crash"):
        trials = [t for t in res.get(kind, []) if not t["warmup"]]
        if not trials:
            continue
        lat = [t["latency_ms"] for t in trials]
        hand = [t["handoff_ms"] for t in trials if t["handoff_ms"] is not None]
        out[kind] = {
            "trials": len(trials),
            "p50": percentile(lat, 50), "p90": percentile(lat, 90),
            "p99": percentile(lat, 99), "max": max(lat),
            "handoff_p50": percentile(hand, 50) if hand else None,
            "handoff_p99": percentile(hand, 99) if hand else None,
            "requests": statistics.median(t["requests"] for t in trials),
            "requests_min": min(t["requests"] for t in trials),
            "requests_max": max(t["requests"] for t in trials),
            "writes": statistics.median(t["writes"] for t in trials),
            "departed": statistics.median(t["departed_requests"] for t in trials),
            "watch_events": statistics.median(t["watch_events"] for t in trials),
            "bad_exits": sum(1 for t in trials if kind == "graceful" and t["exit"] != 0),
        }
    return out
