#!/usr/bin/env python3
"""fence_client.py - the command `reign run` runs in test_stop_fence.py: a fenced writer.

It writes, over and over, to a one-row fence table that accepts a write only if its fencing
token is at least the highest one it has accepted (UPDATE ... WHERE token <= mine, in one
statement, so the database itself decides).  The token is REIGN_TOKEN, as reign(1) tells a
command to use it.  Each attempt appends one line to $FENCE_LOG:

    start ID TERM TOKEN PID
    accepted ID TOKEN HIGHEST       (HIGHEST: the fence's token after the write)
    refused ID TOKEN HIGHEST        (HIGHEST > TOKEN: a newer leader wrote)
    error ID TOKEN MESSAGE

Environment: REIGN_ID, REIGN_TERM, REIGN_TOKEN (from reign run); FENCE_KIND (sqlite,
mariadb, postgres), FENCE_TABLE, FENCE_LOG, FENCE_DB (SQLite: the file), FENCE_PORT and
FENCE_PASSWORD_FILE (servers: user reign, database reign on 127.0.0.1).  The token is checked
to be a number and the id and table to be plain words before they go into SQL.  SIGTERM ends
it with status 0.

With FENCE_ESCAPE=1 the writer escapes `reign run`'s reach, as a command that starts a daemon
would: a child in a session of its own writes (and logs its own pid on the start line), while
the process reign started waits in its group until it is killed.  reign's leash kills that
group before another leader can be elected, but not the child: the fence is what keeps its
stale writes out.
"""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

PERIOD = 0.05


def note(*words):
    line = " ".join(str(w) for w in words) + "\n"
    fd = os.open(os.environ["FENCE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def sqlite_write(table, token):
    con = sqlite3.connect(os.environ["FENCE_DB"], timeout=10, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        cur = con.execute(f'UPDATE "{table}" SET token = ?, writes = writes + 1 '
                          "WHERE id = 1 AND token <= ?", (token, token))
        accepted = cur.rowcount == 1
        highest = con.execute(f'SELECT token FROM "{table}" WHERE id = 1').fetchone()[0]
        con.execute("COMMIT")
    finally:
        con.close()
    return accepted, int(highest)


def server_write(kind, table, token):
    password = open(os.environ["FENCE_PASSWORD_FILE"]).read().strip()
    port = str(int(os.environ["FENCE_PORT"]))
    env = dict(os.environ)
    if kind == "mariadb":
        env["MYSQL_PWD"] = password
        argv = ["mariadb", "--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P", port,
                "-u", "reign", "--connect-timeout=10", "--batch", "--skip-column-names", "reign",
                "-e", f"UPDATE `{table}` SET token = {token}, writes = writes + 1 "
                      f"WHERE id = 1 AND token <= {token}; "
                      f"SELECT ROW_COUNT(), (SELECT token FROM `{table}` WHERE id = 1)"]
        sep = "\t"
    else:
        for var in ("PGUSER", "PGDATABASE", "PGHOST", "PGPORT", "PGSERVICE", "PGPASSFILE"):
            env.pop(var, None)
        env["PGPASSWORD"] = password
        env["PGCONNECT_TIMEOUT"] = "10"
        argv = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-F", " ",
                f"postgres://reign@127.0.0.1:{port}/reign",
                "-c", f'WITH u AS (UPDATE "{table}" SET token = {token}, writes = writes + 1 '
                      f"WHERE id = 1 AND token <= {token} RETURNING token) "
                      f'SELECT (SELECT count(*) FROM u), (SELECT token FROM "{table}" '
                      "WHERE id = 1)"]
        sep = " "
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().replace("\n", " | "))
    count, before = r.stdout.strip().split(sep)
    accepted = int(count) == 1
    # PostgreSQL's subquery sees the row as it was before the update.
    return accepted, token if accepted else int(before)


def main():
    ident = os.environ["REIGN_ID"]
    term = int(os.environ["REIGN_TERM"])
    token = int(os.environ["REIGN_TOKEN"])
    table = os.environ["FENCE_TABLE"]
    kind = os.environ["FENCE_KIND"]
    if not re.match(r"^[A-Za-z0-9_]+$", ident) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$",
                                                              table):
        sys.exit(f"fence_client: unfit id {ident!r} or table {table!r}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if os.environ.get("FENCE_ESCAPE") == "1" and os.fork() != 0:
        while True:  # the process reign run started: nothing but waiting in its group
            signal.pause()
    if os.environ.get("FENCE_ESCAPE") == "1":
        os.setsid()  # out of reign run's process group: beyond its leash and its signals
    note("start", ident, term, token, os.getpid())
    while True:
        try:
            if kind == "sqlite":
                accepted, highest = sqlite_write(table, token)
            else:
                accepted, highest = server_write(kind, table, token)
            note("accepted" if accepted else "refused", ident, token, highest)
        except (RuntimeError, sqlite3.Error, subprocess.SubprocessError, ValueError) as e:
            note("error", ident, token, str(e)[:300])
        time.sleep(PERIOD)


if __name__ == "__main__":
    main()
