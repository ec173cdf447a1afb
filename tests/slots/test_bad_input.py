#!/usr/bin/env python3
"""test_bad_input.py - `reign run --slot|--every` and `reign runs` refuse bad input clearly.

Each case must exit with the right status (2 for usage errors, 1 for a foreign table), print
one line on stderr naming what was wrong (with the offending value where there is one), run
nothing and record nothing.  On a SQLite file: the checks do not depend on the store, but for
the lease (--every below it) and the table.
"""
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
import sqle  # noqa: E402
from e2elib import check, log  # noqa: E402

JOB = os.path.join(HERE, "job.py")


def body(t):
    store = sqle.Store(t, "sqlite")
    uri = store.uri()
    name = t.unique("bad")
    run = [t.cli, "--uri", uri, "run", name]
    job = ["--", sys.executable, JOB, t.dir]
    cases = [
        (["--slot", ""], 2, "the slot key given to --slot is empty"),
        (["--slot", "k" * 129], 2, "is 129 characters long; at most 128"),
        (["--slot", "a/b"], 2, "invalid slot key 'a/b'"),
        (["--slot", "a b"], 2, "invalid slot key 'a b'"),
        (["--every", "1s"], 2, "--every of 1000 ms is shorter than the session timeout or lease"),
        (["--every", "abc"], 2, "invalid duration 'abc' for --every"),
        (["--every", "0s"], 2, "invalid duration '0s' for --every"),
        (["--every", "400d"], 2, "invalid duration '400d' for --every"),
        (["--slot", "x", "--deadline", "5m"], 2, "--deadline needs --every"),
        (["--deadline", "5m"], 2, "--deadline needs --every"),
        (["--every", "1h", "--deadline", "10q"], 2, "invalid duration '10q' for --deadline"),
        (["--slot", "x", "--every", "1h"], 2, "--slot and --every cannot be combined"),
        (["--slot", "x", "--at-most-once", "--retries", "1"], 2,
         "--at-most-once never runs a slot again: it cannot be combined with --retries"),
        (["--slot", "x", "--retries", "21"], 2, "invalid value '21' for --retries"),
        (["--slot", "x", "--keep", "0"], 2, "invalid value '0' for --keep"),
        (["--no-wait"], 2, "--no-wait needs --slot or --every"),
        (["--retries", "1"], 2, "--retries needs --slot or --every"),
        (["--slot", "x", "--slots", "y"], 2, "unknown or ambiguous option '--slots'"),
        (["--slot"], 2, "option '--slot' needs a value"),
    ]
    for args, want_rc, want_msg in cases:
        rc, out, err = t.reign(run[1:] + args + job)
        lines = err.strip().splitlines()
        log(f"{' '.join(args)[:60]!r}: {rc} {lines[0] if lines else ''}")
        check(rc == want_rc, f"{args}: exit {rc}, want {want_rc}: {err.strip()}")
        check(lines and want_msg in lines[0], f"{args}: said {err.strip()!r}, want {want_msg!r}")
        check(len(lines) <= 2, f"{args}: more than a line and a hint: {err!r}")
        check(out == "", f"{args}: printed {out!r} on stdout")

    for args, want_msg in [
        (["runs", name, "--last", "0"], "invalid value '0' for --last"),
        (["runs", name, "--lst", "1"], "unknown or ambiguous option '--lst'"),
        (["runs"], "missing"),
        (["runs", "a/b"], "illegal election name"),
    ]:
        rc, out, err = t.reign(["--uri", uri] + args)
        log(f"{' '.join(args)!r}: {rc} {err.strip().splitlines()[0] if err.strip() else ''}")
        check(rc in (1, 2) and want_msg in err, f"{args}: exit {rc}: {err.strip()!r}")

    check(not os.path.exists(os.path.join(t.dir, "events")), "a job ran")
    con = sqlite3.connect(store.path)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    con.close()
    check(f"{store.table}_runs" not in tables, f"a runs table was made: {tables}")

    # A table in the way of the runs table, of a layout reign cannot use: refused by name,
    # left as it was.
    con = sqlite3.connect(store.path)
    con.execute(f'CREATE TABLE "{store.table}_runs" (id INTEGER PRIMARY KEY, note text)')
    con.execute(f'INSERT INTO "{store.table}_runs" (note) VALUES (\'mine\')')
    con.commit()
    con.close()
    before = store.table_layout(f"{store.table}_runs")
    rc, out, err = t.reign(run[1:] + ["--slot", "x"] + job)
    log(f"foreign runs table: {rc} {err.strip()}")
    check(rc == 1, f"foreign runs table: exit {rc}")
    check(f"table {store.table}_runs has no column" in err and "not a runs table" in err,
          f"foreign runs table: said {err.strip()!r}")
    check(store.table_layout(f"{store.table}_runs") == before, "the foreign table was changed")
    check(not os.path.exists(os.path.join(t.dir, "events")), "a job ran")


if __name__ == "__main__":
    sqle.main("slots_bad_input", body)
