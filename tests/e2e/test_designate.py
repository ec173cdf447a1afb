#!/usr/bin/env python3
"""test_designate.py - `reign designate NAME ID` and `reign campaign --priority`.

a leads, b and c wait.  `reign designate NAME c` prints `designated c term=T token=K (was a
term=T0)` and exits 0; a prints `demoted a reason=handoff` before c prints `elected c`, with a
higher term and token.  Designating an id that does not stand fails (exit 1) and changes
nothing.  Automatic failover after a designation: SIGKILL c, and a or b takes over within the
session timeout.  Priority from the command line: a candidate started with --priority above
the leader's takes over by a handoff; one started with --no-preempt does not.
"""
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import beyond, check, log, main, wait_for  # noqa: E402

DESIGNATED_RE = re.compile(r"^designated (\S+) term=(\d+) token=(\d+) \(was (\S+) term=(\d+)\)$")


def handed_over(old, new, n_old, n_new):
    """old hands over to new: n_old and n_new count their demoted and elected lines from
    before the handover was asked for."""
    dem = wait_for(lambda: beyond(old.demoted(), n_old), f"{old.label} demoted")
    el = wait_for(lambda: beyond(new.elected(), n_new), f"{new.label} elected")
    check(dem[-1].reason == "handoff", f"{old.label}: {dem[-1]}")
    check(dem[-1].ns < el[-1].ns, f"{new.label} elected before {old.label} stepped down")
    check(el[-1].term > old.elected()[-1].term and el[-1].token > old.elected()[-1].token,
          "term and token did not grow")
    log(f"{old.label} -> {new.label}: {(el[-1].ns - dem[-1].ns) / 1e6:.2f} ms from demotion "
        "to election")
    return el[-1]


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-designate")
    a = t.campaign("a", name, uri)
    wait_for(lambda: a.elected(), "a elected")
    b = t.campaign("b", name, uri)
    c = t.campaign("c", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 3,
             "three candidates in status")

    rc, out, err = t.reign(["--uri", uri, "designate", name, "c", "--wait-ms", "30000"])
    check(rc == 0, f"reign designate exited {rc}: {err.strip()}")
    m = DESIGNATED_RE.match(out.strip())
    check(m, f"reign designate printed {out!r}")
    check(m.group(1) == "c" and m.group(4) == "a", f"{out.strip()}")
    el = handed_over(a, c, 0, 0)
    check(el.term == int(m.group(2)) and el.token == int(m.group(3)), f"{el} vs {out.strip()}")

    rc, out, err = t.reign(["--uri", uri, "designate", name, "nobody", "--wait-ms", "5000"])
    check(rc == 1 and "nobody" in err and "nothing changed" in err,
          f"designating a stranger: {rc} {err.strip()!r}")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "c" and st["leader"]["term"] == el.term, f"{st}")
    # A designation lasts one leadership: no candidate is renamed or keeps a priority for it.
    check(all(k["priority"] == 0 for k in st["candidates"]), f"{st}")

    rc, out, err = t.reign(["--uri", uri, "designate", name, "c", "--json"])
    check(rc == 0 and json.loads(out)["leader"] == "c", f"designating the leader: {rc} {out!r}")

    log("SIGKILL the designated leader: automatic failover")
    c.send(signal.SIGKILL)
    c.wait()
    nxt = wait_for(lambda: a if len(a.elected()) >= 2 else (b if b.elected() else None),
                   "a or b to take over from c")
    log(f"{nxt.label} took over")

    log("priority from the command line")
    name2 = t.unique("e2e-priority")
    low = t.campaign("low", name2, uri, extra=["--priority", "1"])
    wait_for(lambda: low.elected(), "low elected")
    calm = t.campaign("calm", name2, uri, extra=["--priority", "7", "--no-preempt"])
    wait_for(lambda: len((t.status(name2, uri) or {}).get("candidates", [])) == 2,
             "calm in status")
    high = t.campaign("high", name2, uri, extra=["--priority", "9"])
    handed_over(low, high, 0, 0)
    check(not calm.elected(), "calm (no preempt) was elected while others led")

    rc, out, err = t.reign(["--uri", uri, "campaign", name2, "--priority", "300"])
    check(rc == 2 and "--priority" in err, f"priority out of range: {rc} {err.strip()!r}")
    # The lock strategy has no order to rank in (every store but it has priorities).
    rc, out, err = t.reign(["--uri", uri, "campaign", t.unique("e2e-lock"), "--strategy", "lock",
                            "--priority", "2"])
    check(rc == 1 and "need the queue strategy" in err, f"priority with the lock strategy: "
          f"{rc} {err.strip()!r}")

    for p in (a, b, low, calm, high):
        p.send(signal.SIGTERM)
    for p in (a, b, low, calm, high):
        check(p.wait() == 0, f"{p.label} did not exit 0")


if __name__ == "__main__":
    main("e2e_designate", body)
