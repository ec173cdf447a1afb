#!/usr/bin/env python3
"""test_sql_servers.py - scripts/mariadb.sh and scripts/pg.sh do what the SQL tests rely on.

For each of MariaDB and PostgreSQL, in a directory of its own: `start` leaves a uri, a password
file (mode 0600) and a port; user `reign` logs in over TCP with the password and may create
tables in database `reign`; a wrong password and the user without grants are refused; `sql`
runs statements as the administrator; `restart` and `kill-server` + `start-server` keep the
data and the port; `pause-server` freezes the server and the sessions already open (they answer
again after `resume-server`); `stop` leaves no process behind; and a server whose owner process
(REIGN_SQL_OWNER_PID) dies is stopped by its watchdog.  The time each step took is printed, for
information only: nothing here depends on how fast a server is.

Usage: test_sql_servers.py             servers of its own under $REIGN_TEST_STATE_DIR (or a
                                       temporary directory), stopped at the end whatever happens
       test_sql_servers.py --fixtures  only the login checks, against the shared servers named
                                       by $REIGN_TEST_MARIADB_DIR and $REIGN_TEST_PG_DIR

Every wait is for an event (an answer, a process gone) with a generous timeout.  The checks
that a paused server does not answer look for half a second: a slow machine can only make them
pass wrongly, never fail wrongly.
"""

import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.environ.get("REIGN_SCRIPTS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
WAIT = 60.0  # generous bound for anything that must happen
QUIET = 0.5  # how long "nothing happens" is watched
TIMES = []  # (backend, step, seconds), printed at the end


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Backend:
    """One kind of server: its script, its log, and how to talk to it as a given user."""

    def __init__(self, name, script, log, scheme):
        self.name = name
        self.script = os.path.join(SCRIPTS, script)
        self.log = log
        self.scheme = scheme

    def run(self, *args, env=None, check_rc=True):
        proc = subprocess.run(["bash", self.script, *args], capture_output=True, text=True,
                              env=env, timeout=WAIT * 3, stdin=subprocess.DEVNULL)
        if check_rc and proc.returncode != 0:
            raise Failure(f"{self.name}: `{os.path.basename(self.script)} {' '.join(args)}` "
                          f"exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
        return proc

    def timed(self, step, *args, env=None):
        start = time.monotonic()
        proc = self.run(*args, env=env)
        TIMES.append((self.name, step, time.monotonic() - start))
        return proc.stdout

    def client(self, state, user, password, database, interactive=False):
        """argv and environment of the command-line client, as `user` over TCP."""
        port = read(state, "port")
        env = dict(os.environ)
        for var in ("PGUSER", "PGDATABASE", "PGHOST", "PGPORT", "PGSERVICE", "PGPASSFILE"):
            env.pop(var, None)
        if self.name == "mariadb":
            env["MYSQL_PWD"] = password
            argv = ["mariadb", "--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P", port,
                    "-u", user, "--connect-timeout=10", "--batch", "--skip-column-names",
                    "--unbuffered", database]
        else:
            env["PGPASSWORD"] = password
            env["PGCONNECT_TIMEOUT"] = "10"
            argv = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                    f"postgres://{user}@127.0.0.1:{port}/{database}"]
        return argv, env

    def query(self, state, sql, user="reign", password=None, database="reign"):
        """Run sql as user; returns (exit status, output, errors)."""
        if password is None:
            password = read(state, "password")
        argv, env = self.client(state, user, password, database)
        proc = subprocess.run(argv, input=sql, capture_output=True, text=True, env=env,
                              timeout=WAIT)
        return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


MARIADB = Backend("mariadb", "mariadb.sh", "mariadb.log", "mysql")
PG = Backend("pg", "pg.sh", "postgres.log", "postgres")


def read(state, name):
    with open(os.path.join(state, name)) as f:
        return f.read().strip()


class Session:
    """A client kept open: statements go in one at a time, answers come back line by line."""

    def __init__(self, backend, state):
        argv, env = backend.client(state, "reign", read(state, "password"), "reign")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True, bufsize=1)

    def send(self, sql):
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout):
        """The next line of output, or None if none came within timeout."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().strip()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# ---- processes ---------------------------------------------------------------------------

def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    return proc_state(pid) not in (None, "Z", "X")


def processes_of(state):
    """Live processes that belong to a state dir: its path on their command line (servers,
    watchdogs) or as their working directory (every PostgreSQL process)."""
    found = []
    prefix = os.path.realpath(state) + "/"
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid() or not alive(int(entry)):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().decode("utf-8", "replace").split("\0")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if any(a.startswith(prefix) or a + "/" == prefix or f"={prefix}" in a for a in args) \
                or (cwd + "/").startswith(prefix):
            found.append((int(entry), " ".join(args).strip()))
    return found


def server_family(backend, state):
    """The server's pid and, for PostgreSQL, every child of the postmaster."""
    pid = int(read(state, "pid"))
    pids = [pid]
    if backend is PG:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                             text=True).stdout
        pids += [int(p) for p in out.split() if alive(int(p))]
    return pids


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


# ---- checks ------------------------------------------------------------------------------

def check_files(backend, state):
    uri = read(state, "uri")
    port = read(state, "port")
    check(port.isdigit(), f"{backend.name}: port file holds '{port}'")
    want = f"{backend.scheme}://reign@127.0.0.1:{port}/reign"
    check(uri == want, f"{backend.name}: uri is '{uri}', expected '{want}'")
    mode = stat.S_IMODE(os.stat(os.path.join(state, "password")).st_mode)
    check(mode == 0o600, f"{backend.name}: password file has mode {oct(mode)}")
    check(len(read(state, "password")) >= 16, f"{backend.name}: password too short")
    out = backend.run("connect-uri", state).stdout.strip()
    check(out == uri, f"{backend.name}: connect-uri printed '{out}'")
    out = backend.run("port", state).stdout.strip()
    check(out == port, f"{backend.name}: port printed '{out}'")


def check_logins(backend, state, table):
    """reign can work in its database over TCP; others are refused, with the reason."""
    rc, out, err = backend.query(state, f"CREATE TABLE {table} (x INT);"
                                 f" INSERT INTO {table} VALUES (41);"
                                 f" SELECT x + 1 FROM {table};")
    check(rc == 0 and out == "42", f"{backend.name}: user reign: rc={rc} out={out!r} {err}")
    rc, out, err = backend.query(state, "SELECT 1;", password="not-the-password")
    check(rc != 0, f"{backend.name}: a wrong password was accepted")
    check("denied" in err or "authentication failed" in err,
          f"{backend.name}: wrong password refused with: {err}")
    rc, out, err = backend.query(state, "SELECT 1;", user="reign_nogrants")
    check(rc != 0, f"{backend.name}: user reign_nogrants could use database reign")
    check("denied" in err, f"{backend.name}: reign_nogrants refused with: {err}")
    # The administrator, through the script, sees what reign wrote.
    out = backend.run("sql", state, f"SELECT COUNT(*), MAX(x) FROM {table}").stdout.strip()
    check(out == "1\t41", f"{backend.name}: `sql` as administrator printed {out!r}")


def check_restarts(backend, state, table):
    port = read(state, "port")
    old = int(read(state, "pid"))
    backend.timed("restart", "restart", state)
    check(read(state, "port") == port, f"{backend.name}: port changed over restart")
    check(int(read(state, "pid")) != old, f"{backend.name}: restart kept the old process")
    check(not alive(old), f"{backend.name}: the old server is still alive")
    rc, out, err = backend.query(state, f"SELECT x FROM {table};")
    check(rc == 0 and out == "41", f"{backend.name}: data after restart: {out!r} {err}")

    # A crash: committed data survive it (no fsync, but the kernel has the writes).
    rc, out, err = backend.query(state, f"INSERT INTO {table} VALUES (7);")
    check(rc == 0, f"{backend.name}: insert before the crash failed: {err}")
    family = server_family(backend, state)
    backend.timed("kill-server", "kill-server", state)
    for pid in family:
        check(not alive(pid), f"{backend.name}: process {pid} survived kill-server")
    status = backend.run("status", state).stdout.split()
    check(status[2:] == ["stopped"], f"{backend.name}: status after kill: {status}")
    backend.timed("start-server after kill", "start-server", state)
    check(read(state, "port") == port, f"{backend.name}: port changed over kill/start")
    rc, out, err = backend.query(state, f"SELECT SUM(x) FROM {table};")
    check(rc == 0 and out == "48", f"{backend.name}: data after the crash: {out!r} {err}")


def check_pause(backend, state):
    session = Session(backend, state)
    try:
        session.send("SELECT 1;")
        got = session.answer(WAIT)
        check(got == "1", f"{backend.name}: session answered {got!r} before the pause")
        backend.timed("pause-server", "pause-server", state)
        for pid in server_family(backend, state):
            # A child that exited just then (PostgreSQL's startup process, at the end of a crash
            # recovery) stays a zombie under its stopped parent: it cannot run either.
            check(proc_state(pid) == "T" or not alive(pid),
                  f"{backend.name}: process {pid} is not stopped ({proc_state(pid)})")
        status = backend.run("status", state).stdout.split()
        check(status[2:] == ["paused"], f"{backend.name}: status while paused: {status}")
        # The open session's server process is frozen too (PostgreSQL: its backend).
        session.send("SELECT 2;")
        got = session.answer(QUIET)
        check(got is None, f"{backend.name}: a paused server answered {got!r}")
        backend.timed("resume-server", "resume-server", state)
        got = session.answer(WAIT)
        check(got == "2", f"{backend.name}: session answered {got!r} after the pause")
        rc, out, err = backend.query(state, "SELECT 3;")
        check(rc == 0 and out == "3", f"{backend.name}: new login after resume: {out!r} {err}")
    finally:
        session.close()


def check_stop(backend, state):
    family = server_family(backend, state)
    backend.timed("stop", "stop", state)
    for pid in family:
        check(not alive(pid), f"{backend.name}: process {pid} survived stop")
    left = processes_of(state)
    check(not left, f"{backend.name}: processes left after stop: {left}")
    check(not os.path.exists(os.path.join(state, "data")), f"{backend.name}: data dir kept")
    check(os.path.exists(os.path.join(state, backend.log)), f"{backend.name}: log removed")
    rc = backend.run("status", state, check_rc=False).returncode
    check(rc != 0, f"{backend.name}: status succeeded after stop")


def check_watchdog(backend, state):
    """A server whose owner dies stops by itself."""
    owner = subprocess.Popen(["sleep", "3600"])
    try:
        env = dict(os.environ, REIGN_SQL_OWNER_PID=str(owner.pid))
        backend.run("start", state, env=env)
        check(processes_of(state), f"{backend.name}: nothing runs after start")
    finally:
        owner.kill()
        owner.wait()
    wait_for(lambda: not processes_of(state), f"{backend.name}'s watchdog to stop the server")
    check(not os.path.exists(os.path.join(state, "data")), f"{backend.name}: data dir kept")


def log_tail(backend, state, lines=40):
    path = os.path.join(state, backend.log)
    try:
        with open(path, errors="replace") as f:
            tail = f.readlines()[-lines:]
    except OSError:
        return
    sys.stderr.write(f"---- {path} (last {lines} lines) ----\n{''.join(tail)}")


def self_test():
    root = os.environ.get("REIGN_TEST_STATE_DIR")
    if root:
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
    else:
        root = tempfile.mkdtemp(prefix="reign-sql-")
    # Servers of this test die with it, whatever happens to it.
    os.environ["REIGN_SQL_OWNER_PID"] = str(os.getpid())
    current = None
    try:
        for backend in (MARIADB, PG):
            state = os.path.join(root, backend.name)
            current = (backend, state)
            print(f"{backend.name}: start", flush=True)
            backend.timed("start", "start", state)
            check_files(backend, state)
            check_logins(backend, state, "selftest")
            print(f"{backend.name}: restart, kill-server + start-server", flush=True)
            check_restarts(backend, state, "selftest")
            print(f"{backend.name}: pause-server, resume-server", flush=True)
            check_pause(backend, state)
            print(f"{backend.name}: stop", flush=True)
            check_stop(backend, state)
            print(f"{backend.name}: watchdog", flush=True)
            check_watchdog(backend, os.path.join(root, backend.name + "-watchdog"))
            current = None
    except Failure:
        if current:
            log_tail(*current)
        raise
    finally:
        for backend in (MARIADB, PG):
            backend.run("stop-all-under", root, check_rc=False)
        left = processes_of(root)
        if left:
            print(f"processes left under {root}: {left}", file=sys.stderr)
            for pid, _ in left:
                os.kill(pid, signal.SIGKILL)
        if not os.environ.get("REIGN_TEST_STATE_DIR"):
            shutil.rmtree(root, ignore_errors=True)
    check(not left, "stop-all-under left processes behind")

    print("\ntimes (for information):")
    for name, step, secs in TIMES:
        print(f"  {name:8} {step:26} {secs * 1000:7.0f} ms")


def fixtures_test():
    """The shared servers: logins as promised.  Tables are temporary, nothing is left."""
    for backend, var in ((MARIADB, "REIGN_TEST_MARIADB_DIR"), (PG, "REIGN_TEST_PG_DIR")):
        state = os.environ.get(var)
        check(state, f"{var} is not set")
        check_files(backend, state)
        rc, out, err = backend.query(state, "CREATE TEMPORARY TABLE tools_sql_fixtures (x INT);"
                                     " INSERT INTO tools_sql_fixtures VALUES (42);"
                                     " SELECT x FROM tools_sql_fixtures;")
        check(rc == 0 and out == "42", f"{backend.name}: user reign: rc={rc} {out!r} {err}")
        rc, _, err = backend.query(state, "SELECT 1;", user="reign_nogrants")
        check(rc != 0 and "denied" in err, f"{backend.name}: reign_nogrants: rc={rc} {err}")
        print(f"{backend.name}: {read(state, 'uri')} ok")


def main():
    try:
        if sys.argv[1:] == ["--fixtures"]:
            fixtures_test()
        elif not sys.argv[1:]:
            self_test()
        else:
            sys.exit(__doc__)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
