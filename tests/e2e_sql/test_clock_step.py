#!/usr/bin/env python3
"""test_clock_step.py - the store's wall clock stepped by an hour under a leader.

    test_clock_step.py sqlite|mariadb|postgres

No wall clock may decide who leads: a follower counts a lease's duration on its own monotonic
clock from the moment it first saw the lease's version, and the leader counts its guarantee
from when it sent its last renewal (docs/sql-leases.md).  libfaketime (Debian's `faketime`)
steps the clock the store reads: for MariaDB and PostgreSQL, the database server's own (a
server of the test's own, started under the library); for SQLite, whose clock is the host's,
that of every `reign` process (the host's clock stepped for all of them).  CLOCK_MONOTONIC
is left alone, as a real step leaves it.

Three campaigns a, b, c with 2 s leases; then:
  forward  the clock jumps an hour ahead while the leader renews: every lease row looks
           expired by an hour to the database, and nobody may take the live lease over -
           over three lease periods the leader stays and no one else is elected, and
           `reign rm` refuses to remove the election;
  back     the leader is frozen (SIGSTOP) and at once the clock jumps two hours back: its
           row looks an hour in the future, and a follower must still take over once the
           lease is over on its own clock (not an hour later); SIGCONT to the old leader,
           which demotes itself, dated no later than its successor's election.
check_leadership.py then proves from every line that no two leaderships overlapped and that
tokens strictly grew.
"""
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
LEASE_S = sqle.LEASE["lease_ms"] / 1000


def faketime_env(offset_file, preload="LD_PRELOAD"):
    """The environment that puts a process on the clock of offset_file (seconds, '+3600');
    preload names the variable that loads the library (the server scripts' own, so that
    their other programs do not load it)."""
    env = {preload: LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE": offset_file,
           "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    if preload == "LD_PRELOAD":
        # An AddressSanitizer build refuses to start behind a preloaded library unless told
        # that the order is wanted (faketime only wraps the clock calls).
        asan = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    return env


def step(offset_file, offset, store):
    """Steps the clock: every process under the library reads the offset at each call (no
    cache); a server's is checked through its own clock."""
    with open(offset_file + ".tmp", "w") as f:
        f.write(offset + "\n")
    os.chmod(offset_file + ".tmp", 0o644)
    os.rename(offset_file + ".tmp", offset_file)
    log(f"clock offset now {offset} s")
    if store.kind != "sqlite":
        want = int(offset)
        def stepped():
            ahead = db_clock_ahead(store)
            return [ahead] if abs(ahead - want) < 100 else None
        ahead = wait_for(stepped, f"the server's clock at {offset} s")[0]
        log(f"the server's clock is {ahead:.0f} s ahead of ours")


def db_clock_ahead(store):
    """How far (seconds) the database server's clock is ahead of ours."""
    now = ("SELECT extract(epoch FROM clock_timestamp())" if store.kind == "postgres"
           else "SELECT UNIX_TIMESTAMP(NOW(6))")
    return float(store.sql(now)[0][0]) - time.time()


def body(t, kind):
    check(os.path.exists(LIBFAKETIME), f"{LIBFAKETIME} missing: install Debian's faketime")
    # The offset file where PostgreSQL's own user can read it: the test's directory may lie
    # in one only its owner can enter (a fresh clone under mktemp -d).
    offset_dir = tempfile.mkdtemp(prefix="reign-clock-")
    try:
        run(t, kind, offset_dir)
    finally:
        shutil.rmtree(offset_dir, ignore_errors=True)


def run(t, kind, offset_dir):
    os.chmod(offset_dir, 0o755)
    offset_file = os.path.join(offset_dir, "clock-offset")
    with open(offset_file, "w") as f:
        f.write("+0\n")
    os.chmod(offset_file, 0o644)  # PostgreSQL runs as its own user
    if kind == "sqlite":
        store = sqle.Store(t, kind)
        proc_env = faketime_env(offset_file)
    else:
        server = sqle.SqlServer(t, kind, "server",
                                env=faketime_env(offset_file, "REIGN_SERVER_PRELOAD"))
        store = sqle.Store(t, kind, state_dir=server.dir)
        proc_env = None
    uri = store.uri()
    name = t.unique("clock")
    procs = [t.campaign(label, name, uri, env=proc_env) for label in ("a", "b", "c")]
    leader = sqle.wait_alive(lambda: sqle.leader_of(procs), "a first leader", procs)
    first = leader.elected()[-1]
    log(f"{leader.label} leads, term {first.term}")

    # forward: the leader must keep its lease; nobody else may be elected.
    step(offset_file, "+3600", store)
    time.sleep(3 * LEASE_S)
    for p in procs:
        check(p.alive(), f"{p.label} exited")
    others = [p.label for p in procs if p is not leader and p.elected()]
    check(not others, f"elected while {leader.label} held its lease: {others}")
    check(leader.leading() and leader.elected()[-1].term == first.term,
          f"{leader.label} lost its lease after the clock jumped forward: {leader.events()}")
    # `reign rm` must not take the lease for dead either when the store's clock as rm sees it
    # says it ran out (SQLite: rm's own clock, an hour further on; a server: the renewals
    # rewrite the time, so only a moment after a step would): rm watches the lease for a
    # whole lease on its own monotonic clock, sees it renewed, and refuses.
    rm_env = proc_env
    if kind == "sqlite":
        rm_offset = os.path.join(t.dir, "rm-clock-offset")
        with open(rm_offset, "w") as f:
            f.write("+7200\n")
        rm_env = faketime_env(rm_offset)
    rc, out, err = t.reign(["--uri", uri, "rm", name], env=rm_env)
    check(rc != 0 and "in use" in err, f"reign rm of a held election: {rc} {out!r} {err!r}")
    check(leader.leading() and leader.elected()[-1].term == first.term,
          f"{leader.label} lost its lease to reign rm: {leader.events()}")

    # back: the leader frozen, the clock two hours back; a follower takes over on its count.
    if kind == "sqlite":
        sqle.e2elib.stop_unlocked(leader, [store.path + x for x in ("", "-wal", "-shm")])
    else:
        leader.send(signal.SIGSTOP)
    stopped = time.monotonic()
    step(offset_file, "-3600", store)
    rest = [p for p in procs if p is not leader]
    successor = sqle.wait_alive(lambda: sqle.leader_of(rest), "a successor", rest)
    took = time.monotonic() - stopped
    log(f"{successor.label} elected {took:.1f} s after {leader.label} froze (lease "
        f"{LEASE_S:.0f} s, the row an hour in the database's future)")
    ev = successor.elected()[-1]
    check(ev.term > first.term and ev.token > first.token, f"{first} then {ev}")
    leader.send(signal.SIGCONT)
    dem = sqle.wait_alive(lambda: [e for e in leader.events() if e.kind == "demoted"],
                          f"{leader.label} demoted after SIGCONT", procs)[0]
    check(dem.ns <= ev.ns, f"{leader.label}'s leadership ended at {dem.ns}, after "
          f"{successor.label}'s election at {ev.ns}")

    step(offset_file, "+0", store)
    sqle.resign_all(procs)
    t.check_leadership(procs, min_leaderships=2)


if __name__ == "__main__":
    kind = sqle.backend_arg("test_clock_step.py")
    sqle.main(f"e2e_sql_clock_step_{kind}", lambda t: body(t, kind))
