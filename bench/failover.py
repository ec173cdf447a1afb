#!/usr/bin/python3
"""failover.py - the failover benchmark: reign against Curator's LeaderLatch and kazoo's Election.

For each implementation (reign's `reign campaign`, bench/ref/CuratorCandidate.java,
bench/ref/kazoo_candidate.py) and each number of candidates, it starts that many candidate
processes on a throwaway standalone ZooKeeper (scripts/zk.sh), waits until all of them stand,
then repeatedly removes the current leader and times how long the election is without one:

  graceful  SIGTERM to the leader (it resigns and deletes its node) until the next `elected` line
  crash     SIGKILL to the leader until the next `elected` line (the session has to expire)

After each failover it waits until the server is quiet, counts the requests the failover cost
(from `mntr` and `cons`, see request_delta()), then starts a replacement candidate so the count
stays constant.  It also records each candidate's resident memory and the session timeout the
server granted.  At the end it writes docs/benchmarks.md (tables, the command line, the machine)
and a JSON file with every sample.

Every candidate prints `elected ...`/`demoted ...` lines with a CLOCK_MONOTONIC timestamp of when
the change took effect, so latencies come from those timestamps, not from when this script
happened to read a pipe.  Python stdlib only; run it with /usr/bin/python3 (kazoo's candidates
need Debian's python3-kazoo).  This measures, it never asserts: targets are reported, not checked.
"""

import argparse
import datetime
import json
import math
import os
import platform
import queue
import re
import shlex
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
ZK_SH = ROOT / "scripts" / "zk.sh"

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


GUARDED = ("reign's candidates ran with their guardian (the tools' default), which ends a "
           "killed leader's session at once; Curator and kazoo wait for the session to expire.  "
           "\"Crash failover with the guardian\" below has its own run, with more trials.")
UNGUARDED = ("reign's figure is its session's expiry: its candidates ran without their guardian "
             "(`REIGN_GUARDIAN=off`, or a reign from before the guardian); with one, the default "
             "of the tools, a crash is a matter of milliseconds: see \"Crash failover with the "
             "guardian\" below.")


class BenchError(Exception):
    pass


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def percentile(values, p):
    """Nearest-rank percentile: a value that was measured, never an interpolation."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, int(math.ceil(p / 100.0 * len(s))))
    return s[k - 1]


# ---- ZooKeeper ----------------------------------------------------------------------------------

class ZooKeeper:
    """A throwaway standalone server from scripts/zk.sh, and its four-letter words."""

    def __init__(self, state_dir):
        self.state_dir = Path(state_dir)
        self.host, self.port = None, None

    def start(self):
        env = dict(os.environ, REIGN_ZK_OWNER_PID=str(os.getpid()))
        r = subprocess.run(["bash", str(ZK_SH), "start", str(self.state_dir)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            raise BenchError("scripts/zk.sh start failed:\n" + r.stderr)
        connect = (self.state_dir / "connect").read_text().strip()
        host, port = connect.split(",")[0].rsplit(":", 1)
        self.host, self.port = host, int(port)
        conf = self.conf()
        if conf.get("maxClientCnxns", "0") not in ("0", "") and int(conf["maxClientCnxns"]) < 300:
            raise BenchError("zk.sh's server caps clients per address at %s; need 0 (no cap)"
                             % conf["maxClientCnxns"])
        if "recved" not in self.fourlw("cons"):
            raise BenchError("the server does not answer 'cons' (4lw.commands.whitelist)")

    def set_force_sync(self, on):
        """Restarts the server with forceSync=yes (each write waits for its log's fsync, as on a
        production server) or no (zk.sh's default)."""
        cfg = self.state_dir / "s1" / "zoo.cfg"
        lines = [ln for ln in cfg.read_text().splitlines() if not ln.startswith("forceSync=")]
        lines.append("forceSync=%s" % ("yes" if on else "no"))
        for cmd in ("stop-server", "write", "start-server"):
            if cmd == "write":
                cfg.write_text("\n".join(lines) + "\n")
                continue
            r = subprocess.run(["bash", str(ZK_SH), cmd, str(self.state_dir), "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            if r.returncode != 0:
                raise BenchError("scripts/zk.sh %s failed:\n%s" % (cmd, r.stderr))

    def stop(self):
        subprocess.run(["bash", str(ZK_SH), "stop", str(self.state_dir)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    @property
    def connect(self):
        return "%s:%d" % (self.host, self.port)

    def fourlw(self, word, timeout=10.0):
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                d = s.recv(262144)
                if not d:
                    break
                chunks.append(d)
        return b"".join(chunks).decode("utf-8", "replace")

    def mntr(self):
        out = {}
        for line in self.fourlw("mntr").splitlines():
            k, _, v = line.partition("\t")
            try:
                out[k] = float(v) if "." in v else int(v)
            except ValueError:
                out[k] = v
        return out

    def zoo_cfg(self):
        """The server's configuration file, as zk.sh wrote it (conf omits forceSync)."""
        out = {}
        try:
            for line in (self.state_dir / "s1" / "zoo.cfg").read_text().splitlines():
                if "=" in line and not line.lstrip().startswith("#"):
                    k, _, v = line.partition("=")
                    out[k.strip()] = v.strip()
        except OSError:
            pass
        return out

    def conf(self):
        out = {}
        for line in self.fourlw("conf").splitlines():
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
        return out

    def cons(self):
        """Per session: packets received, last client xid, negotiated timeout."""
        out = {}
        for line in self.fourlw("cons").splitlines():
            m = re.match(r"\s*/?(.*):(\d+)\[\d+\]\((.*)\)", line)
            if not m:
                continue
            f = dict(kv.split("=", 1) for kv in m.group(3).split(",") if "=" in kv)
            if "sid" not in f:
                continue  # our own four-letter-word connection
            out[f["sid"]] = {"recved": int(f["recved"]), "lcxid": int(f.get("lcxid", "0x0"), 16),
                             "to": int(f.get("to", "0")), "port": int(m.group(2))}
        return out


class Sample:
    """One look at the server: mntr, then cons, then the time; and whose sessions they are."""

    def __init__(self, zk, fleet=None):
        # mntr between two cons, each session's counters averaged: a ping that lands between
        # the two looks counted (or not) by mntr with even odds either way, so the error of
        # request_delta() is centred on zero and half as wide as with a single cons.
        before = zk.cons()
        self.mntr = zk.mntr()
        after = zk.cons()
        self.ns = time.monotonic_ns()
        self.cons = {}
        for sid in set(before) | set(after):
            a, b = before.get(sid), after.get(sid)
            if a is None or b is None:
                self.cons[sid] = a or b
            else:
                self.cons[sid] = dict(b, recved=(a["recved"] + b["recved"]) / 2.0,
                                      lcxid=(a["lcxid"] + b["lcxid"]) / 2.0)
        self.leader_sid = None
        if fleet is not None:
            fleet.map_sessions(self)
            if fleet.leader is not None:
                self.leader_sid = fleet.leader.sid

    def quiet_key(self):
        # Everything a request changes except pings and the leader's own steady traffic (a
        # reign leader syncs every session/5 to prove it is alive): the sum of the other
        # sessions' last client xids moves with each of their requests, the write count with
        # every write, the node and watch counts with every change.
        m = self.mntr
        return (m["zk_num_alive_connections"], m["zk_ephemerals_count"], m["zk_znode_count"],
                m["zk_watch_count"], m["zk_cnt_updatelatency"], self.leader_sid,
                sum(c["lcxid"] for sid, c in self.cons.items() if sid != self.leader_sid),
                len(self.cons))


WATCH_KEYS = ("zk_sum_node_deleted_watch_count", "zk_sum_node_changed_watch_count",
              "zk_sum_node_children_watch_count", "zk_sum_node_created_watch_count")


def request_delta(a, b):
    """Requests the server processed between samples a and b, pings excluded.

    mntr's zk_cnt_readlatency counts every read and every ping, zk_cnt_updatelatency every
    write a client sent (createSession and closeSession included; not the closeSession the
    server issues itself when a session expires, which has no connection and skips the
    counters).  A ping is the only packet besides requests that a session sends while
    connected, and it does not move the session's last client xid (`lcxid` in `cons`, which
    takes the xid of each request answered: 1, 2, 3, ... per session).  So for each session
    alive in both samples, pings = (packets received) - (xid advance), and
    requests = reads + writes - pings.  A session that ends between the samples (the old leader)
    is no longer in `cons`; its own requests remain in the totals, and its pings are at most the
    one or two it may send between the first sample and its death.
    """
    reads = b.mntr["zk_cnt_readlatency"] - a.mntr["zk_cnt_readlatency"]
    writes = b.mntr["zk_cnt_updatelatency"] - a.mntr["zk_cnt_updatelatency"]
    pings = 0
    survivor_requests = 0
    for sid, ca in a.cons.items():
        cb = b.cons.get(sid)
        if cb is None:
            continue
        xid_advance = cb["lcxid"] - ca["lcxid"]
        survivor_requests += xid_advance
        pings += (cb["recved"] - ca["recved"]) - xid_advance
    watches = sum(b.mntr.get(k, 0) - a.mntr.get(k, 0) for k in WATCH_KEYS)
    leader_requests = 0
    if b.leader_sid in a.cons and b.leader_sid in b.cons:
        leader_requests = b.cons[b.leader_sid]["lcxid"] - a.cons[b.leader_sid]["lcxid"]
    return {"requests": reads + writes - pings, "writes": writes, "reads": reads - pings,
            "survivor_requests": survivor_requests, "pings": pings,
            "departed_requests": reads + writes - pings - survivor_requests,
            "leader_requests": leader_requests,
            "watch_events": watches, "window_s": (b.ns - a.ns) / 1e9}


# ---- the floor: a bare ZooKeeper round trip -----------------------------------------------------

class RawSession:
    """Just enough of ZooKeeper's wire protocol (jute) to time a read and a write with no
    client library in the way: the floor under any failover on this machine."""

    def __init__(self, host, port, timeout_ms=30000):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly.
        body = struct.pack(">iqiqi16s?", 0, 0, timeout_ms, 0, 16, b"\0" * 16, False)
        self._send(body)
        self._recv()
        self.xid = 0

    def _send(self, body):
        self.sock.sendall(struct.pack(">i", len(body)) + body)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            d = self.sock.recv(n - len(buf))
            if not d:
                raise BenchError("ZooKeeper closed the raw session")
            buf += d
        return buf

    def _recv(self):
        (n,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(n)

    @staticmethod
    def _str(s):
        b = s.encode()
        return struct.pack(">i", len(b)) + b

    def call(self, op, payload):
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + payload)
        while True:
            reply = self._recv()
            xid, _zxid, err = struct.unpack(">iqi", reply[:16])
            if xid == self.xid:
                if err != 0:
                    raise BenchError("raw ZooKeeper request %d failed: %d" % (op, err))
                return reply[16:]

    def create(self, path, data=b"", flags=0):
        acl = struct.pack(">ii", 1, 31) + self._str("world") + self._str("anyone")
        reply = self.call(1, self._str(path) + struct.pack(">i", len(data)) + data + acl +
                          struct.pack(">i", flags))
        (n,) = struct.unpack(">i", reply[:4])
        return reply[4:4 + n].decode()

    def children(self, path, watch=False):
        return self.call(8, self._str(path) + struct.pack(">?", watch))

    def sync(self, path):
        return self.call(9, self._str(path))

    def exists(self, path):
        return self.call(3, self._str(path) + struct.pack(">?", False))

    def set_data(self, path, data):
        return self.call(5, self._str(path) + struct.pack(">i", len(data)) + data +
                         struct.pack(">i", -1))

    def delete(self, path):
        return self.call(2, self._str(path) + struct.pack(">i", -1))

    def close(self):
        try:
            self.call(-11, b"")
        except (OSError, BenchError):
            pass
        self.sock.close()


def warm_server(zk, seconds):
    """Exercise the server's request paths (create, list, watch, write, delete, sync) so that
    its JIT has compiled them before the first configuration, whichever comes first."""
    s = RawSession(zk.host, zk.port)
    base = "/bench-warm-%d" % os.getpid()
    try:
        s.create(base)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            node = s.create(base + "/n_", b"x", flags=3)  # ephemeral sequential
            s.children(base)
            s.exists(node)
            s.set_data(node, b"y")
            s.sync("/")
            s.delete(node)
        s.delete(base)
    finally:
        s.close()


def measure_floor(zk, rounds):
    """p50/p90 of a bare read (exists) and write (setData) round trip, in ms."""
    s = RawSession(zk.host, zk.port)
    path = "/bench-floor-%d" % os.getpid()
    try:
        s.create(path)
        out = {}
        for name, fn in (("read", lambda: s.exists(path)),
                         ("write", lambda: s.set_data(path, b"x"))):
            for _ in range(20):
                fn()  # warm up the server's code paths
            xs = []
            for _ in range(rounds):
                t0 = time.monotonic_ns()
                fn()
                xs.append((time.monotonic_ns() - t0) / 1e6)
            out[name] = {"p50": percentile(xs, 50), "p90": percentile(xs, 90)}
        s.delete(path)
        return out
    finally:
        s.close()


# ---- candidates ---------------------------------------------------------------------------------

class Event:
    __slots__ = ("kind", "cand", "ns", "recv_ns", "fields")

    def __init__(self, kind, cand, ns, recv_ns, fields):
        self.kind, self.cand, self.ns, self.recv_ns, self.fields = kind, cand, ns, recv_ns, fields


class Candidate:
    """One candidate process.  Its stdout lines become Events in fleet.events; its stderr goes
    to err_path, and with on_err_line also to on_err_line(candidate, line, read_ns) as each line
    is read (bench/sql_failover.py counts the library's debug lines that way).  env: its whole
    environment (default: this process's)."""

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
            m = LINE_RE.match(raw.decode("utf-8", "replace").strip())
            if not m:
                continue
            fields = dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)
            try:
                ns = int(fields["monotonic_ns"])
            except (KeyError, ValueError):
                continue
            self.fleet.events.put(Event(m.group(1), self, ns, recv, fields))
        self.fleet.events.put(Event("exit", self, time.monotonic_ns(), time.monotonic_ns(), {}))

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
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])  # kB
        except OSError:
            pass
        return None

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
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.election = "bench-%s-%d-%d-%d" % (impl.name, n, session_timeout, os.getpid())
        self.events = queue.Queue()
        self.cands = []
        self.serial = 0
        self.leader = None
        self.clock_violations = []
        self.overlaps = 0
        self.sid_owner = {}

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
                self.drain()
                dead = [c for c in self.cands if not c.alive()]
                if dead:
                    raise BenchError("candidate %s exited at start (see %s)" % (
                        dead[0].id, self.workdir / (dead[0].id + ".err")))
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
        warm = args.warmup if kind == "graceful" else 0
        for i in range(warm + count):
            r = one_trial(fleet, kind, args)
            r["warmup"] = i < warm
            res[kind].append(r)
            if args.verbose:
                log("  %s %s n=%d #%d: %.2f ms (hand-off %s ms), %.1f requests (%d writes), "
                    "%d watch events" % (impl.name, kind, n, i, r["latency_ms"],
                                         fmt(r["handoff_ms"]), r["requests"], r["writes"],
                                         r["watch_events"]))
        lat = [t["latency_ms"] for t in res[kind] if not t["warmup"]]
        log("%s n=%d %s: p50 %.2f ms, max %.2f ms over %d" % (
            impl.name, n, kind, percentile(lat, 50), max(lat), len(lat)))
    except BenchError as e:
        log("%s n=%d %s: %s" % (impl.name, n, kind, e))
        res["errors"].append("%s trials: %s" % (kind, e))
    finally:
        res["clock_violations"] += len(fleet.clock_violations)
        res["overlaps"] += fleet.overlaps
        fleet.stop()


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


# ---- report -------------------------------------------------------------------------------------

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


def source_state(reign):
    """The commit the run started from and the binary measured (taken before the run: others
    may commit while it lasts)."""
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    commit = r.stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src",
                            "include", "CMakeLists.txt"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True).stdout.strip()
    if dirty:
        commit += " (the working tree had uncommitted changes under src/ or include/)"
    if reign and os.path.exists(reign):
        built = datetime.datetime.fromtimestamp(os.path.getmtime(reign)).astimezone()
        commit += "; the `reign` binary measured was built %s" % built.strftime(
            "%Y-%m-%d %H:%M %Z")
    return commit


def machine_info(zk_version, commit):
    def first(path, key):
        try:
            for line in open(path):
                if line.startswith(key):
                    return re.split("[:=]", line, 1)[1].strip().strip('"')
        except OSError:
            pass
        return "?"

    def cmd(argv):
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            return r.stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    def dpkg(pkg):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        return r.stdout.strip() or "?"

    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory": "%.1f GB" % (int(mem_kb) / 1024.0 / 1024.0) if mem_kb.isdigit() else "?",
        "kernel": platform.release(),
        "os": first("/etc/os-release", "PRETTY_NAME"),
        "zookeeper": zk_version,
        "java": cmd(["java", "-version"]),
        "python": platform.python_version(),
        "curator": dpkg("libcurator-recipes-java"),
        "kazoo": dpkg("python3-kazoo"),
        "libzookeeper": dpkg("libzookeeper-mt2"),
        "commit": commit,
    }


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, float):
        return ("%%.%df" % digits) % v
    return str(v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return "%.2f" % (a / b)


def render(run):
    args, results, info = run["args"], run["results"], run["machine"]
    counts = args["counts"]
    impls = [i for i in args["impls"]]
    by = {(r["impl"], r["n"]): r for r in results}
    summ = {k: summarize(v) for k, v in by.items()}
    L = []
    w = L.append

    def get(impl, n, kind, key):
        return summ.get((impl, n), {}).get(kind, {}).get(key)

    def rss_of(impl, n):
        """Memory as measured with the first set of candidates started (graceful's)."""
        for ph in by.get((impl, n), {}).get("phases", {}).values():
            if ph.get("rss", {}).get("vmrss_kb_median"):
                return ph["rss"]
        return None

    def cell(impl, n, kind, keys, digits=2):
        vals = [get(impl, n, kind, k) for k in keys]
        if all(v is None for v in vals):
            return "not run"
        return " / ".join(fmt(v, digits) for v in vals)

    def table(title, kind, keys, digits, ratio_key, unit_note):
        w("")
        w(title)
        w("")
        w(unit_note)
        w("")
        w("| | " + " | ".join("%d candidates" % n for n in counts) + " |")
        w("|---|" + "---|" * len(counts))
        for impl in impls:
            w("| %s | " % LABEL[impl] + " | ".join(cell(impl, n, kind, keys, digits)
                                                   for n in counts) + " |")
        if "reign" in impls:
            for ref in impls:
                if ref == "reign":
                    continue
                w("| reign : %s (%s) | " % (SHORT[ref], ratio_key) + " | ".join(
                    ratio(get("reign", n, kind, ratio_key), get(ref, n, kind, ratio_key))
                    for n in counts) + " |")

    w("# Failover benchmark")
    w("")
    w("Generated by `bench/failover.py` on %s; do not edit by hand, run it again (see "
      "`bench/README.md`).  It measures; nothing here is asserted by a test." % info["date"])
    w("")
    w("How long an election is without a leader when its leader goes, what that costs the "
      "ZooKeeper server, and what a candidate process costs its host: reign's `reign campaign` "
      "next to two widely used recipes run in the same session on the same server, Apache "
      "Curator's `LeaderLatch` (Java) and kazoo's `Election` (Python).")
    w("")
    w("Command:")
    w("")
    w("    " + run["command"])
    try:
        rel = Path(run.get("json", "")).resolve().relative_to(ROOT)
        w("")
        w("Every trial's numbers: `%s`." % rel)
    except ValueError:
        pass
    w("")
    w("Machine: %s, %d CPUs (`nproc`), %s RAM; %s, Linux %s.  ZooKeeper %s (Debian), "
      "standalone, started by `scripts/zk.sh` (tickTime %s ms, forceSync=%s).  %s; "
      "Curator %s, kazoo %s (Python %s), libzookeeper-mt %s.  reign at commit %s." % (
          info["cpu"], info["nproc"], info["memory"], info["os"], info["kernel"],
          info["zookeeper"].split("-")[0], run["zk_conf"].get("tickTime", "?"),
          run["zk_conf"].get("forceSync", "yes"), info["java"], info["curator"], info["kazoo"],
          info["python"], info["libzookeeper"], info["commit"]))
    w("")
    w("Trials per configuration: %d graceful (after %d discarded warm-up trials), %d crash.  "
      "Session timeout requested for the crash trials: %d ms, granted (ms, from `cons`): %s.  "
      "For the graceful trials: %d ms, granted: %s (a long session means few pings, so the "
      "requests of a failover count exactly; the graceful path does not depend on it).  "
      "Total run time %.1f min." % (
          args["graceful"], args["warmup"], args["crash"], args["session_timeout"],
          granted_timeouts(results, "crash"), args["graceful_session_timeout"],
          granted_timeouts(results, "graceful"), run["elapsed_s"] / 60.0))

    fl = run.get("floor", {})
    if fl.get("start"):
        w("")
        w("The floor: a bare ZooKeeper round trip on this machine, timed by the harness with a "
          "minimal protocol client and no library (%s rounds; p50 / p90): at the start of the "
          "run, read (exists) %s / %s ms and write (setData) %s / %s ms; at the end, read %s / "
          "%s ms and write %s / %s ms.  Load average (1 min) %s at the start, %s at the end." % (
              run["args"].get("floor_rounds", "?"),
              fmt(fl["start"]["read"]["p50"]), fmt(fl["start"]["read"]["p90"]),
              fmt(fl["start"]["write"]["p50"]), fmt(fl["start"]["write"]["p90"]),
              fmt(fl.get("end", {}).get("read", {}).get("p50")),
              fmt(fl.get("end", {}).get("read", {}).get("p90")),
              fmt(fl.get("end", {}).get("write", {}).get("p50")),
              fmt(fl.get("end", {}).get("write", {}).get("p90")),
              fmt(run["loadavg"].get("start", [None])[0]),
              fmt(run["loadavg"].get("end", [None])[0])))

    # Headline and targets.
    w("")
    w("## Summary")
    w("")

    def series(impl, kind, key, digits):
        vals = [get(impl, n, kind, key) for n in counts]
        return "/".join(fmt(v, digits) for v in vals)

    # Whether reign's candidates had their guardian (the tools' default): recorded since it
    # exists; older runs tell by their crash figures.
    crash = [get("reign", n, "crash", "p50") for n in counts]
    guarded = run.get("reign_guardian",
                      bool(crash and all(v is not None and v < args["session_timeout"] / 4
                                         for v in crash))) not in (False, "off")
    w("Medians over the trials, at %s candidates:" % "/".join(str(n) for n in counts))
    w("")
    w("- graceful failover (SIGTERM to `elected`), ms: " + "; ".join(
        "%s %s" % (SHORT[i], series(i, "graceful", "p50", 1)) for i in impls) + ".")
    w("- crash failover (SIGKILL to `elected`, %d ms sessions), ms: " % args["session_timeout"]
      + "; ".join("%s %s" % (SHORT[i], series(i, "crash", "p50", 0)) for i in impls) + ". "
      + (GUARDED if guarded else UNGUARDED))
    parts = []
    for i in impls:
        r = [get(i, n, "graceful", "requests") for n in counts]
        wr = [get(i, n, "graceful", "writes") for n in counts]
        r_ok = [v for v in r if v is not None]
        if not r_ok:
            continue
        flat = max(r_ok) - min(r_ok) <= 0.5
        parts.append("%s %s (%s writes)%s" % (
            SHORT[i], "/".join(fmt(v, 1) for v in r), "/".join(fmt(v, 0) for v in wr),
            "" if flat else ", growing"))
    w("- ZooKeeper requests per graceful failover: " + "; ".join(parts) + ".")
    w("- resident memory per candidate process (median VmRSS), MB: " + "; ".join(
        "%s %s" % (SHORT[i], "/".join(
            fmt((rss_of(i, n) or {}).get("vmrss_kb_median", 0) / 1024.0 if rss_of(i, n)
                else None, 1) for n in counts)) for i in impls) + ".")

    w("")
    w("## Targets")
    w("")
    w("The targets of the issue, compared with what was measured (reported, not asserted).")
    w("")
    w("| target | measured (reign) | met? |")
    w("|---|---|---|")
    for n in counts:
        p50 = get("reign", n, "graceful", "p50")
        p99 = get("reign", n, "graceful", "p99")
        w("| graceful p50 <= 2 ms, p99 <= 10 ms (%d candidates) | %s | %s |" % (
            n, "p50 %s ms, p99 %s ms" % (fmt(p50), fmt(p99)) if p50 is not None else "not run",
            "–" if p50 is None else ("yes" if p50 <= 2 and p99 <= 10 else "no")))
    reqs = [(n, get("reign", n, "graceful", "requests")) for n in counts]
    reqs = [(n, r) for n, r in reqs if r is not None]
    if reqs:
        grows = reqs[-1][1] > reqs[0][1] + 0.5
        w("| requests per graceful failover do not grow with candidates | %s | %s |" % (
            ", ".join("%s at %d" % (fmt(r, 1), n) for n, r in reqs),
            "no" if grows else "yes"))
    rss = [(n, (rss_of("reign", n) or {}).get("vmrss_kb_median")) for n in counts]
    rss = [(n, v) for n, v in rss if v]
    if rss:
        worst = max(v for _, v in rss) / 1024.0
        w("| <= 4 MB resident per `reign campaign` | median VmRSS %.1f MB (worst count) | %s |"
          % (worst, "yes" if worst <= 4 else "no"))
    if fl.get("start"):
        r50, w50 = fl["start"]["read"]["p50"], fl["start"]["write"]["p50"]
        w("")
        w("For scale: between the old leader's resign and the new leader's `elected`, reign "
          "makes two round trips one after the other, both writes (the old leader's deletes "
          "of the election's leader node and its own node, sent together; the successor's "
          "claim multi, which checks its own node, makes the leader node and bumps the term: "
          "a successor that was second in line needs no getChildren when no candidate has a "
          "priority, since no node can then appear ahead of it), so at this machine's median "
          "bare round trips its floor is about "
          "%.1f ms; Curator and kazoo also make two (the delete, then a getChildren, a read), "
          "about %.1f ms.  The difference is the price of the fencing token: a write on the "
          "handoff path.%s" % (
              2 * w50, r50 + w50,
              "  The 2 ms target is under that floor here." if 2 * w50 > 2 else ""))

    w("")
    w("## Results")
    table("### Graceful failover latency", "graceful", ("p50", "p90", "p99", "max"), 2, "p50",
          "Milliseconds from SIGTERM to the leader until the next candidate's `elected` line: "
          "p50 / p90 / p99 / max.")
    table("### Graceful hand-off, resign to elected", "graceful", ("handoff_p50", "handoff_p99"),
          2, "handoff_p50",
          "Milliseconds from the old leader's own `demoted ... reason=resigned` timestamp to the "
          "new leader's `elected` timestamp (p50 / p99): the library's part of the failover, "
          "without signal delivery and the runtime's shutdown path (a JVM runs its shutdown "
          "hooks on a new thread).")
    table("### Crash failover latency", "crash", ("p50", "p90", "p99", "max"), 0, "p50",
          "Milliseconds from SIGKILL to the leader until the next `elected` line: p50 / p90 / "
          "p99 / max.  Curator's and kazoo's are the session timeout (%d ms requested)%s; see "
          "the notes." % (args["session_timeout"],
                          ", and so was reign's: its candidates ran without their guardian"
                          if not guarded else "; reign's candidates ran with their guardian"))
    table("### ZooKeeper requests per graceful failover", "graceful",
          ("requests", "writes", "watch_events", "departed"), 1, "requests",
          "Median per failover: requests / of which writes / watch notifications delivered / "
          "requests of the old leader's session (its resign: the delete, closeSession, and "
          "whatever else its library sends), the rest being the successors'.  Pings excluded; "
          "the replacement candidate's join is not part of the window.")
    table("### ZooKeeper requests per crash failover", "crash",
          ("requests", "writes", "watch_events"), 1, "requests",
          "Median per failover: requests / of which writes / watch notifications.  Requests are "
          "the surviving candidates' (a SIGKILLed leader sends nothing more), counted exactly "
          "from `cons`; the server's own closeSession when the dead session expires is not "
          "counted, the same for all.")

    w("")
    w("### Memory per candidate process")
    w("")
    w("Median VmRSS / median RssAnon per candidate process, MB, read from /proc/PID/status once "
      "all candidates stand.  VmRSS counts shared pages (libc, the JVM's and Python's own "
      "mapped files) in every process; RssAnon is the process's private heap and stacks.")
    w("")
    w("| | " + " | ".join("%d candidates" % n for n in counts) + " |")
    w("|---|" + "---|" * len(counts))
    for impl in impls:
        cells = []
        for n in counts:
            r = rss_of(impl, n)
            if not r:
                cells.append("not run")
            else:
                cells.append("%.1f / %.1f" % (r["vmrss_kb_median"] / 1024.0,
                                              (r["rssanon_kb_median"] or 0) / 1024.0))
        w("| %s | %s |" % (LABEL[impl], " | ".join(cells)))
    if "reign" in impls:
        for ref in impls:
            if ref == "reign":
                continue
            cells = []
            for n in counts:
                a = (rss_of("reign", n) or {}).get("vmrss_kb_median")
                b = (rss_of(ref, n) or {}).get("vmrss_kb_median")
                cells.append(ratio(a, b))
            w("| reign : %s (VmRSS) | %s |" % (SHORT[ref], " | ".join(cells)))

    w("")
    w("### Idle cost and start-up")
    w("")
    w("Traffic with nothing happening, for the whole election, with the %d ms sessions of the "
      "crash trials: pings per second and other requests per second, counted exactly from "
      "`cons` over %.0f s; and the time to start all candidates (in batches) until all stand.  "
      "A reign leader's requests are its liveness syncs, one every fifth of the session (with "
      "the 30 s sessions of the graceful trials, one every 6 s; pings too are 15 times rarer "
      "there)." % (args["session_timeout"], args.get("idle_s", 2.0)))
    w("")
    w("| | " + " | ".join("%d candidates" % n for n in counts) + " |")
    w("|---|" + "---|" * len(counts))
    for impl in impls:
        cells = []
        for n in counts:
            ph = by.get((impl, n), {}).get("phases", {}).get("crash")
            if not ph or "idle" not in ph:
                cells.append("not run")
                continue
            cells.append("%.1f pings/s, %.2f req/s; up in %.1f s" % (
                ph["idle"]["pings_per_s"], ph["idle"]["requests_per_s"], ph["start_s"]))
        w("| %s | %s |" % (LABEL[impl], " | ".join(cells)))
    w("")

    # What was not run, and errors.
    notes = []
    for impl in impls:
        if impl in run["missing"]:
            notes.append("%s was not run: %s." % (LABEL[impl], run["missing"][impl]))
    for n in counts:
        for impl in impls:
            if impl in run["missing"]:
                continue
            r = by.get((impl, n))
            if r is None:
                notes.append("%s with %d candidates was not run%s." % (
                    LABEL[impl], n, run["skipped"].get("%s-%d" % (impl, n), "")))
            else:
                for e in r["errors"]:
                    notes.append("%s with %d candidates stopped early: %s" % (LABEL[impl], n, e))
                if r.get("clock_violations"):
                    notes.append("%s with %d candidates: %d `elected` timestamps fell outside "
                                 "[kill, read] (clock mismatch?)." % (
                                     LABEL[impl], n, r["clock_violations"]))
                if r.get("overlaps"):
                    notes.append("%s with %d candidates: %d times the new leader's `elected` "
                                 "time preceded the old leader's `demoted` time." % (
                                     LABEL[impl], n, r["overlaps"]))
                for kind in ("graceful", "crash"):
                    s = summ[(impl, n)].get(kind)
                    if s and s["bad_exits"]:
                        notes.append("%s with %d candidates: %d resigned leaders did not exit "
                                     "with status 0." % (LABEL[impl], n, s["bad_exits"]))
    w("")
    w("### What was and was not run")
    w("")
    if notes:
        for note in notes:
            w("- " + note)
    else:
        w("- Every implementation at every candidate count, as listed above.")
    w("")
    return finish_report(L, METHOD)


def finish_report(lines, method):
    """The report's text: its lines, then the method's paragraphs (one source of prose,
    reflowed here, so edits need not re-wrap it by hand); prose at 100 columns like the rest
    of docs/, tables, code and headings as they are."""
    lines = list(lines)
    for para in method.strip().split("\n\n"):
        lines += [para if para.startswith("#") else " ".join(para.split()), ""]
    out = []
    for line in lines:
        if not line or line.startswith(("|", "#", "    ")):
            out.append(line)
        elif line.startswith("- "):
            out.append(textwrap.fill(line, width=100, subsequent_indent="  ",
                                     break_on_hyphens=False))
        else:
            out.append(textwrap.fill(line, width=100, break_on_hyphens=False))
    return "\n".join(out).rstrip("\n") + "\n"


def granted_timeouts(results, kind):
    parts = []
    for impl in IMPLS:
        tos = sorted(set(t for r in results if r["impl"] == impl
                         for t in r["phases"].get(kind, {}).get("timeouts_ms", [])))
        if tos:
            parts.append("%s %s" % (SHORT[impl], "/".join(str(t) for t in tos)))
    return ", ".join(parts) or "?"


METHOD = """## Method

**Setup.** One standalone ZooKeeper for the whole run, started by `scripts/zk.sh` on a free
loopback port (tickTime 200 ms, so sessions from 400 ms up are granted as asked; forceSync=no,
so no write waits for a disk flush: a production server adds its fsync time to every write,
and reign's election writes once more than the references do, see below).  For each candidate
count and implementation, the harness starts the candidates twice: once with a 30 s session
for the graceful trials (few pings, so requests count exactly; nothing in the graceful path
depends on the session timeout) and once with the short session for the crash trials.  Each
time it starts them in small batches (a JVM needs about a CPU-second to start), waits until
every one holds its node and the server is quiet, measures memory and idle traffic, then runs
the trials.  Only one implementation's candidates are alive at a time; the order of the
implementations rotates from one count to the next, and 5 s of bare requests warm the
server up before the first.  The resigning
Curator candidate exits with `Runtime.halt(0)` at the end of its shutdown hook, so that all
three exit 0 after a resign.

**A trial.** Wait until the server is quiet (below), note the time, send SIGTERM (graceful) or
SIGKILL (crash) to the current leader, and wait for an `elected` line from another candidate.
The latency is that line's own timestamp minus the time of the kill.  All three print
CLOCK_MONOTONIC nanoseconds of the moment the change took effect (the reign CLI the event's
time, Curator's candidate `System.nanoTime()`, which OpenJDK reads from CLOCK_MONOTONIC on
Linux, kazoo's `time.monotonic_ns()`), and the harness checks that every timestamp lies
between the kill (or the process's start) and the moment it read the line; violations would
be listed above.  Then the old leader must exit (status 0 after SIGTERM) and the server must
be quiet again; only then is a replacement candidate started, and it must stand before the
next trial, so the count stays constant and the newcomer joins at the back of the queue.

**What each side does.** `reign campaign` (queue strategy, the default): each candidate holds
an ephemeral sequential node and watches only its predecessor; on SIGTERM the leader demotes
itself, deletes its node and closes its session; the next candidate, woken by the deletion,
lists the children to confirm it is first and, in one multi, checks its node and bumps the
election's term node before announcing `elected` with the term and fencing token: one write
per failover that the references do not make, the price of the token.  Once elected, a reign
leader syncs with the server every fifth of the session timeout, to prove
that its own loop is alive (the design's guard against a wedged leader whose ZooKeeper thread
still answers pings): the idle table shows that traffic.  Curator's LeaderLatch: ephemeral
sequential nodes, each candidate watches its predecessor; the shutdown hook calls
`latch.close()` and `client.close()`.  kazoo's Election is its Lock recipe: ephemeral
sequential nodes, a watch on the predecessor; SIGTERM ends the leader's function, the lock is
released (node deleted) and the client stopped.  The references print `term=0` (they have
none) and their node's sequence number as `token`.

**Counting requests.** ZooKeeper's `mntr` counts the reads (`zk_cnt_readlatency`) and writes
(`zk_cnt_updatelatency`) it answered, but a ping counts as a read, and every connected client
pings about three times per session timeout: 300 per second with 200 candidates.  `cons`
lists each session's packets received and its last client xid (`lcxid`), which advances by
one per request and not on pings.  So between two samples, requests = reads + writes - pings,
with pings = the sum over the sessions alive at both ends of (packets received - xid advance).
A sample is `cons`, `mntr`, `cons`, each session's counters averaged, so a ping that lands
during the sample (about 15 ms with 200 sessions) errs by half a request either way: the
error is centred on zero and small with 30 s sessions (200 candidates ping about 20 times a
second).  The old leader's session is gone by the second sample: its own requests (delete,
closeSession) stay in the totals.  For crash trials the dead leader sends nothing, so the
count is the surviving sessions' xid advance alone, exact whatever the ping rate; the
closeSession the server issues itself when a session expires is not counted by mntr, for
anyone.  Watch notifications are the sums of mntr's
`node_*_watch_count` summaries (watchers fired per node change), exact.  The harness's own
four-letter-word connections are not requests.

**Quiet.** The harness finds which process owns each session (`cons` gives the client's port,
/proc/net/tcp and /proc/PID/fd map it to a process).  The server is quiet when, for at least
the quiet interval (default 300 ms, sampled every 50 ms), the numbers of connections and
ephemeral nodes are as expected, a leader is known, and nothing moves but pings and the
leader's own steady traffic: the same sum of the other sessions' `lcxid`, the same write,
watch and node counts.  A failover's window runs from the quiet sample just before the kill
to the first quiet sample after it, some 300-400 ms after the election.  A reign leader's
periodic liveness sync (every fifth of the session: 6 s in the graceful trials, 400 ms in the
crash trials) is counted if it falls in that window, which can happen in crash trials only;
the idle table shows its rate.  The references send nothing while they lead.

**Memory.** VmRSS (and RssAnon) of each candidate process from /proc/PID/status one second
after all stand; the median over candidates.  For Curator this is the JVM (flags
`%s`), for kazoo the Python interpreter, for reign the `reign` binary.

**Percentiles and noise.** Percentiles are nearest-rank over the measured trials (warm-up
trials discarded): with 30 trials p99 is the largest value, so p99 and max coincide; run more
trials (`--graceful`) for a real p99.  The machine is a shared 2-core virtual machine on which
the ZooKeeper server, the harness, all candidates and other people's builds and tests compete
for the CPUs, so single trials are noisy: read the medians and the ratios, not the tails.
With 200 JVM candidates the machine is busy with Curator itself (the JVMs' threads, GC and
pings), which weighs on Curator's numbers at that count: part of what a JVM candidate costs,
but this machine's cost, not Curator's algorithm.  Crash failover is the session timeout,
minus the time from the dead leader's last packet to the kill, plus up to one tick (the server
expires sessions in tick-sized buckets): it measures ZooKeeper's expiry far more than the
client, and a library shortens it only by asking for a shorter session.  A reign leader's
liveness syncs (every 400 ms here) make its last packet more recent than a reference's last
ping (every ~667 ms), so its session outlives it a little longer on average.
""" % " ".join(JVM_FLAGS)


# ---- the report file, shared with bench/sql_failover.py ----------------------------------------

# Level-2 sections of docs/benchmarks.md that another harness writes: this one keeps them as
# they are when it rewrites the rest of the file (and that one replaces only its own).
OTHER_SECTIONS = ("## SQL lease elections", "## Many elections on one session",
                  "## Designation latency", "## Task queue throughput",
                  "## reignd: failover and footprint",
                  "## Crash failover with the guardian",
                  "## Slots: what a late copy costs",
                  "## Graceful handoff: where the time goes",
                  "## Before and after the election tables")


def write_other_section(path, section, text):
    """Replaces (or appends) one of OTHER_SECTIONS in the report; the rest stays."""
    path = Path(path)
    old = path.read_text() if path.exists() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(splice_section(old, section, text))


def write_marked_section(path, text, begin, end):
    """Replaces the report's text between the markers `begin` and `end` (both included) by
    `text`, which carries them; appends it when the report has none."""
    doc = Path(path).read_text()
    if begin in doc:
        a = doc.index(begin)
        b = doc.index(end) + len(end) + 1
        doc = doc[:a] + text + doc[b:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    Path(path).write_text(doc)


BEGIN_MARK = re.compile(r"<!-- [\w-]+: written by ")


def find_section(doc, heading):
    """Line range [start, end) of the section whose heading line is `heading`: up to the next
    level-1 or level-2 heading, or the end.  None if there is no such section."""
    lines = doc.split("\n")
    try:
        start = lines.index(heading)
    except ValueError:
        return None
    # A section another harness writes between markers (<!-- name: written by ... --> before
    # its heading, <!-- /name --> after it) owns its opening marker.
    head = start
    while start > 0 and (BEGIN_MARK.match(lines[start - 1]) or
                         (not lines[start - 1].strip() and start > 1 and
                          BEGIN_MARK.match(lines[start - 2]))):
        start -= 1
    end = head + 1
    while end < len(lines) and not re.match(r"#{1,2} ", lines[end]) and \
            not BEGIN_MARK.match(lines[end]):
        end += 1
    return start, end


def splice_section(doc, heading, section):
    """doc with the section `heading` replaced by `section` (whose first line is the heading),
    or with `section` appended at the end if doc has none."""
    lines = doc.rstrip("\n").split("\n") if doc.strip() else []
    new = section.rstrip("\n").split("\n")
    where = find_section("\n".join(lines), heading)
    if where is None:
        lines += [""] + new if lines else new
    else:
        start, end = where
        tail = lines[end:]
        lines = lines[:start] + new + ([""] + tail if tail else [])
    return "\n".join(lines) + "\n"


def write_report(path, text):
    """Writes this harness's report, keeping the sections other harnesses own."""
    path = Path(path)
    try:
        old = path.read_text()
    except OSError:
        old = ""
    for heading in OTHER_SECTIONS:
        where = find_section(old, heading)
        if where is not None:
            kept = "\n".join(old.split("\n")[where[0]:where[1]])
            text = splice_section(text, heading, kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ---- main ---------------------------------------------------------------------------------------

def default_reign():
    for p in (ROOT / "build" / "src" / "cli" / "reign",
              ROOT / "build-bench" / "src" / "cli" / "reign"):
        if os.access(p, os.X_OK):
            return str(p)
    return None


def add_run_args(ap, output_help, render_help):
    """The options every harness here has: the binary, scratch directory, report, results,
    verbosity."""
    ap.add_argument("--reign", default=default_reign(),
                    help="the reign binary (default: build/src/cli/reign)")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"), help=output_help)
    ap.add_argument("--json", help="also write every trial's numbers here (default: "
                    "results.json in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help=render_help)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per trial")


def start_run(args, prefix):
    """The scratch directory, made; and SIGTERM unwinds like Ctrl-C, so that every `finally`
    stops what the run started (servers, candidates)."""
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    log("scratch directory %s" % workdir)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    return workdir


def end_run(run, args, workdir, errors, write, t_start):
    """Saves every trial's numbers, writes the report with write(path, run), and removes the
    scratch directory unless it is wanted (asked for, or a trial failed)."""
    json_path = Path(args.json) if args.json else workdir / "results.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    run["json"] = str(json_path)
    json_path.write_text(json.dumps(run, default=str) + "\n")
    log("samples in %s" % json_path)
    if args.output != "-":
        write(args.output, run)
        log("report in %s" % args.output)
    if not args.keep and not args.workdir and not errors and args.json:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log("scratch directory kept: %s (each candidate's stderr is there)" % workdir)
    log("done in %.1f min" % ((time.monotonic() - t_start) / 60.0))


def findings_of(path):
    """The paragraphs (blank-line separated) of a text file, each on one line; None without
    a file."""
    if not path:
        return None
    text = Path(path).read_text()
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]


def rerender(args, write, what, **extra):
    """--render: rewrites the report args.output with write(path, run) from the --json file
    args.render, after storing in that file the `extra` values given (findings, notes), so
    that the next --render keeps them.  Returns main's exit status."""
    path = Path(args.render)
    text = path.read_text()
    run = json.loads(text)
    extra = {k: v for k, v in extra.items() if v}
    if extra:
        run.update(extra)
        indent = 1 if "\n" in text.strip() else None
        path.write_text(json.dumps(run, indent=indent, default=str) + "\n")
    write(args.output, run)
    log("%s of %s rewritten" % (what, args.output))
    return 0


def run_cli(main):
    """Exit status: 0, 1 on a BenchError (said on one line), 130 when interrupted."""
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        log("error: %s" % e)
        sys.exit(1)
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Failover benchmark: reign vs Curator LeaderLatch vs kazoo Election.")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help="comma-separated, of reign,curator,kazoo (default: all)")
    ap.add_argument("--counts", default="3,50,200", help="candidate counts (default 3,50,200)")
    ap.add_argument("--max-count", action="append", default=[], metavar="IMPL=N",
                    help="skip counts above N for IMPL, e.g. curator=50")
    ap.add_argument("--graceful", type=int, default=30, help="graceful trials (default 30)")
    ap.add_argument("--crash", type=int, default=5, help="crash trials (default 5)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="graceful warm-up trials discarded per configuration (default 3)")
    ap.add_argument("--session-timeout", type=int, default=2000,
                    help="session timeout to request for crash trials, ms (default 2000)")
    ap.add_argument("--graceful-session-timeout", type=int, default=30000,
                    help="session timeout for graceful trials, ms (default 30000: few pings)")
    ap.add_argument("--quiet-ms", type=int, default=300,
                    help="how long nothing but pings must happen for 'quiet' (default 300)")
    ap.add_argument("--poll-ms", type=int, default=50, help="sampling interval (default 50)")
    ap.add_argument("--idle-s", type=float, default=2.0,
                    help="idle window to measure background traffic (default 2)")
    ap.add_argument("--warm-s", type=float, default=5.0,
                    help="seconds of bare requests to warm the server up first (default 5)")
    ap.add_argument("--force-sync", action="store_true",
                    help="run the server with forceSync=yes (default: no, as scripts/zk.sh)")
    ap.add_argument("--floor-rounds", type=int, default=300,
                    help="bare round trips timed at start and end (default 300)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: counts 3,20, 5 graceful, 1 crash, 1 warm-up")
    add_run_args(ap, "the report to write (default docs/benchmarks.md; '-' for none)",
                 "only rewrite the report from a results file of an earlier run")
    args = ap.parse_args(argv)
    if args.quick:
        args.counts, args.graceful, args.crash, args.warmup = "3,20", 5, 1, 1
        args.idle_s, args.warm_s, args.floor_rounds = 1.0, 2.0, 100
    args.counts = [int(x) for x in args.counts.split(",") if x]
    args.impls = [x for x in args.impls.split(",") if x]
    for i in args.impls:
        if i not in IMPLS:
            ap.error("unknown implementation '%s'" % i)
    caps = {}
    for spec in args.max_count:
        k, _, v = spec.partition("=")
        if k not in IMPLS or not v.isdigit():
            ap.error("--max-count wants IMPL=N, got '%s'" % spec)
        caps[k] = int(v)
    args.caps = caps
    return args


def main(argv):
    args = parse_args(argv)
    if args.render:
        return rerender(args, lambda path, run: write_report(path, render(run)), "the report")
    t_start = time.monotonic()
    commit = source_state(args.reign)
    workdir = start_run(args, "reign-bench-")
    impls = {name: Impl(name, args, workdir) for name in args.impls}
    missing = {}
    for name, impl in impls.items():
        impl.prepare()
        if impl.reason_missing:
            missing[name] = impl.reason_missing
            log("skipping %s: %s" % (name, impl.reason_missing))

    zk = ZooKeeper(workdir / "zk")
    zk.start()
    if args.force_sync:
        zk.set_force_sync(True)
    log("ZooKeeper at %s" % zk.connect)
    results, skipped = [], {}
    floor, load = {}, {}
    try:
        zk_conf = dict(zk.zoo_cfg(), **zk.conf())
        zk_version = zk.mntr().get("zk_version", "?")
        warm_server(zk, args.warm_s)
        floor["start"] = measure_floor(zk, args.floor_rounds)
        load["start"] = os.getloadavg()
        log("bare round trip: read p50 %.2f ms, write p50 %.2f ms; load %.1f" % (
            floor["start"]["read"]["p50"], floor["start"]["write"]["p50"], load["start"][0]))
        for k, n in enumerate(args.counts):
            # Rotate the order from one count to the next, so no implementation always runs
            # first (on the least warmed-up server) or after the heaviest one.
            order = args.impls[k % len(args.impls):] + args.impls[:k % len(args.impls)]
            for name in order:
                if name in missing:
                    continue
                if name in args.caps and n > args.caps[name]:
                    skipped["%s-%d" % (name, n)] = " (--max-count %s=%d)" % (
                        name, args.caps[name])
                    continue
                results.append(run_config(impls[name], zk, n, args, workdir))
        floor["end"] = measure_floor(zk, args.floor_rounds)
        load["end"] = os.getloadavg()
    finally:
        zk.stop()

    run = {
        "command": "bench/failover.py " + " ".join(shlex.quote(a) for a in argv),
        "args": {"counts": args.counts, "impls": args.impls, "graceful": args.graceful,
                 "crash": args.crash, "warmup": args.warmup,
                 "session_timeout": args.session_timeout,
                 "graceful_session_timeout": args.graceful_session_timeout,
                 "idle_s": args.idle_s, "floor_rounds": args.floor_rounds,
                 "quiet_ms": args.quiet_ms},
        "machine": machine_info(zk_version, commit),
        "reign_guardian": os.environ.get("REIGN_GUARDIAN", "on") != "off",
        "zk_conf": zk_conf,
        "missing": missing,
        "skipped": skipped,
        "results": results,
        "floor": floor,
        "loadavg": load,
        "elapsed_s": time.monotonic() - t_start,
    }
    end_run(run, args, workdir, any(r["errors"] for r in results),
            lambda path, r: write_report(path, render(r)), t_start)
    return 0


if __name__ == "__main__":
    run_cli(main)
