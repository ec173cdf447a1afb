#!/usr/bin/python3
"""reignd.py - reignd's failover and footprint, measured against its targets.

On a throwaway standalone ZooKeeper (scripts/zk.sh through benchlib's helpers, stopped at the
end), two and three reignd daemons, one per node, each manage a dummy service on loopback:

  dummies   one process of this script (--serve-dummies) listens on one port per node and
            service and answers reignd's HTTP health check with 200, or 503 once the harness
            turned that service "down".  It records, in CLOCK_MONOTONIC, when each service
            flipped and when each check arrived, so the first failing check is known exactly.
  hooks     become-active, become-standby and the shell fence are bench/reignd_stamp.c, which
            appends "WHAT NODE SERVICE TERM TOKEN MONOTONIC_NS" to a file the moment it runs.
  logs      each daemon's stderr goes through `reignd-stamp --lines`, which prefixes every line
            with the CLOCK_MONOTONIC time it arrived: "health healthy -> unhealthy", "elected",
            "fencing ...", "fence succeeded".  These marks are late by the pipe's wake-up (a
            process blocked in read(2): microseconds, unless the machine is busy), never early.

Trials, repeated (--trials) for each setting (--settings, "interval/fall/session"):

  health    the active's service turns unhealthy at a random phase of its check interval.
            From the flip (and from the first failing check) to the new active's become-active
            hook, split into: detection (first failing check -> the old active's daemon declares
            the service unhealthy and quits the election), handoff (-> the new active's daemon
            is elected), fencing + hooks (-> become-active runs; the graceful fence waits for the
            old active's become-standby).  The issue's bound is interval x fall + 50 ms.
  kill      SIGKILL of the active's daemon (its service keeps answering, so it must be fenced:
            graceful fails at once, the shell method fences).  From the kill to the new
            active's become-active, bounded by the session timeout instead.

Footprint: VmRSS and VmHWM (/proc/PID/status) of every daemon with one service, and with
--services services each; CPU at rest: utime + stime (/proc/PID/stat) of every daemon over
--idle seconds with nothing happening but health checks, and the ZooKeeper requests in that
window (benchlib's request_delta(): mntr and cons, pings counted apart).

A reference: ZKFC is not packaged in Debian.  bench/ref/kazoo_zkfc.py is a minimal
"health check + election" loop on kazoo (the same HTTP check, kazoo's Election recipe, the same
hooks, no fencing); its footprint and idle CPU are measured in the same run, and its health
failover too (--kazoo-trials).

It writes the section "## reignd: failover and footprint" of docs/benchmarks.md and
leaves the rest alone (--render rewrites it from a --json file).  It measures, it never asserts.
"""

import argparse
import json
import os
import queue
import random
import re
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import BenchError, fmt, log, percentile  # noqa: E402

ROOT = bl.ROOT
SECTION = "## reignd: failover and footprint"
TARGET_SLACK_MS, TARGET_RSS_MB = 50, 6.0
KAZOO_REF = ROOT / "bench" / "ref" / "kazoo_zkfc.py"
WAIT_S = 60


def now_ns():
    return time.monotonic_ns()


# ---- the dummy services (run as a child: --serve-dummies) ---------------------------------------

def serve_dummies(ports):
    """Answers GET with 200 (or 503 once "down I" came on stdin); prints every flip and every
    check with its CLOCK_MONOTONIC time.  One thread, one select loop."""
    sel = selectors.DefaultSelector()
    healthy = {}
    for i, port in enumerate(ports):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(64)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("listen", i))
        healthy[i] = True
    sel.register(sys.stdin, selectors.EVENT_READ, ("stdin", None))
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    while True:
        for key, _ in sel.select():
            kind, i = key.data
            if kind == "stdin":
                line = sys.stdin.readline()
                if not line:
                    return
                cmd, idx = line.split()
                healthy[int(idx)] = cmd == "up"
                out.write("flip %s %s %d\n" % (idx, cmd, now_ns()))
            elif kind == "listen":
                try:
                    conn, _ = key.fileobj.accept()
                except BlockingIOError:
                    continue
                t = now_ns()
                code = 200 if healthy[i] else 503
                conn.setblocking(True)
                conn.settimeout(1.0)
                try:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(b"HTTP/1.0 %d %s\r\nContent-Length: 0\r\n\r\n"
                                 % (code, b"OK" if code == 200 else b"Service Unavailable"))
                except OSError:
                    pass
                conn.close()
                out.write("req %d %d %d\n" % (i, t, code))
            out.flush()


class Dummies:
    """The dummy services' process; its events as (kind, index, ns, value)."""

    def __init__(self, ports, err_path):
        self.ports = ports
        self.err = open(err_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-dummies", ",".join(map(str, ports))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
            start_new_session=True)
        self.lock = threading.Lock()
        self.events = []
        self.flipped = queue.Queue()
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(30):
            raise BenchError("the dummy services did not start")

    def _read(self):
        for raw in self.proc.stdout:
            w = raw.decode().split()
            if w == ["ready"]:
                self.ready.set()
            elif w and w[0] == "req":
                with self.lock:
                    self.events.append(("req", int(w[1]), int(w[2]), int(w[3])))
            elif w and w[0] == "flip":
                self.flipped.put((int(w[1]), w[2], int(w[3])))

    def set(self, index, up):
        """Flips a service; returns the CLOCK_MONOTONIC time the dummy flipped it."""
        self.proc.stdin.write(("%s %d\n" % ("up" if up else "down", index)).encode())
        self.proc.stdin.flush()
        i, _, ns = self.flipped.get(timeout=30)
        return ns

    def first_failed(self, index, since_ns):
        with self.lock:
            xs = [ns for kind, i, ns, code in self.events
                  if i == index and ns >= since_ns and code != 200]
        return min(xs) if xs else None

    def checks(self, index, a_ns, b_ns):
        with self.lock:
            return sum(1 for kind, i, ns, code in self.events if i == index and a_ns <= ns < b_ns)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.err.close()


# ---- the daemons --------------------------------------------------------------------------------

class Stamps:
    """The hooks' file: [(what, node, service, term, token, ns)]."""

    def __init__(self, path):
        self.path = path
        Path(path).write_text("")

    def all(self):
        out = []
        for line in Path(self.path).read_text().splitlines():
            w = line.split()
            if len(w) == 6:
                out.append((w[0], w[1], w[2], w[3], w[4], int(w[5])))
        return out

    def find(self, what, since_ns, node=None, not_node=None, service=None):
        xs = [s for s in self.all() if s[0] == what and s[5] >= since_ns
              and (node is None or s[1] == node) and (not_node is None or s[1] != not_node)
              and (service is None or s[2] == service)]
        return min(xs, key=lambda s: s[5]) if xs else None


class Process:
    """A child whose stderr goes through `reignd-stamp --lines` into a log file: every line
    behind the CLOCK_MONOTONIC time it arrived (a process of its own, so the marks do not wait
    for this harness's threads)."""

    def __init__(self, name, argv, env, log_path, stamp):
        self.name, self.log_path = name, Path(log_path)
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         env=env, start_new_session=True)
            self.stamper = subprocess.Popen([stamp, "--lines"], stdin=self.proc.stderr,
                                            stdout=logf, start_new_session=True)
        self.proc.stderr.close()

    def lines(self):
        for line in self.log_path.read_text(errors="replace").splitlines():
            t, _, text = line.partition(" ")
            if t.isdigit():
                yield int(t), text

    def find(self, pattern, since_ns):
        rx = re.compile(pattern)
        for t, line in self.lines():
            if t >= since_ns and rx.search(line):
                return t
        return None

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def kill9(self):
        t = now_ns()
        self.proc.kill()
        self.proc.wait()
        return t

    def stop(self, timeout_s=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:  # the pipe ends once the hooks the daemon started are gone too
            self.stamper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.stamper.kill()
            self.stamper.wait()
        return self.proc.returncode


def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, Threads of a process, in kB (Threads: a count)."""
    out = {}
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
            out[k] = int(v.split()[0])
    return out


def proc_pss(pid):
    """Pss and its anonymous and file-backed parts (/proc/PID/smaps_rollup), in kB: the shared
    libraries' pages divided among the processes that map them."""
    out = {}
    for line in Path("/proc/%d/smaps_rollup" % pid).read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("Pss", "Pss_Anon", "Pss_File", "Private_Clean", "Private_Dirty",
                 "Shared_Clean", "Shared_Dirty"):
            out[k] = int(v.split()[0])
    return out


def proc_rss_by_file(pid):
    """Resident kB per mapped file ("[anon]" for anonymous memory, "[heap]", "[stack]"), from
    /proc/PID/smaps, largest first: where a process's RSS lives."""
    out, name = {}, None
    for line in Path("/proc/%d/smaps" % pid).read_text().splitlines():
        w = line.split()
        if w and re.match(r"^[0-9a-f]+-[0-9a-f]+$", w[0]):
            name = os.path.basename(w[5]) if len(w) > 5 else "[anon]"
        elif w and w[0] == "Rss:":
            out[name] = out.get(name, 0) + int(w[1])
    return sorted(out.items(), key=lambda kv: -kv[1])


def proc_cpu_ms(pid):
    """utime + stime of a process (every thread), in ms."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Setting:
    def __init__(self, text):
        iv, fall, session = text.split("/")
        self.interval_ms, self.fall, self.session_ms = int(iv), int(fall), int(session)
        self.text = text

    def bound_ms(self):
        return self.interval_ms * self.fall + TARGET_SLACK_MS


def duration(ms):
    return "%dms" % ms


class Cluster:
    """N nodes (one reignd each) managing `services` services each, on one set of dummies."""

    def __init__(self, args, zk, workdir, n, setting, services=1, tag="c"):
        self.args, self.zk, self.setting, self.n = args, zk, setting, n
        self.dir = workdir / ("%s-n%d-%s-s%d" % (tag, n, setting.text.replace("/", "_"),
                                                 services))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.nodes = ["n%d" % (i + 1) for i in range(n)]
        self.services = ["web"] + ["svc%d" % i for i in range(2, services + 1)]
        self.elections = {svc: "bench.reignd.%s.%s" % (self.dir.name, svc)
                          for svc in self.services}
        self.ports = {(node, svc): free_port() for node in self.nodes for svc in self.services}
        self.index = {k: i for i, k in enumerate(sorted(self.ports))}
        self.stamps = Stamps(self.dir / "stamps")
        secret = self.dir / "secret"
        secret.write_text("bench-" + os.urandom(12).hex() + "\n")
        os.chmod(secret, 0o600)
        self.secret = secret
        self.peer = {node: free_port() for node in self.nodes}
        self.metrics = {node: free_port() for node in self.nodes}
        self.procs = {}
        self.dummies = None

    def socket(self, node):
        """The control socket, in a directory of its own: reignd wants it owner-only."""
        d = self.dir / "run"
        d.mkdir(mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
        return d / ("%s.sock" % node)

    def conf_path(self, node):
        return self.dir / ("%s.conf" % node)

    def write_conf(self, node):
        st, stamp = self.setting, self.args.stamp
        lines = ["[daemon]",
                 "control_socket = %s" % self.socket(node),
                 "peer_listen = 127.0.0.1:%d" % self.peer[node],
                 "peer_secret_file = %s" % self.secret,
                 "metrics_listen = 127.0.0.1:%d" % self.metrics[node],
                 "log_level = info"]
        for svc in self.services:
            port = self.ports[(node, svc)]
            lines += ["",
                      "[service %s]" % svc,
                      "election_uri = zk://%s" % self.zk.connect,
                      "election_name = %s" % self.elections[svc],
                      "node_id = %s" % node,
                      "service_address = 127.0.0.1:%d" % port,
                      "session_timeout = %s" % duration(st.session_ms),
                      "check_type = http",
                      "check_target = http://127.0.0.1:%d/health" % port,
                      "check_interval = %s" % duration(st.interval_ms),
                      "check_rise = 1",
                      "check_fall = %d" % st.fall,
                      "become_active = %s become_active" % stamp,
                      "become_standby = %s become_standby" % stamp,
                      "fence = graceful(timeout=3s)",
                      "fence = shell(timeout=10s):%s fence" % stamp]
        self.conf_path(node).write_text("\n".join(lines) + "\n")

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("REIGN")}
        env["REIGND_STAMP_FILE"] = str(self.stamps.path)
        return env

    def start_node(self, node):
        self.procs[node] = Process(node, [self.args.reignd, "--config", str(self.conf_path(node))],
                                   self.env(), self.dir / ("%s.log" % node), self.args.stamp)
        return self.procs[node]

    def start(self):
        self.dummies = Dummies([self.ports[k] for k in sorted(self.ports)],
                               self.dir / "dummies.err")
        for node in self.nodes:
            self.write_conf(node)
        r = subprocess.run([self.args.reignd, "--config", str(self.conf_path(self.nodes[0])),
                            "--format"], capture_output=True, text=True, timeout=WAIT_S,
                           env=self.env())
        if r.returncode != 0:
            raise BenchError("reignd --format failed (%d): %s" % (r.returncode, r.stderr))
        # The first node first, so that it is the first active of every service.
        self.start_node(self.nodes[0])
        for svc in self.services:
            self.wait_stamp("become_active", 0, node=self.nodes[0], service=svc)
        for node in self.nodes[1:]:
            self.start_node(node)
        for node in self.nodes[1:]:
            for svc in self.services:
                self.wait_state(node, svc, "standby")

    def status(self, node):
        path = str(self.socket(node))
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(path)
                s.sendall(b'{"op":"status"}\n')
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            return json.loads(data)["result"]["services"]
        except (OSError, ValueError, KeyError):
            return None

    def state(self, node, svc):
        st = self.status(node)
        for s in st or []:
            if s["name"] == svc:
                return s["state"]
        return None

    def wait_state(self, node, svc, want, timeout_s=WAIT_S):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.state(node, svc) == want:
                return
            time.sleep(0.05)
        raise BenchError("%s's %s did not become %s (is %s)" % (node, svc, want,
                                                                 self.state(node, svc)))

    def wait_stamp(self, what, since_ns, timeout_s=WAIT_S, **kw):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            s = self.stamps.find(what, since_ns, **kw)
            if s:
                return s
            time.sleep(0.01)
        raise BenchError("no %s hook (%s) within %d s" % (what, kw, timeout_s))

    def active(self, svc="web"):
        for node in self.nodes:
            if node in self.procs and self.procs[node].alive() and \
                    self.state(node, svc) == "active":
                return node
        return None

    def stop(self):
        for p in self.procs.values():
            p.stop()
        if self.dummies:
            self.dummies.stop()


# ---- trials -------------------------------------------------------------------------------------

def ms(a, b):
    return None if a is None or b is None else (b - a) / 1e6


def takeover_marks(c, new, since_ns):
    """When the new active's daemon was elected, began fencing and fenced (its log)."""
    p = c.procs[new]
    return (p.find(r"service web: elected: term", since_ns),
            p.find(r"service web: fencing the old active", since_ns),
            p.find(r"service web: fence succeeded", since_ns))


def health_trial(c, old):
    """The active `old`'s service turns unhealthy; returns the trial's marks in ms."""
    st = c.setting
    time.sleep(random.uniform(0.3, 0.3 + st.interval_ms / 1000.0))  # a random check phase
    idx = c.index[(old, "web")]
    t_flip = c.dummies.set(idx, False)
    act = c.wait_stamp("become_active", t_flip, not_node=old, service="web")
    new, t_active = act[1], act[5]
    t_fail = c.dummies.first_failed(idx, t_flip)
    t_detect = c.procs[old].find(r"service web: health healthy -> \S+", t_flip)
    t_elected, t_fence0, t_fence1 = takeover_marks(c, new, t_flip)
    sb = c.stamps.find("become_standby", t_flip, node=old, service="web")
    r = {"old": old, "new": new,
         "flip_to_active_ms": ms(t_flip, t_active),
         "fail_to_active_ms": ms(t_fail, t_active),
         "phase_ms": ms(t_flip, t_fail),
         "detection_ms": ms(t_fail, t_detect),
         "handoff_ms": ms(t_detect, t_elected),
         "fence_hooks_ms": ms(t_elected, t_active),
         "fence_ms": ms(t_fence0, t_fence1),
         "old_standby_hook_ms": ms(t_detect, sb[5] if sb else None),
         "detect_to_active_ms": ms(t_detect, t_active)}
    # The service comes back: the old active stands again, as a standby.
    c.dummies.set(idx, True)
    c.wait_state(old, "web", "standby")
    c.wait_state(new, "web", "active")
    return r, new


def kill_trial(c, old):
    """SIGKILL of the active's daemon; returns the trial's marks in ms and the new active."""
    time.sleep(random.uniform(0.3, 0.8))
    t_kill = c.procs[old].kill9()
    act = c.wait_stamp("become_active", t_kill, not_node=old, service="web")
    new, t_active = act[1], act[5]
    t_elected, t_fence0, t_fence1 = takeover_marks(c, new, t_kill)
    fence = c.stamps.find("fence", t_kill, node=new, service="web")
    r = {"old": old, "new": new,
         "kill_to_active_ms": ms(t_kill, t_active),
         "kill_to_elected_ms": ms(t_kill, t_elected),
         "fence_hooks_ms": ms(t_elected, t_active),
         "fence_ms": ms(t_fence0, t_fence1),
         "shell_fence_ran": fence is not None}
    c.procs[old].stop()
    c.start_node(old)
    c.wait_state(old, "web", "standby")
    return r, new


def granted_timeout(zk, c):
    """The session timeouts the server granted to the cluster's daemons (from cons)."""
    return sorted({s["to"] for s in zk.cons().values()})


def run_trials(args, zk, workdir, n, setting, kinds):
    c = Cluster(args, zk, workdir, n, setting)
    out = {"n": n, "setting": setting.text, "interval_ms": setting.interval_ms,
           "fall": setting.fall, "session_ms": setting.session_ms,
           "bound_ms": setting.bound_ms(), "health": [], "kill": []}
    try:
        c.start()
        out["granted_timeouts_ms"] = granted_timeout(zk, c)
        active = c.nodes[0]
        if "health" in kinds:
            for i in range(args.warmup + args.trials):
                r, active = health_trial(c, active)
                if i >= args.warmup:
                    out["health"].append(r)
                    if args.verbose:
                        log("  health %d: %s" % (i, json.dumps(r)))
            log("n=%d %s health: flip->active median %s ms, first failing check->active "
                "median %s ms (bound %d ms)" % (
                    n, setting.text, fmt(med(out["health"], "flip_to_active_ms"), 1),
                    fmt(med(out["health"], "fail_to_active_ms"), 1), setting.bound_ms()))
        if "kill" in kinds:
            for i in range(args.kill_trials):
                r, active = kill_trial(c, active)
                out["kill"].append(r)
                if args.verbose:
                    log("  kill %d: %s" % (i, json.dumps(r)))
            log("n=%d %s kill: kill->active median %s ms (session %d ms)" % (
                n, setting.text, fmt(med(out["kill"], "kill_to_active_ms"), 1),
                setting.session_ms))
    finally:
        c.stop()
    return out


def med(rows, key):
    xs = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def stats(rows, key):
    xs = [r[key] for r in rows if r.get(key) is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "p90": percentile(xs, 90), "max": max(xs),
            "min": min(xs), "n": len(xs)}


# ---- footprint and rest -------------------------------------------------------------------------

def idle_window(zk, pids, seconds):
    """CPU of each pid and the server's requests over `seconds` of rest."""
    before = bl.Sample(zk)
    cpu0 = {name: proc_cpu_ms(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    cpu1 = {name: proc_cpu_ms(pid) for name, pid in pids.items()}
    after = bl.Sample(zk)
    d = bl.request_delta(before, after)
    return {"cpu_ms": {k: cpu1[k] - cpu0[k] for k in pids}, "window_s": d["window_s"],
            "requests": d["requests"], "reads": d["reads"], "writes": d["writes"],
            "pings": d["pings"], "sessions": len(after.cons)}


def footprint(args, zk, workdir, n, setting, services, idle_s):
    c = Cluster(args, zk, workdir, n, setting, services=services, tag="rest")
    try:
        c.start()
        time.sleep(1.0)
        mem = {node: dict(proc_status(c.procs[node].pid), **proc_pss(c.procs[node].pid))
               for node in c.nodes}
        by_file = proc_rss_by_file(c.procs[c.nodes[0]].pid)
        roles = {node: "active" if c.state(node, "web") == "active" else "standby"
                 for node in c.nodes}
        res = {"n": n, "setting": setting.text, "services": services, "memory": mem,
               "roles": roles, "rss_by_file": by_file}
        if idle_s:
            t0 = now_ns()
            w = idle_window(zk, {node: c.procs[node].pid for node in c.nodes}, idle_s)
            t1 = now_ns()
            w["checks"] = {node: sum(c.dummies.checks(c.index[(node, svc)], t0, t1)
                                     for svc in c.services) for node in c.nodes}
            res["idle"] = w
            res["memory_after_idle"] = {node: proc_status(c.procs[node].pid)
                                        for node in c.nodes}
        log("rest n=%d %s services=%d: RSS %s kB%s" % (
            n, setting.text, services, ", ".join("%s %d/%d" % (k, v["VmRSS"], v["VmHWM"])
                                                  for k, v in mem.items()),
            "; idle CPU %s ms in %.0f s, %.0f requests" % (
                ", ".join("%.0f" % v for v in res["idle"]["cpu_ms"].values()),
                res["idle"]["window_s"], res["idle"]["requests"]) if idle_s else ""))
        return res
    finally:
        c.stop()


# ---- the kazoo reference ------------------------------------------------------------------------

class KazooCluster(Cluster):
    """The same dummies and hooks, with bench/ref/kazoo_zkfc.py instead of reignd."""

    def start_node(self, node):
        st = self.setting
        port = self.ports[(node, "web")]
        argv = [bl.KAZOO_PYTHON, str(KAZOO_REF), "--hosts", self.zk.connect,
                "--election", "/bench-kazoo/" + self.elections["web"], "--id", node,
                "--check", "http://127.0.0.1:%d/health" % port,
                "--interval-ms", str(st.interval_ms), "--fall", str(st.fall),
                "--session-ms", str(st.session_ms), "--stamp", self.args.stamp]
        self.procs[node] = Process(node, argv, self.env(), self.dir / ("%s.log" % node),
                                   self.args.stamp)
        return self.procs[node]

    def start(self):
        self.dummies = Dummies([self.ports[k] for k in sorted(self.ports)],
                               self.dir / "dummies.err")
        self.start_node(self.nodes[0])
        self.wait_stamp("become_active", 0, node=self.nodes[0], service="web")
        for node in self.nodes[1:]:
            self.start_node(node)
        for node in self.nodes[1:]:
            self.wait_log(node, r"^standing")

    def wait_log(self, node, pattern, since_ns=0):
        end = time.monotonic() + WAIT_S
        while time.monotonic() < end:
            if self.procs[node].find(pattern, since_ns):
                return
            time.sleep(0.05)
        raise BenchError("kazoo %s: no '%s'" % (node, pattern))


def kazoo_run(args, zk, workdir, n, setting):
    c = KazooCluster(args, zk, workdir, n, setting, tag="kazoo")
    out = {"n": n, "setting": setting.text, "bound_ms": setting.bound_ms(), "health": []}
    try:
        c.start()
        time.sleep(1.0)
        out["memory"] = {node: dict(proc_status(c.procs[node].pid), **proc_pss(c.procs[node].pid))
                         for node in c.nodes}
        if args.idle:
            t0 = now_ns()
            out["idle"] = idle_window(zk, {node: c.procs[node].pid for node in c.nodes},
                                      args.idle)
            out["idle"]["checks"] = {node: c.dummies.checks(c.index[(node, "web")], t0, now_ns())
                                     for node in c.nodes}
        active = c.nodes[0]
        for i in range(args.warmup + args.kazoo_trials):
            time.sleep(random.uniform(0.3, 0.3 + setting.interval_ms / 1000.0))
            idx = c.index[(active, "web")]
            t_flip = c.dummies.set(idx, False)
            act = c.wait_stamp("become_active", t_flip, not_node=active, service="web")
            t_fail = c.dummies.first_failed(idx, t_flip)
            t_detect = c.procs[active].find(r"^unhealthy", t_flip)
            r = {"old": active, "new": act[1], "flip_to_active_ms": ms(t_flip, act[5]),
                 "fail_to_active_ms": ms(t_fail, act[5]), "detection_ms": ms(t_fail, t_detect),
                 "detect_to_active_ms": ms(t_detect, act[5])}
            t_up = now_ns()
            c.dummies.set(idx, True)
            c.wait_log(active, r"^standing", t_up)
            if i >= args.warmup:
                out["health"].append(r)
            active = act[1]
        log("kazoo n=%d %s: RSS %s kB; flip->active median %s ms" % (
            n, setting.text, ", ".join("%d" % v["VmRSS"] for v in out["memory"].values()),
            fmt(med(out["health"], "flip_to_active_ms"), 1)))
    finally:
        c.stop()
    return out


# ---- the report ---------------------------------------------------------------------------------

def summarize(run):
    s = {"trials": {}, "rest": [], "kazoo": []}
    for t in run["trials"]:
        key = "%d/%s" % (t["n"], t["setting"])
        e = {"n": t["n"], "setting": t["setting"], "bound_ms": t["bound_ms"],
             "session_ms": t["session_ms"], "granted_timeouts_ms": t.get("granted_timeouts_ms")}
        for k in ("flip_to_active_ms", "fail_to_active_ms", "phase_ms", "detection_ms",
                  "handoff_ms", "fence_hooks_ms", "fence_ms", "old_standby_hook_ms",
                  "detect_to_active_ms"):
            e["health_" + k] = stats(t["health"], k)
        for k in ("kill_to_active_ms", "kill_to_elected_ms", "fence_hooks_ms", "fence_ms"):
            e["kill_" + k] = stats(t["kill"], k)
        e["health_within_bound"] = sum(1 for r in t["health"]
                                       if r["flip_to_active_ms"] <= t["bound_ms"])
        e["health_trials"] = len(t["health"])
        e["kill_trials"] = len(t["kill"])
        s["trials"][key] = e
    for r in run["rest"]:
        mem = r["memory"]
        row = {"n": r["n"], "setting": r["setting"], "services": r["services"],
               "rss_kb": {k: v["VmRSS"] for k, v in mem.items()},
               "hwm_kb": {k: v["VmHWM"] for k, v in mem.items()},
               "anon_kb": {k: v.get("RssAnon") for k, v in mem.items()},
               "pss_kb": {k: v.get("Pss") for k, v in mem.items()},
               "rss_by_file": r.get("rss_by_file"),
               "threads": {k: v.get("Threads") for k, v in mem.items()},
               "roles": r["roles"]}
        if "memory_after_idle" in r:
            row["hwm_after_idle_kb"] = {k: v["VmHWM"] for k, v in r["memory_after_idle"].items()}
        if "idle" in r:
            row["idle"] = r["idle"]
        s["rest"].append(row)
    for k in run.get("kazoo", []):
        s["kazoo"].append({"n": k["n"], "setting": k["setting"], "bound_ms": k["bound_ms"],
                           "rss_kb": {a: v["VmRSS"] for a, v in k["memory"].items()},
                           "hwm_kb": {a: v["VmHWM"] for a, v in k["memory"].items()},
                           "anon_kb": {a: v.get("RssAnon") for a, v in k["memory"].items()},
                           "pss_kb": {a: v.get("Pss") for a, v in k["memory"].items()},
                           "idle": k.get("idle"),
                           "flip_to_active_ms": stats(k["health"], "flip_to_active_ms"),
                           "fail_to_active_ms": stats(k["health"], "fail_to_active_ms"),
                           "detection_ms": stats(k["health"], "detection_ms"),
                           "detect_to_active_ms": stats(k["health"], "detect_to_active_ms")})
    return s


# Libraries the daemon maps only because of one direct dependency (Debian 12's builds):
# libmicrohttpd brings GnuTLS and its chain, libsystemd its compression and crypto libraries.
VIA = {"libmicrohttpd": ("libmicrohttpd", "libgnutls", "libp11-kit", "libidn2", "libunistring",
                         "libtasn1", "libnettle", "libhogweed", "libgmp", "libffi"),
       "libsystemd": ("libsystemd", "libcap", "libgcrypt", "libgpg-error", "liblzma", "libzstd",
                      "liblz4")}


def rss_via(by_file):
    """Resident kB of the libraries each of VIA's dependencies brings."""
    out = {}
    for dep, libs in VIA.items():
        out[dep] = sum(kb for name, kb in by_file if name.split(".so")[0] in libs)
    return out


def trial_keys(s):
    """The summary's trial rows, by interval, then by node count."""
    return sorted(s["trials"], key=lambda k: (int(s["trials"][k]["setting"].split("/")[0]),
                                              s["trials"][k]["n"]))


def cell(st, digits=1):
    if not st:
        return "-"
    return "%s / %s / %s" % (fmt(st["median"], digits), fmt(st["p90"], digits),
                             fmt(st["max"], digits))


def render(run):
    s = run["summary"]
    m = run["machine"]
    lines = []
    w = lines.append
    w(SECTION)
    w("")
    w("Two and three `reignd` daemons on one machine, one per node, each managing a dummy "
      "service on loopback through an HTTP health check, on a throwaway standalone ZooKeeper "
      "(`bench/reignd.py`).  The dummies record in CLOCK_MONOTONIC when a service flips to "
      "unhealthy and when every check arrives; the hooks (become-active, become-standby, the "
      "shell fence) are `bench/reignd_stamp.c`, which writes the CLOCK_MONOTONIC time it "
      "started; each daemon's stderr goes through `reignd-stamp --lines`, which prefixes each log "
      "line with the CLOCK_MONOTONIC time it arrived.  "
      "Fence methods: `graceful(timeout=3s)`, then `shell(timeout=10s)`.  Settings are "
      "`interval/fall/session timeout` in ms, `check_rise = 1`.  Cells are median / p90 / max "
      "in ms over %d trials (after %d discarded), %d for SIGKILL." % (
          run["trials_n"], run["warmup"], run["kill_trials_n"]))
    w("")
    w("### Health failover: the active's service turns unhealthy")
    w("")
    w("Target: from a failed health check to the new active <= interval x fall + "
      "50 ms.  *flip -> active* runs from the moment the dummy service turned unhealthy (at a "
      "random phase of the check interval) to the new active's become-active hook; "
      "*first failing check -> active* from the first check that got a 503.  The split: "
      "*detection* (first failing check -> the old active's daemon declares the service "
      "unhealthy and quits the election), *handoff* (-> the new active's daemon is elected), "
      "*fencing + hooks* (-> become-active runs; the graceful fence waits until the old active's "
      "become-standby has run), and *detected -> active*, the part the 50 ms are for.  "
      "*within bound* counts the trials whose flip -> active stayed within the bound.")
    w("")
    w("| nodes | setting | bound, ms | flip -> active | first failing check -> active | "
      "within bound | detection | handoff | fencing + hooks | detected -> active |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for key in trial_keys(s):
        e = s["trials"][key]
        if not e["health_trials"]:
            continue
        w("| %d | %s | %d | %s | %s | %d of %d | %s | %s | %s | **%s** |" % (
            e["n"], e["setting"], e["bound_ms"], cell(e["health_flip_to_active_ms"]),
            cell(e["health_fail_to_active_ms"]), e["health_within_bound"], e["health_trials"],
            cell(e["health_detection_ms"]), cell(e["health_handoff_ms"]),
            cell(e["health_fence_hooks_ms"]), cell(e["health_detect_to_active_ms"])))
    w("")
    w("### SIGKILL of the active's daemon")
    w("")
    w("The active's reignd is killed; its service keeps answering, so it must be fenced "
      "(graceful fails at once, the shell method fences).  The daemon's guardian closes its "
      "session at once, so the next daemon is elected in milliseconds; without a guardian, or "
      "when the whole host dies, the session timeout bounds it (the server expires sessions in "
      "ticks of 200 ms here), never the health settings.")
    w("")
    w("| nodes | setting | session granted, ms | kill -> new active elected | "
      "kill -> become-active | elected -> become-active (fencing + hooks) | of which fencing |")
    w("|---|---|---|---|---|---|---|")
    for key in trial_keys(s):
        e = s["trials"][key]
        if not e["kill_trials"]:
            continue
        w("| %d | %s | %s | %s | %s | %s | %s |" % (
            e["n"], e["setting"], ", ".join(map(str, e["granted_timeouts_ms"] or [])),
            cell(e["kill_kill_to_elected_ms"]), cell(e["kill_kill_to_active_ms"]),
            cell(e["kill_fence_hooks_ms"]), cell(e["kill_fence_ms"])))
    w("")
    w("### Footprint and rest")
    w("")
    w("Targets: reignd <= %.0f MB (%d kB) resident; no measurable CPU at rest.  Memory: VmRSS and "
      "VmHWM (peak) of each daemon a second after all stood (the HWM again after the idle "
      "window), the Prometheus endpoint and the peer endpoint listening.  Rest: utime + stime "
      "of each daemon (/proc/PID/stat, 10 ms ticks) over %d s with nothing but health checks "
      "going on; requests: what the ZooKeeper server processed in that window for all daemons "
      "(reads and writes, pings apart)." % (TARGET_RSS_MB, TARGET_RSS_MB * 1024, run["idle_s"]))
    w("")
    w("| daemon | nodes | setting | services each | VmRSS, kB (per node) | VmHWM, kB | "
      "RssAnon, kB | Pss, kB | threads | CPU at rest, ms in the window (per node) | "
      "checks in the window | ZooKeeper requests (pings) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in s["rest"]:
        idle = r.get("idle")
        nodes = sorted(r["rss_kb"])
        w("| reignd | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["n"], r["setting"], r["services"],
            ", ".join("%s%s" % (r["rss_kb"][k], "*" if r["roles"][k] == "active" else "")
                      for k in nodes),
            ", ".join(str(r.get("hwm_after_idle_kb", r["hwm_kb"])[k]) for k in nodes),
            ", ".join(str(r["anon_kb"][k]) for k in nodes),
            ", ".join(str(r["pss_kb"][k]) for k in nodes),
            ", ".join(str(r["threads"][k]) for k in nodes),
            ", ".join("%.0f" % idle["cpu_ms"][k] for k in nodes) if idle else "-",
            ", ".join(str(idle["checks"][k]) for k in nodes) if idle else "-",
            "%.0f (%.0f)" % (idle["requests"], idle["pings"]) if idle else "-"))
    for k in s["kazoo"]:
        idle = k.get("idle")
        nodes = sorted(k["rss_kb"])
        w("| kazoo loop (reference) | %d | %s | 1 | %s | %s | %s | %s | - | %s | %s | %s |" % (
            k["n"], k["setting"], ", ".join(str(k["rss_kb"][a]) for a in nodes),
            ", ".join(str(k["hwm_kb"][a]) for a in nodes),
            ", ".join(str(k["anon_kb"][a]) for a in nodes),
            ", ".join(str(k["pss_kb"][a]) for a in nodes),
            ", ".join("%.0f" % idle["cpu_ms"][a] for a in nodes) if idle else "-",
            ", ".join(str(idle["checks"][a]) for a in nodes) if idle else "-",
            "%.0f (%.0f)" % (idle["requests"], idle["pings"]) if idle else "-"))
    w("")
    w("\\* the active.")
    w("")
    first = s["rest"][0] if s["rest"] else None
    if first and first.get("rss_by_file"):
        top = first["rss_by_file"][:12]
        w("Where one daemon's VmRSS lives (%d nodes, %s, one service; /proc/PID/smaps, kB): %s; "
          "the rest %d kB.  File-backed pages (the binary and its shared libraries) are shared "
          "with every other process mapping the same files; Pss divides them among those "
          "processes." % (
              first["n"], first["setting"], ", ".join("%s %d" % tuple(kv) for kv in top),
              sum(v for _, v in first["rss_by_file"][12:])))
        w("")
        via = rss_via(first["rss_by_file"])
        total = sum(v for _, v in first["rss_by_file"])
        w("Of those %d kB, %d kB are libmicrohttpd and the TLS libraries it links (%s), which "
          "reignd never uses (its endpoints are plain HTTP), and %d kB libsystemd and the "
          "libraries it links (%s), used for sd_notify alone; anonymous memory (heap, stacks, "
          "the libraries' data) is %s kB (RssAnon)." % (
              total, via["libmicrohttpd"], ", ".join(VIA["libmicrohttpd"][1:]),
              via["libsystemd"], ", ".join(VIA["libsystemd"][1:]),
              first["anon_kb"][sorted(first["anon_kb"])[0]]))
        w("")
    if s["kazoo"]:
        w("### Reference: a minimal kazoo \"health check + election\" loop")
        w("")
        w("ZKFC itself is not packaged in Debian, so it is not measured here; the nearest "
          "references on this machine are the ZooKeeper election recipes the failover section "
          "above measures (Curator's LeaderLatch, kazoo's Election).  `bench/ref/kazoo_zkfc.py` "
          "wraps kazoo's Election in what ZKFC adds: the same HTTP health check with the same "
          "interval and fall count, become-active and become-standby hooks (the same stamp "
          "program), and leaving the election when unhealthy.  It does no fencing, keeps no "
          "breadcrumb and has no control or metrics endpoint, so it does less than reignd: "
          "context, not a like-for-like rival.  Its footprint is in the table above.")
        w("")
        w("| nodes | setting | bound, ms | flip -> active | first failing check -> active | "
          "detection | detected -> active |")
        w("|---|---|---|---|---|---|---|")
        for k in s["kazoo"]:
            w("| %d | %s | %d | %s | %s | %s | %s |" % (
                k["n"], k["setting"], k["bound_ms"], cell(k["flip_to_active_ms"]),
                cell(k["fail_to_active_ms"]), cell(k["detection_ms"]),
                cell(k["detect_to_active_ms"])))
        w("")
    if run.get("findings"):
        w("### Findings")
        w("")
        for para in run["findings"]:
            w(para)
            w("")
    w("Command: `%s` (%.1f min).  Machine: %s, %d CPUs, %s, %s, ZooKeeper %s, "
      "libzookeeper-mt %s, python3-kazoo %s; commit %s; %s.  The machine is shared (other "
      "people's builds and benchmarks ran meanwhile): read the medians." % (
          run["command"], run["duration_min"], m["cpu"], m["nproc"], m["memory"], m["os"],
          m["zookeeper"], m["libzookeeper"], m["kazoo"], m["commit"], m["date"]))
    return "\n".join(lines) + "\n"


def write_section(path, run):
    bl.write_other_section(path, SECTION, render(run))


# ---- main ---------------------------------------------------------------------------------------

def default_binary(rel):
    for d in ("build", "build-bench"):
        p = ROOT / d / rel
        if os.access(p, os.X_OK):
            return str(p)
    return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description="reignd's failover and footprint.")
    ap.add_argument("--reignd", default=default_binary("src/reignd/reignd"),
                    help="the reignd binary (default: build/src/reignd/reignd)")
    ap.add_argument("--stamp", default=default_binary("bench/reignd-stamp"),
                    help="the hook program (default: build/bench/reignd-stamp)")
    ap.add_argument("--settings", default="200/2/2000,1000/3/10000",
                    help="interval_ms/fall/session_ms, comma-separated "
                    "(default 200/2/2000,1000/3/10000)")
    ap.add_argument("--nodes", default="2,3", help="node counts (default 2,3)")
    ap.add_argument("--trials", type=int, default=20, help="health trials each (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="discarded first trials (default 2)")
    ap.add_argument("--kill-trials", type=int, default=10,
                    help="SIGKILL trials, with the first setting only (default 10)")
    ap.add_argument("--idle", type=int, default=60, help="rest window, s (default 60)")
    ap.add_argument("--services", type=int, default=8,
                    help="services per daemon for the memory row with several (default 8)")
    ap.add_argument("--kazoo-trials", type=int, default=10,
                    help="health trials of the kazoo reference (0: footprint only; "
                    "default 10)")
    ap.add_argument("--no-kazoo", action="store_true", help="skip the kazoo reference")
    ap.add_argument("--findings", help="a text file of paragraphs for the section's "
                    "'Findings'; kept in the JSON")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"),
                    help="the report whose section '%s' is rewritten ('-' for none)" % SECTION)
    ap.add_argument("--json", help="every trial's numbers (default: in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the section from a --json file")
    ap.add_argument("--serve-dummies", help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per trial")
    args = ap.parse_args(argv)
    args.settings = [Setting(x) for x in args.settings.split(",") if x]
    args.nodes = [int(x) for x in args.nodes.split(",") if x]
    return args


def main(argv):
    args = parse_args(argv)
    if args.serve_dummies:
        serve_dummies([int(p) for p in args.serve_dummies.split(",")])
        return 0
    if args.render:
        return bl.rerender(args, write_section, "section '%s'" % SECTION,
                           findings=bl.findings_of(args.findings))
    for what, path in (("reignd", args.reignd), ("reignd-stamp", args.stamp)):
        if not path or not os.access(path, os.X_OK):
            raise BenchError("no %s binary (build it, or pass --%s)" % (
                what, "reignd" if what == "reignd" else "stamp"))
    t_start = time.monotonic()
    commit = bl.source_state(args.reignd)
    workdir = bl.start_run(args, "reign-reignd-")
    zk = bl.ZooKeeper(workdir / "zk")
    run = {"trials": [], "rest": [], "kazoo": [], "trials_n": args.trials,
           "warmup": args.warmup, "kill_trials_n": args.kill_trials, "idle_s": args.idle}
    try:
        zk.start()
        bl.warm_server(zk, 5)
        first = args.settings[0]
        for n in args.nodes:
            for st in args.settings:
                kinds = ["health"] + (["kill"] if st is first and args.kill_trials else [])
                run["trials"].append(run_trials(args, zk, workdir, n, st, kinds))
        # Rest: each setting with the most nodes; then several services per daemon.
        n_rest = max(args.nodes)
        for st in args.settings:
            run["rest"].append(footprint(args, zk, workdir, n_rest, st, 1, args.idle))
        if args.services > 1:
            run["rest"].append(footprint(args, zk, workdir, 2, args.settings[-1], args.services,
                                         args.idle))
        if not args.no_kazoo:
            for st in args.settings:
                run["kazoo"].append(kazoo_run(args, zk, workdir, 2, st))
        zk_version = zk.mntr().get("zk_version", "?").split("-")[0].split(",")[0]
    finally:
        zk.stop()
    run.update(summary=None, machine=bl.machine_info(zk_version, commit),
               command=" ".join(["bench/reignd.py"] + argv),
               duration_min=(time.monotonic() - t_start) / 60.0,
               findings=bl.findings_of(args.findings))
    run["summary"] = summarize(run)
    bl.end_run(run, args, workdir, 0, write_section, t_start)
    return 0


if __name__ == "__main__":
    bl.run_cli(main)
