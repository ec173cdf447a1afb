#!/usr/bin/env python3
"""stamp_job.py - the command `reign run` runs in test_run_leash.py: proof of when it ran.

Appends to $STAMP_FILE, each line with one write(2) to a file opened O_APPEND (so lines from
several jobs never mix):

    start ID TOKEN PID NS      once, first
    stamp ID TOKEN PID NS      then every 5 ms, until it is killed (nothing at the end)

NS is CLOCK_MONOTONIC (time.monotonic_ns()), read just before the write: every job runs on
the test's host, so the stamps of different jobs compare.  ID and TOKEN are REIGN_ID and
REIGN_TOKEN, which `reign run` sets; data reaches the job only through its environment.
"""
import os
import time

PERIOD = 0.005


def main():
    ident = os.environ["REIGN_ID"]
    token = int(os.environ["REIGN_TOKEN"])
    fd = os.open(os.environ["STAMP_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()
    kind = "start"
    while True:
        os.write(fd, f"{kind} {ident} {token} {pid} {time.monotonic_ns()}\n".encode())
        kind = "stamp"
        time.sleep(PERIOD)


if __name__ == "__main__":
    main()
