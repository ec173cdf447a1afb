#!/usr/bin/env python3
"""test_run_leash.py - a runner that fails never leaves its command running beside the next.

    test_run_leash.py zookeeper|sqlite|mariadb|postgres

Three copies of `reign run NAME -- stamp_job.py` stand in one election (a 2 s session or
lease).  The job of whichever leads appends "start" and then a stamp every 5 ms, each with its
token and its own CLOCK_MONOTONIC time, to one shared file (stamp_job.py).  The runner whose
job runs is then hit by each fault in turn, twice:

  kill    SIGKILL to the runner: the guardian kills its job, then ends its leadership;
  stop    SIGSTOP to the runner until the next job has run a while, then SIGCONT: the stopped
          runner can do nothing, so its job must be killed by the leash (reign(1)) before any
          other candidate could be elected - without it, the job writes on beside the next;
  cutoff  the runner's TCP proxy (reign_tcpproxy) freezes, as in a network partition, until
          the next job has run a while: the runner demotes itself on its own clock and stops
          its job before its session or lease could have lapsed.  Not on SQLite: a file has
          no network to cut, and a stopped process is the stop fault;
  term    SIGTERM to the runner: it passes it on to its job and resigns once the job is gone.

On SQLite a runner stopped inside a write transaction keeps the file's write lock, and no copy
can take the lease over until it runs again (safe, but not what this test is about): a runner
caught holding it (/proc/locks) is continued and stopped again.

A killed or terminated runner is replaced by a new copy.  After every fault the next job must
come from another runner, and once every runner has exited the file must show that no two
jobs' intervals (from their start to their last stamp) ever overlapped, by the jobs' own
clocks, and that each job's token is higher than the one before it (a job started again in
the same leadership keeps its token: equal is allowed only from the same runner).
"""
import os
import signal
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
import e2elib  # noqa: E402
from e2elib import check, env_path, log, main, process_runs, wait_for  # noqa: E402

STAMP_JOB = os.path.join(HERE, "stamp_job.py")
STORES = ("zookeeper", "sqlite", "mariadb", "postgres")
SESSION_MS = 2000
TRIALS = 2
RUN_A_WHILE = 40  # stamps (about 200 ms) of the next job before a stopped runner goes on


def stop(r, kind, db):
    """SIGSTOP to runner r, not while it holds SQLite's write lock (see above)."""
    if kind == "sqlite":
        e2elib.stop_unlocked(r.proc, [db, db + "-wal", db + "-shm"])
    else:
        r.proc.send(signal.SIGSTOP)


def read_jobs(path):
    """The jobs of the stamp file, in the order they started: namespaces of ident, token,
    pid, start and end (its last stamp, CLOCK_MONOTONIC ns) and stamps (how many)."""
    with open(path, "rb") as f:
        data = f.read().decode()
    jobs = {}
    for line in data[:data.rfind("\n") + 1].splitlines():
        kind, ident, token, pid, ns = line.split()
        if kind == "start":
            jobs[pid] = types.SimpleNamespace(ident=ident, token=int(token), pid=int(pid),
                                              start=int(ns), end=int(ns), stamps=0)
        else:
            j = jobs[pid]
            check(j.ident == ident and j.token == int(token), f"job {pid}: line {line!r}")
            j.end, j.stamps = int(ns), j.stamps + 1
    return sorted(jobs.values(), key=lambda j: j.start)


def check_jobs(jobs):
    """No two intervals overlap; tokens grow with start order."""
    for prev, cur in zip(jobs, jobs[1:]):
        check(cur.start > prev.end,
              f"job {cur.pid} of {cur.ident} (token {cur.token}) started "
              f"{(prev.end - cur.start) / 1e6:.1f} ms before job {prev.pid} of {prev.ident} "
              f"(token {prev.token}) last wrote: two jobs ran at once")
        check(cur.token > prev.token or (cur.token == prev.token and cur.ident == prev.ident),
              f"token {cur.token} of {cur.ident}'s job after {prev.token} of {prev.ident}'s")


def body(t, kind):
    proxied = kind != "sqlite"
    if kind == "zookeeper":
        target = t.shared_hosts()
        check("," not in target, f"a single server expected, got {target}")

        def uri(hostport=None):
            return t.uri(hostport or target, session_timeout_ms=SESSION_MS)
    else:
        import sqle
        store = sqle.Store(t, kind)
        check(store.uri() and sqle.LEASE["lease_ms"] == SESSION_MS, "a 2 s lease")
        target = None if kind == "sqlite" else f"127.0.0.1:{store.port}"

        def uri(hostport=None):
            if hostport is None:
                return store.uri()
            check(target in store.base, f"{target} in {store.base}")
            return store.uri(base=store.base.replace(target, hostport))

    db = store.path if kind == "sqlite" else None
    name = t.unique("e2e-leash")
    stamps = os.path.join(t.dir, "stamps")
    open(stamps, "w").close()
    env = {"STAMP_FILE": stamps}
    runners = {}  # ident -> namespace(proc, proxy)

    def add_runner():
        ident = f"r{len(t.procs)}"
        proxy = None
        if proxied:
            proxy = t.spawn(f"proxy-{ident}", [env_path("REIGN_TCPPROXY"), "0", target])
            port = int(wait_for(lambda: proxy.lines(), "the proxy's port")[0])
        proc = t.spawn(ident, [t.cli, "--uri", uri(f"127.0.0.1:{port}" if proxied else None),
                               "--log-level", "info", "run", name, "--id", ident, "--grace",
                               "5", "--", sys.executable, STAMP_JOB], env)
        wait_for(lambda: "run: info: connected" in proc.err(), f"{ident} to connect")
        runners[ident] = types.SimpleNamespace(proc=proc, proxy=proxy)

    def running(after=None, min_stamps=3):
        """The latest job once it has stamped min_stamps times (and started after `after`)."""
        jobs = read_jobs(stamps)
        j = jobs[-1] if jobs else None
        if j and j.stamps >= min_stamps and (after is None or j.start > after.start):
            for p in jobs:
                t.extra_pids.append(p.pid)
            return j
        return None

    for _ in range(3):
        add_runner()
    faults = ["kill", "stop", "cutoff", "term"] if proxied else ["kill", "stop", "term"]
    for trial in range(TRIALS):
        for fault in faults:
            cur = wait_for(running, "a job running")
            r = runners[cur.ident]
            log(f"trial {trial + 1}, {fault}: {cur.ident}'s job {cur.pid} (token {cur.token})")
            if fault == "kill":
                r.proc.kill9()
            elif fault == "stop":
                stop(r, kind, db)
            elif fault == "cutoff":
                r.proxy.send(signal.SIGUSR1)
                wait_for(lambda: "frozen" in r.proxy.err(), "the proxy to freeze")
            else:
                r.proc.send(signal.SIGTERM)
            nxt = wait_for(lambda: running(cur), f"the next job after {fault}")
            check(nxt.ident != cur.ident, f"{cur.ident} ran the next job after {fault}")
            log(f"next: {nxt.ident}'s job {nxt.pid} (token {nxt.token})")
            check_jobs(read_jobs(stamps))
            if fault in ("stop", "cutoff"):
                check(not process_runs(cur.pid),
                      f"{cur.ident}'s job {cur.pid} still runs beside {nxt.ident}'s ({fault})")
                wait_for(lambda: running(cur, RUN_A_WHILE), "the next job to run a while")
                if fault == "stop":
                    r.proc.send(signal.SIGCONT)
                else:
                    r.proxy.send(signal.SIGUSR2)
                    wait_for(lambda: "thawed" in r.proxy.err(), "the proxy to thaw")
            else:
                if fault == "term":
                    rc = r.proc.wait()
                    check(rc == 128 + signal.SIGTERM, f"{cur.ident} exited {rc}, want 143 "
                          "(its job's status: killed by SIGTERM)")
                del runners[cur.ident]
                add_runner()

    for r in runners.values():
        r.proc.send(signal.SIGTERM)
    for ident, r in runners.items():
        rc = r.proc.wait()
        # A runner added last may still be finishing its connection (it says so, and exits 1).
        check(rc in (0, 128 + signal.SIGTERM) or (rc == 1 and "interrupted while connecting"
                                                  in r.proc.err()), f"{ident} exited {rc}")
    jobs = read_jobs(stamps)
    check_jobs(jobs)
    for j in jobs:
        check(not process_runs(j.pid), f"{j.ident}'s job {j.pid} outlived its runner")
    log(f"{len(jobs)} jobs, none overlapping, tokens {[j.token for j in jobs]}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STORES:
        sys.exit(f"usage: test_run_leash.py {'|'.join(STORES)}")
    store_kind = sys.argv[1]
    if store_kind == "zookeeper":
        main("e2e_run_leash_zookeeper", lambda t: body(t, store_kind))
    else:
        import sqle
        sqle.main(f"e2e_run_leash_{store_kind}", lambda t: body(t, store_kind))
