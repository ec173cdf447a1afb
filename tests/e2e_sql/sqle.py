"""sqle.py - what the end-to-end tests of SQL lease elections share (standard library only).

The tests drive the built `reign` binary (campaign, run, status, watch, cede) against SQLite
files and real MariaDB and PostgreSQL servers, as tests/e2e does against ZooKeeper; this module
adds only what SQL needs on top of tests/e2e/e2elib.py (processes, waits, check_leadership):

  * Store: one backend as a test uses it - the URI of an election table of the test's own
    (short leases by default), the administrator's SQL on it, and a read of an election's row
    with the lease's remaining time judged by the database's own clock;
  * SqlServer: a MariaDB or PostgreSQL server of the test's own (scripts/mariadb.sh, pg.sh), for
    the fault tests that restart, kill and pause it;
  * the leadership lines `reign run` logs on stderr, as files check_leadership.py can read.

Stores, as the first argument of a test: sqlite (a file in the test's directory), mariadb and
postgres (the shared servers named by $REIGN_TEST_MARIADB_DIR and $REIGN_TEST_PG_DIR, see
tests/sql/tests.cmake).  Passwords reach `reign` through the URI's password_file parameter
(the servers' password files), never on a command line.
"""

import importlib.util
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))  # check_leadership, for e2elib
import e2elib  # noqa: E402
from e2elib import Failure, beyond, check, env_path, log, parse_events, wait_for  # noqa: E402,F401

# Short leases keep the tests fast and stay inside the safety rule the client enforces
# (margin = max(lease/10, 50) = 200 ms; 3 * renew <= lease - margin; statement < renew).
LEASE = {"lease_ms": 2000, "renew_ms": 400, "poll_ms": 400, "statement_timeout_ms": 300}

# Lease times are stored to the millisecond, and the database's clock is CLOCK_REALTIME, which
# NTP may slew against the CLOCK_MONOTONIC of the campaigns' lines: a bound computed from both
# is good to a few milliseconds, no better.
CLOCK_SLACK_NS = 5_000_000

BACKENDS = ("sqlite", "mariadb", "postgres")
_NAME_RE = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
_TABLE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_SCRIPT = {"mariadb": "mariadb.sh", "postgres": "pg.sh"}


def read_file(path):
    with open(path) as f:
        return f.read().strip()


def safe_name(name):
    """Election names go into the administrator's SQL: only the characters reign allows."""
    check(_NAME_RE.match(name) is not None, f"election name {name!r} unfit for SQL")
    return name


def table_name(prefix):
    """A table of the test's own: unique, and a plain SQL identifier."""
    name = f"{prefix}_{os.getpid()}_{os.urandom(3).hex()}"
    check(_TABLE_RE.match(name) is not None, f"table name {name!r}")
    return name


def run_script(kind, *args, timeout=180, check_rc=True, env=None):
    """scripts/mariadb.sh or pg.sh with args (and env added to the environment); returns
    stdout."""
    script = os.path.join(env_path("REIGN_SCRIPTS"), _SCRIPT[kind])
    env = dict(os.environ, REIGN_SQL_OWNER_PID="parent", **(env or {}))
    r = subprocess.run(["bash", script, *args], env=env, capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    if check_rc and r.returncode != 0:
        raise Failure(f"{_SCRIPT[kind]} {' '.join(args[:2])} failed ({r.returncode}): "
                      f"{r.stderr.strip()}")
    return r.stdout


class Store:
    """One backend as a test sees it.

    kind: sqlite, mariadb or postgres.  SQLite: the file `file` (default leases.db in the
    test's directory).  Servers: the state dir of a server (the shared one by default).
    """

    def __init__(self, t, kind, table=None, state_dir=None, file=None):
        check(kind in BACKENDS, f"unknown backend {kind!r}")
        self.t, self.kind = t, kind
        self.table = table or table_name("e2e")
        if kind == "sqlite":
            self.path = file or os.path.join(t.dir, "leases.db")
            self.base = "sqlite://" + self.path
            self.state = None
        else:
            var = "REIGN_TEST_MARIADB_DIR" if kind == "mariadb" else "REIGN_TEST_PG_DIR"
            self.state = state_dir or env_path(var)
            self.base = read_file(os.path.join(self.state, "uri"))
            self.password_file = os.path.join(self.state, "password")
            self.port = int(read_file(os.path.join(self.state, "port")))

    def password(self):
        return None if self.kind == "sqlite" else read_file(self.password_file)

    def uri(self, base=None, table=None, password_file=None, lease=True, **params):
        """The store's URI (or base's) with a table (default: the test's own; False: none),
        a password file (default: the server's; False: none) and the short lease; params
        add to them or replace them (a value of None drops a parameter)."""
        q = dict(LEASE) if lease else {}
        table = self.table if table is None else table
        if table:
            q["table"] = table
        if password_file is None and self.kind != "sqlite":
            password_file = self.password_file
        if password_file:
            q["password_file"] = password_file
        q.update(params)
        query = "&".join(f"{k}={v}" for k, v in q.items() if v is not None)
        return (base or self.base) + (f"?{query}" if query else "")

    # -- the administrator's view of the database ------------------------------------------
    def sql(self, statement):
        """Runs SQL as the administrator; returns the rows, each a list of strings."""
        if self.kind == "sqlite":
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            try:
                rows = con.execute(statement).fetchall()
            finally:
                con.close()
            return [["" if v is None else str(v) for v in row] for row in rows]
        out = run_script(self.kind, "sql", self.state, statement, timeout=60)
        return [line.split("\t") for line in out.splitlines() if line != ""]

    def quoted(self, table=None):
        table = table or self.table
        check(_TABLE_RE.match(table) is not None, f"table name {table!r}")
        return f"`{table}`" if self.kind == "mariadb" else f'"{table}"'

    def lease_row(self, name):
        """The row of election `name`: a namespace with term, owner, remaining_ns (how long
        the lease has still to run by the database's clock, negative if it has run out) and
        read_ns (this process's CLOCK_MONOTONIC just before the query was sent, so no later
        than the moment the database read its clock); None if there is no row."""
        n = safe_name(name)
        t = self.quoted()
        st = self.quoted(self.table + "_sessions")
        where = f"WHERE data_center = 'default' AND lock_name = '{n}'"
        if self.kind == "sqlite":
            ms = "CAST(round((julianday({}) - 2440587.5) * 86400000.0) AS INTEGER)"
            now, own = ms.format(repr('now')), f"({ms.format('gmt_modified')} + duration - {{now}})"
        elif self.kind == "mariadb":
            now = "CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED)"
            own = "(duration - TIMESTAMPDIFF(MICROSECOND, gmt_modified, NOW(6)) / 1000)"
        else:
            now = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
            own = ("(extract(epoch FROM (gmt_modified + duration * interval '1 millisecond' - "
                   "clock_timestamp())) * 1000)")
        own = own.replace("{now}", now)
        # A lease held in a session is renewed by the session's beats, not in its row: it runs
        # by the session's row (its last beat + its lease), and has run out once that is gone.
        q = (f"SELECT term, owner, floor(CASE WHEN session_guid <> '' AND duration > 0 THEN "
             f"COALESCE((SELECT s.modified_ms + s.lease_ms - {now} FROM {st} s WHERE "
             f"s.data_center = l.data_center AND s.guid = l.session_guid), -1) ELSE {own} END "
             f"* 1000) FROM {t} l {where}")
        read_ns = time.monotonic_ns()
        rows = self.sql(q)
        if not rows:
            return None
        term, owner, remaining_us = rows[0]
        return types.SimpleNamespace(term=int(term), owner=owner,
                                     remaining_ns=int(float(remaining_us)) * 1000,
                                     read_ns=read_ns)

    def table_layout(self, table):
        """Columns (name, type), indexes and rows of a table, to prove it was left alone."""
        check(_TABLE_RE.match(table) is not None, f"table name {table!r}")
        if self.kind == "sqlite":
            cols = [tuple(r[1:3]) for r in self.sql(f'PRAGMA table_info("{table}")')]
            idx = self.sql(f"SELECT sql FROM sqlite_master WHERE type = 'index' AND "
                           f"tbl_name = '{table}' ORDER BY name")
        elif self.kind == "mariadb":
            cols = [tuple(r) for r in self.sql(
                "SELECT column_name, column_type FROM information_schema.columns WHERE "
                f"table_schema = 'reign' AND table_name = '{table}' ORDER BY ordinal_position")]
            idx = self.sql("SELECT index_name, column_name FROM information_schema.statistics "
                           f"WHERE table_schema = 'reign' AND table_name = '{table}' "
                           "ORDER BY index_name, seq_in_index")
        else:
            cols = [tuple(r) for r in self.sql(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                f"attrelid = '{table}'::regclass AND attnum > 0 AND NOT attisdropped "
                "ORDER BY attnum")]
            idx = self.sql(f"SELECT indexdef FROM pg_indexes WHERE tablename = '{table}' "
                           "ORDER BY indexname")
        rows = self.sql(f"SELECT * FROM {self.quoted(table)} ORDER BY 1")
        return cols, idx, rows

    def grant(self, table):
        """Lets user reign do anything to a table the administrator made (PostgreSQL tables
        belong to their creator; MariaDB's reign has every right on database reign already),
        so that a table left alone was left alone by choice."""
        if self.kind == "postgres":
            self.sql(f"GRANT ALL ON {self.quoted(table)} TO reign")


class SqlServer:
    """A MariaDB or PostgreSQL server of the test's own, stopped when the test ends.  Its
    script's watchdog also stops it should the test process die first."""

    def __init__(self, t, kind, label, env=None):
        """env: added to the environment the server starts in (test_clock_step.py's
        libfaketime)."""
        self.t, self.kind = t, kind
        self.dir = os.path.join(t.dir, label)
        t.servers.append(self)
        start = time.monotonic()
        run_script(kind, "start", self.dir, env=env)
        log(f"{kind} server {label} started in {time.monotonic() - start:.1f} s: "
            f"{read_file(os.path.join(self.dir, 'uri'))}")

    def do(self, *args):
        log(f"{_SCRIPT[self.kind]} {args[0]}")
        start = time.monotonic()
        out = run_script(self.kind, args[0], self.dir, *args[1:])
        log(f"{_SCRIPT[self.kind]} {args[0]}: done in {time.monotonic() - start:.1f} s")
        return out

    def stop(self):
        run_script(self.kind, "stop", self.dir, check_rc=False)


# ---- processes ----------------------------------------------------------------------------

def campaigns(t, name, uri, labels, **kw):
    return [t.campaign(label, name, uri, **kw) for label in labels]


def leader_of(procs):
    return e2elib.leader_of(procs)


def quietly(fn, *args):
    """fn(*args), or None if it fails (for polls while a server is down)."""
    try:
        return fn(*args)
    except (Failure, subprocess.SubprocessError, ValueError, OSError):
        return None


def status_leader(t, name, uri):
    """`reign status --json`'s leader (a dict) or None; None too if status fails."""
    st = quietly(t.status, name, uri)
    return st.get("leader") if st else None


# Log lines start with the local time (reign(1)); the journal's form (<N>) is not used here.
_RUN_LINE = re.compile(r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} )?reign: run: notice: "
                       r"((?:elected|demoted) .*)$")


def run_lines(proc):
    """The `elected`/`demoted` lines `reign run` logged (at level notice) on stderr."""
    out = []
    for line in proc.err().splitlines():
        m = _RUN_LINE.match(line)
        if m:
            out.append(m.group(1))
    return out


def run_events(proc):
    return parse_events(run_lines(proc))


def run_view(proc):
    """proc's leadership lines as a file of their own, in the shape Test.check_leadership
    wants (out_path, killed_ns)."""
    path = os.path.join(proc.test.dir, f"{proc.label}.leadership")
    with open(path, "w") as f:
        for line in run_lines(proc):
            f.write(line + "\n")
    return types.SimpleNamespace(out_path=path, killed_ns=proc.killed_ns, label=proc.label)


def no_word(procs, words):
    """Fails if any output of procs contains one of words (case-insensitive)."""
    for p in procs:
        text = (open(p.out_path, errors="replace").read() + p.err()).lower()
        for w in words:
            check(w.lower() not in text, f"{p.label} printed {w!r}")


def main(name, body):
    """e2elib.main, after stopping whatever SQL servers an earlier run left in the test's
    directory (their data would otherwise be deleted under them)."""
    state = os.environ.get("REIGN_TEST_STATE_DIR")
    if state and os.path.isdir(state):
        for kind in _SCRIPT:
            run_script(kind, "stop-all-under", state, check_rc=False)
    e2elib.main(name, body)


def backend_arg(script):
    if len(sys.argv) != 2 or sys.argv[1] not in BACKENDS:
        sys.exit(f"usage: {script} {'|'.join(BACKENDS)}")
    return sys.argv[1]


def check_after_expiry(row, ev, what):
    """A successor's `elected` (ev) came no earlier than the moment the lease in `row` (read
    after its holder was killed) ran out by the database's clock: read_ns is no later than
    the database's reading of its clock, so the lease ran out no earlier than
    read_ns + remaining_ns on this host's monotonic clock."""
    expiry_ns = row.read_ns + row.remaining_ns
    check(ev.ns >= expiry_ns - CLOCK_SLACK_NS,
          f"{what}: elected at {ev.ns}, {(expiry_ns - ev.ns) / 1e6:.1f} ms before the lease "
          f"of term {row.term} ran out by the database's clock")
    log(f"{what}: elected {(ev.ns - expiry_ns) / 1e6:.1f} ms after the lease of term "
        f"{row.term} ran out")


def wait_alive(pred, what, procs, timeout=e2elib.WAIT):
    """wait_for(pred), failing at once should one of procs exit meanwhile (with its last
    words), rather than at the timeout."""
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


def kill_round(t, store, name, uri, leader, alive, procs, rnd):
    """One round of a kill test: SIGKILL to the leader, the row read at once, a replacement
    campaign joins (added to alive and procs), and a successor with a higher term is waited
    for.  It must be elected after the kill and, if the row still held the killed leader's
    term when read, no earlier than that lease ran out (check_after_expiry); the row then
    names it.  Returns the successor."""
    ev = leader.elected()[-1]
    killed_ns = leader.kill9()
    row = store.lease_row(name)
    alive.remove(leader)
    check(row is not None, "no row for the election")
    joiner = t.campaign(f"r{rnd}", name, uri)
    alive.append(joiner)
    procs.append(joiner)

    def successor():
        p = leader_of(alive)
        return p if p and p.elected()[-1].term > ev.term else None

    new = wait_alive(successor, f"a successor of {leader.label} (round {rnd})", alive)
    el = new.elected()[-1]
    check(el.ns >= killed_ns, f"{new.label} elected at {el.ns}, before the kill at {killed_ns}")
    if row.term == ev.term:
        check(row.owner == leader.label, f"row {row} is not {leader.label}'s")
        check_after_expiry(row, el, f"round {rnd}: {new.label}")
    else:
        # Taken over before the test could read the row: only the kill bounds it then.
        log(f"round {rnd}: the row had moved on to term {row.term} when read")
    now = store.lease_row(name)
    check(now.term > el.term or (now.term == el.term and now.owner == new.label),
          f"row {now} after {new.label}'s {el}")
    log(f"round {rnd}: killed {leader.label} (term {ev.term}), {new.label} leads "
        f"(term {el.term})")
    return new


def resign_all(procs, want_rc=0):
    """SIGTERM to every process, then each must exit with want_rc."""
    for p in procs:
        p.send(signal.SIGTERM)
    for p in procs:
        rc = p.wait()
        check(rc == want_rc, f"{p.label} exited {rc} after SIGTERM, want {want_rc}")


def e2e_module(name):
    """A module of tests/e2e (a ZooKeeper test) loaded under another name, to reuse its
    helpers without copying them (its body runs only as a script)."""
    spec = importlib.util.spec_from_file_location(f"zk_{name}",
                                                  os.path.join(HERE, "..", "e2e", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
