"""etcde.py - what the end-to-end fault tests on etcd share (Python standard library only).

The tests drive the built `reign` binary against a three-member etcd cluster of their own
(scripts/etcd.sh), as tests/e2e does against ZooKeeper; this module adds only what etcd needs
on top of tests/e2e/e2elib.py (processes, waits, `reign status`, check_leadership):

  * Cluster: the members of a test (started in the test's state directory, ALWAYS stopped when
    the test ends: Test's clean-up stops them, and REIGN_ETCD_OWNER_PID=parent makes
    etcd.sh's watchdog stop them should the test process itself be killed), their URIs in any
    member order (a client talks to the first member it lists until that one fails it),
    members killed, restarted (restart_server: until every member is healthy again), paused
    and resumed, the cluster's raft leader, and etcdctl (API v3) on the members that are up;
    with tls=True, members that serve their clients over TLS only and require a client
    certificate (etcd.sh's REIGN_ETCD_TLS=1), their URIs etcds:// with the CA and the client's
    certificate of the cluster's throwaway tls/ directory;
  * which members a process holds TCP connections to (/proc), to aim a fault at the member a
    leader talks to;
  * the lease of a process's session (its log, --log-level info), and of a key (etcdctl);
  * settled(): waiting until exactly one running candidate says it leads and `reign status`
    agrees, the check every scenario makes after each fault.

No timed assertion anywhere: every wait is for an event, bounded by e2elib.WAIT.
"""

import base64
import dataclasses
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))  # check_leadership, for e2elib
import check_leadership  # noqa: E402
import e2elib  # noqa: E402
from e2elib import Failure, check, env_path, log, wait_for  # noqa: E402,F401

# Sessions (leases) of 3 s keep the tests short: etcd's minimum TTL is 2 s, and reign grants
# the session timeout rounded up to whole seconds.
SESSION_MS = 3000

LEASE_RE = re.compile(r"etcd: lease ([0-9a-f]+) granted")
GUARDIAN_RE = re.compile(r"reign-guardian\[(\d+)\]: process (\d+) died: (.*)$")


def quietly(fn, *args, **kw):
    """fn(...), or None if it fails (for polls while members are down or electing)."""
    try:
        return fn(*args, **kw)
    except (Failure, subprocess.SubprocessError, ValueError, OSError, KeyError):
        return None


class Cluster:
    """etcd members of the test's own (scripts/etcd.sh), stopped when the test ends."""

    def __init__(self, test, label="etcd", n=3, extra_opts=None, tls=False):
        self.test, self.n, self.extra_opts, self.tls = test, n, extra_opts, tls
        self.dir = os.path.join(test.dir, label)
        # With tls: ca.crt, client.crt, client.key, other-ca.crt... (etcd.sh, make_tls).
        self.tls_dir = os.path.join(self.dir, "tls") if tls else None
        self.ctl_user = None  # "user:password" for etcdctl, once etcd's authentication is on
        self.script = os.path.join(env_path("REIGN_SCRIPTS"), "etcd.sh")
        self.down = set()  # members stopped or paused by the test
        test.servers.append(self)  # Test.__exit__ calls stop(), whatever happened
        self._sh("start", self.dir, str(n), timeout=180)
        self.ports = [int(self._sh("port", self.dir, str(i)).strip()) for i in range(1, n + 1)]
        log(f"etcd {label}: {n} member(s) on ports {self.ports}"
            + (f" ({extra_opts})" if extra_opts else "") + (" over TLS" if tls else ""))

    def _sh(self, *args, timeout=120, check_rc=True):
        # The owner of the members is this process (etcd.sh's parent): if the test dies, the
        # watchdog stops them.
        env = dict(os.environ, REIGN_ETCD_OWNER_PID="parent")
        if self.extra_opts:
            env["REIGN_ETCD_EXTRA_OPTS"] = self.extra_opts
        else:
            env.pop("REIGN_ETCD_EXTRA_OPTS", None)
        env["REIGN_ETCD_TLS"] = "1" if self.tls else "0"
        r = subprocess.run(["bash", self.script, *args], env=env, capture_output=True,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check_rc and r.returncode != 0:
            raise Failure(f"etcd.sh {' '.join(args)} failed ({r.returncode}): "
                          f"{r.stderr.strip()}")
        return r.stdout

    # -- addresses --
    def all(self):
        return list(range(1, self.n + 1))

    def up(self):
        return [i for i in self.all() if i not in self.down]

    def hosts(self, order=None):
        """"127.0.0.1:p,..." in the given member order (default 1..n)."""
        return ",".join(f"127.0.0.1:{self.ports[i - 1]}" for i in (order or self.all()))

    def tls_file(self, name):
        """A file of the cluster's TLS directory (ca.crt, client.crt, other-ca.crt...)."""
        return os.path.join(self.tls_dir, name)

    def uri(self, order=None, prefix="", scheme=None, user=None, **params):
        """etcd://... with the members in `order` (a client starts with the first).  On a TLS
        cluster etcds://...?cacert=..&cert=..&key=.. (the cluster's CA and client), each of
        which a parameter given here replaces, or leaves out if None; scheme replaces the
        scheme; user goes before the hosts ("user" or "user:password")."""
        if self.tls:
            params = {"cacert": self.tls_file("ca.crt"), "cert": self.tls_file("client.crt"),
                      "key": self.tls_file("client.key"), **params}
        q = "&".join(f"{k}={v}" for k, v in params.items() if v is not None)
        scheme = scheme or ("etcds" if self.tls else "etcd")
        auth = f"{user}@" if user else ""
        return f"{scheme}://{auth}{self.hosts(order)}{prefix}" + (f"?{q}" if q else "")

    def live_first(self, params):
        """A URI listing the members that are up first: for `reign status` during faults."""
        return self.uri(self.up() + sorted(self.down), **params)

    def member_of_port(self, port):
        return self.ports.index(port) + 1 if port in self.ports else None

    # -- faults --
    def stop_server(self, i):
        log(f"etcd: killing member {i}")
        self._sh("stop-server", self.dir, str(i))
        self.down.add(i)

    def start_server(self, i):
        log(f"etcd: starting member {i}")
        self._sh("start-server", self.dir, str(i), timeout=180)
        self.down.discard(i)
        log(f"etcd: member {i} serves")

    def pause_server(self, i):
        log(f"etcd: pausing member {i} (SIGSTOP)")
        self._sh("pause-server", self.dir, str(i))
        self.down.add(i)

    def resume_server(self, i):
        log(f"etcd: resuming member {i} (SIGCONT)")
        self._sh("resume-server", self.dir, str(i))
        self.down.discard(i)

    def healthy(self):
        """Whether every member answers `etcdctl endpoint health` (a read through raft, as
        root once etcd's authentication is on)."""
        r = quietly(self.ctl, "endpoint", "health", members=self.all(), check_rc=False)
        return r is not None and r[0] == 0

    def restart_server(self, i, procs=()):
        """Member i killed and started again: its data kept, whatever it held in memory lost
        (etcd 3.4's simple auth tokens among it).  Waits until every member is healthy again,
        failing at once should one of procs exit (wait_alive)."""
        self.stop_server(i)
        self.start_server(i)
        wait_alive(self.healthy, f"every member healthy after member {i} restarted", procs)
        log(f"etcd: every member healthy after member {i} restarted")

    def leader(self):
        """The index of the member that leads the raft cluster (waits for one)."""
        def one():
            out = quietly(self._sh, "leader", self.dir, timeout=60)
            return int(out.strip()) if out and out.strip().isdigit() else None
        return wait_for(one, "the etcd cluster's leader", interval=0.2)

    def stop(self):
        self._sh("stop", self.dir, check_rc=False)

    # -- etcdctl --
    def ctl(self, *args, members=None, check_rc=True, timeout=e2elib.WAIT):
        """etcdctl (API v3) on the given members (default: those up): (rc, stdout, stderr)."""
        members = members or self.up()
        scheme = "https" if self.tls else "http"
        endpoints = ",".join(f"{scheme}://127.0.0.1:{self.ports[i - 1]}" for i in members)
        env = dict(os.environ, ETCDCTL_API="3")
        flags = []
        if self.tls:
            flags += [f"--cacert={self.tls_file('ca.crt')}",
                      f"--cert={self.tls_file('client.crt')}",
                      f"--key={self.tls_file('client.key')}"]
        if self.ctl_user:
            flags.append(f"--user={self.ctl_user}")
        r = subprocess.run(["etcdctl", f"--endpoints={endpoints}", "--dial-timeout=2s",
                            "--command-timeout=10s", *flags, *args], env=env,
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check_rc and r.returncode != 0:
            raise Failure(f"etcdctl {' '.join(args)}: {r.stderr.strip()}")
        return r.returncode, r.stdout, r.stderr

    def get(self, key, prefix=False):
        """The key-values at key (or under it, prefix=True): [{key, value, lease (hex or
        None), version, create_revision, mod_revision}], and the revision of the read."""
        args = ["get", key, "-w", "json"] + (["--prefix"] if prefix else [])
        _, out, _ = self.ctl(*args)
        root = json.loads(out)
        kvs = []
        for kv in root.get("kvs", []):
            lease = int(kv.get("lease", 0))
            kvs.append({"key": base64.b64decode(kv["key"]).decode("utf-8", "replace"),
                        "value": base64.b64decode(kv.get("value", "")),
                        "lease": f"{lease:x}" if lease else None,
                        "version": int(kv.get("version", 0)),
                        "create_revision": int(kv.get("create_revision", 0)),
                        "mod_revision": int(kv.get("mod_revision", 0))})
        return kvs, int(root["header"]["revision"])

    def put(self, key, value):
        """Puts bytes (any: NUL, 0xff) at key, through a live member's JSON gateway."""
        port = self.ports[self.up()[0] - 1]
        body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                           "value": base64.b64encode(value).decode()}).encode()
        scheme, ctx = "http", None
        if self.tls:
            scheme, ctx = "https", ssl.create_default_context(cafile=self.tls_file("ca.crt"))
            ctx.load_cert_chain(self.tls_file("client.crt"), self.tls_file("client.key"))
        req = urllib.request.Request(f"{scheme}://127.0.0.1:{port}/v3/kv/put", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=e2elib.WAIT, context=ctx) as r:
            answer = json.load(r)
        check("error" not in answer, f"put {key}: {answer}")

    def snapshot(self, prefix="/"):
        """{key: value} of everything under prefix (to show nothing was deleted)."""
        kvs, _ = self.get(prefix, prefix=True)
        return {kv["key"]: kv["value"] for kv in kvs}

    def revision(self):
        return self.get("/reign")[1]

    def leases(self):
        """The leases etcd lists, in hex without leading zeros (as reign logs them: etcdctl
        pads them to 16 digits)."""
        _, out, _ = self.ctl("lease", "list")
        return [f"{int(line, 16):x}" for line in out.split()[3:]]


# ---- processes --------------------------------------------------------------------------------

def connected_members(cluster, pid):
    """The members process pid holds an established TCP connection to (by /proc)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] != "01" or fields[9] not in inodes:  # 01: ESTABLISHED
                        continue
                    port = int(fields[2].rsplit(":", 1)[1], 16)
                    m = cluster.member_of_port(port)
                    if m:
                        found.add(m)
        except OSError:
            continue
    return found


def wait_connected_to(cluster, proc, member):
    """Waits until proc talks to member and to no other (its first in its URI)."""
    return wait_for(lambda: connected_members(cluster, proc.pid) == {member},
                    f"{proc.label} connected to member {member} only "
                    f"(it is on {connected_members(cluster, proc.pid)})")


def lease_of(proc):
    """The lease (hex, no 0x) of proc's latest session, from its log (--log-level info)."""
    found = LEASE_RE.findall(proc.err())
    return found[-1] if found else None


def guardian_lines(proc):
    """(guardian pid, client pid, report) of each line in which proc's guardian acted."""
    out = []
    for line in proc.err().splitlines():
        m = GUARDIAN_RE.search(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return out


def stopped(proc):
    """Whether proc is stopped (SIGSTOP)."""
    try:
        with open(f"/proc/{proc.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def wait_alive(pred, what, procs, timeout=e2elib.WAIT):
    """wait_for(pred), failing at once (with its last words) should one of procs exit."""
    def poll():
        value = pred()
        if value:
            return value
        for p in procs:
            if not p.alive():
                lines = p.err().strip().splitlines()
                raise Failure(f"{p.label} exited ({p.returncode()}) while waiting for {what}: "
                              f"{lines[-1] if lines else 'no message'}")
        return None
    return wait_for(poll, what, timeout)


def campaigns(t, name, uri, labels, env=None):
    """One `reign campaign` per label (its id), all on uri (a str, or a dict label -> uri)."""
    return [t.campaign(label, name, uri[label] if isinstance(uri, dict) else uri, env=env)
            for label in labels]


def standing(t, name, uri, n):
    """Waits until `reign status` lists n candidates; returns the status."""
    return wait_for(lambda: (lambda s: s if s and len(s.get("candidates", [])) == n else None)(
        quietly(t.status, name, uri)), f"{n} candidates in status")


def leader_key(cluster, name):
    """The election's `leader` key ({key, value, lease, ...}) or None."""
    kvs, _ = cluster.get(f"/reign/election/{name}/leader")
    return kvs[0] if kvs else None


def check_leader_key(cluster, name, p):
    """While p leads, the election's `leader` key must be there, name p and be on p's lease:
    it is what makes a claim exclusive (docs/etcd.md), so a leader without it is a leader
    another candidate (a higher priority, a designated one) can claim beside.  Checked only
    if p still says it leads after the read (a leader that resigns deletes its key)."""
    kv = leader_key(cluster, name)
    lease = lease_of(p)
    if not p.leading():
        return
    check(kv is not None, f"{p.label} leads (its last line: {p.events()[-1]}) but the "
                          f"election's leader key is gone: another candidate can claim beside it")
    check(kv["lease"] == lease and f"id={p.label}\n" in kv["value"].decode("utf-8", "replace"),
          f"{p.label} leads on lease {lease}, but the leader key is on lease {kv['lease']}: "
          f"{kv['value']!r}")


def settled(t, name, uri, procs, above_term=0, what="one leader", cluster=None):
    """Waits until exactly one of procs (the running, not stopped ones) says it leads, with a
    term above above_term, and `reign status` names it with that term; fails at once if two
    say they lead (e2elib.leader_of).  With cluster, the leader key must then be the leader's
    (check_leader_key).  Returns (process, its elected event)."""
    def one():
        running = [p for p in procs if p.alive() and not stopped(p)]
        p = e2elib.leader_of(running)
        if not p:
            return None
        ev = p.elected()[-1]
        if ev.term <= above_term:
            return None
        st = quietly(t.status, name, uri)
        lead = st.get("leader") if st else None
        if not lead or lead.get("id") != p.label or lead.get("term") != ev.term:
            return None
        return p, ev
    p, ev = wait_alive(one, what, [p for p in procs if p.alive()])
    log(f"{p.label} leads: term {ev.term} token {ev.token}")
    if cluster is not None:
        check_leader_key(cluster, name, p)
    return p, ev


def resign_all(procs, want_rc=0):
    """SIGTERM to every process (continued first if stopped), then each must exit want_rc."""
    for p in procs:
        if stopped(p):
            p.send(signal.SIGCONT)
        p.send(signal.SIGTERM)
    for p in procs:
        rc = p.wait()
        check(rc == want_rc, f"{p.label} exited {rc} after SIGTERM, want {want_rc}: "
                             f"{(p.err().strip().splitlines() or ['no message'])[-1]}")


def check_leadership_cut(t, procs, cuts, min_leaderships=0):
    """check_leadership over procs' lines, where cuts = {proc: [ns, ...]} end the leadership
    proc held at each ns at that moment at the latest: a leadership ended from outside (a
    lease revoked by an operator) ends when it was ended, as a killed process's ends at its
    kill, whenever the process itself heard of it.  Returns the leaderships."""
    processes, killed = {}, {}
    for p in procs:
        events = check_leadership.parse_lines(p.lines(), p.out_path)
        fixed, current = [], None
        for ev in events:
            if ev.kind == "elected":
                current = ev
            elif current is not None:
                inside = [c for c in cuts.get(p, ()) if current.ns <= c < ev.ns]
                if inside:
                    log(f"{p.label}: term {current.term} ended by the test at {min(inside)}, "
                        f"heard of {(ev.ns - min(inside)) / 1e6:.1f} ms later ({ev.reason})")
                    ev = dataclasses.replace(ev, ns=min(inside))
                current = None
            fixed.append(ev)
        processes[p.out_path] = fixed
        if p.killed_ns is not None:
            killed[p.out_path] = p.killed_ns
    try:
        leads = check_leadership.check(processes, killed=killed)
    except check_leadership.Violation as e:
        raise Failure(f"check_leadership: VIOLATION: {e}") from None
    print(check_leadership.summary(leads, len(procs)), file=sys.stderr)
    check(len(leads) >= min_leaderships,
          f"only {len(leads)} leadership(s), expected at least {min_leaderships}")
    return leads


# ---- nothing left behind ----------------------------------------------------------------------

REAPER_FILE = "reaper.pids"  # in the test's directory: "pid starttime" of each process started
_reaper_path = None


def _start_time(pid):
    """The start time of process pid (clock ticks since boot), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_proc_init = e2elib.Proc.__init__


def _proc_init_recorded(self, *args, **kw):
    _proc_init(self, *args, **kw)
    if _reaper_path:
        with open(_reaper_path, "a") as f:
            f.write(f"{self.pid} {_start_time(self.pid)}\n")


e2elib.Proc.__init__ = _proc_init_recorded


def _reap(test_pid, path):
    """The reaper: once process test_pid is gone, SIGKILL every process listed in path that
    still runs (the same process: same start time).  A test ends its processes itself
    (e2elib.Test's clean-up); this is for a test that was killed."""
    while e2elib.process_runs(test_pid):
        time.sleep(0.5)
    try:
        with open(path) as f:
            entries = [line.split() for line in f if line.strip()]
    except OSError:
        return
    for pid, start in entries:
        if _start_time(int(pid)) == start:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def _start_reaper(t):
    """Records every process the test starts from now on, for a reaper of its own session
    that outlives the test: if the test is killed, its `reign` processes go too (its etcd
    members go by etcd.sh's watchdog, its proxies by themselves)."""
    global _reaper_path
    _reaper_path = os.path.join(t.dir, REAPER_FILE)
    open(_reaper_path, "w").close()
    subprocess.Popen([sys.executable, os.path.abspath(__file__), "--reap", str(os.getpid()),
                      _reaper_path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)


def main(name, body):
    """e2elib.main, after stopping whatever etcd members an earlier run of the test left in its
    directory (their data would otherwise be deleted under them), with a reaper that ends the
    test's processes should the test itself be killed."""
    state = os.environ.get("REIGN_TEST_STATE_DIR")
    if state and os.path.isdir(state):
        subprocess.run(["bash", os.path.join(env_path("REIGN_SCRIPTS"), "etcd.sh"),
                        "stop-all-under", state], capture_output=True, timeout=120)

    def reaped(t):
        _start_reaper(t)
        body(t)
    e2elib.main(name, reaped)


def main_scenarios(script, prefix, scenarios):
    """A test file of scenarios: `script SCENARIO` runs scenarios[SCENARIO] as the test
    PREFIX_SCENARIO (main above)."""
    if len(sys.argv) != 2 or sys.argv[1] not in scenarios:
        sys.exit(f"usage: {script} {'|'.join(scenarios)}")
    main(f"{prefix}_{sys.argv[1]}", scenarios[sys.argv[1]])


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--reap":
    _reap(int(sys.argv[2]), sys.argv[3])
