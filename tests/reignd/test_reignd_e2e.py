"""test_reignd_e2e.py SCENARIO [STORE] - reignd end to end, on the shared ZooKeeper server, or
on etcd or a SQL store: STORE is zk (the default), etcd (the shared member of
tests/integration/tests.cmake), sqlite (a file in the test's directory), mariadb or postgres
(the shared servers of tests/sql/tests.cmake), the election's tables the test's own.

Two or three reignd daemons, each managing a dummy service on loopback (a small Python TCP
listener: the health check connects to it), for one election.  Every hook and fence command is
tests/reignd/hook.sh, which appends one line per run to a file shared by all nodes, so the order
of the lines is the order in which the commands ran:

    NODE become_active term=T token=K service=S at=NS
    NODE become_standby term=T service=S at=NS       (start_standby: at start, no term yet)
    NODE fence target=ID address=HOST:PORT target_term=T service=S at=NS

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
  peer_auth   the peer endpoint never carries the secret: a graceful fence seen on the network
              (through a recording proxy) holds no secret, and sent again, or altered, or signed
              a minute ago, is refused without effect; an answer not signed by the peer (a
              forger's "done") is not believed: the next fence method runs
  check       --check refuses what the daemon refuses, with the same message and exit status,
              and the daemon refuses it before contacting any store: a bad SQL election_uri (no
              file created), a short peer secret, a control socket directory not 0700, a user
              without a password, a bad URI parameter
  bad_password  a wrong ZooKeeper password is refused at start, exit 6, before any health
              check or hook; the systemd unit does not restart on 6 (nor 2 3 4 5 7)
  signals     SIGINT while reignd connects (also inherited as ignored): exits at once, 0;
              SIGINT while a hook runs on the way out: the log says what it waits for and how
              long; a second SIGINT leaves at once, the breadcrumb staying for the next active
  logs        log lines carry the time, or the journal's priority when $JOURNAL_STREAM names
              stderr; an unresolvable host is named as such; no "still trying" when giving up
  restart     the active's reignd killed and started again 0.1 s to past the session timeout
              later, round after round: it makes its service standby before anything
  same_id     a second daemon with A's node_id: refuses to stand while A lives, and fences A
              (never skipped for the id) when it takes over
  failover_wait  `ctl failover` returns once the target is active, or fails with the reason;
              the old active stands again at once; cede with no one to take over is refused
  pause       the election's pause: every node (one started later too) obeys it, kept over a
              kill and restart; resume
  pause_stop  the paused active's reignd stopped (SIGTERM): its service is left running, its
              breadcrumb kept; started again while paused it touches nothing; after the resume
              the standby fences it before it becomes active

On the SQL stores (health, kill, fence_fail, failover, cede, two_services, active_fails,
pause, pause_stop, same_id, failover_wait, restart; bad_password on MariaDB and PostgreSQL,
where the database checks the password) the scenarios are the same (a failover to a node that
is not the only other standby designates it there too): the
breadcrumb and the pause are reign values in the values table, the daemons find each other
(instance ids, peer endpoints) in the candidates table, and a killed reignd's guardian releases
its lease, as on ZooKeeper it closes the session.

Every scenario ends with one_active_at_a_time(): the hooks log timestamps, and no node may
start become_active while another one's service is (possibly) active.

No assertion on how long anything took: every wait is for an event, bounded generously.
"""

import base64
import fcntl
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2elib  # noqa: E402
from e2elib import Failure, check, log, wait_for  # noqa: E402
import test_guardian as guardian  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_sql"))
import sqle  # noqa: E402

STORE = "zk"  # or one of sqle.BACKENDS: the second argument

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK = os.path.join(HERE, "hook.sh")
DUMMY = os.path.join(HERE, "dummy_service.py")
EXIT_NOT_FORMATTED, EXIT_NO_FENCE, EXIT_FORMAT_DENIED, EXIT_CONFIG = 3, 4, 5, 7
EXIT_CREDENTIALS, EXIT_NO_STORE = 6, 8
UNIT = os.path.join(HERE, "..", "..", "contrib", "systemd", "reignd.service")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} reignd: ")
# Runs argv[1:] with SIGINT ignored, as a script's `cmd &` inherits it.
SIGINT_IGNORED = [sys.executable, "-c", "import os, signal, sys; "
                  "signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]


_HANDED_OUT = set()  # every port free_port() gave: a test's nodes take theirs one by one
_PORT_LOCKS = None  # the file whose byte N this process holds while port N is promised


def _reserve(port):
    """Take byte `port` of one lock file shared by every test of this user: a test running
    beside may have found the same port free and not bound it yet.  The lock lasts as long as
    this process (the kernel drops it when the test ends, however it ends)."""
    global _PORT_LOCKS
    if _PORT_LOCKS is None:
        path = os.path.join(tempfile.gettempdir(), f"reign-test-ports-{os.getuid()}.lock")
        _PORT_LOCKS = open(os.open(path, os.O_RDWR | os.O_CREAT, 0o600), "r+b")
    try:
        fcntl.lockf(_PORT_LOCKS, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
        return True
    except OSError:
        return False


def free_port():
    """A loopback port free now, promised to this test alone.  It is drawn below the range the
    server scripts draw from (15000 up to the kernel's ephemeral range: a port from bind(0)
    may be taken by any outgoing connection before the daemon binds it), and reserved in a
    lock file that every test's free_port() honours, so two tests running beside cannot both
    promise it.  Never the same port twice in one test: the nodes of a cluster draw all their
    ports before the first of them binds one."""
    for _ in range(200):
        port = random.randrange(10000, 15000)
        if port in _HANDED_OUT:
            continue  # free now, but promised to a daemon or dummy not started yet
        if not _reserve(port):
            continue  # promised by a test running beside
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise Failure("no free port below the ephemeral range")


CLUSTERS = []  # every cluster of the scenario: checked at its end (one_active_at_a_time)


def etcd_hosts():
    """The shared etcd member of tests/integration/tests.cmake (its fixture writes the file)."""
    with open(os.environ["REIGN_TEST_ETCD_FILE"]) as f:
        return f.read().strip()


class Cluster:
    """The nodes of one election, their shared event file and peer secret."""

    def __init__(self, t, election=None, session="2s", hosts=None):
        CLUSTERS.append(self)
        self.t = t
        self.hosts = hosts or (t.shared_hosts() if STORE == "zk" else
                               etcd_hosts() if STORE == "etcd" else None)
        # Every file a reign.conf line names is in the test's short directory, and so is the
        # hook (linked): the lines stay short wherever the tree is.
        self.dir = t.short_dir()
        self.hook = os.path.join(self.dir, "hook.sh")
        if not os.path.lexists(self.hook):
            os.symlink(HOOK, self.hook)
        self.store = None
        if STORE == "sqlite":
            self.store = sqle.Store(t, STORE, file=os.path.join(self.dir, "leases.db"))
        elif STORE not in ("zk", "etcd"):
            self.store = sqle.Store(t, STORE)
            short_pw = os.path.join(self.dir, "store.pw")
            shutil.copyfile(self.store.password_file, short_pw)
            os.chmod(short_pw, 0o600)
            self.store.password_file = short_pw
        self.election = election or t.unique("reignd")
        self.session = session
        self.events_path = os.path.join(self.dir, "events")
        open(self.events_path, "w").close()
        self.secret_path = os.path.join(self.dir, "secret")
        with open(self.secret_path, "w") as f:
            f.write("s3cret-" + os.urandom(12).hex() + "\n")
        os.chmod(self.secret_path, stat.S_IRUSR | stat.S_IWUSR)
        self.nodes = {}

    def uri(self, hosts=None):
        """The election URI of the cluster's store (ZooKeeper: through `hosts` if given).  SQL:
        the lease is the daemons' session_timeout; the statements get more time than the
        default (renew/2) on a loaded machine."""
        if self.store:
            return self.store.uri(lease=False, statement_timeout_ms=300)
        if STORE == "etcd":
            return f"etcd://{hosts or self.hosts}"
        return f"zk://{hosts or self.hosts}"

    def events(self):
        """The event file's lines, split; the become-standby a daemon runs when it starts
        (no term yet) reads "start_standby"."""
        with open(self.events_path) as f:
            lines = [line.split() for line in f.read().splitlines() if line.strip()]
        for e in lines:
            if e[1] == "become_standby" and "term=" in e:
                e[1] = "start_standby"
        return lines

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
             active_flag=None, node_id=None, active_hold=None):
        n = Node(self, name, fence, fence_flag, hosts, services, active_flag, node_id,
                 active_hold)
        self.nodes[name] = n
        return n


class Node:
    def __init__(self, cluster, name, fence=None, fence_flag=None, hosts=None,
                 services=("web",), active_flag=None, node_id=None, active_hold=None):
        self.c, self.name, self.t = cluster, name, cluster.t
        self.node_id = node_id or name
        self.runs = 0
        # Hooks inherit reignd's environment (less REIGN_*): where hook.sh writes, under which
        # name, when it fails, and while which file exists become_active is held.
        self.env = {"HOOK_EVENTS": cluster.events_path, "HOOK_FENCE_FLAG": fence_flag or "",
                    "HOOK_ACTIVE_FLAG": active_flag or "", "HOOK_NODE": name,
                    "HOOK_ACTIVE_HOLD": active_hold or ""}
        self.dir = os.path.join(cluster.dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.ports = {svc: free_port() for svc in services}  # each service's dummy
        self.service_port = self.ports[services[0]]
        self.peer_port = free_port()
        self.metrics_port = free_port()
        self.socket = os.path.join(self.dir, "run", "control.sock")
        self.conf = os.path.join(self.dir, "reign.conf")
        self.dummies = {}
        self.proc = None
        fence = fence or ["graceful(timeout=3s)", f"shell(timeout=10s):{cluster.hook} fence"]
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
                f"election_uri = {cluster.uri(hosts)}",
                f"election_name = {cluster.election_of(svc)}",
                f"node_id = {self.node_id}",
                f"service_address = 127.0.0.1:{port}",
                f"session_timeout = {cluster.session}",
                "check_type = tcp",
                f"check_target = 127.0.0.1:{port}",
                "check_interval = 200ms",
                "check_rise = 1",
                "check_fall = 2",
                f"become_active = {cluster.hook} become_active",
                f"become_standby = {cluster.hook} become_standby",
            ] + [f"fence = {f}" for f in fence]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def reignd(self, *args, wrap=()):
        self.runs += 1
        label = self.name if self.runs == 1 else f"{self.name}.{self.runs}"
        return self.t.spawn(label, [*wrap, os.environ["REIGND"], "--config", self.conf, *args],
                            self.env)

    def edit(self, old=None, new=None, append=()):
        """Replaces the line `old` with `new` in the configuration, and/or appends lines (to the
        last section, the last service's)."""
        with open(self.conf) as f:
            lines = f.read().splitlines()
        if old is not None:
            check(old in lines, f"no line {old!r} in {self.conf}")
            lines[lines.index(old)] = new
        lines += list(append)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

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

    def wait_standing(self, svc="web"):
        """Standby and in the election (it sees the leader): a failover or a cede elsewhere
        counts on it."""
        def standing():
            st = self.status(svc)
            return st and st["state"] == "standby" and st["leader"]
        return wait_for(standing, f"{self.name}'s {svc} to stand as a standby")


def run_reignd(t, args):
    r = subprocess.run([os.environ["REIGND"], *args], capture_output=True, timeout=e2elib.WAIT)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def format_election(node):
    rc, out, err = run_reignd(node.t, ["--config", node.conf, "--format"])
    check(rc == 0, f"reignd --format failed ({rc}): {err}")


def two_nodes(t, a_hosts=None, cluster=None, b_opts=None, before_b=None):
    """A active, B standby, both healthy (A reaches ZooKeeper through a_hosts if given; B
    made with b_opts; before_b(c, a) runs while A is alone)."""
    c = cluster or Cluster(t)
    a, b = c.node("A", hosts=a_hosts), c.node("B", **(b_opts or {}))
    format_election(a)
    for n in (a, b):
        n.start_service()
    a.start()
    c.wait_line("A", "become_active")
    a.wait_state("active")
    if before_b:
        before_b(c, a)
    b.start()
    b.wait_standing()
    return c, a, b


def stop_warnings(proc):
    """The warnings a daemon logged after its SIGTERM: a clean stop has none."""
    before, sep, after = proc.err().partition("SIGTERM: leaving cleanly")
    check(sep, f"{proc.label} did not log its SIGTERM: {proc.err()[-500:]}")
    return [ln for ln in after.splitlines() if "warning:" in ln]


def token_of(line):
    return int([w for w in line if w.startswith("token=")][0].split("=")[1])


def one_active_at_a_time(c):
    """Proves from the hooks' own timestamps that no two nodes were ever active at once for
    a service: a node is (possibly) active from the start of its become_active (or a failed
    one) until the end of its next become_standby, or until another node's fence of its
    address ends; nobody may start become_active while another node is so."""
    by_addr = {f"127.0.0.1:{port}": n.name for n in c.nodes.values() for port in n.ports.values()}
    timeline = []
    for i, e in enumerate(c.events()):
        kv = dict(w.split("=", 1) for w in e[2:] if "=" in w)
        check("at" in kv, f"event without a timestamp: {e}")
        timeline.append((int(kv["at"]), i, e[0], e[1], kv))
    timeline.sort()
    active = {}  # (service, node) -> since
    for at, _, node, what, kv in timeline:
        svc = kv.get("service", "web")
        if what in ("become_active", "active_failed"):
            others = [n for (s, n) in active if s == svc and n != node]
            check(not others, f"{node} started become_active for {svc} at {at} while {others} "
                  f"was still active (since {[active[(svc, n)] for n in others]}): "
                  f"{c.events()}")
            active.setdefault((svc, node), at)
        elif what in ("become_standby", "start_standby"):
            active.pop((svc, node), None)
        elif what == "fence":
            active.pop((svc, by_addr.get(kv.get("address"), kv.get("target"))), None)
    return active


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
            'reignd_service_state{service="web",state="active"}': 1,
            # B was elected once, follows its own leadership, and reaches the store.
            'reignd_leadership_changes_total{service="web",reason="elected"}': 1,
            'reignd_leadership_changes_total{service="web",reason="session_lost"}': 0,
            'reignd_election_observed{service="web"}': 1,
            'reignd_election_leaderless_seconds{service="web"}': 0,
            'reignd_store_connected{service="web"}': 1}
    check(all(m.get(k) == v for k, v in want.items()),
          f"B's metrics: {[(k, m.get(k)) for k in want]}")


def scenario_kill_guardian(t):
    c, a, b = two_nodes(t, cluster=Cluster(t, session=f"{guardian.HOLD_MS // 1000}s"))
    killed_ns = a.proc.kill9()  # its service keeps running: it must be fenced
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
    ok_flag = os.path.join(t.short_dir(), "fence_may_succeed")
    a, b = c.node("A"), c.node("B", [f"shell(timeout=10s):{c.hook} fence"], fence_flag=ok_flag)
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
    n3.wait_standing()
    r = a.request({"op": "failover", "service": "web", "to": "nobody"})
    check(not r["ok"] and "nobody" in r["message"], f"failover to a non-node must fail: {r}")
    r = b.request({"op": "failover", "service": "web", "to": "B"})
    check(not r["ok"] and "not active" in r["message"], f"failover on a standby: {r}")
    # Paused (through C: the pause is the election's), nothing fails over.
    r = n3.request({"op": "pause", "service": "web"})
    check(r["ok"], f"pause through C: {r}")
    a.wait_state("paused_active")
    r = a.request({"op": "failover", "service": "web", "to": "C"})
    check(not r["ok"] and "paused_active" in r["message"], f"failover while paused: {r}")
    r = n3.request({"op": "resume", "service": "web"})
    check(r["ok"], f"resume through C: {r}")
    # The standbys quit the election while it was paused: both stand again before a failover.
    n3.wait_standing()
    b.wait_standing()
    a.wait_state("active")

    # B is next in line: A steps down cleanly (become-standby, breadcrumb removed, cede).
    r = failover(a, "B")
    check(r["ok"], f"failover refused: {r}")
    c.wait_line("B", "become_active")
    check(c.index("A", "become_standby") < c.index("B", "become_active"), f"order: {c.events()}")
    check(not c.lines("B", "fence"), "A ceded cleanly: nothing to fence")
    b.wait_state("active")
    # The metrics: A's leadership ended once, in a cede (B next in line) or a handoff (B
    # designated); C, standing all along, saw B elected elsewhere and knows its leader.
    changes = 'reignd_leadership_changes_total{service="web",reason="%s"}'
    m = a.metrics()
    check(m.get(changes % "elected") == 1 and
          m.get(changes % "ceded") + m.get(changes % "handoff") == 1, f"A's metrics: {m}")
    wait_for(lambda: n3.metrics().get(changes % "elsewhere", 0) >= 1,
             "C to count B's election elsewhere")
    m = n3.metrics()
    check(m.get(changes % "elected") == 0 and m.get('reignd_election_observed{service="web"}') == 1
          and m.get('reignd_election_leaderless_seconds{service="web"}') == 0, f"C's metrics: {m}")

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

    # SIGTERM on the active: it goes standby, removes its breadcrumb, warns of nothing (it
    # closes its store on purpose); the next takes over unfenced.
    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, f"reignd A exited with {a.proc.returncode()}")
    check(not stop_warnings(a.proc), f"a clean stop warned: {stop_warnings(a.proc)}")
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
    # Out of the election for the delay, and status says so.
    a.wait_state("ceded")
    check("stands again in 30 s" in a.status()["reason"], f"A's status: {a.status()}")
    # The metrics count A's cede (its leadership freed, no DEMOTED from the library) and B's
    # election; A no longer follows the election, so it counts no time without a leader.
    ma, mb = a.metrics(), b.metrics()
    changes = 'reignd_leadership_changes_total{service="web",reason="%s"}'
    check(ma.get(changes % "elected") == 1 and ma.get(changes % "ceded") == 1 and
          ma.get('reignd_election_observed{service="web"}') == 0 and
          ma.get('reignd_election_leaderless_seconds{service="web"}') == 0,
          f"A's metrics after its cede: {sorted(k for k, v in ma.items() if v)}")
    check(mb.get(changes % "elected") == 1 and mb.get(changes % "ceded") == 0,
          f"B's metrics after A's cede: {sorted(k for k, v in mb.items() if v)}")
    # The pause is the election's: both nodes take it, B keeps its service active.
    r = a.request({"op": "pause", "service": "web"})
    check(r["ok"] and r["result"]["paused"] is True, f"pause: {r}")
    a.wait_state("paused")  # ceded, then paused: it does not stand when the delay ends
    b.wait_state("paused_active")
    r = a.request({"op": "resume", "service": "web"})
    check(r["ok"], f"resume: {r}")
    a.wait_state("standby")
    b.wait_state("active")
    r = a.request({"op": "resume", "service": "web"})
    check(not r["ok"] and "not paused" in r["message"], f"resume when not paused: {r}")


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
    # Neutral because its client was suspended: the metrics say the store is unreachable.
    store = 'reignd_store_connected{service="web"}'
    check(a.metrics().get(store) == 0, f"A's {store} while cut off: {a.metrics().get(store)}")
    c.wait_line("B", "become_active")
    check(c.index("A", "become_standby") < c.index("B", "become_active"),
          f"A's become_standby must run before B's become_active: {c.events()}")
    check(not c.lines("B", "fence"), f"A's reignd answered the graceful fence: {c.events()}")
    check([e[1] for e in c.lines("A")] == ["start_standby", "become_active", "become_standby"],
          f"no other hook ran on A while it was cut off: {c.events()}")
    proxy.send(signal.SIGUSR2)
    wait_for(lambda: "thawed" in proxy.err(), "the proxy to thaw")
    a.wait_state("standby")
    b.wait_state("active")
    check(len(c.lines("A", "become_active")) == 1, f"A active again: {c.events()}")
    # Standing again on a new session: connected, and its leadership ended as libreign said.
    m = a.metrics()
    changes = 'reignd_leadership_changes_total{service="web",reason="%s"}'
    check(m.get(store) == 1 and m.get(changes % "elected") == 1 and
          m.get(changes % "suspended") + m.get(changes % "session_lost") == 1, f"A's metrics: {m}")


def scenario_credentials(t):
    """With a user in the election URI (password in a file), --format and the daemon create
    their values with the ACL "digest user: all, world: read": anyone can read the breadcrumb,
    nobody else can change or delete it; the password appears in no output."""
    password = "pw-" + os.urandom(8).hex()
    pwfile = os.path.join(t.short_dir(), "zk-password")
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
    flag = os.path.join(t.short_dir(), "active_may_succeed")
    a = c.node("A", active_flag=flag)
    format_election(a)
    a.start_service()
    a.start()
    c.wait_line("A", "active_failed", count=2)
    check(not c.lines("A", "become_active"), f"{c.events()}")
    ev = [e[1] for e in c.lines("A")]
    check(ev[:4] == ["start_standby", "active_failed", "become_standby", "active_failed"],
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
        path = os.path.join(t.short_dir(), name)
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


# ---- the peer endpoint ---------------------------------------------------------------------

def sign_request(secret, method, path, body, ts_ms, nonce):
    """The Authorization value a holder of `secret` sends (src/reignd/peer_auth.h)."""
    msg = f"reignd-peer-request-1\n{method}\n{path}\n{ts_ms}\n{nonce}\n".encode() + body
    sig = hmac.new(secret, msg, hashlib.sha256).hexdigest()
    return f"REIGN-HMAC-SHA256 ts={ts_ms}, nonce={nonce}, sig={sig}"


def raw_http(port, data):
    """Sends bytes to 127.0.0.1:port and returns (status, headers, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=e2elib.WAIT) as s:
        s.sendall(data)
        answer = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def request_bytes(method, path, body, authorization):
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\nAuthorization: {authorization}\r\n\r\n"
            ).encode() + body


class PeerProxy:
    """A TCP proxy in front of a reignd's peer endpoint, as an eavesdropper would sit: it
    records each request it forwards; in "forge" mode it answers itself, unsigned."""

    def __init__(self, target_port):
        self.target = target_port
        self.requests = []
        self.forge = False
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def _read_request(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        m = re.search(rb"(?i)content-length:\s*(\d+)", head)
        need = int(m.group(1)) if m else 0
        while len(body) < need:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    req = self._read_request(conn)
                    self.requests.append(req)
                    if self.forge:
                        body = b'{"ok":true,"result":{"name":"web","state":"standby"}}'
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                        continue
                    with socket.create_connection(("127.0.0.1", self.target), timeout=30) as up:
                        up.sendall(req)
                        while True:
                            chunk = up.recv(65536)
                            if not chunk:
                                break
                            conn.sendall(chunk)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def scenario_peer_auth(t):
    c = Cluster(t)
    with open(c.secret_path, "rb") as f:
        secret = f.read().strip()
    a, b = c.node("A"), c.node("B")
    proxy = PeerProxy(a.peer_port)
    a.edit(append=[f"peer_address = 127.0.0.1:{proxy.port}"])  # others reach A through it
    format_election(a)
    for n in (a, b):
        n.start_service()
    a.start()
    a.wait_state("active")
    b.start()
    b.wait_state("standby")

    # B fences A gracefully, through the proxy: it works, and the wire holds no secret.
    a.stop_service()
    c.wait_line("B", "become_active")
    check(not c.lines("B", "fence"), f"the graceful fence sufficed: {c.events()}")
    standby = [r for r in proxy.requests if r.startswith(b"POST /v1/services/web/standby ")]
    check(len(standby) == 1, f"one standby request through the proxy: {proxy.requests}")
    seen = standby[0]
    check(secret not in seen and base64.b64encode(secret) not in seen,
          "the peer secret crossed the network")
    check(b"Authorization: REIGN-HMAC-SHA256 ts=" in seen, f"not signed: {seen!r}")
    before = len(c.lines("A", "become_standby"))

    # The request as seen, sent again to A: refused (replayed), no effect.
    code, _, body = raw_http(a.peer_port, seen)
    check(code == 401 and b"replayed" in body, f"a replayed request: {code} {body!r}")
    # Altered (another term, same signature): refused.
    forged = re.sub(rb'"term":(\d+)', lambda m: b'"term":' + str(int(m.group(1)) + 1).encode(),
                    seen)
    check(forged != seen, "the body has a term to alter")
    code, _, body = raw_http(a.peer_port, forged)
    check(code == 401 and b"wrong signature" in body, f"a forged request: {code} {body!r}")
    # Signed with the secret, but a minute ago: refused, naming the clocks.
    path, payload = "/v1/services/web/standby", b'{"from":"B","term":99}'
    old = sign_request(secret, "POST", path, payload, int(time.time() * 1000) - 60000,
                       os.urandom(16).hex())
    code, _, body = raw_http(a.peer_port, request_bytes("POST", path, payload, old))
    check(code == 401 and b"clocks" in body, f"an old request: {code} {body!r}")
    check(len(c.lines("A", "become_standby")) == before,
          f"a refused request made A run become_standby: {c.events()}")
    # What the documentation says a peer sends is what reignd takes, and its answer is signed.
    nonce = os.urandom(16).hex()
    fresh = sign_request(secret, "GET", "/v1/services/web", b"", int(time.time() * 1000), nonce)
    code, headers, body = raw_http(a.peer_port, request_bytes("GET", "/v1/services/web", b"",
                                                              fresh))
    check(code == 200, f"a signed state request: {code} {body!r}")
    want = hmac.new(secret, f"reignd-peer-answer-1\n{nonce}\n200\n".encode() + body,
                    hashlib.sha256).hexdigest()
    check(headers.get("x-reign-signature") == want, f"the answer's signature: {headers}")
    check("replayed" in a.proc.err() and "wrong signature" in a.proc.err(),
          "A logs the refusals")
    check(secret.decode() not in a.proc.err() + b.proc.err(), "the secret was logged")

    # A is active again (B's service stops), then A's reignd dies; whoever answers at A's peer
    # address now says "done" without the secret: B must not believe it, and fences with the
    # shell method before it becomes active.
    a.start_service()
    a.wait_state("standby")
    b.stop_service()
    c.wait_line("A", "become_active", count=2)
    a.wait_state("active")
    b.start_service()
    b.wait_state("standby")
    proxy.forge = True
    a.proc.kill9()
    c.wait_line("B", "become_active", count=2)
    check(len(c.lines("B", "fence")) == 1, f"the shell fence ran: {c.events()}")
    check("not signed with our secret" in b.proc.err(), "B says why it did not believe A")
    fence_at = c.index("B", "fence")
    second = [i for i, e in enumerate(c.events()) if e[:2] == ["B", "become_active"]][1]
    check(fence_at < second, f"fenced before becoming active: {c.events()}")
    proxy.close()


# ---- what is refused before any store -------------------------------------------------------

def scenario_check(t):
    c = Cluster(t)
    a = c.node("A")
    rc, out, err = run_reignd(t, ["--config", a.conf, "--check"])
    check(rc == 0 and out.strip() == f"{a.conf}: OK (1 service)", f"--check: {rc} {out} {err}")

    def variant(name, old, new):
        with open(a.conf) as f:
            text = f.read()
        check(old in text, f"{old!r} in the configuration")
        path = os.path.join(t.short_dir(), name)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return path

    db = os.path.join(t.short_dir(), "lease.db")
    short = os.path.join(t.short_dir(), "short.secret")
    with open(short, "w") as f:
        f.write("too-short\n")
    os.chmod(short, 0o600)
    open_dir = os.path.join(t.short_dir(), "open-run")
    os.makedirs(open_dir, mode=0o755, exist_ok=True)
    os.chmod(open_dir, 0o755)
    hosts = c.hosts
    cases = [
        # (file, exit status, what the message says, the key's line)
        (variant("sql.conf", f"election_uri = zk://{hosts}",
                 f"election_uri = sqlite://{db}?lease_ms=0"),
         EXIT_CONFIG, "'lease_ms' = '0' is out of range", "election_uri"),
        (variant("timing.conf", f"election_uri = zk://{hosts}",
                 f"election_uri = sqlite://{db}?renew_ms=5000"),
         EXIT_CONFIG, "a leader must be able to renew three times", "election_uri"),
        (variant("libpq.conf", f"election_uri = zk://{hosts}",
                 "election_uri = postgres://127.0.0.1/db?sslmod=require"),
         EXIT_CONFIG, "unknown parameter 'sslmod'", "election_uri"),
        (variant("short.conf", f"peer_secret_file = {c.secret_path}",
                 f"peer_secret_file = {short}"),
         EXIT_CONFIG, "must hold 16 to 1024 printable", "peer_secret_file"),
        (variant("dir.conf", f"control_socket = {a.socket}",
                 f"control_socket = {open_dir}/control.sock"),
         EXIT_CONFIG, "mode 0700", "control_socket"),
        (variant("nopw.conf", f"election_uri = zk://{hosts}", f"election_uri = zk://u@{hosts}"),
         EXIT_CREDENTIALS, "no password for user 'u'", "election_uri"),
        (variant("ports.conf", f"metrics_listen = 127.0.0.1:{a.metrics_port}",
                 f"metrics_listen = 127.0.0.1:{a.peer_port}"),
         EXIT_CONFIG, "is peer_listen's too", "metrics_listen"),
        (variant("param.conf", f"election_uri = zk://{hosts}",
                 f"election_uri = zk://{hosts}?suspend_policy=sometimes"),
         EXIT_CONFIG, "suspend_policy must be", "election_uri"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "REIGN_PASSWORD"}
    for path, status, needle, key in cases:
        with open(path) as f:
            text = f.read().splitlines()
        line = 1 + next(i for i, ln in enumerate(text) if ln.startswith(key + " "))
        for args in (["--check"], []):
            r = subprocess.run([os.environ["REIGND"], "--config", path, *args],
                               capture_output=True, text=True, timeout=e2elib.WAIT, env=env)
            what = f"reignd {' '.join(args)} on {os.path.basename(path)}"
            check(r.returncode == status, f"{what}: exit {r.returncode}, want {status}: "
                                          f"{r.stderr}")
            check(f"{path}:{line}: " in r.stderr and f"{key}: " in r.stderr and needle in r.stderr,
                  f"{what}: the message must name {path}:{line} and say {needle!r}: {r.stderr}")
            check("OK" not in r.stdout and "connecting" not in r.stderr,
                  f"{what}: nothing must reach the store: {r.stdout} {r.stderr}")
    check(not os.path.exists(db), "the daemon created the SQLite file of a refused store")
    # The daemon refuses the same things at start, before the store: nothing was created there.
    rc, out, err = t.zkraw(hosts, "get", f"/reign/value/reignd/{c.election}/layout")
    check(rc != 0, f"a refused daemon wrote to ZooKeeper: {out} {err}")


def password_file(t, name):
    path = os.path.join(t.short_dir(), f"{name}.pw")
    with open(path, "w") as f:
        f.write(f"{name}-{os.urandom(6).hex()}\n")
    os.chmod(path, 0o600)
    return path


def scenario_bad_password(t):
    """A wrong password: refused at start (exit 6), not after the first healthy check
    (ZooKeeper: the digest is found wrong at the first write; MariaDB, PostgreSQL: the database
    refuses the login)."""
    wrong = password_file(t, "wrong")
    if STORE == "zk":
        hosts = t.shared_hosts()
        chroot = "/" + t.unique("reignd-pw")
        rc, _, err = t.zkraw(hosts, "create", chroot, "")
        check(rc == 0, f"creating {chroot}: {err}")
        right = password_file(t, "right")
        c = Cluster(t, hosts=f"alice@{hosts}{chroot}?password_file={right}")
        bad_uri = f"zk://alice@{hosts}{chroot}?password_file={wrong}"
        said = ("refused our credentials", "not authorized")
    else:
        c = Cluster(t)
        bad_uri = c.uri().replace(f"password_file={c.store.password_file}",
                                  f"password_file={wrong}")
        said = ("cannot use the store", "authentication failed")
    a, b = c.node("A"), c.node("B")
    format_election(a)
    b.edit(f"election_uri = {c.uri()}", f"election_uri = {bad_uri}")
    b.start_service()
    rc, out, err = run_reignd(t, ["--config", b.conf, "--check"])
    check(rc == 0, f"--check cannot know the password is wrong: {rc} {err}")
    b.start()
    check(b.proc.wait() == EXIT_CREDENTIALS, f"B exited {b.proc.returncode()}, want 6")
    err = b.proc.err()
    check(all(s in err.lower() for s in said), f"want {said}: {err}")
    check("health" not in err and not c.events(), f"nothing ran before the refusal: {err}")
    with open(wrong) as f:
        check(f.read().strip() not in err, "the password was logged")
    # The right password starts.
    a.start_service()
    a.start()
    a.wait_state("active")
    # systemd: no restart on a configuration or credential error.
    with open(UNIT) as f:
        unit = f.read()
    prevent = re.search(r"^RestartPreventExitStatus=(.*)$", unit, re.M)
    check(prevent and {"2", "3", "4", "5", "6", "7"} <= set(prevent.group(1).split())
          and "8" not in prevent.group(1).split() and "1" not in prevent.group(1).split(),
          f"the unit's RestartPreventExitStatus: {prevent and prevent.group(0)}")


# ---- signals and logs -----------------------------------------------------------------------

def silent_port():
    """A port where nothing answers: bound, never listening (connections are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s, s.getsockname()[1]


def scenario_signals(t):
    keep, port = silent_port()
    c = Cluster(t, hosts=f"127.0.0.1:{port}")
    a = c.node("A")
    # A connect timeout of a minute: an exit 8 would mean the signal went unheard.
    a.edit(f"election_uri = zk://127.0.0.1:{port}",
           f"election_uri = zk://127.0.0.1:{port}?connect_timeout_ms=60000")
    for label, wrap in (("plain", ()), ("inherited SIG_IGN", SIGINT_IGNORED)):
        p = a.reignd(wrap=wrap)
        wait_for(lambda: "connecting to" in p.err(), f"reignd to connect ({label})")
        p.send(signal.SIGINT)
        check(p.wait() == 0, f"SIGINT while connecting ({label}): exit {p.returncode()}")
        check("SIGINT: the daemon had not started yet: nothing to undo" in p.err(), p.err())
    keep.close()

    # On the way out, the log says what reignd waits for, and for how long.
    c = Cluster(t)
    a = c.node("A")
    release = os.path.join(t.short_dir(), "standby-may-end")
    a.edit(f"become_standby = {c.hook} become_standby",
           f"become_standby = {c.hook} become_standby; while [ ! -e {release} ]; do sleep 0.05; "
           "done")
    format_election(a)
    a.start_service()
    a.start()
    a.wait_state("active")
    # The state is active once become-active is queued: let it finish, so that the
    # become-standby hook is what the shutdown waits for.
    wait_for(lambda: "become_active: exited with status 0" in a.proc.err(), "become-active")
    a.proc.send(signal.SIGINT)
    c.wait_line("A", "become_standby")
    wait_for(lambda: "SIGINT: leaving cleanly: waiting for service web: its become_standby hook "
             "(running for" in a.proc.err(), "the shutdown to say what it waits for")
    check(re.search(r"killed at 30 s\); 60 s at most in all \(SIGINT again: leave at once\)",
                    a.proc.err()), a.proc.err())
    open(release, "w").close()
    check(a.proc.wait() == 0, f"clean exit: {a.proc.returncode()}")
    crumb = f"/reign/value/reignd/{c.election}/breadcrumb"
    rc, out, _ = t.zkraw(c.hosts, "get", crumb)
    check(rc != 0, f"a clean leave removes the breadcrumb: {out}")

    # A second SIGINT stops waiting: exit 1, and the breadcrumb stays (the next active fences).
    os.unlink(release)
    a.start()
    a.wait_state("active")
    wait_for(lambda: "become_active: exited with status 0" in a.proc.err(), "become-active")
    a.proc.send(signal.SIGINT)
    wait_for(lambda: "waiting for service web: its become_standby hook" in a.proc.err(),
             "the shutdown to wait for the hook")
    a.proc.send(signal.SIGINT)
    check(a.proc.wait() == 1, f"a second SIGINT: exit {a.proc.returncode()}")
    check("SIGINT again: leaving at once" in a.proc.err(), a.proc.err())
    rc, out, _ = t.zkraw(c.hosts, "get", crumb)
    check(rc == 0 and b"\nid=A\n" in bytes.fromhex(json.loads(out)["data_hex"]),
          f"the breadcrumb stays after leaving at once: {rc} {out}")


def scenario_logs(t):
    c = Cluster(t)
    a = c.node("A")
    format_election(a)
    a.start_service()
    a.start()
    a.wait_state("active")
    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, "clean exit")
    lines = a.proc.err().splitlines()
    bad = [ln for ln in lines if not TIMESTAMP.match(ln)]
    check(len(lines) >= 5 and not bad, f"every log line starts with the time: {bad[:5]}")

    # stderr is the journal when $JOURNAL_STREAM names it: priorities, no time.
    err_path = os.path.join(t.short_dir(), "journal.err")
    with open(err_path, "wb") as err:
        st = os.fstat(err.fileno())
        env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
        r = subprocess.run([os.environ["REIGND"], "--config", a.conf, "--format"],
                           stderr=err, stdout=subprocess.DEVNULL, env=env, timeout=e2elib.WAIT)
    with open(err_path) as f:
        journal = f.read().splitlines()
    check(r.returncode == EXIT_FORMAT_DENIED, f"--format again: {r.returncode}")
    check(journal and all(re.match(r"^<[3-7]>", ln) for ln in journal)
          and any(ln.startswith("<3>") and "--force" in ln for ln in journal),
          f"journal lines: {journal}")
    # Inherited, but naming another stream: not the journal.
    rc, out, err = run_reignd_env(t, ["--config", a.conf, "--format"],
                                  {"JOURNAL_STREAM": "1:2"})
    check(TIMESTAMP.match(err.splitlines()[-1]), f"JOURNAL_STREAM of another stream: {err}")

    # A host that does not resolve is named, with the resolver's reason.
    a.edit(f"election_uri = zk://{c.hosts}", "election_uri = zk://no-such-host.invalid:2181")
    rc, out, err = run_reignd(t, ["--config", a.conf])
    check(rc == EXIT_NO_STORE and "host 'no-such-host.invalid' does not resolve" in err
          and "No such file or directory" not in err, f"unresolvable host: {rc} {err}")
    # Giving up is not preceded by "still trying".
    keep, port = silent_port()
    a.edit("election_uri = zk://no-such-host.invalid:2181",
           f"election_uri = zk://127.0.0.1:{port}?connect_timeout_ms=500")
    rc, out, err = run_reignd(t, ["--config", a.conf])
    keep.close()
    check(rc == EXIT_NO_STORE and "cannot use the store" in err and "still trying" not in err,
          f"a store that does not answer: {rc} {err}")


def run_reignd_env(t, args, env):
    r = subprocess.run([os.environ["REIGND"], *args], capture_output=True, timeout=e2elib.WAIT,
                       env=dict(os.environ, **env))
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def candidates(c):
    """The ids standing in the cluster's election (reign status, from the store)."""
    st = c.t.status(c.election, c.uri())
    return [k["id"] for k in st["candidates"]] if st else []


def scenario_restart(t):
    """The active's reignd is SIGKILLed (its service keeps running) and started again after
    0.1 s to past the session timeout, as systemd's Restart= does, round after round (the
    active of one round is the victim of the next).  The fresh daemon knows nothing of its
    service: it runs become-standby before it answers a graceful fence as done or stands, so
    the hooks' timestamps never show two actives (checked after every round)."""
    c, a, b = two_nodes(t)  # session 2 s
    nodes = {"A": a, "B": b}
    victim = "A"
    for delay in (0.1, 0.5, 1.0, 1.5, 2.5, 4.0):
        n = nodes[victim]
        actives = len(c.lines(what="become_active"))
        starts = len(c.lines(n.name, "start_standby"))
        log(f"round: {victim}'s reignd killed, started again {delay} s later")
        n.proc.kill9()
        time.sleep(delay)  # the restart delay under test, not a synchronisation
        n.start()
        c.wait_line(n.name, "start_standby", count=starts + 1)
        c.wait_line(None, "become_active", count=actives + 1)
        new = c.lines(what="become_active")[-1][0]
        nodes[new].wait_state("active")
        for other in nodes.values():
            if other is not nodes[new]:
                other.wait_standing()
        active = one_active_at_a_time(c)
        check(list(active) == [("web", new)], f"one active, {new}: {active} {c.events()}")
        # Fenced by its fresh daemon (graceful: answered after start_standby) or, if that was
        # not up yet, by the shell method; never skipped.
        fence = [e for e in c.lines(new) if e[1] == "fence"]
        i_active = len(c.events()) - 1 - c.events()[::-1].index(c.lines(new, "become_active")[-1])
        i_start = [i for i, e in enumerate(c.events()) if e[:2] == [n.name, "start_standby"]][-1]
        check(new == victim or i_start < i_active or fence,
              f"{new} became active before {victim}'s fresh daemon made it standby, unfenced: "
              f"{c.events()}")
        victim = new


def scenario_same_id(t):
    """A copy of node A's configuration on another host (same node_id, other addresses):
    while A lives, the copy refuses to stand, loudly (log, ctl status, metrics); once A's
    reignd is gone (its service still running), the copy may take
    over, but it fences A first: the breadcrumb's id is its own, the instance and the
    addresses are not."""
    c, a, b = two_nodes(t)
    a2 = c.node("A2", node_id="A")
    a2.start_service()
    a2.start()
    a2.wait_state("conflict")
    st = a2.status()
    check(st["conflict"] and f"127.0.0.1:{a.service_port}" in st["conflict"]
          and "give each node its own node_id" in st["conflict"], f"A2's status: {st}")
    check("another reignd stands in election" in a2.proc.err()
          and "error: service web: another reignd" in a2.proc.err(), "A2 logs the conflict")
    rc, out, err = t.reign(["ctl", "--socket", a2.socket, "status"])
    check(rc == 0 and "conflict" in out and "web: CONFLICT: another reignd stands" in out,
          f"reign ctl status on A2: {out}")
    check(a.state() == "active", f"A keeps its role: {a.status()}")
    m = a2.metrics()
    check(m.get('reignd_service_state{service="web",state="conflict"}') == 1
          and m.get('reignd_service_state{service="web",state="active"}') == 0,
          f"A2's state series: {[(k, v) for k, v in m.items() if 'service_state' in k]}")
    check(candidates(c) == ["A", "B"], f"the copy does not stand: {candidates(c)}")
    # B leaves, then A's reignd dies: only the copy can take over, and it must fence A.
    b.proc.send(signal.SIGTERM)
    check(b.proc.wait() == 0, "B did not stop cleanly")
    a.proc.kill9()
    c.wait_line("A2", "become_active")
    fences = c.lines("A2", "fence")
    check(fences and f"address=127.0.0.1:{a.service_port}" in fences[0],
          f"A2 must fence A (at A's address) before it is active: {c.events()}")
    check(c.index("A2", "fence") < c.index("A2", "become_active"), f"order: {c.events()}")
    a2.wait_state("active")
    check(a2.status()["conflict"] is None, f"A2's conflict is over: {a2.status()}")
    check("the breadcrumb names this node's id A, but another daemon" in a2.proc.err(),
          "A2 says why it fences a node with its own id")


def scenario_failover_wait(t):
    """`reign ctl failover` returns once the target is active (its become-active is held
    until the test has seen the old active ceded), the old active stands again at once
    (ceded meanwhile, and shown), a cede right after hands back without a gap; a failover
    whose target fails to become active fails with the reason; --no-wait answers at once; a
    cede with no one to take over is refused."""
    flag = os.path.join(t.short_dir(), "b_may_be_active")
    open(flag, "w").close()
    hold = os.path.join(t.short_dir(), "b_holds_active")

    def cede_alone(c, a):
        rc, out, err = t.reign(["ctl", "--socket", a.socket, "cede", "web"])
        check(rc == 1 and "no other node stands" in err, f"cede alone: {rc} {out} {err}")
    c, a, b = two_nodes(t, b_opts={"active_hold": hold, "active_flag": flag},
                        before_b=cede_alone)

    # A shows itself ceded, naming its target, while B's become-active is held; the failover
    # returns only after B's become-active ended.
    open(hold, "w").close()
    ctl = t.spawn("ctl-failover", [t.cli, "ctl", "--socket", a.socket, "failover", "web",
                                   "--to", "B"])
    c.wait_line("B", "become_active")
    st = wait_for(lambda: (lambda s: s if s and s["state"] == "ceded" else None)(a.status()),
                  "A to show itself ceded")
    check(st["failover_to"] == "B" and "a failover to B" in st["reason"],
          f"A ceded for the failover: {st}")
    check(ctl.popen.poll() is None, f"the failover returned while B was becoming active: "
          f"{ctl.lines()} {ctl.err()}")
    os.unlink(hold)
    check(ctl.wait() == 0, f"failover: {ctl.err()}")
    check(ctl.lines() == ["failed over web to B: B is active"], f"output: {ctl.lines()}")
    check(c.lines("B", "active_done"), f"it returned before B's become_active ended: "
          f"{c.events()}")
    check(b.status()["state"] == "active" and b.status()["activated"], f"B: {b.status()}")
    # A stands again at once (it was told B is active before the answer went out).
    check(a.state() == "standby", f"A stands again: {a.status()}")
    a.wait_standing()
    check(candidates(c) == ["B", "A"], f"candidates: {candidates(c)}")

    # A cede on B now hands back to A: no window without an active.
    rc, out, err = t.reign(["ctl", "--socket", b.socket, "cede", "web"])
    check(rc == 0, f"cede on B: {rc} {out} {err}")
    c.wait_line("A", "become_active", count=2)
    a.wait_state("active")
    b.wait_standing()

    # B's become-active fails: the failover fails with the reason, A stands again (and, the
    # only one left standing while B waits to retry, takes over again).
    os.unlink(flag)
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "failover", "web", "--to", "B"])
    check(rc == 1 and "failover web: B did not become active" in err
          and "become-active failed" in err, f"failed failover: {rc} {out} {err}")
    c.wait_line("B", "active_failed")
    c.wait_line("A", "become_active", count=3)
    a.wait_state("active")
    open(flag, "w").close()
    b.wait_standing()

    # --no-wait: answered once handed over, while B's become-active is still held.
    open(hold, "w").close()
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "failover", "web", "--to", "B",
                            "--no-wait"])
    check(rc == 0 and out.startswith("handed web over to B (not waiting"), f"{rc} {out} {err}")
    check(len(c.lines("B", "active_done")) == 1, f"--no-wait waited for B: {c.events()}")
    os.unlink(hold)
    c.wait_line("B", "active_done", count=2)
    b.wait_state("active")
    a.wait_standing()


def scenario_pause(t):
    """The pause is the election's, kept in the store: asked on the standby, every node
    obeys it; the paused active's reignd killed, nobody takes over; a daemon started later
    and the active's restarted one come up paused and touch nothing (not even the start-up
    become-standby); resume (from the newcomer) lets the election go on, never with two
    actives."""
    c, a, b = two_nodes(t)
    rc, out, err = t.reign(["ctl", "--socket", b.socket, "pause", "web"])
    check(rc == 0 and out.startswith("paused web (its whole election"), f"pause: {out} {err}")
    a.wait_state("paused_active")
    b.wait_state("paused")
    for n in (a, b):
        st = n.status()
        check(st["paused"] is True and st["paused_by"] == "B", f"{n.name}'s status: {st}")
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "status"])
    check("web: paused by B: no automatic failover on any node" in out, f"ctl status: {out}")
    check(a.metrics().get('reignd_service_paused{service="web"}') == 1, "A's paused metric")

    # The paused active's daemon dies: its session ends, and nobody takes over.
    a.proc.kill9()
    wait_for(lambda: candidates(c) == [], "A's session to end")
    check(b.state() == "paused" and not c.lines("B", "become_active"),
          f"B took over while paused: {c.events()}")

    # A newcomer and A's restarted daemon: paused from the start, hands off.
    n3 = c.node("C")
    n3.start_service()
    n3.start()
    a.start()
    for n in (n3, a):
        n.wait_state("paused_unknown")
        check(n.status()["paused"] is True, f"{n.name} sees the pause: {n.status()}")
    check(not c.lines("A", "start_standby")[1:] and not c.lines("C", "start_standby"),
          f"a daemon started while paused touched its service: {c.events()}")
    check(one_active_at_a_time(c) == {("web", "A"): int(dict(
        w.split("=", 1) for w in c.lines("A", "become_active")[0][2:])["at"])},
        "A's service is still the active one")

    # Resume from the newcomer: A' and C make their services standby first, then one of the
    # three takes over (fencing A's old run if it is not A itself).
    rc, out, err = t.reign(["ctl", "--socket", n3.socket, "resume", "web"])
    check(rc == 0 and out.startswith("resumed web"), f"resume: {out} {err}")
    c.wait_line("A", "start_standby", count=2)
    c.wait_line("C", "start_standby")
    wait_for(lambda: len(c.lines(what="become_active")) >= 2, "a new active after resume")
    new = c.lines(what="become_active")[-1][0]
    c.nodes[new].wait_state("active")
    for n in c.nodes.values():
        if n.name != new:
            n.wait_standing()
        check(n.status()["paused"] is False, f"{n.name} still paused: {n.status()}")


def scenario_pause_stop(t):
    """Stopped while paused (SIGTERM, systemctl stop), the active's reignd leaves its service
    running as it is, as Patroni does: no become-standby, a log line that says so, no warning;
    it leaves the election and nobody takes over.  Started again while paused it touches
    nothing, and stopped again likewise.  Its breadcrumb stays: after the resume, the standby
    fences it before it becomes active, so the service left running is never a second
    active."""
    c, a, b = two_nodes(t)
    rc, out, err = t.reign(["ctl", "--socket", a.socket, "pause", "web"])
    check(rc == 0, f"pause: {out} {err}")
    a.wait_state("paused_active")
    b.wait_state("paused")

    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, f"reignd A exited with {a.proc.returncode()}")
    check(not c.lines("A", "become_standby"), f"A made its paused service standby: {c.events()}")
    check("left running" in a.proc.err(), f"A did not say it leaves web running: {a.proc.err()}")
    check(not stop_warnings(a.proc), f"a clean stop warned: {stop_warnings(a.proc)}")
    wait_for(lambda: candidates(c) == [], "A to leave the election")
    check(b.state() == "paused" and not c.lines("B", "become_active"),
          f"B took over while paused: {c.events()}")

    # Started again while paused: hands off, the service still the active one; and stopped.
    starts = len(c.lines("A", "start_standby"))
    a.start()
    a.wait_state("paused_unknown")
    a.proc.send(signal.SIGTERM)
    check(a.proc.wait() == 0, f"reignd A exited with {a.proc.returncode()}")
    check(len(c.lines("A", "start_standby")) == starts and not c.lines("A", "become_standby"),
          f"A's daemon touched its service while paused: {c.events()}")
    check(list(one_active_at_a_time(c)) == [("web", "A")], f"A's service left: {c.events()}")

    # Resumed with A's daemon down: its breadcrumb names it, so B fences it (the shell method:
    # nobody answers a graceful fence) before it becomes active.
    rc, out, err = t.reign(["ctl", "--socket", b.socket, "resume", "web"])
    check(rc == 0 and out.startswith("resumed web"), f"resume: {out} {err}")
    c.wait_line("B", "become_active")
    fenced = [i for i, e in enumerate(c.events()) if e[:2] == ["B", "fence"] and "target=A" in e]
    check(fenced and fenced[0] < c.index("B", "become_active"),
          f"B became active without fencing A: {c.events()}")
    b.wait_state("active")
    a.start()
    a.wait_standing()


def checked(scenario):
    """The scenario, then the proof that it never had two actives."""
    def run(t):
        scenario(t)
        for c in CLUSTERS:
            one_active_at_a_time(c)
    return run


if __name__ == "__main__":
    scenarios = {n[len("scenario_"):]: f for n, f in globals().items() if n.startswith("scenario_")}
    which = sys.argv[1] if len(sys.argv) in (2, 3) else None
    STORE = sys.argv[2] if len(sys.argv) == 3 else "zk"
    if which not in scenarios or STORE not in ("zk", "etcd", *sqle.BACKENDS):
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(scenarios)} [zk|{'|'.join(sqle.BACKENDS)}]")
    e2elib.main(f"reignd_{which}" + ("" if STORE == "zk" else f"_{STORE}"),
                checked(scenarios[which]))
