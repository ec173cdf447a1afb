#!/usr/bin/env python3
"""test_kill_expiry.py off|no_helper|not_a_guardian - a SIGKILLed leader's successor waits
for the old session to expire, when no guardian ends it.

    off        REIGN_GUARDIAN=off: no guardian (the path every process takes when its host
               dies or loses the network; with a guardian, tests/e2e/test_guardian.py)
    no_helper  REIGN_GUARDIAN_PATH=/nonexistent: the guardian cannot start; each candidate
               warns once, then works as without (and runs no guardian)
    not_a_guardian  REIGN_GUARDIAN_PATH=/bin/true: a helper that starts but is no guardian
               (exits at once, says no hello): the same, one warning each

a leads, b waits.  A raw client polls a's node.  a is SIGKILLed: it cannot resign, so its
node stays until the server expires its session.  b must be elected, but only after that:
b's `elected` time must be later than the kill and than the send time of every poll that still
found a's node.  The test also requires that some poll found the node after the kill (the
session outlived the process), else it would prove nothing.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402
from test_guardian import guardians_of  # noqa: E402

SESSION_MS = 3000
VARIANTS = {"off": {"REIGN_GUARDIAN": "off"},
            "no_helper": {"REIGN_GUARDIAN_PATH": "/nonexistent/reign-guardian"},
            "not_a_guardian": {"REIGN_GUARDIAN_PATH": "/bin/true"}}
NO_HELPER = "guardian: no guardian helper at /nonexistent/reign-guardian"
WARNING = "reign: campaign: warn: guardian"


def poll_times(watcher):
    lines = watcher.lines()
    present = [int(x.split("=")[1]) for x in lines if x.startswith("present ")]
    gone = [int(x.split("=")[1]) for x in lines if x.startswith("gone ")]
    return present, gone


def body(t, variant):
    os.environ.update(VARIANTS[variant])
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=SESSION_MS)
    name = t.unique("e2e-expiry")
    a = t.campaign("a", name, uri)
    wait_for(lambda: a.elected(), "a elected")
    b = t.campaign("b", name, uri)
    st = wait_for(lambda: (lambda s: s if s and len(s["candidates"]) == 2 else None)(
        t.status(name, uri)), "b's node in status")
    check(st["leader"]["id"] == "a", f"{st}")
    node_path = f"/reign/election/{name}/{st['candidates'][0]['node']}"
    watcher = t.spawn("watch-gone", [os.environ["REIGN_ZKRAW"], hosts, "watch-gone", node_path])
    wait_for(lambda: poll_times(watcher)[0], "the raw client to see a's node")

    check(not guardians_of(a.pid), f"a runs a guardian: {guardians_of(a.pid)}")
    killed_ns = a.kill9()
    el = wait_for(lambda: b.elected(), "b elected", timeout=SESSION_MS / 1000 + 60)[0]
    wait_for(lambda: poll_times(watcher)[1], "the raw client to see a's node gone")
    present, _ = poll_times(watcher)
    after_kill = [s for s in present if s > killed_ns]
    check(after_kill, "no poll found a's node after the kill: cannot tell when it went")
    check(el.ns > killed_ns, f"b elected at {el.ns}, before the kill at {killed_ns}")
    check(el.ns > max(present),
          f"b elected at {el.ns}, but a's node was still there at {max(present)}")
    log(f"a's node seen until {(max(present) - killed_ns) / 1e6:.0f} ms after the kill; b "
        f"elected {(el.ns - killed_ns) / 1e6:.0f} ms after the kill")
    check("reign-guardian[" not in a.err(), "a guardian acted")
    if variant != "off":
        # Warned once each, though the client tried again meanwhile (1 s, then 2 s...).
        for p in (a, b):
            warned = [ln for ln in p.err().splitlines() if WARNING in ln]
            check(len(warned) == 1, f"{p.label} warned {len(warned)} times: {warned}")
            check(variant != "no_helper" or NO_HELPER in warned[0], f"{warned[0]}")
            check(not guardians_of(p.pid), f"{p.label} runs a guardian")
    b.send(signal.SIGTERM)
    check(b.wait() == 0, "b did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(VARIANTS)}")
    suffix = "" if sys.argv[1] == "off" else f"_{sys.argv[1]}"
    main(f"e2e_kill_expiry{suffix}", lambda t: body(t, sys.argv[1]))
