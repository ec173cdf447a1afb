#!/usr/bin/env python3
"""test_stop_fence.py - a leader frozen past its lease: demoted on waking, its writes fenced.

    test_stop_fence.py sqlite|mariadb|postgres

Two `reign run` processes, a and b, run fence_client.py while they lead: it writes to a fence
table of the test's own (a one-row table that accepts a write only if its token is at least
the highest it has accepted - the database decides, in one statement) with REIGN_TOKEN, and
logs every attempt.  The fence lives in the same database as the leases (SQLite: a file of
its own beside them).

a leads and writes, through a writer that escaped reign run's process group (FENCE_ESCAPE: a
daemon its command started).  SIGSTOP to a's reign: its leash kills the command's group before
the lease could have lapsed, but the escaped writer goes on writing, as a stale leader's work
would.  Past a's lease, b is elected with a higher term and token (term == token on a lease)
and its command writes; from then on the fence refuses the escaped writer's writes (the test
waits for a refused one).  SIGCONT to a: it prints `demoted reason=stalled` (or suspended,
should its connection have been judged lost meanwhile) at once, dated no later than b's
election; the test ends the escaped writer itself.  check_leadership.py proves
from both processes' leadership lines that they never overlapped.  b then resigns on SIGTERM
(its command exits 0, so does reign); a, standing again, is elected with a still higher
term and its writes are accepted.  An observer (`reign watch`) reports each of the three
leaderships, b's too, which began with a take of a lease that ran out (no release told of it).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

seen = sqle.e2e_module("test_watch").seen

FENCE_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fence_client.py")


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def make_fence(t, store):
    """The fence table, token 0; returns (table, environment for fence_client.py)."""
    table = sqle.table_name("fence")
    env = {"FENCE_KIND": store.kind, "FENCE_TABLE": table,
           "FENCE_LOG": os.path.join(t.dir, "fence.log")}
    if store.kind == "sqlite":
        fence = sqle.Store(t, "sqlite", table=table, file=os.path.join(t.dir, "fence.db"))
        env["FENCE_DB"] = fence.path
        fence.sql(f'CREATE TABLE "{table}" (id INTEGER PRIMARY KEY, token INTEGER NOT NULL, '
                  "writes INTEGER NOT NULL)")
        fence.sql(f'INSERT INTO "{table}" VALUES (1, 0, 0)')
        return fence, env
    q = store.quoted(table)
    store.sql(f"CREATE TABLE {q} (id int PRIMARY KEY, token bigint NOT NULL, "
              f"writes bigint NOT NULL)")
    store.sql(f"INSERT INTO {q} VALUES (1, 0, 0)")
    store.grant(table)
    env["FENCE_PORT"] = str(store.port)
    env["FENCE_PASSWORD_FILE"] = store.password_file
    return sqle.Store(t, store.kind, table=table, state_dir=store.state), env


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("stop")
    fence, env = make_fence(t, store)
    open(env["FENCE_LOG"], "w").close()

    def records(kind_, ident=None):
        with open(env["FENCE_LOG"]) as f:
            return [line.split() for line in f
                    if line.startswith(kind_ + " ") and (ident is None or line.split()[1] == ident)]

    def runner(ident, escape=False):
        return t.spawn(ident, [t.cli, "--uri", uri, "--log-level", "info", "run", name, "--id",
                               ident, "--grace", "5", "--", sys.executable, FENCE_CLIENT],
                       dict(env, FENCE_ESCAPE="1" if escape else "0"))

    w = t.watch("watch", name, uri)
    sqle.wait_alive(lambda: seen(w), "the observer's first line", [w])

    def observer_reports(ev):
        return wait_for(lambda: seen(w) and seen(w)[-1] == (ev.ident, ev.term, ev.token),
                        f"the observer to report {ev.ident} term {ev.term}")

    a = runner("a", escape=True)
    start_a = sqle.wait_alive(lambda: records("start", "a"), "a's command to start", [a])[0]
    a_pid, a_token = int(start_a[4]), int(start_a[3])
    t.extra_pids.append(a_pid)
    wait_for(lambda: records("accepted", "a"), "a's first write")
    a_ev = sqle.run_events(a)[-1]
    check(a_ev.kind == "elected" and a_ev.token == a_token and a_ev.term == int(start_a[2]),
          f"a's elected line {a_ev} vs its command's {start_a}")
    check(a_ev.term == a_ev.token, f"term != token on a lease: {a_ev}")
    b = runner("b")

    a.send(signal.SIGSTOP)
    b_ev = sqle.wait_alive(lambda: [e for e in sqle.run_events(b) if e.kind == "elected"],
                           "b elected while a is stopped", [a, b])[0]
    check(b_ev.term > a_ev.term and b_ev.token > a_ev.token, f"{a_ev} then {b_ev}")
    observer_reports(b_ev)
    start_b = wait_for(lambda: records("start", "b"), "b's command to start")[0]
    t.extra_pids.append(int(start_b[4]))
    check(int(start_b[3]) == b_ev.token, f"b's command got token {start_b[3]}, want {b_ev}")
    wait_for(lambda: [r for r in records("accepted", "b") if int(r[2]) == b_ev.token],
             "b's first write")
    refused = wait_for(lambda: [r for r in records("refused", "a") if int(r[3]) >= b_ev.token],
                       "a stale write of a's command, refused by the fence")[0]
    log(f"stale write refused: {' '.join(refused)}")
    check(pid_alive(a_pid), "a's escaped writer died while a was stopped")
    sqle.wait_alive(lambda: "leash: SIGKILL to process group" in a.err(),
                    "a's leash to kill its command's group", [b])
    check(all(int(r[2]) == a_token for r in records("accepted", "a")),
          f"a's command wrote with another token: {records('accepted', 'a')}")

    a.send(signal.SIGCONT)
    dem = sqle.wait_alive(lambda: [e for e in sqle.run_events(a) if e.kind == "demoted"],
                          "a demoted after SIGCONT", [a, b])[0]
    check(dem.reason in ("stalled", "suspended"), f"a demoted with reason {dem.reason}")
    if dem.reason != "stalled":
        log(f"note: a's demotion says {dem.reason}, not stalled")
    check(dem.ns <= b_ev.ns, f"a's leadership ended at {dem.ns}, after b's election at {b_ev.ns}")
    log(f"a demoted ({dem.reason}) {(b_ev.ns - dem.ns) / 1e6:.1f} ms before b's election")
    os.kill(a_pid, signal.SIGTERM)  # beyond reign's reach: ours to end
    wait_for(lambda: not pid_alive(a_pid), "a's escaped writer to end")
    check(a.alive() and b.alive(), "a reign process exited")
    check(len([e for e in sqle.run_events(a) if e.kind == "elected"]) == 1,
          f"a elected again while b leads: {sqle.run_events(a)}")

    # b resigns; a, standing again, takes over with a new term, and the fence takes its writes.
    b.send(signal.SIGTERM)
    check(b.wait() == 0, f"b's reign exited {b.returncode()}")
    a_again = sqle.wait_alive(lambda: [e for e in sqle.run_events(a) if e.kind == "elected"][1:],
                              "a elected again", [a])[0]
    check(a_again.term > b_ev.term, f"a's new term {a_again.term} after b's {b_ev.term}")
    observer_reports(a_again)
    start_a2 = wait_for(lambda: records("start", "a")[1:], "a's command to start again")[0]
    t.extra_pids.append(int(start_a2[4]))
    wait_for(lambda: [r for r in records("accepted", "a") if int(r[2]) == a_again.token],
             "a's write with its new token")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, f"a's reign exited {a.returncode()}")
    t.check_leadership([sqle.run_view(a), sqle.run_view(b)], min_leaderships=3)
    highest = int(fence.sql(f"SELECT token FROM {fence.quoted()} WHERE id = 1")[0][0])
    check(highest == a_again.token, f"the fence's token {highest}, want {a_again.token}")
    errors = records("error")
    if errors:
        log(f"note: {len(errors)} fence write(s) failed, e.g. {' '.join(errors[0])}")


if __name__ == "__main__":
    kind = sqle.backend_arg("test_stop_fence.py")
    sqle.main(f"e2e_sql_stop_fence_{kind}", lambda t: body(t, kind))
