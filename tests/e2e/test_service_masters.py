#!/usr/bin/env python3
"""test_service_masters.py - examples/service-masters (a SOA framework's per-service masters) on the shared ZooKeeper server.

Two containers, c1 and c2, start at once, each standing for the same five service:version
masters on one session.  Once both are ready every service has exactly one master: the one
process whose last `ismaster SERVICE` line says true, which is also what its isMaster cache
says (SIGUSR1 prints it) and whom `reign status` names as the leader.  c1 leaves (SIGTERM,
exit 0): it prints `ismaster S false reason=resigned` for each service it held and c2 prints
`ismaster S true` for exactly those, so c2 masters them all.  A third container c3 (with
--follow) joins as a standby of everything and sees c2 as every service's master; c2 is
killed (SIGKILL), and once its session expires c3 prints `ismaster S true` for every service and
follows itself as the master.  Per service, no two masterships ever share a term, and a later
term always has a larger fencing token.
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, env_path, log, main, wait_for  # noqa: E402

SESSION_MS = 4000
SERVICES = ["AccountService:1.0.0", "AccountService:1.1.0", "OrderService:1.0.0",
            "PayService:2.0.0", "MailService:1.0.0"]
ISMASTER_RE = re.compile(r"^ismaster (\S+) (true|false)(?: term=(\d+) token=(\d+))?"
                         r"(?: reason=(\S+))?$")
CACHE_RE = re.compile(r"^cache masters=(\d+)/(\d+):(.*)$")
MASTER_RE = re.compile(r"^master (\S+) (?:id=(\S+) data=(\S*) term=(\d+)|none)$")


def changes(p):
    """p's isMaster changes, in order: (service, is_master, term, token, reason)."""
    out = []
    for m in map(ISMASTER_RE.match, p.lines()):
        if m:
            out.append((m.group(1), m.group(2) == "true", int(m.group(3) or 0),
                        int(m.group(4) or 0), m.group(5)))
    return out


def masters(p):
    """The services p says it masters now (its last line per service says true)."""
    state = {}
    for svc, is_master, *_ in changes(p):
        state[svc] = is_master
    return {svc for svc, is_master in state.items() if is_master}


def cache(p):
    """Asks p for its isMaster cache (SIGUSR1) and returns the services it lists."""
    before = sum(1 for line in p.lines() if CACHE_RE.match(line))
    p.send(signal.SIGUSR1)
    lines = wait_for(lambda: (lambda c: c if len(c) > before else None)(
        [m for m in map(CACHE_RE.match, p.lines()) if m]), f"{p.label}'s cache line")
    m = lines[-1]
    listed = set(m.group(3).split())
    check(int(m.group(1)) == len(listed) and int(m.group(2)) == len(SERVICES),
          f"{p.label}'s cache line: {m.group(0)}")
    return listed


def check_one_master(t, prefix, uri, procs):
    """Every service has exactly one master among procs; caches and `reign status` agree."""
    owner = {}
    for p in procs:
        held, cached = masters(p), cache(p)
        check(cached == held, f"{p.label}: cache {cached} but lines say {held}")
        for svc in held:
            check(svc not in owner, f"{svc}: both {owner.get(svc)} and {p.label} say master")
            owner[svc] = p.label
    check(set(owner) == set(SERVICES), f"services without a master: {set(SERVICES) - set(owner)}")
    for svc in SERVICES:
        st = t.status(prefix + svc, uri)
        check(st and st["leader"] and st["leader"]["id"] == owner[svc],
              f"{svc}: reign status says {st and st['leader']}, the processes say {owner[svc]}")
    return owner


def check_terms(procs):
    """Per service: distinct terms across every process, tokens growing with the term."""
    by_svc = {}
    for p in procs:
        for svc, is_master, term, token, _ in changes(p):
            if is_master:
                by_svc.setdefault(svc, []).append((term, token, p.label))
    for svc, leads in by_svc.items():
        leads.sort()
        terms = [lead[0] for lead in leads]
        check(len(set(terms)) == len(terms), f"{svc}: a term held twice: {leads}")
        tokens = [lead[1] for lead in leads]
        check(tokens == sorted(set(tokens)), f"{svc}: tokens do not grow with terms: {leads}")


def body(t):
    binary = env_path("REIGN_SERVICE_MASTERS")
    uri = t.uri(t.shared_hosts(), session_timeout_ms=SESSION_MS)
    prefix = t.unique("soa") + "."

    def container(label, *extra):
        return t.spawn(label, [binary, "--uri", uri, "--id", label, "--addr",
                               f"{label}.example:9090", "--prefix", prefix, "--services",
                               ",".join(SERVICES), *extra])

    c1, c2 = container("c1"), container("c2")
    for p in (c1, c2):
        wait_for(lambda: any(line.startswith("ready ") for line in p.lines()), f"{p.label} ready")
    owner = check_one_master(t, prefix, uri, [c1, c2])
    log(f"masters: {owner}")

    # c1 leaves: c2 takes over exactly what c1 held, and says so per service.
    held_by_c1 = masters(c1)
    c1.send(signal.SIGTERM)
    check(c1.wait() == 0, "c1 did not exit 0")
    resigned = {svc for svc, is_master, _, _, reason in changes(c1)
                if not is_master and reason == "resigned"}
    check(resigned == held_by_c1, f"c1 resigned {resigned}, held {held_by_c1}")
    wait_for(lambda: masters(c2) == set(SERVICES), "c2 master of every service")
    gained = [svc for svc, is_master, *_ in changes(c2) if is_master]
    check(sorted(gained) == sorted(SERVICES), f"c2's masterships: {gained}")
    check(not [c for c in changes(c2) if not c[1]], "c2 lost a mastership")
    check_one_master(t, prefix, uri, [c2])

    # A standby of everything follows c2 as every master, and takes over when c2 dies.
    c3 = container("c3", "--follow")
    wait_for(lambda: any(line.startswith("ready services=5 masters=0") for line in c3.lines()),
             "c3 ready as a standby")

    def followed(p):
        last = {}
        for m in map(MASTER_RE.match, p.lines()):
            if m:
                last[m.group(1)] = m.group(2)
        return last

    wait_for(lambda: followed(c3) == {svc: "c2" for svc in SERVICES}, "c3 following c2")
    c2.kill9()
    wait_for(lambda: masters(c3) == set(SERVICES), "c3 master of every service",
             timeout=SESSION_MS / 1000 + 60)
    wait_for(lambda: followed(c3) == {svc: "c3" for svc in SERVICES}, "c3 following itself")
    check_one_master(t, prefix, uri, [c3])
    check_terms([c1, c2, c3])
    c3.send(signal.SIGTERM)
    check(c3.wait() == 0, "c3 did not exit 0")
    check(masters(c3) == set(), f"c3 still says master of {masters(c3)} after exiting")


if __name__ == "__main__":
    main("e2e_service_masters", body)
