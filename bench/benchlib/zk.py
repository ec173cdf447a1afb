"""zk.py - a throwaway standalone ZooKeeper server (scripts/zk.sh) and what the benchmarks read
from it: its four-letter words, a sample of its counters (Sample), the requests a failover cost
(request_delta), and the floor under any failover, a bare round trip with no client library in
the way (RawSession, measure_floor).
"""

import os
import re
import socket
import struct
import subprocess
import time
from pathlib import Path

from .common import ROOT, BenchError, percentile

ZK_SH = ROOT / "scripts" / "zk.sh"


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
