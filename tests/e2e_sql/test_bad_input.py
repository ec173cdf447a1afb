#!/usr/bin/env python3
"""test_bad_input.py - bad SQL URIs, settings and credentials get clear errors and change nothing.

Against a SQLite file and the shared MariaDB and PostgreSQL servers, each case runs `reign`
with one thing wrong and expects exit status 1 (reign(1): a malformed URI, failed
authentication, an unreachable store and errors of the store are failures, not usage
errors), one message line "reign: ..." on stderr naming the problem, nothing on stdout, and
never a password in any output:

  * URIs: an unknown parameter, a non-numeric value, a relative or empty SQLite path, a
    SQLite file in a missing directory, a bad table name, a bad suspend_policy, a server URI
    without user or database;
  * lease settings that break the safety rule, each refused with its reason: renew_ms too
    close to lease_ms, statement_timeout_ms not below renew_ms, poll_ms above lease_ms,
    lease_ms (also from --session-timeout) below 300;
  * credentials: a wrong password (from REIGN_PASSWORD, a password file, or the URI itself -
    shown redacted), no password at all, a user without rights;
  * a missing database (named, with its server; a missing SQLite directory is named too,
    never "no such node or row"); a host name that does not exist (said at once, as on
    ZooKeeper, never "timed out"); a closed port and a port that accepts but never answers
    (connect_timeout_ms=1000: reign gives up on its own, within a generous bound);
  * a table of foreign layout (one lacking a seed column; on the servers also one whose
    gmt_modified has no milliseconds), made by the administrator and pointed at with table=:
    the error names the column, and the table is left exactly as it was.  Groups too: a
    "<table>_members" of another shape (register and members name it and the column it
    lacks, and no sessions table is made beside it); a row reign could not have written is
    no member (members lists the others and warns, naming the table).

Nothing may be created by a refused command: no SQLite file, no table, no file in the working
directory, and no message may give "object is closing" (the client's state) in place of the
reason it closed.  Positive checks keep the negative ones honest: the aliases mariadb:// and
postgresql:// are understood, and a campaign with the password in its URI, logging at level
debug, leads without printing the password.
"""
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

FAIL = 1
WRONG = "wrongpw-e2e-7Qx"
NO_HOST = "no-such-host.invalid"  # RFC 6761: never resolves


def name_does_not_exist(host):
    """Whether this machine's resolver says `host` does not exist (EAI_NONAME), rather than
    that it cannot answer now (no DNS server reachable: EAI_AGAIN)."""
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror as e:
        if e.errno == socket.EAI_NONAME:
            return True
        log(f"skipped the unknown host case: the resolver says {e} for {host}")
    return False


class Cases:
    """Runs the cases; a case that fails is recorded and the others still run, so that one
    run shows every problem (body() fails at the end if any case did)."""

    def __init__(self, t, secrets):
        self.t, self.secrets, self.names, self.failed = t, secrets, [], []

    def name(self):
        n = self.t.unique("bad")
        self.names.append(n)
        return n

    def expect(self, label, args, words, env=None, want_rc=FAIL, unwanted=()):
        start = time.monotonic()
        rc, out, err = self.t.reign(args, env=env, timeout=30)
        took = time.monotonic() - start
        shown = err.strip().replace("\n", " | ")
        last = err.strip().splitlines()[-1] if err.strip() else ""
        problems = []
        if rc != want_rc:
            problems.append(f"exit {rc}, want {want_rc}")
        if out != "":
            problems.append(f"printed {out!r} on stdout")
        if not last.startswith("reign: "):
            problems.append(f"message {last!r}")
        problems += [f"message lacks {w!r}" for w in words if w.lower() not in err.lower()]
        problems += [f"message says {w!r}" for w in unwanted if w.lower() in err.lower()]
        # A store that refuses for a known reason (credentials, no database, a foreign
        # table...) must be reported with that reason, not as a client that closed.
        if "object is closing" in err:
            problems.append("says 'object is closing' instead of the reason")
        if any(s in out + err for s in self.secrets):
            problems.append("a password shows in the output")
        if problems:
            self.failed.append(f"{label}: {'; '.join(problems)} ({shown})")
            log(f"FAILED: {self.failed[-1]}")
        else:
            log(f"ok: {label} ({took:.1f} s): {last}")
        return err

    def check_all(self):
        check(not self.failed, f"{len(self.failed)} case(s) failed:\n  " +
              "\n  ".join(self.failed))


def foreign_tables(store):
    """Tables of foreign layout, made by the administrator: [(table, column named)]."""
    made = []
    missing = sqle.table_name("foreign_noterm")
    q = store.quoted(missing)
    if store.kind == "sqlite":
        store.sql(f"CREATE TABLE {q} (id INTEGER PRIMARY KEY, data_center TEXT, lock_name TEXT, "
                  "owner TEXT, duration INTEGER, term_duration INTEGER, gmt_create TEXT, "
                  "gmt_modified TEXT)")
    elif store.kind == "mariadb":
        store.sql(f"CREATE TABLE {q} (id bigint AUTO_INCREMENT PRIMARY KEY, data_center "
                  "varchar(128), lock_name varchar(1024), owner varchar(512), duration bigint, "
                  "term_duration bigint, gmt_create timestamp(3) NULL, gmt_modified "
                  "timestamp(3) NULL)")
    else:
        store.sql(f"CREATE TABLE {q} (id bigserial PRIMARY KEY, data_center varchar(128), "
                  "lock_name varchar(1024), owner varchar(512), duration bigint, term_duration "
                  "bigint, gmt_create timestamptz(3), gmt_modified timestamptz(3))")
    store.sql(f"INSERT INTO {q} (data_center, lock_name, owner, duration, term_duration) "
              "VALUES ('default', 'someone-elses', 'them', 1000, 7)")
    made.append((missing, "term"))
    if store.kind != "sqlite":
        coarse = sqle.table_name("foreign_coarse")
        q = store.quoted(coarse)
        ts = "timestamp NULL" if store.kind == "mariadb" else "timestamptz(0)"
        serial = "bigint AUTO_INCREMENT" if store.kind == "mariadb" else "bigserial"
        store.sql(f"CREATE TABLE {q} (id {serial} PRIMARY KEY, data_center varchar(128), "
                  "lock_name varchar(1024), owner varchar(512), duration bigint, term bigint, "
                  f"term_duration bigint, gmt_create {ts}, gmt_modified {ts})")
        store.sql(f"INSERT INTO {q} (data_center, lock_name, owner, duration, term, "
                  "term_duration) VALUES ('default', 'someone-elses', 'them', 1000, 3, 7)")
        made.append((coarse, "gmt_modified"))
    for table, _ in made:
        store.grant(table)
    return made


def sqlite_cases(t, c, cwd):
    path = os.path.join(t.dir, "never.db")
    base = "sqlite://" + path

    def uri(q):
        return f"{base}?{q}"

    n = c.name
    c.expect("sqlite: unknown parameter", ["--uri", uri("bogus=1"), "campaign", n()], ["'bogus'"])
    c.expect("sqlite: non-numeric lease_ms", ["--uri", uri("lease_ms=abc"), "campaign", n()],
             ["lease_ms", "'abc'"])
    c.expect("sqlite: renew_ms too close to lease_ms",
             ["--uri", uri("lease_ms=2000&renew_ms=1000"), "campaign", n()],
             ["renew_ms", "lease_ms"])
    c.expect("sqlite: statement_timeout_ms not below renew_ms",
             ["--uri", uri("lease_ms=2000&renew_ms=400&statement_timeout_ms=400"), "campaign",
              n()], ["statement_timeout_ms", "renew_ms"])
    c.expect("sqlite: poll_ms above lease_ms",
             ["--uri", uri("lease_ms=2000&renew_ms=400&poll_ms=3000"), "campaign", n()],
             ["poll_ms", "lease_ms"])
    c.expect("sqlite: lease_ms below 300", ["--uri", uri("lease_ms=200"), "campaign", n()],
             ["lease_ms", "300"])
    c.expect("sqlite: --session-timeout below 300",
             ["--session-timeout", "200", "--uri", base, "campaign", n()], ["300"])
    c.expect("sqlite: settings refused for status too",
             ["--uri", uri("lease_ms=2000&renew_ms=1000"), "status", n()], ["renew_ms"])
    c.expect("sqlite: bad table name", ["--uri", uri("table=bad-name"), "campaign", n()],
             ["table"])
    c.expect("sqlite: bad suspend_policy", ["--uri", uri("suspend_policy=never"), "campaign",
                                            n()], ["'never'"])
    c.expect("sqlite: relative path", ["--uri", "sqlite://never.db", "campaign", n()],
             ["sqlite:///"])
    c.expect("sqlite: relative path (no slashes)", ["--uri", "sqlite:never.db", "campaign",
                                                    n()], [])
    c.expect("sqlite: no path", ["--uri", "sqlite:///", "campaign", n()], ["path"])
    c.expect("sqlite: a directory, not a file", ["--uri", f"sqlite://{t.dir}/", "campaign",
                                                 n()], ["path"])
    c.expect("sqlite: missing directory",
             ["--uri", "sqlite:///nonexistent-e2e-dir/x.db", "campaign", n()],
             ["/nonexistent-e2e-dir/x.db", "no such directory: /nonexistent-e2e-dir"],
             unwanted=["no such node or row"])
    check(not os.path.exists(path), f"{path} was created by a refused command")
    check(not os.path.exists("/nonexistent-e2e-dir"), "a missing directory was created")
    check(os.listdir(cwd) == [], f"files appeared in the working directory: {os.listdir(cwd)}")


def server_cases(t, c, store, closed_port, silent_port):
    kind = store.kind
    scheme = "mysql" if kind == "mariadb" else "postgres"
    host = f"127.0.0.1:{store.port}"
    base = f"{scheme}://reign@{host}/reign"
    n = c.name
    no_pw = {"REIGN_PASSWORD": ""}
    wrong_file = os.path.join(t.dir, f"{kind}-wrong-password")
    with open(wrong_file, "w") as f:
        f.write(WRONG + "\n")
    os.chmod(wrong_file, 0o600)
    prefix = sqle.table_name("never")  # tables no refused command may create

    def uri(b=base, **params):
        return store.uri(base=b, table=f"{prefix}_t", **params)

    c.expect(f"{kind}: unknown parameter", ["--uri", uri(bogus=1), "campaign", n()], ["'bogus'"])
    c.expect(f"{kind}: renew_ms too close to lease_ms",
             ["--uri", uri(renew_ms=1000), "campaign", n()], ["renew_ms", "lease_ms"])
    c.expect(f"{kind}: no user", ["--uri", uri(b=f"{scheme}://{host}/reign"), "campaign", n()],
             ["user"])
    c.expect(f"{kind}: no database", ["--uri", uri(b=f"{scheme}://reign@{host}/"), "campaign",
                                      n()], ["database"])
    c.expect(f"{kind}: no password anywhere", ["--uri", uri(password_file=False), "campaign", n()],
             ["password"], env=no_pw)
    c.expect(f"{kind}: wrong password (REIGN_PASSWORD)",
             ["--uri", uri(password_file=False), "campaign", n()], ["authentication failed"],
             env={"REIGN_PASSWORD": WRONG})
    c.expect(f"{kind}: wrong password (password_file)",
             ["--uri", uri(password_file=wrong_file), "campaign", n()], ["authentication failed"],
             env=no_pw)
    err = c.expect(f"{kind}: wrong password (in the URI)",
                   ["--uri", uri(b=f"{scheme}://reign:{WRONG}@{host}/reign", password_file=False),
                    "status", n()], ["authentication failed"], env=no_pw)
    if "***" not in err:
        c.failed.append(f"{kind}: the URI in the message is not shown redacted: {err!r}")
    c.expect(f"{kind}: wrong password (status)", ["--uri", uri(password_file=wrong_file),
                                                  "status", n()], ["authentication failed"], env=no_pw)
    c.expect(f"{kind}: user without rights",
             ["--uri", uri(b=f"{scheme}://reign_nogrants@{host}/reign"), "campaign", n()], [])
    # MariaDB tells a user without rights on a database that does not exist "access denied"
    # (1044): reign says it may not exist, but cannot say it does not.
    c.expect(f"{kind}: missing database",
             ["--uri", uri(b=f"{scheme}://reign@{host}/nosuchdb_e2e"), "campaign", n()],
             [f'database "nosuchdb_e2e" does not exist on {host}'] if kind == "postgres"
             else ["nosuchdb_e2e", "does not exist"], unwanted=["no such node or row"])
    # A host name that does not exist fails at once, as on ZooKeeper, not after the connect
    # timeout (a resolver that cannot answer, EAI_AGAIN, still waits: not this case).
    if name_does_not_exist(NO_HOST):
        c.expect(f"{kind}: unknown host",
                 ["--uri", uri(b=f"{scheme}://reign@{NO_HOST}/reign"), "campaign", n()],
                 [f"host '{NO_HOST}' does not resolve"], unwanted=["timed out"])
    c.expect(f"{kind}: closed port",
             ["--uri", uri(b=f"{scheme}://reign@127.0.0.1:{closed_port}/reign",
                           connect_timeout_ms=1000), "campaign", n()], ["cannot connect"])
    c.expect(f"{kind}: silent port",
             ["--uri", uri(b=f"{scheme}://reign@127.0.0.1:{silent_port}/reign",
                           connect_timeout_ms=1000), "campaign", n()], ["cannot connect"])
    c.expect(f"{kind}: silent port (status)",
             ["--uri", uri(b=f"{scheme}://reign@127.0.0.1:{silent_port}/reign",
                           connect_timeout_ms=1000), "status", n()], ["cannot connect"])

    # The aliases are understood: these reach the server and find no such election.
    alias = "mariadb" if kind == "mariadb" else "postgresql"
    c.expect(f"{kind}: {alias}:// alias", ["--uri", uri(b=f"{alias}://reign@{host}/reign"),
                                           "status", n()], ["no such election"])
    if kind == "mariadb":
        rows = store.sql("SELECT table_name FROM information_schema.tables WHERE "
                         f"table_schema = 'reign' AND table_name LIKE '{prefix}%'")
    else:
        rows = store.sql("SELECT table_name FROM information_schema.tables WHERE "
                         f"table_name LIKE '{prefix}%'")
    # The alias case may have made the (empty) table: it connected with good credentials.
    check(len(rows) <= 1, f"{kind}: refused commands created tables: {rows}")


def foreign_cases(t, c, store):
    for table, column in foreign_tables(store):
        before = store.table_layout(table)
        u = store.uri(table=table)
        for cmd in ("campaign", "status"):
            c.expect(f"{store.kind}: foreign table ({column}) - {cmd}",
                     ["--uri", u, cmd, c.name()], [column, table])
        after = store.table_layout(table)
        check(after == before, f"{store.kind}: table {table} changed:\n  {before}\n  {after}")
        log(f"ok: {store.kind}: {table} left as it was: {before[0]}")


def table_exists(store, table):
    if store.kind == "sqlite":
        q = f"SELECT count(*) FROM sqlite_master WHERE name = '{table}'"
    elif store.kind == "mariadb":
        q = ("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'reign' AND "
             f"table_name = '{table}'")
    else:
        q = f"SELECT count(*) FROM pg_tables WHERE tablename = '{table}'"
    return store.sql(q)[0][0] != "0"


def foreign_group_cases(t, c, store):
    """Groups: a members table of another shape is refused, naming it and the column it lacks,
    and nothing is made beside it; a row reign could not have written is skipped by a listing,
    which warns, naming the table."""
    base = sqle.table_name("fgroup")
    members = base + "_members"
    store.sql(f"CREATE TABLE {store.quoted(members)} (data_center varchar(128), "
              "group_name varchar(200))")
    store.grant(members)
    before = store.table_layout(members)
    u = store.uri(table=base)
    for args in (["register", "g1", "--id", "m1"], ["members", "g1"]):
        c.expect(f"{store.kind}: foreign members table - {args[0]}", ["--uri", u, *args],
                 ["guid", members])
    check(store.table_layout(members) == before, f"{store.kind}: {members} changed")
    check(not table_exists(store, base + "_sessions"),
          f"{store.kind}: a sessions table was made beside a foreign members table")
    log(f"ok: {store.kind}: {members} left as it was, nothing made beside it")

    base = sqle.table_name("frow")
    u = store.uri(table=base)
    p = t.spawn(f"{store.kind}-frow", [t.cli, "--uri", u, "register", "g1", "--id", "m1"])
    sqle.wait_alive(lambda: p.lines(), f"{store.kind}: a member registered", [p])
    # A session that lives (its holder is the member above) with a row of a negative seq.
    guid = store.sql(f"SELECT guid FROM {store.quoted(base + '_sessions')}")[0][0]
    store.sql(f"INSERT INTO {store.quoted(base + '_members')} (data_center, group_name, guid, "
              "seq, member_id, session_guid, payload, version, joined_ms) VALUES ('default', "
              f"'g1', 'forged', -3, 'x', '{guid}', NULL, 0, 0)")
    # It is no member, as a child that is no member's node in a ZooKeeper group: skipped, the
    # member beside it listed, one warning naming the table (never the row's payload).
    rc, out, err = t.reign(["--uri", u, "members", "g1"], timeout=30)
    ids = [ln.split()[1] for ln in out.splitlines() if ln.startswith("member ")]
    check(rc == 0 and ids == ["m1"], f"{store.kind}: members beside a foreign row: {rc} "
          f"{out!r} {err!r}")
    check(base + "_members" in err and "did not write" in err,
          f"{store.kind}: no warning names the foreign row's table: {err!r}")
    log(f"ok: {store.kind}: a foreign row skipped, m1 listed")
    p.send(signal.SIGTERM)
    check(p.wait() == 0, f"{store.kind}: the member did not exit 0")


def password_in_uri(t, store):
    """A campaign with the password in its URI, logging everything, leads: the password shows
    nowhere in its output, nor in status's."""
    pw = store.password()
    scheme = "mysql" if store.kind == "mariadb" else "postgres"
    u = store.uri(base=f"{scheme}://reign:{pw}@127.0.0.1:{store.port}/reign",
                  password_file=False)
    name = t.unique("pw-in-uri")
    p = t.campaign(f"{store.kind}-pw", name, u, env={"REIGN_PASSWORD": ""}, log_level="debug")
    wait_for(lambda: p.elected() or not p.alive(), f"{store.kind}: a campaign to lead")
    check(p.alive() and p.elected(), f"{store.kind}: not elected: {p.err()[-2000:]}")
    rc, out, err = t.reign(["--log-level", "debug", "--uri", u, "status", name],
                           env={"REIGN_PASSWORD": ""})
    check(rc == 0, f"{store.kind}: status with the password in the URI: {err.strip()}")
    p.send(signal.SIGTERM)
    check(p.wait() == 0, f"{store.kind}: the campaign did not exit 0")
    text = open(p.out_path).read() + p.err() + out + err
    check(pw not in text, f"{store.kind}: the password shows in the output")
    log(f"ok: {store.kind}: password in the URI, never printed")


def body(t):
    cwd = os.path.join(t.dir, "cwd")
    os.makedirs(cwd)
    os.chdir(cwd)
    servers = [sqle.Store(t, "mariadb"), sqle.Store(t, "postgres")]
    c = Cases(t, [WRONG] + [s.password() for s in servers])
    # A port nobody listens on (bound, never listening) and one that accepts connections into
    # its backlog but never answers.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)

    sqlite_cases(t, c, cwd)
    lite = sqle.Store(t, "sqlite", file=os.path.join(t.dir, "foreign.db"))
    foreign_cases(t, c, lite)
    foreign_group_cases(t, c, lite)
    for store in servers:
        server_cases(t, c, store, closed.getsockname()[1], silent.getsockname()[1])
        foreign_cases(t, c, store)
        foreign_group_cases(t, c, store)
        password_in_uri(t, store)
    closed.close()
    silent.close()
    check(os.listdir(cwd) == [], f"files appeared in the working directory: {os.listdir(cwd)}")
    c.check_all()


if __name__ == "__main__":
    sqle.main("e2e_sql_bad_input", body)
