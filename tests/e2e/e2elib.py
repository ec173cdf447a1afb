"""e2elib.py - what reign's end-to-end tests share (Python standard library only).

The tests drive the built `reign` binary as a user would: they start `reign campaign`, `run`,
`watch`, `cede` and `status` processes against real ZooKeeper servers, send them signals,
freeze their connections (reign_tcpproxy), stop and restart servers (scripts/zk.sh), and read
what they print.  Every campaign process writes its stdout to its own file, so that
tests/tools/check_leadership.py can prove from those files that leaderships never overlapped
and that terms and tokens strictly grew.

Rules kept here: no timed assertion (a timeout only bounds the wait for something that must
happen, and is generous); every process a test starts, and every server, is stopped when the
test ends, whatever happened (Test is a context manager); on failure the output of every
process is shown.

Environment (set by ctest, see tests/integration/tests.cmake and tests/e2e/tests.cmake):
REIGN_CLI, REIGN_ZKRAW, REIGN_TCPPROXY, REIGN_SCRIPTS, REIGN_TEST_STATE_DIR, and for tests on
the shared server REIGN_TEST_ZK_FILE.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import check_leadership

SHORT_LINK_NAME = "short.link"  # where Test.short_dir()'s link is, in the state directory

WAIT = 60.0  # seconds: the bound for anything that must happen; a correct run is far below

_T0 = time.monotonic()

ELECTED_RE = re.compile(r"^elected (\S+) term=(\d+) token=(\d+) monotonic_ns=(-?\d+)$")
DEMOTED_RE = re.compile(r"^demoted (\S+) reason=(\S+) monotonic_ns=(-?\d+)$")
# A ZooKeeper session, or the etcd lease that is the session on etcd.
SESSION_RE = re.compile(r"(?:zk: session 0x|etcd: lease )([0-9a-f]+) (?:established|granted)")


class Failure(AssertionError):
    """A property the test checks does not hold."""


def log(msg):
    print(f"[{time.monotonic() - _T0:8.3f}] {msg}", file=sys.stderr, flush=True)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def wait_for(pred, what, timeout=WAIT, interval=0.02):
    """Polls pred() until it returns something true (which is returned); fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def process_runs(pid):
    """Whether process pid runs: a zombie (killed, not yet reaped by a parent that may be
    stopped) does not."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def env_path(name):
    value = os.environ.get(name)
    if not value:
        raise Failure(f"${name} is not set (run the tests through ctest)")
    return value


class Event:
    """One `elected` or `demoted` line of a campaign process."""

    def __init__(self, kind, ident, ns, term=None, token=None, reason=None):
        self.kind, self.ident, self.ns = kind, ident, ns
        self.term, self.token, self.reason = term, token, reason

    def __repr__(self):
        if self.kind == "elected":
            return f"elected {self.ident} term={self.term} token={self.token} ns={self.ns}"
        return f"demoted {self.ident} reason={self.reason} ns={self.ns}"


def parse_events(lines):
    out = []
    for line in lines:
        m = ELECTED_RE.match(line)
        if m:
            out.append(Event("elected", m.group(1), int(m.group(4)), int(m.group(2)),
                             int(m.group(3))))
            continue
        m = DEMOTED_RE.match(line)
        if m:
            out.append(Event("demoted", m.group(1), int(m.group(3)), reason=m.group(2)))
    return out


class Proc:
    """A process of the test, its stdout and stderr in files of the test's directory."""

    def __init__(self, test, label, args, env=None, new_session=False):
        self.test, self.label, self.args = test, label, list(args)
        self.out_path = os.path.join(test.dir, f"{label}.out")
        self.err_path = os.path.join(test.dir, f"{label}.err")
        self.killed_ns = None
        self.sent = []
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=err, env=full_env,
                                          start_new_session=new_session)
        self.pid = self.popen.pid
        test.procs.append(self)
        log(f"started {label} (pid {self.pid}): {' '.join(self.args[1:])}")

    # -- output --
    def lines(self):
        """Complete lines of stdout so far."""
        with open(self.out_path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
        if not data.endswith("\n"):
            data = data[:data.rfind("\n") + 1]
        return data.splitlines()

    def err(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def events(self):
        return parse_events(self.lines())

    def elected(self):
        return [e for e in self.events() if e.kind == "elected"]

    def demoted(self):
        return [e for e in self.events() if e.kind == "demoted"]

    def leading(self):
        """True if the last line says elected (as far as this process knows)."""
        ev = self.events()
        return bool(ev) and ev[-1].kind == "elected"

    def session_id(self):
        """The session id (hex, no 0x) of the latest session the process logged (needs
        --log-level info)."""
        found = SESSION_RE.findall(self.err())
        return found[-1] if found else None

    # -- control --
    def alive(self):
        return self.popen.poll() is None

    def send(self, sig):
        log(f"{signal.Signals(sig).name} to {self.label}")
        self.sent.append(sig)
        self.popen.send_signal(sig)

    def kill9(self, group=False):
        """SIGKILL to the process (or its whole process group), waits for it, and records
        (and returns) the CLOCK_MONOTONIC time just before the signal: the end of whatever
        leadership it held.  The death lies between that reading and the wait's return, and a
        guardian may end the leadership and a successor be elected before this process gets to
        read the clock again, so the reading after the wait is no bound at all."""
        self.sent.append(signal.SIGKILL)
        log(f"SIGKILL to {self.label}{'s group' if group else ''}")
        sent_ns = time.monotonic_ns()
        if group:
            os.killpg(self.pid, signal.SIGKILL)
        else:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()
        self.killed_ns = sent_ns
        return sent_ns

    def wait(self, timeout=WAIT):
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"{self.label} did not exit within {timeout:.0f} s") from None

    def returncode(self):
        return self.popen.poll()


class ZkServers:
    """ZooKeeper servers of the test's own (scripts/zk.sh), stopped when the test ends."""

    def __init__(self, test, label, n=1):
        self.test = test
        self.n = n
        self.dir = os.path.join(test.dir, label)
        self.script = os.path.join(env_path("REIGN_SCRIPTS"), "zk.sh")
        test.servers.append(self)
        # zk.sh's owner is this process: if the test dies, its watchdog stops the servers.
        self._zk("start", self.dir, str(n), timeout=180)
        with open(os.path.join(self.dir, "connect")) as f:
            self.hosts = f.read().strip()
        log(f"servers {label}: {self.hosts}")

    def _zk(self, *args, timeout=120, check_rc=True):
        env = dict(os.environ, REIGN_ZK_OWNER_PID="parent")
        r = subprocess.run(["bash", self.script, *args], env=env, capture_output=True, text=True,
                           timeout=timeout)
        if check_rc and r.returncode != 0:
            raise Failure(f"zk.sh {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout

    def port(self, i):
        return int(self._zk("port", self.dir, str(i)).strip())

    def stop_server(self, i):
        log(f"stopping server {i}")
        self._zk("stop-server", self.dir, str(i))

    def start_server(self, i):
        log(f"starting server {i}")
        self._zk("start-server", self.dir, str(i), timeout=180)
        log(f"server {i} serves")

    def four_letter(self, i, word, timeout=5.0):
        """A four-letter word's reply from server i ('' if it does not answer)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port(i)), timeout=timeout) as s:
                s.sendall(word.encode())
                chunks = []
                while True:
                    c = s.recv(65536)
                    if not c:
                        break
                    chunks.append(c)
            return b"".join(chunks).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self):
        self._zk("stop", self.dir, check_rc=False)


def _unlink_short(link, state_dir):
    """Removes Test.short_dir()'s link (only if it still points into state_dir)."""
    try:
        if os.readlink(link).startswith(state_dir + os.sep):
            os.unlink(link)
    except OSError:
        pass


class Test:
    """One test: its state directory, its processes and servers, all cleaned up at the end."""

    def __init__(self, name):
        self.name = name
        base = os.environ.get("REIGN_TEST_STATE_DIR") or os.path.join("/tmp", f"reign-e2e-{name}")
        self.dir = os.path.abspath(base)
        if os.path.isdir(self.dir):
            # What an earlier run left: its servers first (found by their state files), then
            # its files.
            if any("zk.state" in files for _, _, files in os.walk(self.dir)):
                subprocess.run(["bash", os.path.join(env_path("REIGN_SCRIPTS"), "zk.sh"),
                                "stop-all-under", self.dir], capture_output=True, timeout=120)
            for entry in os.listdir(self.dir):
                path = os.path.join(self.dir, entry)
                if entry == SHORT_LINK_NAME:
                    with open(path) as f:
                        _unlink_short(f.read().strip(), self.dir)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        os.makedirs(self.dir, exist_ok=True)
        self._short = None
        self.procs = []
        self.servers = []
        self.extra_pids = []  # processes the test learnt of (e.g. children of `reign run`)
        self.cli = env_path("REIGN_CLI")

    def __enter__(self):
        log(f"test {self.name} in {self.dir}")
        return self

    def __exit__(self, exc_type, exc, tb):
        failed = exc_type is not None
        for p in self.procs:
            if p.alive():
                try:
                    p.popen.kill()
                except OSError:
                    pass
                p.popen.wait()
        for pid in self.extra_pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for s in self.servers:
            try:
                s.stop()
            except Exception as e:  # keep cleaning up
                log(f"stopping servers: {e}")
        if self._short:
            _unlink_short(self._short, self.dir)
        if failed:
            self.dump()
        return False

    def short_dir(self):
        """The directory `short` of the test's state directory by a short absolute path: a
        link in $TMPDIR, removed at the end (the files stay, and a process that outlives the
        test, such as a guardian releasing its lease, writes where it always did).  For the
        files a reign.conf(5) line or a socket address names: such a line holds at most 197
        characters and a socket path 107 bytes, wherever the tree is checked out."""
        if self._short is None:
            target = os.path.join(self.dir, "short")
            os.makedirs(target, exist_ok=True)
            while self._short is None:
                link = os.path.join(tempfile.gettempdir(), f"reign-{secrets.token_hex(4)}")
                try:
                    os.symlink(target, link)
                except FileExistsError:
                    continue
                self._short = link
            with open(os.path.join(self.dir, SHORT_LINK_NAME), "w") as f:
                f.write(link + "\n")
        return self._short

    def dump(self):
        for p in self.procs:
            for path in (p.out_path, p.err_path):
                try:
                    with open(path, "rb") as f:
                        data = f.read().decode("utf-8", "replace")
                except OSError:
                    continue
                lines = data.splitlines()
                print(f"---- {os.path.basename(path)} ({p.label}: {' '.join(p.args[1:])}) "
                      f"last {min(len(lines), 60)} of {len(lines)} lines ----", file=sys.stderr)
                for line in lines[-60:]:
                    print(f"  {line}", file=sys.stderr)

    # -- names and stores --
    @staticmethod
    def unique(prefix):
        return f"{prefix}-{os.getpid()}-{secrets.token_hex(4)}"

    @staticmethod
    def shared_hosts():
        with open(env_path("REIGN_TEST_ZK_FILE")) as f:
            return f.read().strip()

    @staticmethod
    def uri(hosts, user=None, **params):
        q = "&".join(f"{k}={v}" for k, v in params.items())
        auth = f"{user}@" if user else ""
        return f"zk://{auth}{hosts}" + (f"?{q}" if q else "")

    def zk_servers(self, label, n=1):
        return ZkServers(self, label, n)

    # -- processes --
    def spawn(self, label, args, env=None, new_session=False):
        return Proc(self, label, args, env, new_session)

    def campaign(self, label, name, uri, ident=None, extra=(), env=None, log_level="info"):
        args = [self.cli, "--uri", uri, "--log-level", log_level, "campaign", name,
                "--id", ident or label, *extra]
        return self.spawn(label, args, env)

    def watch(self, label, name, uri, env=None):
        return self.spawn(label, [self.cli, "--uri", uri, "--log-level", "info", "watch", name],
                          env)

    def reign(self, args, env=None, timeout=WAIT, stdin=None):
        """Runs `reign ARGS...` to completion: (returncode, stdout, stderr)."""
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        try:
            r = subprocess.run([self.cli, *args], env=full_env, capture_output=True,
                               timeout=timeout, input=stdin)
        except subprocess.TimeoutExpired:
            raise Failure(f"reign {' '.join(args)} did not finish within {timeout:.0f} s") \
                from None
        return (r.returncode, r.stdout.decode("utf-8", "replace"),
                r.stderr.decode("utf-8", "replace"))

    def status(self, name, uri, env=None):
        """`reign status --json`: the parsed object, or None if there is no such election."""
        rc, out, err = self.reign(["--uri", uri, "status", name, "--json"], env=env)
        if rc == 1 and "no such election" in err:
            return None
        check(rc == 0, f"reign status {name} failed ({rc}): {err.strip()}")
        return json.loads(out)

    def zkraw(self, hosts, *args, auth=None, timeout=WAIT):
        """Runs reign_it_zkraw: (returncode, stdout, stderr)."""
        cmd = [env_path("REIGN_ZKRAW")]
        if auth:
            cmd += ["--auth", auth]
        r = subprocess.run([*cmd, hosts, *args], capture_output=True, timeout=timeout)
        return (r.returncode, r.stdout.decode("utf-8", "replace"),
                r.stderr.decode("utf-8", "replace"))

    def children(self, hosts, path):
        """The children of path, or None if it does not exist."""
        rc, out, err = self.zkraw(hosts, "children", path)
        if rc == 4:
            return None
        check(rc == 0, f"listing {path}: {err.strip()}")
        return out.split()

    # -- the leadership checker --
    def check_leadership(self, procs, end_ns=None, min_leaderships=0):
        """check_leadership.py over the stdout of `procs` (killed ones end at their kill)."""
        paths = [p.out_path for p in procs]
        killed = {p.out_path: p.killed_ns for p in procs if p.killed_ns is not None}
        try:
            leads = check_leadership.check_files(paths, killed=killed, end_ns=end_ns)
        except check_leadership.Violation as e:
            raise Failure(f"check_leadership: VIOLATION: {e}") from None
        print(check_leadership.summary(leads, len(paths)), file=sys.stderr)
        check(len(leads) >= min_leaderships,
              f"only {len(leads)} leadership(s), expected at least {min_leaderships}")
        return leads


def earliest_deadline_ns(outage_ns, session_ms):
    """The earliest moment a leader's safety deadline can end after an outage that began at
    outage_ns: its last proof is at most one heartbeat (a fifth of the session timeout) older
    than the outage, and a proof is good for 3/4 of the session timeout (client.h)."""
    return outage_ns + session_ms * 1_000_000 * 55 // 100


def wait_reconnected(proc, count_before, what):
    """Waits until proc logs one more "reconnected" than count_before (or is demoted); returns
    the CLOCK_MONOTONIC time at which the test saw it (no earlier than it happened)."""
    wait_for(lambda: proc.err().count("reconnected") > count_before or proc.demoted(), what,
             interval=0.01)
    return time.monotonic_ns()


def beyond(lines, n):
    """lines if there are more than n of them, else None: with n counted before an act, what
    wait_for needs to see the act's own line (an earlier one does not answer for it)."""
    return lines if len(lines) > n else None


def leader_of(procs):
    """The one process whose last line says elected, or None; fails if several do."""
    leading = [p for p in procs if p.leading()]
    check(len(leading) <= 1, "several processes say they lead: "
          + ", ".join(p.label for p in leading))
    return leading[0] if leading else None


def main(name, body):
    """Runs body(test) inside a Test; exit status 0 on success, 1 on failure."""
    try:
        with Test(name) as t:
            body(t)
    except Failure as e:
        print(f"FAIL {name}: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        print(f"FAIL {name}: unexpected error", file=sys.stderr)
        sys.exit(1)
    print(f"PASS {name}")
    sys.exit(0)


def holds_write_lock(pid, paths):
    """Whether process pid holds a POSIX write lock on one of the files (SQLite's database, its
    WAL and shared-memory files)."""
    inodes = set()
    for path in paths:
        try:
            inodes.add(os.stat(path).st_ino)
        except OSError:
            pass
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" in fields or len(fields) < 6:
                continue  # a waiter, not a holder
            if (fields[1] == "POSIX" and fields[3] == "WRITE" and int(fields[4]) == pid
                    and int(fields[5].split(":")[2]) in inodes):
                return True
    return False


def stop_unlocked(proc, paths):
    """SIGSTOP to proc, but not while it holds a write lock on one of paths (a SQLite file
    and its -wal and -shm): stopped inside a write, it would hold every other process on the
    file until continued (SQLite has one writer), which no test of a stopped leader wants."""
    for _ in range(100):
        proc.send(signal.SIGSTOP)
        if not holds_write_lock(proc.pid, paths):
            return
        log("stopped while holding the SQLite file's write lock: again")
        proc.send(signal.SIGCONT)
        time.sleep(0.01)
    check(False, f"{proc.label} always held SQLite's write lock")
