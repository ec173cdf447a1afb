#!/usr/bin/env python3
"""test_credentials.py - an election made with digest credentials is read-only to others.

Under a fresh chroot (so that /reign and /reign/election are made by this test's candidates
too), a and b campaign as zk://alice@... with REIGN_PASSWORD=secret.  Every node reign made
carries the ACL "digest alice: all, world: read".  Then, with reign_it_zkraw (the plain
ZooKeeper C client):

  * without credentials: the election node, the term, the candidates and the history (its node
    and a's record) can be read, but no candidate node, term node, history record or election
    node can be deleted or written, and no node created among them (ZNOAUTH each time);
  * with alice and a wrong password: the same refusals;
  * `reign status` and `reign history` without credentials show the leader; `reign cede` and
    `reign campaign`
    without (or with wrong) credentials fail with a clear message and leave no node behind;
  * with the right credentials a candidate's node can be deleted (the control: the refusals
    above came from the ACL), which deposes a and elects b.

The password never appears in any output, even at --log-level debug and when given in the URI.
"""
import base64
import hashlib
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

PASSWORD = "secret-7f3a9"
WRONG = "wrong-4c1d"
NOAUTH = 3


def body(t):
    hosts = t.shared_hosts()
    chroot = "/" + t.unique("e2e-cred")
    rc, _, err = t.zkraw(hosts, "create", chroot, "")
    check(rc == 0, f"creating the chroot {chroot}: {err.strip()}")
    zhosts = hosts + chroot
    uri = t.uri(zhosts, user="alice", session_timeout_ms=4000)
    anon_uri = t.uri(zhosts, session_timeout_ms=4000)
    good = {"REIGN_PASSWORD": PASSWORD}
    bad = {"REIGN_PASSWORD": WRONG}
    name = t.unique("cred")
    a = t.campaign("a", name, uri, env=good, log_level="debug")
    wait_for(lambda: a.elected(), "a elected")
    b = t.campaign("b", name, uri, env=good)
    wait_for(lambda: len((t.status(name, anon_uri) or {}).get("candidates", [])) == 2,
             "b's node in status (read without credentials)")
    st = t.status(name, anon_uri)
    check(st["leader"]["id"] == "a", f"status without credentials: {st}")
    rc, out, err = t.reign(["--uri", anon_uri, "history", name, "--json"])
    terms = json.loads(out)["terms"] if rc == 0 else None
    check(terms is not None and [(x["id"], x["end"]) for x in terms] == [("a", "leading")],
          f"history without credentials: {rc} {out!r} {err.strip()}")

    edir = f"/reign/election/{name}"
    kids = t.children(zhosts, edir)
    # In sequence order (the last part of the name): a joined first.
    nodes = sorted((k for k in kids if k.startswith("n_")), key=lambda k: k.rsplit("_", 1)[1])
    check("term" in kids and len(nodes) == 2, f"children of {edir}: {kids}")
    check([k["node"] for k in st["candidates"]] == nodes, f"{st['candidates']} vs {nodes}")
    a_node, b_node = (f"{edir}/{n}" for n in nodes)
    records = [k for k in (t.children(zhosts, f"{edir}/history") or []) if k.startswith("h_")]
    check(len(records) == 1, f"history records: {records}")
    record = f"{edir}/history/{records[0]}"

    # ZooKeeper shows the digest only to holders of the credentials ("alice:x" to others).
    digest = base64.b64encode(hashlib.sha1(f"alice:{PASSWORD}".encode()).digest()).decode()
    for path in ("/reign", "/reign/election", edir, f"{edir}/term", a_node, b_node,
                 f"{edir}/history", record):
        for auth, shown in ((None, "x"), (f"alice:{PASSWORD}", digest)):
            rc, out, err = t.zkraw(zhosts, "getacl", path, auth=auth)
            check(rc == 0, f"getacl {path}: {err.strip()}")
            acl = sorted(out.splitlines())
            check(acl == sorted([f"digest alice:{shown} 31", "world anyone 1"]),
                  f"ACL of {path} as seen with {auth or 'no credentials'}: {acl}")
        rc, _, err = t.zkraw(zhosts, "get", path)
        check(rc == 0, f"reading {path} without credentials: {err.strip()}")

    attempts = [("delete", a_node), ("delete", b_node), ("delete", f"{edir}/term"),
                ("delete", edir), ("delete", "/reign/election"),
                ("set", f"{edir}/term", "forged"), ("set", edir, "forged"),
                ("set", a_node, "forged"), ("set", record, "forged"),
                ("create", f"{edir}/history/h_forged", "x"), ("create", f"{edir}/n_forged", "x"),
                ("create", f"{edir}/lock", "x")]
    for auth in (None, f"alice:{WRONG}"):
        for op in attempts:
            rc, _, err = t.zkraw(zhosts, *op, auth=auth)
            check(rc == NOAUTH, f"{' '.join(op)} with {auth or 'no credentials'}: exit {rc}, "
                                f"want ZNOAUTH ({err.strip()})")
    log("every write without the right credentials was refused (ZNOAUTH)")

    # The command-line tools without (or with wrong) credentials.
    rc, out, err = t.reign(["--uri", anon_uri, "cede", name, "--wait-ms", "5000"])
    check(rc == 1 and "not authorized" in err, f"cede without credentials: {rc} {err.strip()!r}")
    rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "5000"], env=bad)
    check(rc == 1 and "not authorized" in err, f"cede, wrong password: {rc} {err.strip()!r}")
    for label, u, env in (("anon", anon_uri, None), ("wrongpw", uri, bad)):
        rc, out, err = t.reign(["--uri", u, "campaign", name, "--id", label], env=env)
        check(rc == 1, f"campaign {label}: exit {rc}")
        check("not allowed" in err and "credentials" in err,
              f"campaign {label}: message {err.strip()!r}")
        check(sorted(t.children(zhosts, edir)) == sorted(kids),
              f"campaign {label} left something behind: {t.children(zhosts, edir)}")
    check(not a.demoted() and not b.elected(), "the election was disturbed")

    # The control: with the credentials, the same delete goes through and deposes a.
    rc, _, err = t.zkraw(zhosts, "delete", a_node, auth=f"alice:{PASSWORD}")
    check(rc == 0, f"delete with the right credentials: {err.strip()}")
    dem = wait_for(lambda: a.demoted(), "a demoted")[0]
    check(dem.reason == "node_deleted", f"{dem}")
    bel = wait_for(lambda: b.elected(), "b elected")[0]
    check(bel.term > a.elected()[0].term and bel.token > a.elected()[0].token, f"{bel}")

    # A password in the URI is never shown either.
    rc, out, err = t.reign(["--uri", t.uri(zhosts, user=f"alice:{PASSWORD}"),
                            "--log-level", "debug", "status", name])
    check(rc == 0, f"status with the password in the URI: {err.strip()}")
    check(PASSWORD not in out + err, "status showed the password")
    for p in (a, b):
        p.send(signal.SIGTERM)
    for p in (a, b):
        check(p.wait() == 0, f"{p.label} did not exit 0")
    for p in t.procs:
        check(PASSWORD not in p.err() + "\n".join(p.lines()), f"{p.label} showed the password")
    check("alice" in a.err(), "a's debug log names nothing (is the log check meaningful?)")


if __name__ == "__main__":
    main("e2e_credentials", body)
