#!/usr/bin/python3
"""etcd3_lock_candidate.py - one python-etcd3 lock holder standing as a candidate, a reference for
bench/etcd_failover.py.

It speaks the line protocol of `reign campaign` on stdout, so the harness times it the same way:

    standing <id> monotonic_ns=<ns>                          (its first try found the lock held)
    elected <id> term=0 token=0 monotonic_ns=<ns>
    demoted <id> reason=<why> monotonic_ns=<ns>

python-etcd3's Lock (etcd3.client(...).lock(name, ttl=...), Debian's python3-etcd3) is a key
/locks/NAME put on a lease of ttl seconds if it has no create revision; a waiter watches the key
and tries again on its next event.  It has no term or token: both are 0.  The holder keeps its
lease with lock.refresh() every ttl/3 seconds, as the library's documentation says a holder
must; a refresh that finds the lease gone demotes it.

Waiting: Lock.acquire() of python3-etcd3 0.12.0 cannot wait with the tenacity Debian 12 ships
(8.x): its wait callback has tenacity's old signature and the first wait raises TypeError
(reported upstream as kragniz/python-etcd3#2149; the fix, which drops tenacity, is not
released).  So the candidate runs acquire()'s own loop itself: one try (acquire(timeout=0) tries
once and never waits), then the library's watch_once() on the lock's key with acquire()'s
default timeout (10 s), then the next try.  That is what acquire() does in 0.12.0, including its
flaw: the watch starts at no revision, so a deletion between the try and the watch is missed
until the timeout.

SIGTERM: a holder releases the lock (deletes the key) and revokes its lease; a waiter exits.
Timestamps are time.monotonic_ns() (CLOCK_MONOTONIC, the clock of the reign CLI).  Run it with
Debian's /usr/bin/python3, which has python3-etcd3.
"""

import argparse
import os
import signal
import sys
import threading
import time

import etcd3
import etcd3.exceptions

WAIT_S = 10  # Lock.acquire()'s default timeout, which its wait hands to watch_once()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", required=True, help="HOST:PORT of an etcd member")
    ap.add_argument("--name", required=True, help="lock name (the key is /locks/NAME)")
    ap.add_argument("--ttl", type=int, required=True, help="the lock's lease, seconds")
    ap.add_argument("--id", required=True, help="candidate id")
    args = ap.parse_args()

    out_lock = threading.Lock()
    stop = threading.Event()
    state = {"leading": False}

    def emit(line):
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def on_term(signum, frame):
        if not state["leading"]:
            os._exit(0)  # a waiter holds nothing: its lease of the last try runs out
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    host, port = args.endpoint.rsplit(":", 1)
    client = etcd3.client(host=host, port=int(port))
    lock = client.lock(args.name, ttl=args.ttl)

    if not lock.acquire(timeout=0):  # one try: the lock is someone else's
        emit("standing %s monotonic_ns=%d" % (args.id, time.monotonic_ns()))
        while True:
            try:
                client.watch_once(lock.key, timeout=WAIT_S)
            except etcd3.exceptions.WatchTimedOut:
                pass
            if lock.acquire(timeout=0):
                break
    now = time.monotonic_ns()
    state["leading"] = True
    emit("elected %s term=0 token=0 monotonic_ns=%d" % (args.id, now))
    reason = "resigned"
    while not stop.wait(args.ttl / 3.0):
        try:
            ttl = lock.refresh()
            if ttl and ttl[0].TTL <= 0:
                reason = "lease_lost"
                break
        except Exception:  # noqa: BLE001 (the library raises grpc's errors as they come)
            reason = "lease_lost"
            break
    emit("demoted %s reason=%s monotonic_ns=%d" % (args.id, reason, time.monotonic_ns()))
    if reason == "resigned":
        lock.release()
        if lock.lease is not None:
            lock.lease.revoke()
    client.close()
    return 0 if reason == "resigned" else 1


if __name__ == "__main__":
    sys.exit(main())
