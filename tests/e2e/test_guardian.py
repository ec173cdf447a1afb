#!/usr/bin/env python3
"""test_guardian.py SCENARIO - the guardian (reign-guardian) ends a dead client's leaderships.

A client of the `reign` tool runs a guardian: a process of its own session that, when the
client's process dies (SIGKILL here), SIGKILLs the process groups it was given, waits until
none of their processes runs, and then closes the ZooKeeper session (or releases the SQL
leases), saying so in one line on the client's stderr:

    reign-guardian[G]: process P died: killed process group N; closed ZooKeeper session 0x...

The sessions and leases here are long (20 s), so that a takeover through the guardian and
one through expiry cannot be mistaken; the guardian's line and the successor's `elected` are
what each scenario checks.  "Before the session could have expired" is checked only as
evidence that the guardian acted, never as a bound on how fast.  Scenarios (one ctest entry
each; run_kill also on SQL stores, through tests/e2e_sql/test_guardian.py):

  run_kill       a leading `reign run` is SIGKILLed while its command (a shell script) runs a
                 ticker and a sleep in its group.  When the successor's command starts, no
                 process of the old group runs: the successor's command lists, at its start,
                 the live processes of that group from /proc (none), and no tick of the old
                 ticker comes after its start line in the stamps file.
  run_leftovers  the command of `reign run` exits by itself, leaving a ticker and `sleep 31` in
                 its group: they are killed before reign resigns (the next leader's command
                 finds none of them, and none runs when reign has exited); no guardian line.
  stop           SIGSTOP of a leading `reign campaign` for less than the session timeout: the
                 other candidate is not elected meanwhile, the guardian stays and does not act;
                 after SIGCONT and a resignation, check_leadership proves no overlap.
  stop_expired   a leader SIGSTOPped past its session: the other is elected; then SIGKILL to
                 the stopped one: its guardian finds the session expired, says so, and the new
                 leader leads on undisturbed.
  socket_closed  a leader closes its guardian's socket (tests/integration/guardian_client.c):
                 the old guardian leaves without acting once its grace is over, the leader
                 keeps leading (no demotion, nobody else elected, the same session) and runs a
                 new guardian, which acts when the leader is then SIGKILLed.
  guardian_killed  the guardian of a leading `reign campaign` is SIGKILLed: the client says so
                 once, goes on leading, starts another, which acts when the client is killed.
  group_signals  SIGINT, then SIGTERM, to the process group of a leading `reign campaign`
                 (each in a session of its own): each resigns and exits 0, its guardian leaves
                 without acting; SIGKILL to a leader's whole group: its guardian, in a session
                 of its own, survives and acts.
  helper_late    the helper is missing when a leader starts (REIGN_GUARDIAN_PATH names no file
                 yet): it warns once and leads without; the helper appears: the client's next
                 try starts it ("started again"), and it acts when the leader is killed.
  register_kill  a `reign register` member SIGKILLed leaves `reign members` at once, long
                 before its session could have expired.
  history        a leading `reign campaign` a is SIGKILLed with b standing: once b is elected,
                 `reign history --json` says a's leadership ended with end=guardian at a time
                 written (not estimated), and a's record itself, read raw, carries end=guardian
                 and ended_ms and was rewritten once (version 1, as zk.h counts).  The guardian
                 writes the end before it ends the session, so it is there when b is elected.
  history_credentials  the same under a chroot with digest credentials (zk://alice@...): the
                 record's ACL lets only alice write, so the guardian authenticates as alice,
                 told the credentials on its socket only (the password is on no output).
  history_written_etcd  the same on etcd: the guardian's txn finds the key past its first
                 version, and the lease is revoked all the same.
  history_many   one process (examples/service-masters, guardian=on in its URI) masters three
                 elections on one session; SIGKILLed, its guardian ends all three records,
                 each with end=guardian, and the other process masters all three.
  history_etcd   the same as history on etcd (the shared member), under a key prefix: the
                 guardian's end is a txn at version 0 before it revokes the lease.
  history_written  a's record is rewritten by someone else while a leads (its version is 1,
                 as after an end of its own): when a is killed, its guardian's write fails
                 (version 0 expected), says so, and the session is closed all the same: b is
                 elected before the session could have expired; the record keeps what was
                 written, and the history reads no end of the guardian's.
"""
import base64
import json
import os
import re
import signal
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e_sql"))
import e2elib  # noqa: E402
from e2elib import Failure, check, env_path, log, wait_for  # noqa: E402
import sqle  # noqa: E402  (the `reign run` lines on stderr)

HOLD_MS = 20000  # session timeout or lease: far longer than any takeover through the guardian

# The line starts with the local time (stderr is not the journal here): not checked.
GUARDIAN_RE = re.compile(r"^(?:\S+ \S+ )?reign-guardian\[(\d+)\]: process (\d+) died: (.*) "
                         r"\(([\d.]+) ms\)$")

# The command of `reign run` (sh FILE): a start stamp with its group (its pid: reign runs it in
# a session of its own) and the live processes of the previous leader's group (read from
# /proc, zombies left out), then a ticker and a sleep in its group.  MODE=exit: once the file
# $GO exists, it exits and leaves both behind.  A constant script: data comes in variables.
STAMP_SH = r'''
prev=$(sed -n 's/^start [^ ]* \([0-9]*\) .*/\1/p' "$STAMPS" | tail -n 1)
live=
if [ -n "$prev" ]; then
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null < "$f" || continue
        set -- ${line##*) }
        if [ "$3" = "$prev" ] && [ "$1" != Z ]; then p=${f#/proc/}; live="$live,${p%/stat}"; fi
    done
fi
echo "start $REIGN_ID $$ $REIGN_TERM live=${live#,}" >> "$STAMPS"
(while :; do echo "tick $REIGN_ID $$" >> "$STAMPS"; sleep 0.05; done) &
sleep 31 &
if [ "$MODE" = exit ]; then
    while [ ! -e "$GO" ]; do sleep 0.02; done
    exit 0
fi
wait
'''


# ---- processes, from /proc ----------------------------------------------------------------

def _stat(pid):
    """(state, pgrp, ppid) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(")") + 2:].split()
    return fields[0], int(fields[2]), int(fields[1])


def running(pid):
    """The process exists and is not a zombie (a zombie runs no more: only its parent's wait
    is left, and a dead guardian is nobody's child to wait for)."""
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def group_members(pgid):
    """The processes of group pgid that still run."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _stat(d)
            if st and st[1] == pgid and st[0] not in ("Z", "X"):
                out.append(int(d))
    return sorted(out)


def guardians_of(pid):
    """The running guardians of client process pid (argv: reign-guardian PID).  The helper
    forks once at its start and its first process, the client's child, exits: that one is no
    guardian, however long it takes to go (long, under ASan)."""
    want = f"reign-guardian\0{pid}\0".encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        st = _stat(d)
        if cmd == want and st and st[0] not in ("Z", "X") and st[2] != pid:
            out.append(int(d))
    return out


def the_guardian_of(proc, other_than=None):
    """Waits until proc's client runs exactly one guardian (other than `other_than`)."""
    def one():
        g = [p for p in guardians_of(proc.pid) if p != other_than]
        return g[0] if len(g) == 1 else None
    g = wait_for(one, f"{proc.label}'s guardian")
    log(f"{proc.label} (pid {proc.pid}): guardian {g}")
    return g


def guardian_lines(proc):
    """The lines on proc's stderr in which a guardian says it acted: (guardian pid, client
    pid, report).  (A guardian that leaves without acting may say so too: not counted.)"""
    out = []
    for line in proc.err().splitlines():
        m = GUARDIAN_RE.match(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
        elif "died" in line and "reign-guardian[" in line:
            raise Failure(f"{proc.label}: a guardian line of an unknown form: {line}")
    return out


def the_guardian_line(proc, wants, guardian=None):
    """Waits for the one line of proc's guardian (pid `guardian` if given) and checks that its
    report holds every string of `wants`; returns the report."""
    lines = wait_for(lambda: guardian_lines(proc), f"the guardian's line on {proc.label}'s "
                     "stderr")
    check(len(lines) == 1, f"{proc.label}: {len(lines)} guardian lines: {lines}")
    gpid, cpid, report = lines[0]
    check(cpid == proc.pid, f"the guardian's line names process {cpid}, not {proc.pid}")
    check(guardian is None or gpid == guardian,
          f"the line comes from guardian {gpid}, not {guardian}")
    for w in wants:
        check(w in report, f"{proc.label}'s guardian: '{report}' does not say '{w}'")
    log(f"{proc.label}'s guardian {gpid}: {report}")
    return report


def no_guardian_line(procs):
    for p in procs:
        check(not guardian_lines(p), f"{p.label}'s guardian acted: {guardian_lines(p)}")


def wait_gone(pid, what):
    wait_for(lambda: not running(pid), what)


def before_expiry(ev_ns, killed_ns, what):
    """Evidence that the guardian, not expiry, ended the leadership (not a bound on speed):
    the successor was elected before the killed one's session or lease could have run out."""
    check(ev_ns >= killed_ns, f"{what} at {ev_ns}, before the kill at {killed_ns}")
    check(ev_ns < killed_ns + HOLD_MS * 1_000_000,
          f"{what} {(ev_ns - killed_ns) / 1e6:.0f} ms after the kill: the session or lease "
          f"expired, the guardian did not end it")
    log(f"{what} {(ev_ns - killed_ns) / 1e6:.1f} ms after the kill")


def zk_uri(t):
    return t.uri(t.shared_hosts(), session_timeout_ms=HOLD_MS)


def zk_ended(proc):
    sid = proc.session_id()
    check(sid, f"{proc.label} logged no session")
    if "etcd: lease " in proc.err():
        return f"revoked etcd lease 0x{sid}"
    return f"closed ZooKeeper session 0x{sid}"


# ---- reign run ----------------------------------------------------------------------------

class Stamps:
    """The stamps file the commands of `reign run` share, and their script."""

    def __init__(self, t):
        self.path = os.path.join(t.dir, "stamps")
        open(self.path, "w").close()
        self.script = os.path.join(t.dir, "command.sh")
        with open(self.script, "w") as f:
            f.write(STAMP_SH)

    def lines(self):
        with open(self.path) as f:
            return [line.split() for line in f.read().splitlines()]

    def start(self, ident):
        """The start stamp of `ident`'s command: (group, term, [live pids of the previous
        group]) or None."""
        for s in self.lines():
            if s[0] == "start" and s[1] == ident and len(s) == 5:
                live = s[4][len("live="):]
                return int(s[2]), int(s[3]), [int(x) for x in live.split(",") if x]
        return None

    def ticks_after_start(self, ticker, group, ident):
        """Ticks of `ticker`'s group written after `ident`'s start stamp."""
        lines = self.lines()
        i = next(k for k, s in enumerate(lines) if s[0] == "start" and s[1] == ident)
        return [s for s in lines[i + 1:] if s[:3] == ["tick", ticker, str(group)]]


def runner(t, label, name, uri, stamps, env=None):
    e = {"STAMPS": stamps.path}
    e.update(env or {})
    return t.spawn(label, [t.cli, "--uri", uri, "--log-level", "info", "run", name, "--id", label,
                           "--grace", "5", "--", "sh", stamps.script], e)


def wait_standing(t, proc, name, uri):
    """Waits until proc stands in election `name`: on ZooKeeper, its node is in status; a SQL
    lease has no candidates to list, and a follower's first read comes once it is
    connected."""
    if uri.startswith("zk://"):
        two_candidates(t, name, uri, proc.label)
    else:
        sqle.wait_alive(lambda: "client: connected" in proc.err(), f"{proc.label} connected",
                        [proc])


def run_elected(proc):
    ev = [e for e in sqle.run_events(proc) if e.kind == "elected"]
    return ev[-1] if ev else None


def run_kill(t, uri, ended):
    """Scenario run_kill on the store of `uri`; ended(proc, name, term) is what the killed
    leader's guardian must say it did to the leadership."""
    name = t.unique("guardian-run")
    stamps = Stamps(t)
    a = runner(t, "a", name, uri, stamps)
    group = sqle.wait_alive(lambda: stamps.start("a"), "a's command to start", [a])[0]
    # The script, its ticker and its sleep: the group the guardian must kill.
    members = wait_for(lambda: (lambda m: m if len(m) >= 3 else None)(group_members(group)),
                       "a's command's ticker and sleep")
    t.extra_pids.extend(members)
    log(f"a's command: group {group}, processes {members}")
    b = runner(t, "b", name, uri, stamps)
    wait_standing(t, b, name, uri)
    term = run_elected(a).term

    killed_ns = a.kill9()
    start = sqle.wait_alive(lambda: stamps.start("b"), "b's command to start", [b])
    t.extra_pids.extend(group_members(start[0]))
    check(start[2] == [], f"b's command started while {start[2]} of a's group {group} ran")
    ticks = stamps.ticks_after_start("a", group, "b")
    check(not ticks, f"a's ticker wrote {len(ticks)} tick(s) after b's command started")
    check(not group_members(group), f"a's group still runs: {group_members(group)}")
    the_guardian_line(a, [f"killed process group {group}", ended(a, name, term)])
    el = wait_for(lambda: run_elected(b), "b's elected line")
    check(el.term > term, f"b elected at term {el.term}, a held {term}")
    before_expiry(el.ns, killed_ns, "b elected")

    b.send(signal.SIGTERM)
    b.wait()
    t.check_leadership([sqle.run_view(a), sqle.run_view(b)], min_leaderships=2)


def scenario_run_kill(t):
    run_kill(t, zk_uri(t), lambda p, name, term: zk_ended(p))


def scenario_run_leftovers(t):
    uri = zk_uri(t)
    name = t.unique("guardian-left")
    stamps = Stamps(t)
    go = os.path.join(t.dir, "go")
    a = runner(t, "a", name, uri, stamps, {"MODE": "exit", "GO": go})
    group = wait_for(lambda: stamps.start("a"), "a's command to start")[0]
    members = wait_for(lambda: (lambda m: m if len(m) >= 3 else None)(group_members(group)),
                       "a's command's ticker and sleep")
    t.extra_pids.extend(members)
    b = runner(t, "b", name, uri, stamps)
    wait_standing(t, b, name, uri)

    open(go, "w").close()  # a's command exits, its ticker and sleep 31 left in its group
    rc = a.wait()
    left = group_members(group)
    check(not left, f"reign exited while its command's group ran on: {left}")
    check(rc == 0, f"a exited {rc}, want its command's 0")
    check("command finished; resigning" in a.err(), "a did not resign after its command")
    start = wait_for(lambda: stamps.start("b"), "b's command to start")
    t.extra_pids.extend(group_members(start[0]))
    check(start[2] == [], f"b's command started while {start[2]} of a's group {group} ran")
    ticks = stamps.ticks_after_start("a", group, "b")
    check(not ticks, f"a's ticker wrote {len(ticks)} tick(s) after b's command started")
    no_guardian_line([a])
    b.send(signal.SIGTERM)
    b.wait()
    no_guardian_line([b])
    t.check_leadership([sqle.run_view(a), sqle.run_view(b)], min_leaderships=2)


# ---- campaigns ----------------------------------------------------------------------------

def campaign(t, label, name, uri, new_session=False):
    args = [t.cli, "--uri", uri, "--log-level", "info", "campaign", name, "--id", label]
    return t.spawn(label, args, new_session=new_session)


def two_candidates(t, name, uri, label):
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             f"{label}'s node in status")


def leader_and_follower(t, name, uri):
    """`reign campaign` a, elected, then b standing behind it."""
    a = campaign(t, "a", name, uri)
    wait_for(a.elected, "a elected")
    b = campaign(t, "b", name, uri)
    two_candidates(t, name, uri, "b")
    return a, b


def kill_and_take_over(t, a, b, ended, guardian):
    """SIGKILL to leader a: b is elected, after a's guardian (pid `guardian`) said it `ended`
    the leadership, before a's session could have expired; then b resigns."""
    killed_ns = a.kill9()
    el = wait_for(b.elected, f"{b.label} elected")[0]
    the_guardian_line(a, [ended], guardian=guardian)
    before_expiry(el.ns, killed_ns, f"{b.label} elected")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, f"{b.label} did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


def scenario_stop(t):
    session_ms = 8000
    stop_s = 2.0  # well inside the session: the server keeps it, and so does a's deadline
    uri = t.uri(t.shared_hosts(), session_timeout_ms=session_ms)
    name = t.unique("guardian-stop")
    a, b = leader_and_follower(t, name, uri)
    g = the_guardian_of(a)
    sid = a.session_id()

    a.send(signal.SIGSTOP)
    time.sleep(stop_s)  # an observation window: nothing may happen while a is stopped
    check(running(g), "a's guardian left while a was stopped")
    check(not b.elected(), "b was elected while a was stopped")
    check((t.status(name, uri) or {}).get("leader", {}).get("id") == "a",
          "a no longer leads in status while stopped")
    a.send(signal.SIGCONT)

    # a keeps leading (or stepped down cleanly: check_leadership below); its session is the
    # same, and the guardian never acted.
    st = t.status(name, uri)
    check(a.session_id() == sid, f"a's session changed: {sid} -> {a.session_id()}")
    check(st["leader"]["id"] == "a" or a.demoted(), f"after SIGCONT: {st}, a not demoted")
    check(running(g), "a's guardian left after SIGCONT")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    wait_for(b.elected, "b elected after a resigned")
    wait_gone(g, "a's guardian to leave after a's clean exit")
    no_guardian_line([a, b])
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


def scenario_stop_expired(t):
    session_ms = 2000
    uri = t.uri(t.shared_hosts(), session_timeout_ms=session_ms)
    name = t.unique("guardian-expired")
    a, b = leader_and_follower(t, name, uri)
    g = the_guardian_of(a)
    sid = a.session_id()
    a.send(signal.SIGSTOP)
    el = wait_for(b.elected, "b elected once a's session expired")[0]
    a.kill9()  # stopped, never demoted: its lines cannot go to check_leadership
    the_guardian_line(a, [f"session 0x{sid} had expired"], guardian=g)
    wait_gone(g, "a's guardian to exit")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "b" and st["leader"]["token"] == el.token,
          f"b's leadership changed after a's guardian acted: {st}")
    check(not b.demoted() and len(b.elected()) == 1, f"b's lines: {b.lines()}")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")


def scenario_socket_closed(t):
    uri = zk_uri(t)
    name = t.unique("guardian-sock")
    a = t.spawn("a", [env_path("REIGN_IT_GUARDIAN_CLIENT"), name, str(HOLD_MS)])

    def said(word):
        return [ln.split() for ln in a.lines() if ln.startswith(word + " ")]

    first = int(sqle.wait_alive(lambda: said("closed"), "a to close its guardian's socket",
                                [a])[0][2].split("=")[1])
    b = campaign(t, "b", name, uri)
    two_candidates(t, name, uri, "b")
    second = int(sqle.wait_alive(lambda: said("new guardian"), "a's new guardian", [a])[0][2])
    check(second != first, "the same guardian")
    # The old guardian saw an end of file: after its grace (2 s) it says it leaves, and goes.
    wait_for(lambda: "closed its end but lives on: leaving without acting" in a.err(),
             "the old guardian to leave")
    wait_gone(first, "the old guardian to exit")
    check(running(second), "the new guardian does not run")
    check(a.leading() and not a.demoted(), "a no longer leads")
    check(not b.elected(), "b was elected while a lived")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "a", f"status after the old guardian left: {st}")
    sid = said("session")[0][1]
    check(st["leader"]["token"] == a.elected()[-1].token, f"a's leadership changed: {st}")

    kill_and_take_over(t, a, b, f"closed ZooKeeper session {sid}", second)


def scenario_guardian_killed(t):
    uri = zk_uri(t)
    name = t.unique("guardian-killed")
    a, b = leader_and_follower(t, name, uri)
    first = the_guardian_of(a)
    os.kill(first, signal.SIGKILL)
    log(f"SIGKILL to a's guardian {first}")
    second = the_guardian_of(a, other_than=first)
    wait_for(lambda: "is gone; starting another" in a.err(), "a to say its guardian is gone")
    check(a.err().count("is gone; starting another") == 1, "a said it more than once")
    check(a.leading() and not a.demoted() and not b.elected(),
          "the guardian's death changed the leadership")
    check(t.status(name, uri)["leader"]["id"] == "a", "a no longer leads in status")

    kill_and_take_over(t, a, b, zk_ended(a), second)


def scenario_group_signals(t):
    uri = zk_uri(t)
    name = t.unique("guardian-group")
    procs = [campaign(t, "a", name, uri, new_session=True)]
    leader = procs[0]
    wait_for(leader.elected, "a elected")
    for rnd, (sig, label) in enumerate(((signal.SIGINT, "b"), (signal.SIGTERM, "c"),
                                        (signal.SIGKILL, "d")), start=1):
        nxt = campaign(t, label, name, uri, new_session=True)
        procs.append(nxt)
        two_candidates(t, name, uri, label)
        g = the_guardian_of(leader)
        check(_stat(g)[1] != leader.pid, f"{leader.label}'s guardian {g} is in its group")
        if sig == signal.SIGKILL:
            sent_ns = leader.kill9(group=True)
            el = wait_for(nxt.elected, f"{label} elected")[0]
            check(leader.returncode() == -signal.SIGKILL, f"{leader.label} exited "
                  f"{leader.returncode()}")
            the_guardian_line(leader, [zk_ended(leader)], guardian=g)
            before_expiry(el.ns, sent_ns, f"{label} elected")
        else:
            log(f"round {rnd}: {signal.Signals(sig).name} to {leader.label}'s group")
            os.killpg(leader.pid, sig)
            wait_for(nxt.elected, f"{label} elected")
            rc = leader.wait()
            check(rc == 0, f"{leader.label} exited {rc} after {signal.Signals(sig).name}")
            wait_gone(g, f"{leader.label}'s guardian to leave")
            no_guardian_line([leader])
        leader = nxt
    leader.send(signal.SIGTERM)
    check(leader.wait() == 0, f"{leader.label} did not exit 0")
    t.check_leadership(procs, min_leaderships=4)


def scenario_helper_late(t):
    uri = zk_uri(t)
    name = t.unique("guardian-late")
    helper = os.path.join(t.dir, "reign-guardian")
    os.environ["REIGN_GUARDIAN_PATH"] = helper  # for a and b
    a, b = leader_and_follower(t, name, uri)
    wait_for(lambda: f"guardian: no guardian helper at {helper}" in a.err(), "a's warning")
    check(not guardians_of(a.pid), "a runs a guardian")
    os.symlink(env_path("REIGN_GUARDIAN_HELPER"), helper)
    wait_for(lambda: "guardian: started again" in a.err(), "a to start its guardian")
    g = the_guardian_of(a)
    check(a.err().count("reign: campaign: warn: guardian") == 1, "a warned more than once")
    check(a.leading() and not b.elected(), "the leadership changed")
    kill_and_take_over(t, a, b, zk_ended(a), g)


def scenario_register_kill(t):
    uri = zk_uri(t)
    group = t.unique("guardian-members")
    args = [t.cli, "--uri", uri, "--log-level", "info"]
    watch = t.spawn("watch", args + ["members", group, "--watch"])
    m1 = t.spawn("m1", args + ["register", group, "--id", "m1"])
    m2 = t.spawn("m2", args + ["register", group, "--id", "m2"])

    def seen(word, ident):
        return [ln for ln in watch.lines() if ln.startswith(f"{word} {ident} ")]

    wait_for(lambda: seen("added", "m1") and seen("added", "m2"), "both members seen")
    killed_ns = m1.kill9()
    line = wait_for(lambda: seen("removed", "m1"), "m1 removed")[0]
    removed_ns = int(re.search(r"monotonic_ns=(\d+)", line).group(1))
    the_guardian_line(m1, [zk_ended(m1)])
    before_expiry(removed_ns, killed_ns, "m1 removed")
    rc, out, err = t.reign(["--uri", uri, "members", group])
    check(rc == 0, f"reign members: {err.strip()}")
    ids = [ln.split()[1] for ln in out.splitlines() if ln.startswith("member ")]
    check(ids == ["m2"], f"members after m1's kill: {ids}")
    check(not seen("removed", "m2"), "m2 removed")
    m2.send(signal.SIGTERM)
    check(m2.wait() == 0, "m2 did not exit 0")
    no_guardian_line([m2])


# ---- the election's history ---------------------------------------------------------------

PASSWORD = "hist-9d2e71"


def parse_record(data):
    """A reign record's fields (src/core/record.h), values decoded, or None if it is none."""
    head, sep, _ = data.partition(b"\n\n")
    lines = head.decode("utf-8", "replace").split("\n")
    if not sep or lines[0] != "reign 1":
        return None
    return {k: urllib.parse.unquote(v) for k, _, v in (ln.partition("=") for ln in lines[1:])}


def zk_records(t, hosts, name):
    """(fields, version) of each record of election `name`'s history on ZooKeeper (hosts with
    the chroot), read with reign_it_zkraw (anonymously: the world may read)."""
    d = f"/reign/election/{name}/history"
    out = []
    for kid in t.children(hosts, d) or []:
        if kid.startswith("h_"):
            rc, js, err = t.zkraw(hosts, "get", f"{d}/{kid}")
            check(rc == 0, f"reading {d}/{kid}: {err.strip()}")
            node = json.loads(js)
            out.append((parse_record(bytes.fromhex(node["data_hex"])), node["version"]))
    return out


def etcd_call(member, api, body):
    """A POST to the member's JSON gateway: the answer's object."""
    req = urllib.request.Request(f"http://{member}{api}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=e2elib.WAIT) as r:
        return json.load(r)


def etcd_history_kvs(member, prefix, name):
    """The key-values of election `name`'s history records on etcd (keys and values base64)."""
    key = f"{prefix}/reign/election/{name}/history/h_".encode()
    end = key[:-1] + bytes([key[-1] + 1])
    return etcd_call(member, "/v3/kv/range", {"key": base64.b64encode(key).decode(),
                                              "range_end": base64.b64encode(end).decode()}
                     ).get("kvs", [])


def etcd_records(member, prefix, name):
    """The same as zk_records on etcd: ZooKeeper's version is etcd's - 1 (docs/etcd.md)."""
    return [(parse_record(base64.b64decode(kv.get("value", ""))), int(kv["version"]) - 1)
            for kv in etcd_history_kvs(member, prefix, name)]


def history_kill(t, name, uri, records):
    """a leads `name`, b stands; SIGKILL to a: its guardian says it ended a's history record
    and the session, b is elected, and the history says a's leadership ended by the guardian,
    as `reign history --json` reads it and as the record itself (records()) holds it."""
    a = campaign(t, "a", name, uri)
    wait_for(a.elected, "a elected")
    b = campaign(t, "b", name, uri)
    two_candidates(t, name, uri, "b")
    g = the_guardian_of(a)
    term = a.elected()[-1].term
    killed_ns = a.kill9()
    el = wait_for(b.elected, "b elected")[0]
    the_guardian_line(a, ["ended 1 history record", zk_ended(a)], guardian=g)
    before_expiry(el.ns, killed_ns, "b elected")

    terms = history_of(t, uri, name)
    h = terms.get(term)
    check(h is not None, f"no term {term} in the history: {terms}")
    check(h["id"] == "a" and h["end"] == "guardian", f"a's leadership (term {term}): {h}")
    check(h["ended_ms"] is not None and not h["ended_estimated"],
          f"a's leadership's end is not the one written: {h}")
    check(h["ended_ms"] >= h["started_ms"], f"a's leadership ended before it began: {h}")
    check(terms.get(el.term, {}).get("id") == "b", f"b's leadership (term {el.term}): {terms}")
    log(f"history: term {term} {h['end']}, held {h['held_ms']} ms")

    mine = [(f, v) for f, v in records() if f and f.get("term") == str(term)]
    check(len(mine) == 1, f"records of term {term}: {records()}")
    fields, version = mine[0]
    check(fields.get("end") == "guardian" and fields.get("id") == "a", f"a's record: {fields}")
    check(fields.get("ended_ms", "").isdigit(), f"a's record has no ended_ms: {fields}")
    check(version == 1, f"a's record was written {version} time(s) after its claim, not once")

    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)
    return a, b


def scenario_history(t):
    hosts = t.shared_hosts()
    name = t.unique("guardian-history")
    history_kill(t, name, zk_uri(t), lambda: zk_records(t, hosts, name))


def scenario_history_credentials(t):
    hosts = t.shared_hosts()
    chroot = "/" + t.unique("e2e-hist-cred")
    rc, _, err = t.zkraw(hosts, "create", chroot, "")
    check(rc == 0, f"creating the chroot {chroot}: {err.strip()}")
    zhosts = hosts + chroot
    uri = t.uri(zhosts, user="alice", session_timeout_ms=HOLD_MS)
    name = t.unique("guardian-history-cred")
    os.environ["REIGN_PASSWORD"] = PASSWORD  # for a, b and every `reign` run here
    a, b = history_kill(t, name, uri, lambda: zk_records(t, zhosts, name))
    # The control: without the credentials the record could not have been written.
    d = f"/reign/election/{name}/history"
    kid = sorted(k for k in t.children(zhosts, d) if k.startswith("h_"))[0]
    rc, _, err = t.zkraw(zhosts, "set", f"{d}/{kid}", "x")
    check(rc == 3, f"an anonymous write to {d}/{kid}: rc {rc}, {err.strip()} (want ZNOAUTH)")
    for p in (a, b):
        check(PASSWORD not in p.err() and PASSWORD not in "\n".join(p.lines()),
              f"{p.label}'s output shows the password")


def history_written(t, uri, name, records, rewrite):
    """a leads, b stands; rewrite() writes a's record again as it is (its version then 1, as
    after an end of a's own) and returns its path; SIGKILL to a: its guardian's write fails and
    says so, and the session is ended all the same (b elected before it could have expired);
    the record keeps what was there."""
    a, b = leader_and_follower(t, name, uri)
    g = the_guardian_of(a)
    path = rewrite()
    killed_ns = a.kill9()
    el = wait_for(b.elected, "b elected")[0]
    the_guardian_line(a, [f"history record {path} not ended", zk_ended(a)], guardian=g)
    before_expiry(el.ns, killed_ns, "b elected")
    mine = [(f, v) for f, v in records() if f and f.get("id") == "a"]
    check(len(mine) == 1 and mine[0][1] == 1 and "end" not in mine[0][0],
          f"a's record after its guardian: {mine}")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


def scenario_history_written(t):
    hosts = t.shared_hosts()
    name = t.unique("guardian-history-written")
    d = f"/reign/election/{name}/history"

    def rewrite():
        kids = sorted(k for k in t.children(hosts, d) if k.startswith("h_"))
        check(len(kids) == 1, f"a's history: {kids}")
        path = f"{d}/{kids[0]}"
        rc, js, err = t.zkraw(hosts, "get", path)
        check(rc == 0, f"reading {path}: {err.strip()}")
        rc, _, err = t.zkraw(hosts, "set", path, "hex:" + json.loads(js)["data_hex"])
        check(rc == 0, f"rewriting {path}: {err.strip()}")
        return path

    history_written(t, zk_uri(t), name, lambda: zk_records(t, hosts, name), rewrite)


def history_of(t, uri, name):
    """`reign history NAME --json`: its terms by term."""
    rc, out, err = t.reign(["--uri", uri, "history", name, "--json"])
    check(rc == 0, f"reign history {name} failed ({rc}): {err.strip()}")
    return {h["term"]: h for h in json.loads(out)["terms"]}


def scenario_history_many(t):
    uri = t.uri(t.shared_hosts(), session_timeout_ms=HOLD_MS, guardian="on")
    prefix = t.unique("hist") + "."
    services = ["AccountService:1.0.0", "OrderService:1.0.0", "PayService:2.0.0"]
    ready_re = re.compile(r"^ready services=3 masters=(\d)$")
    master_re = re.compile(r"^ismaster (\S+) true term=(\d+) token=\d+$")

    def container(label):
        return t.spawn(label, [env_path("REIGN_SERVICE_MASTERS"), "--uri", uri, "--id", label,
                               "--prefix", prefix, "--services", ",".join(services)])

    def ready(p):
        m = [ready_re.match(line) for line in p.lines()]
        return next((int(x.group(1)) for x in m if x), None)

    def masterships(p):
        return {m.group(1): int(m.group(2)) for m in map(master_re.match, p.lines()) if m}

    c1 = container("c1")
    check(wait_for(lambda: ready(c1), "c1 ready") == 3, f"c1 masters {ready(c1)} of 3")
    c2 = container("c2")
    check(wait_for(lambda: ready(c2) is not None, "c2 ready") and ready(c2) == 0,
          f"c2 masters {ready(c2)} of 3 beside c1")
    g = the_guardian_of(c1)
    terms = masterships(c1)
    check(sorted(terms) == sorted(services), f"c1's masterships: {terms}")
    c1.kill9()
    wait_for(lambda: len(masterships(c2)) == 3, "c2 master of every service")
    the_guardian_line(c1, ["ended 3 history records", "closed ZooKeeper session"], guardian=g)
    for svc, term in terms.items():
        h = history_of(t, uri, prefix + svc).get(term)
        check(h and h["id"] == "c1" and h["end"] == "guardian" and not h["ended_estimated"],
              f"{svc}: c1's leadership (term {term}): {h}")
    c2.send(signal.SIGTERM)
    check(c2.wait() == 0, "c2 did not exit 0")


def etcd_store(t):
    """The shared etcd member, a key prefix of the test's own: (member, prefix, uri)."""
    with open(env_path("REIGN_TEST_ETCD_FILE")) as f:
        hosts = f.read().strip()
    prefix = "/" + t.unique("e2e-hist")
    return hosts.split(",")[0], prefix, f"etcd://{hosts}{prefix}?session_timeout_ms={HOLD_MS}"


def scenario_history_etcd(t):
    member, prefix, uri = etcd_store(t)
    name = t.unique("guardian-history")
    history_kill(t, name, uri, lambda: etcd_records(member, prefix, name))


def scenario_history_written_etcd(t):
    member, prefix, uri = etcd_store(t)
    name = t.unique("guardian-history-written")

    def rewrite():
        kvs = etcd_history_kvs(member, prefix, name)
        check(len(kvs) == 1, f"a's history: {kvs}")
        etcd_call(member, "/v3/kv/put", {"key": kvs[0]["key"], "value": kvs[0]["value"]})
        return base64.b64decode(kvs[0]["key"]).decode()[len(prefix):]

    history_written(t, uri, name, lambda: etcd_records(member, prefix, name), rewrite)


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items()
             if name.startswith("scenario_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(SCENARIOS)}")
    e2elib.main(f"e2e_guardian_{sys.argv[1]}", SCENARIOS[sys.argv[1]])
