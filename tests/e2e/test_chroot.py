#!/usr/bin/env python3
"""test_chroot.py - a URI's chroot that does not exist is created, as Curator does.

  * open: `campaign` on zk://HOSTS/<u>/app/x (nothing of it exists) is elected; each of
    /<u>, /<u>/app, /<u>/app/x exists with the open ACL, and the election's nodes are under
    the chroot, not at the root; a second candidate (chroot now there) joins the same election.
  * credentials: zk://alice@HOSTS/<v>/sec creates /<v> and /<v>/sec with "digest alice: all,
    world: read", like every node reign makes.
  * refused: without credentials, zk://HOSTS/<v>/sec/reign/new needs /<v>/sec/reign/new, under
    alice's /<v>/sec/reign: campaign fails at once (exit 1, no retrying for seconds) with a
    message naming the component and its parent, and creates nothing.  /<v> exists already
    (open parent: NODEEXISTS) and /<v>/sec/reign too (a refused create that exists: checked,
    not an error), so the refusal comes from the last component only.
  * `reign status` on a chroot that does not exist creates it too (a client needs it to read).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

PASSWORD = "chroot-pw-51c2"
NONODE = 4


def acl(t, hosts, path):
    rc, out, err = t.zkraw(hosts, "getacl", path)
    check(rc == 0, f"getacl {path}: {err.strip()}")
    return sorted(out.splitlines())


def body(t):
    hosts = t.shared_hosts()
    name = t.unique("chroot")

    # Open ACL, nested, nothing there yet.
    top = "/" + t.unique("e2e-chroot")
    chroot = f"{top}/app/x"
    check(t.children(hosts, top) is None, f"{top} exists before the test")
    uri = t.uri(hosts + chroot, session_timeout_ms=4000)
    a = t.campaign("a", name, uri, log_level="info")
    wait_for(lambda: a.elected(), "a elected under a chroot that did not exist")
    for p in (top, f"{top}/app", chroot):
        check(acl(t, hosts, p) == ["world anyone 31"], f"ACL of {p}: {acl(t, hosts, p)}")
    check(f"created {top}/app/x" in a.err(), f"a did not say what it created: {a.err()}")
    kids = t.children(hosts, f"{chroot}/reign/election/{name}")
    check(kids and "term" in kids, f"election under the chroot: {kids}")
    check(t.children(hosts, f"/reign/election/{name}") is None, "election made at the root")
    b = t.campaign("b", name, uri)
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             "b joined the election under the existing chroot")
    check("created" not in b.err(), f"b created something: {b.err()}")

    # `status` on a chroot that does not exist: created, then "no such election".
    other = "/" + t.unique("e2e-chroot-status")
    rc, _, err = t.reign(["--uri", t.uri(hosts + other), "status", name])
    check(rc == 1 and "no such election" in err, f"status under a new chroot: {rc} {err!r}")
    check(t.children(hosts, other) == [], f"{other} after status: {t.children(hosts, other)}")

    # With credentials: the client's ACL on each component.
    good = {"REIGN_PASSWORD": PASSWORD}
    vtop = "/" + t.unique("e2e-chroot-auth")
    sec = f"{vtop}/sec"
    auri = t.uri(hosts + sec, user="alice", session_timeout_ms=4000)
    c = t.campaign("c", name, auri, env=good)
    wait_for(lambda: c.elected(), "c elected under a chroot made with credentials")
    for p in (vtop, sec, f"{sec}/reign"):
        check(acl(t, hosts, p) == ["digest alice:x 31", "world anyone 1"],
              f"ACL of {p}: {acl(t, hosts, p)}")

    # Refused: the last component cannot be made without alice's credentials.
    bad = f"{sec}/reign/new"
    rc, out, err = t.reign(["--uri", t.uri(hosts + bad), "campaign", name, "--id", "d"],
                           timeout=3)
    check(rc == 1, f"campaign under {bad} without credentials: exit {rc}")
    line = err.strip().splitlines()[-1] if err.strip() else ""
    check(f"create {bad} under {sec}/reign" in line and "credentials" in line,
          f"message: {err.strip()!r}")
    check(PASSWORD not in out + err, "the password was shown")
    rc, _, _ = t.zkraw(hosts, "exists", bad)
    check(rc == NONODE, f"{bad} exists after the refusal (exit {rc})")

    # And with them, the same chroot is made.
    rc, _, err = t.reign(["--uri", t.uri(hosts + bad, user="alice"), "status", name], env=good)
    check(rc == 1 and "no such election" in err, f"status with credentials: {rc} {err!r}")
    check(acl(t, hosts, bad) == ["digest alice:x 31", "world anyone 1"], f"ACL of {bad}")
    log("chroots created open, nested and with credentials; a refusal names the component")

    for p in (a, b, c):
        p.send(signal.SIGTERM)
    for p in (a, b, c):
        check(p.wait() == 0, f"{p.label} did not exit 0")


if __name__ == "__main__":
    main("e2e_chroot", body)
