#!/usr/bin/python3
"""kazoo_zkfc.py - a minimal "health check + election" loop on kazoo, the reference of
bench/reignd.py: what ZKFC's HealthMonitor and ActiveStandbyElector do, and nothing more.

Every --interval-ms (start to start) it GETs --check (a 2xx answer is healthy, anything else or
no answer within the interval is a failure).  After the first healthy check it stands in kazoo's
Election at --election; elected, it runs `STAMP become_active` and holds the leadership until
--fall consecutive checks failed, then runs `STAMP become_standby` and leaves the election (its
lock node is deleted); healthy again, it stands again.  No fencing, no breadcrumb, no control
endpoint: a floor for what such a loop costs in Python, not a rival of reignd.

It says on stderr, one line each, with CLOCK_MONOTONIC nanoseconds:
    standing <ns>      joined the election
    leading <ns>       elected
    unhealthy <ns>     the fall-th failing check: leaving the election
The hooks get REIGN_NODE_ID and REIGN_SERVICE=web in their environment (bench/reignd_stamp.c).
Run it with Debian's /usr/bin/python3, which has python3-kazoo.  SIGTERM ends it.
"""

import argparse
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError


def say(word):
    sys.stderr.write("%s %d\n" % (word, time.monotonic_ns()))
    sys.stderr.flush()


def check(url, timeout_s):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout_s)
    try:
        conn.request("GET", u.path or "/")
        return 200 <= conn.getresponse().status < 300
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


class Node:
    def __init__(self, args):
        self.args = args
        self.client = KazooClient(hosts=args.hosts, timeout=args.session_ms / 1000.0)
        self.client.start(timeout=60)
        self.env = dict(os.environ, REIGN_NODE_ID=args.id, REIGN_SERVICE="web")
        self.election = None
        self.thread = None
        self.unhealthy = threading.Event()

    def hook(self, what):
        subprocess.run([self.args.stamp, what], env=self.env)

    def lead(self):
        say("leading")
        self.hook("become_active")
        self.unhealthy.wait()
        self.hook("become_standby")
        # returning releases the leadership: the Election deletes our lock node

    def stand(self):
        self.unhealthy.clear()
        self.election = self.client.Election(self.args.election, identifier=self.args.id)
        election = self.election

        def run():
            try:
                election.run(self.lead)
            except CancelledError:
                pass

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        say("standing")

    def leave(self):
        say("unhealthy")
        self.unhealthy.set()  # leading: lead() returns
        self.election.cancel()  # still waiting: give up
        self.election = None

    def loop(self, stop):
        interval = self.args.interval_ms / 1000.0
        fails = 0
        next_t = time.monotonic()
        while not stop.is_set():
            ok = check(self.args.check, interval)
            fails = 0 if ok else fails + 1
            if ok and self.election is None:
                self.stand()
            elif fails == self.args.fall and self.election is not None:
                self.leave()
            next_t += interval
            stop.wait(max(0.0, next_t - time.monotonic()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--election", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--check", required=True, help="http://host:port/path")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--fall", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=10000)
    ap.add_argument("--stamp", required=True, help="the hook program")
    args = ap.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    node = Node(args)
    node.loop(stop)
    if node.election is not None:
        node.leave()
    node.client.stop()
    node.client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
