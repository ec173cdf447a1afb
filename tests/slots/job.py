#!/usr/bin/env python3
"""job.py - the command the slot tests give `reign run --slot`: it proves from the outside that
no two attempts of a slot ever run at once, and says what ran.

    job.py DIR

Environment: REIGN_SLOT, REIGN_ATTEMPT, REIGN_ID, REIGN_TERM, REIGN_TOKEN (set by reign run);
JOB_SECONDS how long to run (default 0.2); JOB_FAIL attempts that exit 3 ("1,2"); JOB_HOLD=1:
run until DIR/release-<NAME>-<SLOT> exists instead.

It appends one line per event to DIR/events (a single O_APPEND write each, so lines of many
processes never mix):

    start NAME/SLOT ATTEMPT ID TERM TOKEN PID MONOTONIC_NS
    end NAME/SLOT ATTEMPT ID CODE MONOTONIC_NS
    overlap NAME/SLOT ATTEMPT ID     another attempt of the slot runs: the test fails

Overlap is judged by the kernel: the job holds flock(2) on DIR/lock-<NAME>-<slot> while it runs,
and a process's locks go the moment it dies, however it dies.
"""
import fcntl
import os
import sys
import time


def note(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main():
    out = sys.argv[1]
    events = os.path.join(out, "events")
    slot = f"{os.environ['REIGN_ELECTION']}/{os.environ['REIGN_SLOT']}"
    attempt = os.environ["REIGN_ATTEMPT"]
    ident = os.environ["REIGN_ID"]
    lock = open(os.path.join(out, f"lock-{slot.replace('/', '-')}"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        note(events, f"overlap {slot} {attempt} {ident}")
        return 99
    note(events, f"start {slot} {attempt} {ident} {os.environ['REIGN_TERM']} "
                 f"{os.environ['REIGN_TOKEN']} {os.getpid()} {time.monotonic_ns()}")
    if os.environ.get("JOB_HOLD"):
        release = os.path.join(out, f"release-{slot.replace('/', '-')}")
        while not os.path.exists(release):
            time.sleep(0.02)
    else:
        time.sleep(float(os.environ.get("JOB_SECONDS", "0.2")))
    failing = [a for a in os.environ.get("JOB_FAIL", "").split(",") if a]
    code = 3 if attempt in failing else 0
    note(events, f"end {slot} {attempt} {ident} {code} {time.monotonic_ns()}")
    return code


if __name__ == "__main__":
    sys.exit(main())
