#!/usr/bin/env python3
"""test_bad_input.py - bad input gets a clear message, the right exit status, and no node.

Each case runs the `reign` binary with one thing wrong: a malformed URI (many ways), an unknown
URI parameter, a server that does not answer (a closed port, connect_timeout_ms=1000: it must
give up on its own, within a generous bound), an illegal election name, a payload over
1000000 bytes, a bad candidate id, a user without a password, command-line misuse, a command
that does not exist, and a strategy that contradicts the existing election's.  For each: the
exit status (1 failure, 2 usage, 127 command not found), a one-line message on stderr of the
form "reign: ..." naming the offending value, nothing on stdout, and no node of the election
left in ZooKeeper.  The limits themselves are accepted: a 200-character name and a payload of
exactly 1000000 bytes campaign and lead.
"""
import os
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

USAGE, FAIL = 2, 1


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    # A port nobody listens on: bound, never listening, so connects are refused while we run.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    big = os.path.join(t.dir, "big")
    with open(big, "wb") as f:
        f.write(b"x" * 1000001)
    exact = os.path.join(t.dir, "exact")
    with open(exact, "wb") as f:
        f.write(b"y" * 1000000)

    names = []

    def name():
        n = t.unique("bad")
        names.append(n)
        return n

    no_pw = {"REIGN_PASSWORD": ""}
    cases = [
        # (label, args, env, exit status, words the message must contain)
        ("empty URI host", ["--uri", "zk://", "campaign", name()], None, FAIL,
         ["malformed URI", "host"]),
        ("port not a number", ["--uri", f"zk://127.0.0.1:notaport", "campaign", name()], None,
         FAIL, ["malformed URI", "'notaport'"]),
        ("port out of range", ["--uri", "zk://127.0.0.1:70000", "campaign", name()], None, FAIL,
         ["malformed URI", "'70000'"]),
        ("unknown scheme", ["--uri", "http://127.0.0.1:2181", "campaign", name()], None, FAIL,
         ["malformed URI", "'http'"]),
        ("no scheme", ["--uri", "127.0.0.1:2181", "campaign", name()], None, FAIL,
         ["malformed URI", "scheme"]),
        ("unclosed IPv6", ["--uri", "zk://[::1", "campaign", name()], None, FAIL,
         ["malformed URI", "]"]),
        ("bad chroot", ["--uri", f"zk://{hosts}/chroot/", "campaign", name()], None, FAIL,
         ["'/chroot/'"]),
        ("non-numeric parameter",
         ["--uri", f"zk://{hosts}?session_timeout_ms=abc", "campaign", name()], None, FAIL,
         ["session_timeout_ms", "'abc'"]),
        ("parameter out of range",
         ["--uri", f"zk://{hosts}?session_timeout_ms=1", "campaign", name()], None, FAIL,
         ["session_timeout_ms", "range"]),
        ("bad suspend_policy",
         ["--uri", f"zk://{hosts}?suspend_policy=never", "campaign", name()], None, FAIL,
         ["suspend_policy", "'never'"]),
        ("unknown URI parameter", ["--uri", f"zk://{hosts}?bogus=1", "campaign", name()], None,
         FAIL, ["unknown parameter", "'bogus'"]),
        ("unknown scheme", ["--uri", "http://127.0.0.1/x", "campaign", name()], None, FAIL,
         ["'http'", "zk://"]),
        ("relative SQLite path", ["--uri", "sqlite://x.db", "campaign", name()], None, FAIL,
         ["absolute"]),
        ("user without password", ["--uri", f"zk://alice@{hosts}", "campaign", name()], no_pw,
         FAIL, ["no password", "'alice'"]),
        ("empty user", ["--uri", f"zk://@{hosts}", "campaign", name()], None, FAIL,
         ["user"]),
        ("password_file without user",
         ["--uri", f"zk://{hosts}?password_file=/nonexistent", "campaign", name()], None, FAIL,
         ["password_file"]),
        ("unreachable server",
         ["--uri", f"zk://127.0.0.1:{closed_port}?connect_timeout_ms=1000", "campaign", name()],
         None, FAIL, ["cannot connect", f"127.0.0.1:{closed_port}"]),
        ("unreachable server (status)",
         ["--uri", f"zk://127.0.0.1:{closed_port}?connect_timeout_ms=1000", "status", name()],
         None, FAIL, ["cannot connect"]),
        ("name with a slash", ["--uri", uri, "campaign", "a/b"], None, FAIL,
         ["illegal election name", "'a/b'"]),
        ("name '..'", ["--uri", uri, "campaign", ".."], None, FAIL,
         ["illegal election name", "'..'"]),
        ("name '.'", ["--uri", uri, "campaign", "."], None, FAIL, ["illegal election name"]),
        ("empty name", ["--uri", uri, "campaign", ""], None, FAIL, ["illegal election name"]),
        ("name of 201 characters", ["--uri", uri, "campaign", "n" * 201], None, FAIL,
         ["illegal election name"]),
        ("name with a space", ["--uri", uri, "run", "has space", "--", "true"], None, FAIL,
         ["illegal election name", "'has space'"]),
        ("illegal name (status)", ["--uri", uri, "status", "a/b"], None, FAIL,
         ["illegal election name"]),
        ("illegal name (watch)", ["--uri", uri, "watch", ".."], None, FAIL,
         ["illegal election name"]),
        ("illegal name (cede)", ["--uri", uri, "cede", "x y"], None, FAIL,
         ["illegal election name"]),
        ("payload too large", ["--uri", uri, "campaign", name(), "--data-file", big], None, FAIL,
         ["payload too large", "1000000"]),
        ("id with a tab", ["--uri", uri, "campaign", name(), "--id", "a\tb"], None, FAIL,
         ["invalid candidate id"]),
        ("id of 257 bytes", ["--uri", uri, "campaign", name(), "--id", "i" * 257], None, FAIL,
         ["invalid candidate id"]),
        ("missing data file", ["--uri", uri, "campaign", name(), "--data-file", "/nonexistent"],
         None, FAIL, ["'/nonexistent'"]),
        ("no election name", ["--uri", uri, "campaign"], None, USAGE, ["missing election NAME"]),
        ("unknown option", ["--uri", uri, "campaign", name(), "--bogus"], None, USAGE,
         ["option", "'--bogus'"]),
        ("unknown command", ["--uri", uri, "bogus"], None, USAGE, ["unknown command", "'bogus'"]),
        ("bad strategy", ["--uri", uri, "campaign", name(), "--strategy", "nope"], None, USAGE,
         ["invalid strategy", "'nope'"]),
        ("bad session timeout", ["--session-timeout", "abc", "--uri", uri, "campaign", name()],
         None, USAGE, ["--session-timeout", "'abc'"]),
        ("bad log level", ["--log-level", "loud", "--uri", uri, "campaign", name()], None, USAGE,
         ["'loud'"]),
        ("run without command", ["--uri", uri, "run", name()], None, USAGE, ["CMD"]),
        ("run: command not found", ["--uri", uri, "run", name(), "--", "/nonexistent/cmd"],
         None, 127, ["'/nonexistent/cmd'"]),
        ("status of no election", ["--uri", uri, "status", name()], None, FAIL,
         ["no such election"]),
    ]
    if os.geteuid() != 0:
        # Without a URI, the default store is a SQLite file under $XDG_STATE_HOME or $HOME
        # (root's is /var/lib/reign, always usable): with neither, a clear usage error.
        cases.append(("no store", ["campaign", name()],
                      {"REIGN_URI": "", "HOME": "", "XDG_STATE_HOME": ""}, USAGE,
                      ["--uri", "REIGN_URI"]))
    for label, args, env, want_rc, words in cases:
        rc, out, err = t.reign(args, env=env, timeout=30)
        shown = err.strip().replace("\n", " | ")
        check(rc == want_rc, f"{label}: exit {rc}, want {want_rc} ({shown})")
        check(out == "", f"{label}: printed {out!r} on stdout")
        last = err.strip().splitlines()[-1] if err.strip() else ""
        check(last.startswith("reign: "), f"{label}: message {last!r}")
        for w in words:
            check(w in err, f"{label}: message {shown!r} lacks {w!r}")
        log(f"ok: {label}: {last}")
    closed.close()

    # Nothing of any of these elections may exist.
    elections = t.children(hosts, "/reign/election") or []
    left = [n for n in names if n in elections]
    check(not left, f"nodes left behind for {left}")

    # A strategy that contradicts the election's own.
    lname = t.unique("bad-strategy")
    holder = t.campaign("holder", lname, uri, extra=["--strategy", "lock"])
    wait_for(lambda: holder.elected(), "the lock holder elected")
    before = sorted(t.children(hosts, f"/reign/election/{lname}"))
    rc, out, err = t.reign(["--uri", uri, "campaign", lname, "--strategy", "queue"], timeout=30)
    check(rc == FAIL and "'lock'" in err and "'queue'" in err, f"strategy mismatch: {rc} {err!r}")
    check(out == "", f"strategy mismatch printed {out!r}")
    after = sorted(t.children(hosts, f"/reign/election/{lname}"))
    check(after == before == ["history", "lock", "term"], f"children {before} then {after}")
    check(holder.alive() and not holder.demoted(), "the holder was disturbed")
    st = t.status(lname, uri)
    check(st["strategy"] == "lock" and st["leader"]["id"] == "holder", f"{st}")
    log("ok: strategy mismatch refused, nothing left behind")
    holder.send(signal.SIGTERM)
    check(holder.wait() == 0, "the holder did not exit 0")

    # The limits are accepted.
    for label, nm, extra in (("200-character name", "n" * 190 + t.unique("")[-10:], []),
                             ("1000000-byte payload", t.unique("max"), ["--data-file", exact])):
        check(len(nm) <= 200, nm)
        p = t.campaign(label.split()[0], nm, uri, extra=extra)
        wait_for(lambda: p.elected() or not p.alive(), f"{label}: elected")
        check(p.alive() and p.elected(), f"{label}: not elected: {p.err()}")
        st = t.status(nm, uri)
        check(st["leader"] and st["leader"]["id"] == p.label, f"{label}: {st}")
        if extra:
            check(st["leader"].get("data") == "y" * 1000000, f"{label}: payload not as sent")
        p.send(signal.SIGTERM)
        check(p.wait() == 0, f"{label}: did not exit 0")
        check(t.status(nm, uri)["candidates"] == [], f"{label}: node left after resigning")
        log(f"ok: {label} accepted")


if __name__ == "__main__":
    main("e2e_bad_input", body)
