"""etcd.py - a throwaway single-member etcd (scripts/etcd.sh) and what the benchmarks read from it:
its /metrics (EtcdSample), the requests between two samples (etcd_delta), its server's CPU time.

etcd counts every gRPC call it handles in grpc_server_handled_total{grpc_method=...}; its JSON
gateway (/v3/..., what reign speaks) turns each HTTP request into a gRPC call to the server
itself, so reign's requests are counted there as etcdctl's and python-etcd3's are.  A stream
(Watch, LeaseKeepAlive) is counted when it ends; the messages on it in
grpc_server_msg_received_total.  LeaseKeepAlive is a session's heartbeat, ZooKeeper's ping: the
deltas keep it apart, as bench/benchlib/zk.py keeps pings apart.
"""

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from .common import ROOT, BenchError

ETCD_SH = ROOT / "scripts" / "etcd.sh"
KEEPALIVE = "LeaseKeepAlive"

_METRIC_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([-+0-9.eE]+|NaN|[-+]Inf)$')
_LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
GAUGES = ("etcd_debugging_mvcc_keys_total", "etcd_debugging_mvcc_watcher_total",
          "etcd_debugging_mvcc_watch_stream_total", "etcd_server_proposals_committed_total",
          "etcd_debugging_lease_granted_total", "etcd_debugging_lease_revoked_total",
          "etcd_debugging_server_lease_expired_total", "etcd_debugging_mvcc_current_revision",
          "etcd_debugging_mvcc_put_total", "etcd_debugging_mvcc_delete_total",
          "etcd_debugging_mvcc_range_total", "etcd_debugging_mvcc_txn_total")


class Etcd:
    """One member from scripts/etcd.sh, stopped by stop() (and by the script's watchdog if the
    harness dies: REIGN_ETCD_OWNER_PID)."""

    def __init__(self, state_dir):
        self.state_dir = Path(state_dir)
        self.connect = self.endpoints = self.uri = None
        self.port = None
        self.started = False

    def start(self):
        env = dict(os.environ, REIGN_ETCD_OWNER_PID=str(os.getpid()))
        self.started = True  # stop() from here on, even if start fails half-way
        r = subprocess.run(["bash", str(ETCD_SH), "start", str(self.state_dir), "1"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise BenchError("scripts/etcd.sh start failed:\n" + r.stderr)
        self.connect = (self.state_dir / "connect").read_text().strip()
        self.endpoints = (self.state_dir / "endpoints").read_text().strip()
        self.uri = (self.state_dir / "uri").read_text().strip()
        self.port = int(self.connect.split(",")[0].rsplit(":", 1)[1])

    def stop(self):
        if self.started:
            subprocess.run(["bash", str(ETCD_SH), "stop", str(self.state_dir)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            self.started = False

    def get(self, path, timeout=10.0):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                    timeout=timeout) as r:
            return r.read().decode("utf-8", "replace")

    def version(self):
        try:
            return json.loads(self.get("/version")).get("etcdserver", "?")
        except (OSError, ValueError):
            return "?"

    def args(self):
        """The member's command line, as etcd.sh wrote it (one argument per line)."""
        try:
            return (self.state_dir / "s1" / "args").read_text().split("\n")
        except OSError:
            return []

    def pid(self):
        try:
            return int((self.state_dir / "s1" / "pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def cpu_ms(self):
        """CPU time the server has used so far, ms; None if unknown."""
        try:
            fields = Path("/proc/%d/stat" % self.pid()).read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, TypeError):
            return None

    def sample(self):
        return EtcdSample(self.get("/metrics"))


class EtcdSample:
    """One reading of /metrics: gRPC calls handled and started and messages received, per
    method (codes summed), and a few of the server's gauges and counters."""

    def __init__(self, text):
        self.ns = time.monotonic_ns()
        self.handled, self.started, self.received = {}, {}, {}
        self.codes = {}
        self.gauges = {}
        for line in text.split("\n"):
            if not line or line[0] == "#":
                continue
            m = _METRIC_RE.match(line)
            if not m:
                continue
            name, labels, value = m.group(1), m.group(2) or "", m.group(3)
            if name in GAUGES:
                self.gauges[name] = float(value)
                continue
            table = {"grpc_server_handled_total": self.handled,
                     "grpc_server_started_total": self.started,
                     "grpc_server_msg_received_total": self.received}.get(name)
            if table is None:
                continue
            lab = dict(_LABEL_RE.findall(labels))
            method = lab.get("grpc_method", "?")
            table[method] = table.get(method, 0) + int(float(value))
            if name == "grpc_server_handled_total":
                key = "%s/%s" % (method, lab.get("grpc_code", "?"))
                self.codes[key] = self.codes.get(key, 0) + int(float(value))

    def gauge(self, name):
        return int(self.gauges.get(name, 0))

    def quiet_key(self):
        """What moves when anything but a heartbeat happens: calls handled and started,
        stream messages, keys, watchers, raft proposals."""
        return (sum(v for k, v in self.handled.items() if k != KEEPALIVE),
                sum(v for k, v in self.started.items() if k != KEEPALIVE),
                sum(v for k, v in self.received.items() if k != KEEPALIVE),
                self.gauge("etcd_debugging_mvcc_keys_total"),
                self.gauge("etcd_debugging_mvcc_watcher_total"),
                self.gauge("etcd_debugging_mvcc_current_revision"))


def etcd_delta(a, b):
    """What the server handled between two samples.  requests: gRPC calls handled, every method
    but LeaseKeepAlive (the heartbeat, `keepalives`); all: with it; by_method: calls handled per
    method; started: calls started (a stream that is still open is started, not handled);
    messages: stream messages received but the heartbeat's; proposals: raft proposals committed
    (the writes, lease grants and revocations included)."""
    def d(x, y):
        return {k: y.get(k, 0) - x.get(k, 0) for k in set(x) | set(y)
                if y.get(k, 0) != x.get(k, 0)}
    h = d(a.handled, b.handled)
    st = d(a.started, b.started)
    rc = d(a.received, b.received)
    codes = d(a.codes, b.codes)
    g = {k: b.gauge(k) - a.gauge(k) for k in GAUGES}
    return {
        "window_s": (b.ns - a.ns) / 1e9,
        "requests": sum(v for k, v in h.items() if k != KEEPALIVE),
        "keepalives": h.get(KEEPALIVE, 0),
        "keepalive_messages": rc.get(KEEPALIVE, 0),
        "all": sum(h.values()),
        "by_method": h,
        "codes": codes,
        "started": sum(v for k, v in st.items() if k != KEEPALIVE),
        "messages": sum(v for k, v in rc.items() if k != KEEPALIVE),
        "proposals": g["etcd_server_proposals_committed_total"],
        "leases_granted": g["etcd_debugging_lease_granted_total"],
        "leases_revoked": g["etcd_debugging_lease_revoked_total"],
        "leases_expired": g["etcd_debugging_server_lease_expired_total"],
        "revisions": g["etcd_debugging_mvcc_current_revision"],
    }


def etcd_wait_quiet(etcd, quiet_s=0.5, timeout_s=60, poll_s=0.05):
    """Until nothing but heartbeats reaches the server for quiet_s; returns the last sample."""
    last = etcd.sample()
    since = time.monotonic()
    end = since + timeout_s
    while time.monotonic() < end:
        time.sleep(poll_s)
        s = etcd.sample()
        if s.quiet_key() != last.quiet_key():
            since = time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return s
        last = s
    raise BenchError("etcd did not become quiet within %d s" % timeout_s)
