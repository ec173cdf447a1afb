#!/usr/bin/env python3
"""test_hourly.py - examples/hourly.c on a SQLite file: a copy says in words what became of
this hour's slot.

Before ten past the hour (by the store's clock, here the host's) the copy works and ends
"done here (it succeeded): attempt 1 by ..."; after it, "not started: it is more than ten
minutes past the hour (nobody has run it)".  A run that straddles ten past may say either.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, env_path, log, main  # noqa: E402

DONE = re.compile(r"^slot \S+: done here \(it succeeded\): attempt 1 by \S+ on \S+$")
LATE = re.compile(r"^slot \S+: not started: it is more than ten minutes past the hour "
                  r"\(nobody has run it\)$")


def late(t):
    """True if the store's clock is ten minutes or more into its hour."""
    return t % 3600 >= 600


def body(t):
    uri = "sqlite://" + os.path.join(t.dir, "slots.db")
    before = time.time()
    p = t.spawn("hourly", [env_path("REIGN_HOURLY"), uri, t.unique("hourly")])
    check(p.wait() == 0, f"hourly exited {p.returncode()}: {p.err()}")
    after = time.time()
    lines = p.lines()
    log(f"hourly said: {lines}")
    check(lines, "hourly said nothing")
    wanted = {late(before), late(after)}
    check(any((LATE if w else DONE).match(lines[-1]) for w in wanted),
          f"hourly's last line does not say in words what became of the slot: {lines[-1]!r}")


if __name__ == "__main__":
    main("example_hourly", body)
