#!/usr/bin/env python3
"""test_same_id_restart.py - a leader restarted with the same id while its old session lives.

`a` leads with a 6 s session and is SIGKILLed; at once a new process starts with the same
`--id a`.  Its id is the same, but its session is not: it must not lead while the old session
(and so the old node) lives.  While a raw client sees the old node, `reign status` must show the
old node still leading (same term) and the new process waiting behind it, with no `elected`
line.  Once the old session expires the new process must be elected, and after the old node
was last seen: its `elected` time is later than the send time of every poll that still found
the old node (a poll sent at S that finds the node proves it existed after S; the new process
can only claim once it is gone).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# This test is about a restarted process waiting for its old session to expire, the path every process takes when its host dies: without a
# guardian, which would end the killed leadership at once (tests/e2e*/test_guardian*.py).
os.environ["REIGN_GUARDIAN"] = "off"
from e2elib import check, log, main, wait_for  # noqa: E402

SESSION_MS = 6000


def poll_times(watcher):
    present = [int(line.split("=")[1]) for line in watcher.lines()
               if line.startswith("present ")]
    gone = [int(line.split("=")[1]) for line in watcher.lines() if line.startswith("gone ")]
    return present, gone


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=SESSION_MS)
    name = t.unique("e2e-sameid")
    old = t.campaign("a-old", name, uri, ident="a")
    el = wait_for(lambda: old.elected(), "a elected")[0]
    st = t.status(name, uri)
    check(len(st["candidates"]) == 1, f"{st}")
    old_node = st["candidates"][0]["node"]
    node_path = f"/reign/election/{name}/{old_node}"
    watcher = t.spawn("watch-gone", [os.environ["REIGN_ZKRAW"], hosts, "watch-gone", node_path])
    wait_for(lambda: poll_times(watcher)[0], "the raw client to see the old node")

    killed_ns = old.kill9()
    new = t.campaign("a-new", name, uri, ident="a")

    def new_waiting():
        s = t.status(name, uri)
        return s if s and len(s["candidates"]) == 2 else None

    st = wait_for(new_waiting, "the new process's node in status")
    present, gone = poll_times(watcher)
    check(not gone, "the old node went before the new process even joined (session too short?)")
    check(st["leader"] is not None and st["leader"]["id"] == "a" and
          st["leader"]["term"] == el.term, f"status during the old session: {st}")
    check(st["candidates"][0]["node"] == old_node,
          f"the old node {old_node} is not first: {st['candidates']}")
    check(not new.elected(), f"the new process was elected while the old session lived: "
                             f"{new.elected()}")
    log("the new process waits behind the old session's node")

    new_el = wait_for(lambda: new.elected(), "the new process elected after the old session "
                                             "expired", timeout=SESSION_MS / 1000 + 60)[0]
    wait_for(lambda: poll_times(watcher)[1], "the raw client to see the old node gone")
    present, gone = poll_times(watcher)
    last_seen = max(present)
    check(new_el.ns > last_seen,
          f"the new process was elected at {new_el.ns}, but the old node was still there at "
          f"{last_seen}")
    check(new_el.ns > killed_ns, "elected before the kill")
    check(new_el.term > el.term, f"terms {el.term} then {new_el.term}")
    log(f"old node last seen {(last_seen - killed_ns) / 1e6:.0f} ms after the kill; new "
        f"process elected {(new_el.ns - last_seen) / 1e6:.0f} ms after that")
    st = t.status(name, uri)
    check(len(st["candidates"]) == 1 and st["candidates"][0]["node"] != old_node, f"{st}")

    new.send(signal.SIGTERM)
    check(new.wait() == 0, "the new process did not exit 0")
    t.check_leadership([old, new], min_leaderships=2)


if __name__ == "__main__":
    main("e2e_same_id_restart", body)
