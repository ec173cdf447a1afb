"""test_reignd_e2e.py SCENARIO - reignd end to end, on the shared ZooKeeper server.

Two or three reignd daemons, each managing a dummy service on loopback (a small Python TCP
listener: the health check connects to it), for one election.  Every hook and fence command is
tests/reignd/hook.sh, which appends one line per run to a file shared by all nodes, so the order
of the lines is the order in which the commands ran:

    NODE become_active term=T token=K service=S
    NODE become_standby term=T service=S
    NODE fence target=ID address=HOST:PORT target_term=T service=S

Scenarios (one ctest entry each):
  health      the active's service stops answering: the standby becomes active, after the old
              active's become-standby ran (the graceful fence waited for it)
  kill        the active's reignd is SIGKILLed (its service keeps running): the standby fences
              it with the shell method, which gets its address, before it becomes active
  kill_guardian  as kill, with a 20 s session: the killed reignd's guardian closes its session,
              so the standby fences and takes over long before the session could have expired
  fence_fail  as kill, but every fence method fails: the standby never becomes active and keeps
              retrying; once fencing works it does
  failover    `failover --to` the standby (and the refusals); SIGTERM of the active
  cede        cede with a delay (through `reign ctl`): the standby takes over without fencing;
              cede refused on a standby; pause and resume
  neutral     the active is cut off from ZooKeeper: neutral, become-standby at the end of its
              leadership, the new active's graceful fence answered
  credentials the layout and breadcrumb carry the URI user's digest ACL
  two_services  one daemon, two services on one session: each fails over on its own
  active_fails  become-active fails: become-standby runs, the node steps down and, alone,
              is elected again and retries until become-active succeeds
  config      configuration errors (FILE:LINE, exit 7), no fence method (4), not formatted (3),
              --format twice (5) and --force

No assertion on how long anything took: every wait is for an event, bounded generously.
"""

import base64
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2elib  # noqa: E402
from e2elib import Failure, check, log, wait_for  # noqa: E402
import test_guardian as guardian  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK = os.path.join(HERE, "hook.sh")
DUMMY = os.path.join(HERE, "dummy_service.py")
EXIT_NOT_FORMATTED, EXIT_NO_FENCE, EXIT_FORMAT_DENIED, EXIT_CONFIG = 3, 4, 5, 7


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The nodes of one election, their shared event file and peer secret."""

    def __init__(self, t, election=None, session="2s", hosts=None):
        self.t = t
        self.hosts = hosts or t.shared_hosts()
        self.election = election or t.unique("reignd")
        self.session = session
        self.events_path = os.path.join(t.dir, "events")
        open(self.events_path, "w").close()
        self.secret_path = os.path.join(t.dir, "secret")
        with open(self.secret_path, "w") as f:
            f.write("s3cret-" + os.urandom(12).hex() + "\n")
        os.chmod(self.secret_path, stat.S_IRUSR | stat.S_IWUSR)
        self.nodes = {}

    def events(self):
        with open(self.events_path) as f:
            return [line.split() for line in f.read().splitlines() if line.strip()]

    def election_of(self, svc):
        return self.election if svc == "web" else f"{self.election}-{svc}"

    def lines(self, node=None, what=None, svc=None):
        return [e for e in self.events()
                if (node is None or e[0] == node) and (what is None or e[1] == what)
                and (svc is None or f"service={svc}" in e)]

    def index(self, node, what):
        """Position of the first line NODE WHAT in the event file, or None."""
        for i, e in enumerate(self.events()):
            if e[0] == node and e[1] == what:
                return i
        return None

    def wait_line(self, node, what, count=1):
        return wait_for(lambda: len(self.lines(node, what)) >= count,
                        f"{count} x '{node} {what}' in the event file")

    def node(self, name, fence=None, fence_flag=None, hosts=None, services=("web",),
             active_flag=None):
        n = Node(self, name, fence, fence_flag, hosts, services, active_flag)
        self.nodes[name] = n
        return n


class Node:
    def __init__(self, cluster, name, fence=None, fence_flag=None, hosts=None,
                 services=("web",), active_flag=None):
        self.c, self.name, self.t = cluster, name, cluster.t
        # Hooks inherit reignd's environment (less REIGN_*): where hook.sh writes, and when
        # it fails.
        self.env = {"HOOK_EVENTS": cluster.events_path, "HOOK_FENCE_FLAG": fence_flag or "",
                    "HOOK_ACTIVE_FLAG": active_flag or ""}
        self.dir = os.path.join(self.t.dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.ports = {svc: free_port() for svc in services}  # each service's dummy
        self.service_port = self.ports[services[0]]
        self.peer_port = free_port()
        self.metrics_port = free_port()
        self.socket = os.path.join(self.dir, "run", "control.sock")
        self.conf = os.path.join(self.dir, "reign.conf")
        self.dummies = {}
        self.proc = None
        fence = fence or ["graceful(timeout=3s)", f"shell(timeout=10s):{HOOK} fence"]
        lines = [
            "[daemon]",
            f"control_socket = {self.socket}",
            f"peer_listen = 127.0.0.1:{self.peer_port}",
            f"peer_secret_file = {cluster.secret_path}",
            f"metrics_listen = 127.0.0.1:{self.metrics_port}",
            "log_level = debug",
        ]
        for svc, port in self.ports.items():
            lines += [
                "",
                f"[service {svc}]",
                f"election_uri = zk://{hosts or cluster.hosts}",
                f"election_name = {cluster.election_of(svc)}",
                f"node_id = {name}",
                f"service_address = 127.0.0.1:{port}",
                f"session_timeout = {cluster.session}",
                "check_type = tcp",
                f"check_target = 127.0.0.1:{port}",
                "check_interval = 200ms",
                "check_rise = 1",
                "check_fall = 2",
                f"become_active = {HOOK} become_active",
                f"become_standby = {HOOK} become_standby",
            ] + [f"fence = {f}" for f in fence]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def reignd(self, *args):
        return self.t.spawn(self.name, [os.environ["REIGND"], "--config", self.conf, *args],
                            self.env)

    def start_service(self, svc="web"):
        port = self.ports[svc]
        self.dummies[svc] = self.t.spawn(f"{self.name}-{svc}", [sys.executable, DUMMY, str(port)])
        wait_for(lambda: self._answers(port), f"{self.name}'s dummy {svc} to listen")

    @staticmethod
    def _answers(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def stop_service(self, svc="web"):
        log(f"stopping {self.name}'s {svc}")
        self.dummies[svc].popen.kill()
        self.dummies[svc].popen.wait()

    def start(self):
        self.proc = self.reignd()
        return self.proc

    def request(self, obj):
        """One control request: the answer as a dict."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(e2elib.WAIT)
            s.connect(self.socket)
            s.sendall((json.dumps(obj) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def metrics(self):
        """The Prometheus endpoint's samples: {'name{labels}': value}."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=e2elib.WAIT) as r:
            text = r.read().decode()
        return {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.splitlines()
                                         if line and not line.startswith("#"))}

    def status(self, svc="web"):
        try:
            r = self.request({"op": "status"})
        except OSError:
            return None
        check(r.get("ok"), f"status failed: {r}")
        return next(s for s in r["result"]["services"] if s["name"] == svc)

    def state(self, svc="web"):
        st = self.status(svc)
        return st["state"] if st else None

    def wait_state(self, want, svc="web"):
        return wait_for(lambda: self.state(svc) == want, f"{self.name}'s {svc} to be {want}")


def run_reignd(t, args):
    r = subprocess.run([os.environ["REIGND"], *args], capture_output=True, timeout=e2elib.WAIT)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def format_election(node):
    rc, out, err = run_reignd(node.t, ["--config", node.conf, "--format"])
    check(rc == 0, f"reignd --format failed ({rc}): {err}")


def two_nodes(t, a_hosts=None, cluster=None):
    """A active, B standby, both healthy (A reaches ZooKeeper through a_hosts if given)."""
    c = cluster or Cluster(t)
    a, b = c.node("A", hosts=a_hosts), c.node("B")
    format_election(a)
    for n in (a, b):
        n.start_service()
    a.start()
    c.wait_line("A", "become_active")
    a.wait_state("active")
    b.start()
    b.wait_state("standby")
    return c, a, b


def token_of(line):
    return int([w for w in line if w.startswith("token=")][0].split("=")[1])


# ---- scenarios ------------------------------------------------------------------------------

def scenario_health(t):
    c, a, b = two_nodes(t)
    a.stop_service()
    c.wait_line("B", "become_active")
    i_standby, i_active = c.index("A", "become_standby"), c.index("B", "become_active")
    check(i_standby is not None and i_standby < i_active,
          f"A's become_standby must run before B's become_active: {c.events()}")
    check(not c.lines("B", "fence"), "the graceful fence sufficed: no shell fence expected")
    check(token_of(c.lines("B", "become_active")[0]) > token_of(c.lines("A", "become_active")[0]),
          "the new active's token must be greater")
    a.wait_state("unhealthy")
    b.wait_state("active")
    # A's service comes back: A stands again, as a standby.
    a.start_service()
    a.wait_state("standby")
    check(len(c.lines("B", "become_active")) == 1 and len(c.lines("A", "become_active")) == 1,
          f"each become_active ran once: {c.events()}")


def scenario_ensemble(t):
    """On a three-server ensemble: a server stopped under the active moves its session to
    another server without a failover; then a health failure fails over as usual."""
    srv = t.zk_servers("zk", 3)
    c, a, b = two_nodes(t, cluster=Cluster(t, session="8s", hosts=srv.hosts))
    srv.stop_server(1)
    # A session outlives the loss of one server (the client moves to another within the
    # session timeout): nothing may change.  An observation window, not a timing assertion.
    time.sleep(4)
    a.wait_state("active")
    check(not c.lines("B", "become_active") and not c.lines("A", "become_standby"),
          f"a server's loss caused a failover: {c.events()}")
    a.stop_service()
    c.wait_line("B", "become_active")
    i_standby, i_active = c.index("A", "become_standby"), c.index("B", "become_active")
    check(i_standby is not None and i_standby < i_active,
          f"A's become_standby must run before B's become_active: {c.events()}")
    srv.start_server(1)


def scenario_kill(t):
    c, a, b = two_nodes(t)
    a.proc.kill9()  # its service keeps running: it must be fenced
    c.wait_line("B", "become_active")
    fences = c.lines("B", "fence")
    check(len(fences) == 1, f"one shell fence expected: {c.events()}")
    check(f"target=A" in fences[0] and f"address=127.0.0.1:{a.service_port}" in fences[0],
          f"the fence command gets the old active's id and address: {fences[0]}")
    check(c.index("B", "fence") < c.index("B", "become_active"),
          f"the fence must run before become_active: {c.events()}")
    b.wait_state("active")
    # Graceful failed (A's reignd is dead), the shell method fenced: two methods, one success.
    m = b.metrics()
    want = {'reignd_service_leader{service="web"}': 1, 'reignd_failovers_total{service="web"}': 1,
            'reignd_fence_attempts_total{service="web"}': 2,
            'reignd_fence_outcomes_total{service="web",outcome="success"}': 1,
            'reignd_fence_outcomes_total{service="web",outcome="failure"}': 1,
            'reignd_service_state{service="web",state="active"}': 1}
    check(all(m.get(k) == v for k, v in want.items()),
          f"B's metrics: {[(k, m.get(k)) for k in want]}")


def scenario_kill_guardian(t):
    c, a, b = two_nodes(t, cluster=Cluster(t, session=f"{guardian.HOLD_MS // 1000}s"))
    killed_ns = guardian.kill9(a.proc)  # its service keeps running: it must be fenced
    c.wait_line("B", "become_active")
    seen_ns = time.monotonic_ns()  # no earlier than become_active ran
    guardian.the_guardian_line(a.proc, [guardian.zk_ended(a.proc)])
    guardian.before_expiry(seen_ns, killed_ns, "B's become_active seen")
    fences = c.lines("B", "fence")
    check(len(fences) == 1 and "target=A" in fences[0], f"one fence of A expected: {c.events()}")
    check(c.index("B", "fence") < c.index("B", "become_active"),
          f"the fence must run before become_active: {c.events()}")
    b.wait_state("active")


def scenario_fence_fail(t):
    c = Cluster(t)
    ok_flag = os.path.join(t.dir, "fence_may_succeed")
    a, b = c.node("A"), c.node("B", [f"shell(timeout=10s):{HOOK} fence"], fence_flag=ok_flag)
    format_election(a)
    for n in (a, b):
        n.start_service()
    a.start()
    c.wait_line("A", "become_active")
    b.start()
    b.wait_state("standby")
    a.proc.kill9()
    # Every attempt fails: B must not become active, and tries again later.
    c.wait_line("B", "fence_failed", count=3)
    check(not c.lines("B", "become_active"), f"B became active without fencing: {c.events()}")
    check(b.state() != "active", "B must not be active")
    # Fencing works again: B takes over.
    open(ok_flag, "w").close()
    c.wait_line("B", "become_active")
    check(c.index("B", "fence") < c.index("B", "become_active"), f"order: {c.events()}")
    b.wait_state("active")


def failover(node, to):
    """Asks `node` to fail over to `to`, waiting while `to` has not stood yet (it rejoins after
    a cede delay); returns the answer."""
    def ask():
        r = node.request({"op": "failover", "service": "web", "to": to})
        return None if not r["ok"] and "does not stand" in r["message"] else r
    return wait_for(ask, f"{to} to stand, for a failover")


def scenario_failover(t):
    c, a, b = two_nodes(t)
    n3 = c.node("C")
    n3.start_service()
    n3.start()
    n3.wait_state("standby")
    r = a.request({"op": "failover", "service": "web", "to": "nobody"})
    check(not r["ok"] and "nobody" in r["message"], f"failover to a non-node must fail: {r}")
    r = b.request({"op": "failover", "service": "web", "to": "B"})
    check(not r["ok"] and "not active" in r["message"], f"failover on a standby: {r}")
    r = n3.request({"op": "pause", "service": "web"})
    check(r["ok"], f"pause C: {r}")
    r = a.request({"op": "failover", "service": "web", "to": "C"})
    check(not r["ok"] and "not a healthy standby" in r["message"], f"failover to paused C: {r}")
    r = n3.request({"op": "resume", "service": "web"})
    check(r["ok"], f"resume C: {r}")
    n3.wait_state("standby")

    # B is next in line: A steps down cleanly (become-standby, breadcrumb removed, cede).
    r = failover(a, "B")
    check(r["ok"], f"failover refused: {r}")
    c.wait_line("B", "become_active")
    check(c.index("A", "become_standby") < c.index("B", "become_active"), f"order: {c.events()}")
    check(not c.lines("B", "fence"), "A ceded cleanly: nothing to fence")
    b.wait_state("active")

    # A stands again last in line: it is designated, B hands over and is fenced gracefully
    # (its become-standby runs before A's become-active).
    r = failover(b, "A")
    check(r["ok"], f"failover to A refused: {r}")
    c.wait_line("A", "become_active", count=2)
    check(c.index("B", "become_standby") < len(c.events()) - 1, f"order: {c.events()}")
    a_second = [i for i, e in enumerate(c.events()) if e[:2] == ["A", "become_active"]][1]
    check(c.index("B", "become_standby") < a_second, f"order: {c.events()}")
    check(not c.lines("A", "fence"), f"the graceful fence sufficed: {c.events()}")
    a.wait_state("active")

    # SIGTERM on the active: it goes standby, removes its breadcrumb; the next takes over
    # unfenced.
    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, f"reignd A exited with {a.proc.returncode()}")
    wait_for(lambda: c.lines("B", "become_active")[1:] or c.lines("C", "become_active"),
             "a standby to take over after SIGTERM")
    check(len(c.lines("A", "become_standby")) == 2, f"A ran become_standby: {c.events()}")
    check(not [e for e in c.events() if e[1] == "fence"], f"nobody was fenced: {c.events()}")


def scenario_cede(t):
    c, a, b = two_nodes(t)
    r = b.request({"op": "cede", "service": "web", "delay_s": 5})
    check(not r["ok"] and "not active" in r["message"], f"cede on a standby must fail: {r}")
    # Through `reign ctl`, as an operator would.
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "status", "--json"])
    check(rc == 0, f"reign ctl status: {rc} {err}")
    st = json.loads(out)["services"][0]
    check(st["state"] == "active" and st["leader"] == "A" and st["term"] >= 1, f"status: {st}")
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "cede", "web", "--delay", "30"])
    check(rc == 0, f"reign ctl cede: {rc} {out} {err}")
    c.wait_line("B", "become_active")
    check(c.index("A", "become_standby") < c.index("B", "become_active"), f"order: {c.events()}")
    check(not c.lines("B", "fence"), f"A ceded cleanly: nothing to fence: {c.events()}")
    a.wait_state("standby")
    r = a.request({"op": "pause", "service": "web"})
    check(r["ok"] and a.state() == "paused", f"pause: {r}")
    r = a.request({"op": "resume", "service": "web"})
    check(r["ok"], f"resume: {r}")
    a.wait_state("standby")


def scenario_neutral(t):
    """A reaches ZooKeeper through a proxy that freezes (a partition): A goes neutral, its
    leadership ends at the election's deadline and become-standby runs; B, elected once A's
    session expired, fences A through the peer endpoint (which A still answers) and becomes
    active.  Thawed, A finds its session gone and stands again as a standby."""
    proxy = t.spawn("proxy", [os.environ["REIGN_TCPPROXY"], "0", t.shared_hosts()])
    port = int(wait_for(lambda: proxy.lines(), "the proxy's port")[0])
    c, a, b = two_nodes(t, a_hosts=f"127.0.0.1:{port}")
    proxy.send(signal.SIGUSR1)
    wait_for(lambda: "frozen" in proxy.err(), "the proxy to freeze")
    wait_for(lambda: a.state() in ("neutral", "neutral_active"), "A to go neutral")
    c.wait_line("B", "become_active")
    check(c.index("A", "become_standby") < c.index("B", "become_active"),
          f"A's become_standby must run before B's become_active: {c.events()}")
    check(not c.lines("B", "fence"), f"A's reignd answered the graceful fence: {c.events()}")
    check([e[1] for e in c.lines("A")] == ["become_active", "become_standby"],
          f"no other hook ran on A while it was cut off: {c.events()}")
    proxy.send(signal.SIGUSR2)
    wait_for(lambda: "thawed" in proxy.err(), "the proxy to thaw")
    a.wait_state("standby")
    b.wait_state("active")
    check(len(c.lines("A", "become_active")) == 1, f"A active again: {c.events()}")


def scenario_credentials(t):
    """With a user in the election URI (password in a file), --format and the daemon create
    their values with the ACL "digest user: all, world: read": anyone can read the breadcrumb,
    nobody else can change or delete it; the password appears in no output."""
    password = "pw-" + os.urandom(8).hex()
    pwfile = os.path.join(t.dir, "zk-password")
    with open(pwfile, "w") as f:
        f.write(password + "\n")
    os.chmod(pwfile, stat.S_IRUSR | stat.S_IWUSR)
    hosts = t.shared_hosts()
    chroot = "/" + t.unique("reignd-cred")
    rc, _, err = t.zkraw(hosts, "create", chroot, "")
    check(rc == 0, f"creating {chroot}: {err}")
    c = Cluster(t, hosts=f"alice@{hosts}{chroot}?password_file={pwfile}")
    a = c.node("A")
    format_election(a)
    a.start_service()
    a.start()
    c.wait_line("A", "become_active")
    digest = base64.b64encode(hashlib.sha1(f"alice:{password}".encode()).digest()).decode()
    base = f"{hosts}{chroot}"
    for leaf in ("layout", "breadcrumb"):
        path = f"/reign/value/reignd/{c.election}/{leaf}"
        # ZooKeeper shows the digest only to its holder ("x" to others).
        for auth, shown in ((None, "x"), (f"alice:{password}", digest)):
            rc, out, err = t.zkraw(base, "getacl", path, auth=auth)
            check(rc == 0, f"getacl {path}: {err}")
            check(sorted(out.splitlines()) == sorted([f"digest alice:{shown} 31",
                                                      "world anyone 1"]),
                  f"ACL of {path}: {out}")
        rc, out, err = t.zkraw(base, "delete", path)
        check(rc != 0 and "NOAUTH" in err, f"deleting {path} without credentials: {rc} {err}")
    rc, out, err = t.zkraw(base, "get", f"/reign/value/reignd/{c.election}/breadcrumb")
    check(rc == 0 and b"\nid=A\n" in bytes.fromhex(json.loads(out)["data_hex"]),
          f"the breadcrumb is readable by anyone: {rc} {out} {err}")
    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, "reignd A did not exit 0")
    check(password not in a.proc.err() and password not in a.proc.lines().__str__(),
          "the password appears in reignd's output")


def scenario_two_services(t):
    """One daemon per node manages two services (two elections on one session): each fails
    over on its own."""
    c = Cluster(t)
    both = ("web", "db")
    a, b = c.node("A", services=both), c.node("B", services=both)
    format_election(a)
    for n in (a, b):
        for svc in both:
            n.start_service(svc)
    a.start()
    for svc in both:
        c.wait_line("A", "become_active")
        a.wait_state("active", svc)
    b.start()
    for svc in both:
        b.wait_state("standby", svc)
    a.stop_service("db")
    wait_for(lambda: c.lines("B", "become_active", "db"), "B active for db")
    b.wait_state("active", "db")
    a.wait_state("unhealthy", "db")
    check(a.state("web") == "active" and b.state("web") == "standby",
          f"web stays on A: A {a.state('web')}, B {b.state('web')}")
    check(not c.lines("B", "become_active", "web"), f"web did not move: {c.events()}")
    check(c.index("A", "become_standby") < c.index("B", "become_active"), f"order: {c.events()}")


def scenario_active_fails(t):
    c = Cluster(t)
    flag = os.path.join(t.dir, "active_may_succeed")
    a = c.node("A", active_flag=flag)
    format_election(a)
    a.start_service()
    a.start()
    c.wait_line("A", "active_failed", count=2)
    check(not c.lines("A", "become_active"), f"{c.events()}")
    ev = [e[1] for e in c.lines("A")]
    check(ev[:3] == ["active_failed", "become_standby", "active_failed"],
          f"a failed become-active is followed by become-standby before the retry: {ev}")
    open(flag, "w").close()
    c.wait_line("A", "become_active")
    a.wait_state("active")
    check(not c.lines("A", "fence"), f"the breadcrumb named A itself: nothing to fence: {ev}")


def scenario_config(t):
    c = Cluster(t)
    a = c.node("A")
    with open(a.conf) as f:
        good = f.read().splitlines()

    def write(lines, name):
        path = os.path.join(t.dir, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    bad = list(good)
    bad.insert(10, "check_interval = soon")
    path = write(bad, "bad.conf")
    rc, out, err = run_reignd(t, ["--config", path])
    check(rc == EXIT_CONFIG, f"bad config: exit {rc}, want {EXIT_CONFIG}: {err}")
    check(f"{path}:11:" in err, f"the error must name {path}:11: {err}")

    nofence = [line for line in good if not line.startswith("fence")]
    path = write(nofence, "nofence.conf")
    rc, out, err = run_reignd(t, ["--config", path])
    check(rc == EXIT_NO_FENCE, f"no fence: exit {rc}, want {EXIT_NO_FENCE}: {err}")
    check("fence" in err, err)

    rc, out, err = run_reignd(t, ["--config", a.conf])
    check(rc == EXIT_NOT_FORMATTED, f"not formatted: exit {rc}, want {EXIT_NOT_FORMATTED}: {err}")
    check("--format" in err, f"the message must say what to do: {err}")

    rc, out, err = run_reignd(t, ["--config", a.conf, "--format"])
    check(rc == 0, f"--format: {rc} {err}")
    rc, out, err = run_reignd(t, ["--config", a.conf, "--format"])
    check(rc == EXIT_FORMAT_DENIED, f"--format twice: exit {rc}: {err}")
    check("--force" in err, err)
    rc, out, err = run_reignd(t, ["--config", a.conf, "--format", "--force"])
    check(rc == 0, f"--format --force: {rc} {err}")
    rc, out, err = run_reignd(t, ["--config", a.conf, "--check"])
    check(rc == 0 and "OK" in out, f"--check: {rc} {out} {err}")
    rc, out, err = run_reignd(t, ["--frobnicate"])
    check(rc == 2, f"usage error: exit {rc}")
    rc, out, err = run_reignd(t, ["--print-fsm"])
    check(rc == 0 and out.startswith("digraph"), f"--print-fsm: {rc} {out[:80]}")


if __name__ == "__main__":
    scenarios = {n[len("scenario_"):]: f for n, f in globals().items() if n.startswith("scenario_")}
    which = sys.argv[1] if len(sys.argv) == 2 else None
    if which not in scenarios:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(scenarios)}")
    e2elib.main(f"reignd_{which}", scenarios[which])
