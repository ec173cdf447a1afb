#!/usr/bin/python3
"""kazoo_candidate.py - one kazoo Election candidate, the Python reference for bench/failover.py.

It speaks the line protocol of `reign campaign` on stdout, so the harness times every
implementation the same way:

    elected <id> term=0 token=<seq> monotonic_ns=<ns>
    demoted <id> reason=<why> monotonic_ns=<ns>

kazoo's Election has no term: term is 0 and token is the sequence number of the lock node.
Timestamps are time.monotonic_ns() (CLOCK_MONOTONIC, the clock of the reign CLI).

Election.run(func) holds leadership while func runs, so func waits on an Event that SIGTERM
sets; the Election then releases (deletes its node), and the client closes its session.  A
SIGTERM that arrives while still waiting cancels the election instead.  Run it with Debian's
/usr/bin/python3, which has python3-kazoo.
"""

import argparse
import signal
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True, help="HOST:PORT of ZooKeeper")
    ap.add_argument("--session-timeout", type=int, required=True, help="requested, in ms")
    ap.add_argument("--path", required=True, help="election path, e.g. /bench/kazoo/x")
    ap.add_argument("--id", required=True, help="candidate id")
    args = ap.parse_args()

    out_lock = threading.Lock()
    state = {"leading": False}
    stop = threading.Event()

    def emit(line):
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def demote(reason):
        now = time.monotonic_ns()
        with out_lock:
            if not state["leading"]:
                return
            state["leading"] = False
            sys.stdout.write("demoted %s reason=%s monotonic_ns=%d\n" % (args.id, reason, now))
            sys.stdout.flush()

    client = KazooClient(hosts=args.connect, timeout=args.session_timeout / 1000.0)
    client.start(timeout=60)
    election = client.Election(args.path, identifier=args.id)

    def on_state(s):
        # kazoo's Election does not step down by itself on a lost connection; say so when it
        # happens, in the CLI's words, so the harness sees every end of a leadership.
        if s == KazooState.LOST:
            demote("session_lost")
        elif s == KazooState.SUSPENDED:
            demote("suspended")

    client.add_listener(on_state)

    def lead():
        now = time.monotonic_ns()
        node = election.lock.node or ""
        seq = int(node[-10:]) if node[-10:].isdigit() else 0
        with out_lock:
            state["leading"] = True
            sys.stdout.write("elected %s term=0 token=%d monotonic_ns=%d\n" % (args.id, seq, now))
            sys.stdout.flush()
        stop.wait()

    def on_term(signum, frame):
        demote("resigned")
        stop.set()  # leading: lead() returns and the Election deletes our node
        election.cancel()  # still waiting: the Election gives up and deletes our node

    signal.signal(signal.SIGTERM, on_term)
    try:
        election.run(lead)
    except CancelledError:
        pass
    client.stop()
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
