#!/usr/bin/env python3
"""test_proxy_cutoff.py - a leader cut off from ZooKeeper steps down before anyone else leads.

    test_proxy_cutoff.py deadline|immediate|blip

a connects through reign_tcpproxy, b directly; a leads.  SIGUSR1 freezes the proxy: a's
connection stays open but nothing moves, as in a network partition, so a hears nothing and can
prove nothing.  a must print `demoted` - reason suspended (or stalled, if its loop's deadline
comes before the ZooKeeper client notices the silence) with the default policy, reason
suspended with ?suspend_policy=immediate - and at a time earlier than b's `elected`, which can
only come after the server expired a's session.  Thawed, a finds its session gone and stands
again behind b.  check_leadership.py proves the story.

blip: a 6 s session, suspend_policy=immediate, and the proxy thawed as soon as a has stepped
down (its client noticed the silence after about two thirds of the session): a's session
survives, a is elected again, and the history tells the first leadership ended `lost`, written
when the connection came back.  (Should the machine be so slow that the session expired
anyway - a's log then shows a second session - the history must say `expired` instead.)
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import SESSION_RE, check, env_path, log, main, wait_for  # noqa: E402

SESSION_MS = 2000


def blip(t):
    hosts = t.shared_hosts()
    proxy = t.spawn("proxy", [env_path("REIGN_TCPPROXY"), "0", hosts])
    port = int(wait_for(lambda: proxy.lines(), "the proxy's port")[0])
    params = {"session_timeout_ms": 6000, "suspend_policy": "immediate"}
    name = t.unique("e2e-cutoff-blip")
    a = t.campaign("a", name, t.uri(f"127.0.0.1:{port}", **params))
    wait_for(lambda: a.elected(), "a elected")
    direct = t.uri(hosts, **params)
    proxy.send(signal.SIGUSR1)
    wait_for(lambda: "frozen" in proxy.err(), "the proxy to freeze")
    dem = wait_for(lambda: a.demoted(), "a demoted after the cut")[0]
    proxy.send(signal.SIGUSR2)
    check(dem.reason == "suspended", f"a demoted with reason {dem.reason}")
    wait_for(lambda: len(a.elected()) >= 2, "a elected again", timeout=60)
    sessions = set(SESSION_RE.findall(a.err()))
    rc, out, err = t.reign(["--uri", direct, "history", name, "--json"])
    check(rc == 0, f"history: {err.strip()}")
    terms = json.loads(out)["terms"]
    want = "lost" if len(sessions) == 1 else "expired"
    log(f"a kept {'its' if len(sessions) == 1 else 'no'} session; history: "
        + "; ".join(f"{x['term']} {x['id']} {x['end']}" for x in terms))
    check([(x["id"], x["end"]) for x in terms] == [("a", want), ("a", "leading")],
          f"history {[(x['id'], x['end']) for x in terms]}, want a {want}, a leading")
    check(terms[0]["ended_ms"] <= terms[1]["started_ms"], "the end before the next start")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0")
    t.check_leadership([a], min_leaderships=2)


def body(t, policy):
    hosts = t.shared_hosts()
    check("," not in hosts, f"a single server expected, got {hosts}")
    proxy = t.spawn("proxy", [env_path("REIGN_TCPPROXY"), "0", hosts])
    port = int(wait_for(lambda: proxy.lines(), "the proxy's port")[0])
    params = {"session_timeout_ms": SESSION_MS}
    if policy == "immediate":
        params["suspend_policy"] = "immediate"
    name = t.unique(f"e2e-cutoff-{policy}")
    a = t.campaign("a", name, t.uri(f"127.0.0.1:{port}", **params))
    wait_for(lambda: a.elected(), "a elected")
    direct = t.uri(hosts, **params)
    b = t.campaign("b", name, direct)
    wait_for(lambda: len((t.status(name, direct) or {}).get("candidates", [])) == 2,
             "b's node in status")

    proxy.send(signal.SIGUSR1)
    wait_for(lambda: "frozen" in proxy.err(), "the proxy to freeze")
    dem = wait_for(lambda: a.demoted(), "a demoted after the cut")[0]
    el = wait_for(lambda: b.elected(), "b elected")[0]
    want = ("suspended",) if policy == "immediate" else ("suspended", "stalled")
    check(dem.reason in want, f"a demoted with reason {dem.reason}, want one of {want}")
    check(dem.ns < el.ns, f"b elected at {el.ns}, before a stepped down at {dem.ns}")
    log(f"a demoted ({dem.reason}) {(el.ns - dem.ns) / 1e6:.0f} ms before b was elected")

    proxy.send(signal.SIGUSR2)
    wait_for(lambda: "thawed" in proxy.err(), "the proxy to thaw")
    # a's session expired meanwhile: it makes a new one and stands again, behind b.
    st = wait_for(lambda: (lambda s: s if s and len(s["candidates"]) == 2 else None)(
        t.status(name, direct)), "a standing again")
    check([k["id"] for k in st["candidates"]] == ["b", "a"], f"{st['candidates']}")
    check(st["leader"]["id"] == "b", f"{st}")
    check(len(a.elected()) == 1, f"a elected again while b leads: {a.elected()}")
    for p in (a, b):
        p.send(signal.SIGTERM)
    for p in (a, b):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    t.check_leadership([a, b], min_leaderships=2)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "deadline"
    if mode not in ("deadline", "immediate", "blip"):
        sys.exit("usage: test_proxy_cutoff.py deadline|immediate|blip")
    main(f"e2e_proxy_cutoff_{mode}", lambda t: blip(t) if mode == "blip" else body(t, mode))
