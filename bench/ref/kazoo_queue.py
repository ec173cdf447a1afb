#!/usr/bin/python3
"""kazoo_queue.py - kazoo's LockingQueue end to end, the Python reference for bench/tasks.py.

    kazoo_queue.py --connect HOST:PORT --items N --window W --consumers C [--producers P]

P producer processes put N items between them into a kazoo LockingQueue (each item's node
made as LockingQueue.put makes it, with create_async, so that W items are in flight - put and
not yet consumed - in all, as in tasks-bench's queue mode), and C consumer processes, each with its own session, take them
with LockingQueue.get() and LockingQueue.consume() - the recipe as kazoo ships it: a consumer
locks an entry with an ephemeral node under taken/, reads it, and deletes the entry and its
lock in one transaction.  An item is timed from its put to its consume (time.monotonic(),
CLOCK_MONOTONIC, the same in every process).  The server's zxid is read before and after (the
czxid of a marker node), so writes per item are the server's count.

Prints one JSON line like tasks-bench's: items (as "tasks"), seconds, tasks_per_s,
writes_per_task, latency_p50_ms, latency_p99_ms.  Run it with Debian's /usr/bin/python3,
which has python3-kazoo.
"""

import argparse
import json
import multiprocessing as mp
import os
import statistics
import struct
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.queue import LockingQueue

ROOT = "/reign-bench/kazoo-queue"


def connect(hosts):
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    return zk


def zxid(zk, tag):
    """The server's current zxid: the czxid of a node made now."""
    path = zk.create("%s/marker-%s-" % (ROOT, tag), b"", sequence=True, makepath=True)
    zxid_now = zk.exists(path).czxid
    zk.delete(path)
    return zxid_now


def producer(hosts, path, count, window, put, done, go):
    """Puts `count` items, never more than `window` put and not yet consumed in all."""
    zk = connect(hosts)
    q = LockingQueue(zk, path)
    q._ensure_paths()  # what put() does first
    prefix = "%s/%s-%03d-" % (q._entries_path, q.entry, 100)  # put()'s node, priority 100
    answers = threading.Semaphore(0)
    go.wait()
    for _ in range(count):
        while True:
            with put.get_lock():
                if put.value - done.value < window:
                    put.value += 1
                    break
            time.sleep(0.0002)
        value = struct.pack("<d", time.monotonic())
        zk.create_async(prefix, value, sequence=True).rawlink(lambda _r: answers.release())
    for _ in range(count):
        answers.acquire()
    zk.stop()
    zk.close()


def consumer(hosts, path, total, done, latencies, go):
    zk = connect(hosts)
    q = LockingQueue(zk, path)
    go.wait()
    mine = []
    while True:
        with done.get_lock():
            if done.value >= total:
                break
        value = q.get(timeout=0.5)
        if value is None:
            continue
        if q.consume():
            mine.append(time.monotonic() - struct.unpack("<d", value[:8])[0])
            with done.get_lock():
                done.value += 1
    latencies.put(mine)
    zk.stop()
    zk.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--consumers", type=int, default=1)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=300, help="seconds before giving up")
    a = ap.parse_args()

    path = "%s/q-%d-%d" % (ROOT, os.getpid(), int(time.time() * 1000))
    zk = connect(a.connect)
    LockingQueue(zk, path)._ensure_paths()
    go = mp.Event()
    done = mp.Value("i", 0)
    put = mp.Value("i", 0)
    latencies = mp.Queue()
    each = [a.items // a.producers + (1 if i < a.items % a.producers else 0)
            for i in range(a.producers)]
    procs = [mp.Process(target=consumer, args=(a.connect, path, a.items, done, latencies, go))
             for _ in range(a.consumers)]
    procs += [mp.Process(target=producer, args=(a.connect, path, n, a.window, put, done, go))
              for n in each if n]
    for p in procs:
        p.start()
    time.sleep(1.0)  # every session made before the clock starts
    z0 = zxid(zk, "before")
    t0 = time.monotonic()
    go.set()
    while done.value < a.items:
        time.sleep(0.001)
        failed = [p for p in procs if p.exitcode not in (None, 0)]
        if failed or time.monotonic() - t0 > a.timeout:
            for p in procs:
                p.kill()
            raise SystemExit("kazoo_queue: %d of %d items consumed, %s" % (
                done.value, a.items, "a process failed" if failed else "timed out"))
    seconds = time.monotonic() - t0
    z1 = zxid(zk, "after")  # before the sessions close (each close is a transaction)
    lat = []
    for _ in range(a.consumers):
        lat += latencies.get()
    for p in procs:
        p.join()
    zk.delete(path, recursive=True)
    zk.stop()
    zk.close()
    lat.sort()
    print(json.dumps({
        "tasks": a.items, "consumers": a.consumers, "producers": a.producers,
        "window": a.window, "seconds": round(seconds, 4),
        "tasks_per_s": round(a.items / seconds, 1),
        # the marker's create and delete between the two reads are not the queue's
        "writes_per_task": round((z1 - z0 - 2) / a.items, 3),
        "latency_p50_ms": round(1000 * statistics.median(lat), 2) if lat else None,
        "latency_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2) if lat else None,
    }))


if __name__ == "__main__":
    main()
