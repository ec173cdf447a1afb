#!/usr/bin/env python3
"""test_tls.py - reign on etcd over TLS (etcds://), against real members that serve their
clients over TLS only and require a client certificate; and etcd's users.

    test_tls.py elect|bad_files|auth|auth_plain|auth_token_lost

The members are started by etcd.sh with REIGN_ETCD_TLS=1 (etcde.Cluster(tls=True)): their
client port speaks https only, with --cert-file, --key-file, --client-cert-auth and
--trusted-ca-file; their peers talk plain HTTP.  The certificates are made by openssl when the
test starts, in the cluster's directory under the test's state directory (tls/: a CA, the
members' certificate for IP:127.0.0.1 and DNS:localhost, a client's, and a second CA that signed
nothing), and never kept in the tree.  The URIs carry cacert=, cert= and key=.

A killed leader's guardian must end its leadership as test_kill.py guardian checks it: its one
line names the killed leader's lease as revoked ("revoked etcd lease 0xLEASE"; a lease that had
run out by its TTL would read "had expired") and says it ended the leader's history record;
`reign history --json` then reads that leadership's end as the guardian's (end=guardian, the
time written, not estimated), and the lease is gone from etcd's list.  So the guardian reached
the members over TLS with the client's files, and as the client's user.

  elect      three members.  `reign campaign` a, b and c: one leads, `reign status` (text and
             --json) names it, `reign value set` and `value get` go through TLS (and etcdctl
             reads the value where reign keeps it).  Twice, the leader is SIGKILLed and a
             replacement joins: a successor is elected after the kill with a higher term and
             token, on a leader key of its own lease; the killed leader's guardian ended its
             leadership (above).  check_leadership.py over every process's lines: no two
             leaderships at once by the candidates' own monotonic clocks, terms and tokens
             growing.
  bad_files  one TLS member and one plain one; `reign status x` on a URI that is wrong must
             exit 1 (not crash, not hang: bounded by the generous wait) with a message that says
             what: cacert=, cert= or key= naming a missing file (the message names it), cert=
             without key=, cacert= on etcd://; a cacert= of the second CA, which did not sign the
             members' certificate (status, campaign and value get: the message speaks of the
             certificate); no client certificate for a member that requires one; etcd:// to the
             TLS port; etcds:// to the plain member (those three: the message names etcd and the
             address).  The other CA and the missing client certificate end the connect at once,
             saying TLS refused it (not at the connect timeout); etcd:// to the TLS port says
             that a TLS member needs etcds://.
  auth       one TLS member with etcd's authentication on: root, a user `reign` with read and
             write on /reign (docs/etcd.md's grant), a user `nobody` with no role.  etcd's
             gateway refuses, with authentication on and --client-cert-auth, every /v3 request
             whose client certificate has a Common Name (embed/serve.go: "CommonName of client
             sending a request against gateway will be ignored"), so the clients here present
             one without (made by openssl, signed by the cluster's CA), which works with either
             api; a client with the cluster's certificate (a Common Name) works over gRPC and is
             refused with api=gateway.  Two candidates as
             `reign`: a with its password in REIGN_PASSWORD (which the guardian's environment
             never holds: it is told the password over its socket), b with password_file=; a
             value set and read (the password from REIGN_PASSWORD too); a, the leader,
             SIGKILLed and b elected, a's guardian logged in as `reign` (above); no process
             printed the password; a wrong password exits 1 saying etcd refused the user's
             credentials, without printing the password; `nobody` exits 1 at once saying
             permission was denied and that it needs a role, and writes nothing; the cluster's
             client certificate with a Common Name exits 1.
  auth_plain the same users on one plain member (etcd://): two candidates as `reign`, the
             leader SIGKILLed and its guardian logged in over reign's own HTTP (above).
  auth_token_lost
             the same users on three plain members: candidates a, b and c as `reign`
             (password_file=), each URI listing another member first, and a leader.  etcd 3.4's
             simple tokens live in each member's memory only: every member is restarted, one
             after the other (SIGKILL, started again with its data, every member healthy
             before the next), so that no member knows a token issued before, and a client
             meets "invalid auth token" until it logs in again.  No candidate exits; one leads
             after the restarts (`reign status` names it), resigns (SIGTERM, exit 0), and
             another is elected after the restarts with a higher term and token than the leader
             before them had (`reign history` names both); a value set and read as `reign`;
             check_leadership.py over every candidate's lines.  Each candidate's log
             (--log-level debug: the election's reads and writes log a refusal at debug, the
             keepalive, a grant and the watch streams at info) says etcd did not know its token
             ("invalid auth token") since the restarts, and the successor's that it logged in
             again ("logged in as user 'reign'").  No process printed the password.

No time is asserted: only order, and exits that must come within the generous wait.
"""
import json
import os
import secrets
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, log, wait_for  # noqa: E402

FAIL = 1  # reign's exit status for a failure (2: usage); a signal shows as a negative one
PARAMS = {"session_timeout_ms": etcde.SESSION_MS}
# What a TLS failure no try mends says: it ends the connect at once (docs/etcd.md, "HTTP").
TLS_REFUSED = "TLS with the member: check cacert="

ROUNDS = 2


def expect_failure(t, args, wants, what, env=None):
    """`reign ARGS` must exit 1 with every string of wants (case-insensitive) in its stderr."""
    rc, out, err = t.reign(args, env=env)
    log(f"{what}: exit {rc}: {err.strip()}")
    check(rc == FAIL, f"{what}: exit status {rc}, want {FAIL}"
                      + (f" (killed by signal {-rc})" if rc < 0 else "") + f": {err.strip()}")
    for w in wants:
        check(w.lower() in err.lower(), f"{what}: the message does not say {w!r}: {err.strip()}")
    return err


def kill_leader(t, cluster, name, uri, leader, ev, alive, procs, label, env=None):
    """SIGKILL to the leader, a replacement `label` joins (unless label is None); waits for the
    successor and checks it came after the kill with a higher term and token, and that the
    killed leader's guardian ended its leadership (see the module's docstring).  Returns
    (successor, its elected event)."""
    kvs, _ = cluster.get(f"/reign/election/{name}/leader")
    check(kvs and kvs[0]["lease"], f"no leader key on a lease: {kvs}")
    lease = kvs[0]["lease"]
    check(lease == etcde.lease_of(leader), f"the leader key is on lease {lease}, "
                                           f"{leader.label}'s session is {etcde.lease_of(leader)}")
    killed_ns = leader.kill9()
    log(f"killed {leader.label} (lease {lease})")
    alive.remove(leader)
    if label:
        joiner = t.campaign(label, name, uri, env=env)
        alive.append(joiner)
        procs.append(joiner)
    new, nev = etcde.settled(t, name, uri, alive, above_term=ev.term,
                             what=f"a successor of {leader.label}", cluster=cluster)
    check(nev.ns >= killed_ns, f"{new.label} elected at {nev.ns}, before the kill of "
                               f"{leader.label} at {killed_ns}")
    check(nev.token > ev.token, f"token {nev.token} after {ev.token}")
    lines = wait_for(lambda: etcde.guardian_lines(leader),
                     f"{leader.label}'s guardian to say what it did")
    check(len(lines) == 1, f"{leader.label}: {len(lines)} guardian lines: {lines}")
    _, pid, report = lines[0]
    check(pid == leader.pid, f"guardian line for pid {pid}, not {leader.pid}")
    for want in (f"revoked etcd lease 0x{lease}", "ended 1 history record"):
        check(want in report, f"{leader.label}'s guardian did not say {want!r}: {report}")
    wait_for(lambda: lease not in cluster.leases(), f"lease {lease} gone")
    rc, out, err = t.reign(["--uri", uri, "history", name, "--json"], env=env)
    check(rc == 0, f"reign history {name}: exit {rc}: {err.strip()}")
    h = {x["term"]: x for x in json.loads(out)["terms"]}.get(ev.term)
    check(h and h["id"] == leader.label and h["end"] == "guardian"
          and h["ended_ms"] is not None and not h["ended_estimated"],
          f"{leader.label}'s leadership (term {ev.term}) was not ended by its guardian: {h}")
    log(f"{leader.label}'s guardian revoked lease {lease} and ended term {ev.term}; "
        f"{new.label} leads (term {nev.term} token {nev.token})")
    return new, nev


def check_value(t, cluster, uri, key, data, env=None):
    """`reign value set KEY DATA`, then `value get` gives it back, and etcdctl finds it under
    /reign (it went to this cluster)."""
    rc, out, err = t.reign(["--uri", uri, "value", "set", key, data], env=env)
    check(rc == 0, f"value set {key}: exit {rc}: {err.strip()}")
    rc, out, err = t.reign(["--uri", uri, "value", "get", key, "--json"], env=env)
    check(rc == 0 and json.loads(out)["data"] == data,
          f"value get {key}: exit {rc}: {out.strip()} {err.strip()}")
    kvs, _ = cluster.get("/reign/", prefix=True)
    check(any(kv["key"] == f"/reign/value/{key}" and data.encode() in kv["value"]
              for kv in kvs),
          f"etcdctl finds no key for {key} holding {data!r}: {[kv['key'] for kv in kvs]}")
    log(f"value {key} set and read back" + (" over TLS" if cluster.tls else ""))


def scenario_elect(t):
    cluster = etcde.Cluster(t, tls=True)
    uri = cluster.uri(**PARAMS)
    check(uri.startswith("etcds://"), f"not a TLS URI: {uri}")
    name = t.unique("tls")
    alive = etcde.campaigns(t, name, uri, ["a", "b", "c"])
    procs = list(alive)
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, alive, cluster=cluster)

    rc, out, err = t.reign(["--uri", uri, "status", name])
    check(rc == 0 and leader.label in out and str(ev.term) in out,
          f"status: exit {rc}, no {leader.label} term {ev.term} in: {out.strip()} {err.strip()}")
    st = t.status(name, uri)
    check(sorted(c["id"] for c in st["candidates"]) == ["a", "b", "c"],
          f"status --json candidates: {st['candidates']}")
    check_value(t, cluster, uri, f"{name}/v", "over TLS")

    for rnd in range(1, ROUNDS + 1):
        leader, ev = kill_leader(t, cluster, name, uri, leader, ev, alive, procs, f"r{rnd}")

    etcde.standing(t, name, uri, len(alive))
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=ROUNDS + 1)


def scenario_bad_files(t):
    tls = etcde.Cluster(t, tls=True, n=1)
    plain = etcde.Cluster(t, label="etcd-plain", n=1)
    missing = os.path.join(t.dir, "no-such-dir", "missing.pem")
    tls_addr = f"127.0.0.1:{tls.ports[0]}"
    plain_addr = f"127.0.0.1:{plain.ports[0]}"

    def status(uri):
        return ["--uri", uri, "status", "x"]

    # Files that cannot be read: refused when the URI is read, naming the file.
    for param in ("cacert", "cert", "key"):
        expect_failure(t, status(tls.uri(**{param: missing}, **PARAMS)), [param, missing],
                       f"{param}= of a missing file")
    expect_failure(t, status(tls.uri(key=None, **PARAMS)), ["cert=", "key="],
                   "cert= without key=")
    expect_failure(t, status(plain.uri(cacert=tls.tls_file("ca.crt"), **PARAMS)),
                   ["cacert", "etcds://"], "cacert= on etcd://")

    # A CA that did not sign the members' certificate: every command gives up.
    wrong_ca = tls.uri(cacert=tls.tls_file("other-ca.crt"), **PARAMS)
    for args, what in [(status(wrong_ca), "reign status"),
                       (["--uri", wrong_ca, "campaign", "x", "--id", "q"], "reign campaign"),
                       (["--uri", wrong_ca, "value", "get", "some/key"], "reign value get")]:
        expect_failure(t, args, ["certificate", tls_addr, TLS_REFUSED], f"{what} with another CA")

    # No client certificate for a member that requires one.
    expect_failure(t, status(tls.uri(cert=None, key=None, **PARAMS)),
                   ["etcd", tls_addr, TLS_REFUSED], "no client certificate")
    # Plain HTTP to the TLS port (which closes it unanswered), TLS to the plain port.
    expect_failure(t, status(tls.uri(scheme="etcd", cacert=None, cert=None, key=None,
                                     **PARAMS)), ["etcd", tls_addr, "needs etcds://"],
                   "etcd:// to the TLS port")
    expect_failure(t, status(plain.uri(scheme="etcds", cacert=tls.tls_file("ca.crt"),
                                       cert=tls.tls_file("client.crt"),
                                       key=tls.tls_file("client.key"), **PARAMS)),
                   ["etcd", plain_addr], "etcds:// to the plain member")

    # The right files still work, and none of the above wrote anything.
    rc, out, err = t.reign(status(tls.uri(**PARAMS)))
    check(rc == FAIL and "no such election" in err,
          f"status x with the right files: exit {rc}: {err.strip()}")
    for c in (tls, plain):
        check(not c.snapshot("/reign"), f"something was written: {c.snapshot('/reign')}")


def issue_client_cert(cluster, stem, subject):
    """A client certificate signed by the cluster's CA, with the given subject: (crt, key)."""
    d = cluster.tls_dir
    crt, key, csr, ext = (os.path.join(d, f"{stem}.{x}") for x in ("crt", "key", "csr", "ext"))
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                "extendedKeyUsage=clientAuth\n")
    for cmd in (["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", key, "-out", csr, "-subj", subject],
                ["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(d, "ca.crt"),
                 "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-out", crt,
                 "-days", "2", "-extfile", ext]):
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=etcde.e2elib.WAIT)
        check(r.returncode == 0, f"{' '.join(cmd)}: {r.stderr.strip()}")
    os.unlink(csr)
    os.unlink(ext)
    return crt, key


def secret_file(t, label, text):
    path = os.path.join(t.dir, label)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    return path


def enable_auth(cluster):
    """etcd's authentication on, with users root, reign (readwrite /reign) and nobody (no
    role): (reign's password, nobody's)."""
    root_pw, reign_pw, nobody_pw = (secrets.token_hex(8) for _ in range(3))
    for args in (["user", "add", f"root:{root_pw}"], ["role", "add", "root"],
                 ["user", "grant-role", "root", "root"], ["role", "add", "reign-rw"],
                 ["role", "grant-permission", "reign-rw", "--prefix=true", "readwrite", "/reign"],
                 ["user", "add", f"reign:{reign_pw}"], ["user", "grant-role", "reign", "reign-rw"],
                 ["user", "add", f"nobody:{nobody_pw}"], ["auth", "enable"]):
        cluster.ctl(*args)
    cluster.ctl_user = f"root:{root_pw}"
    log("etcd's authentication on: users root, reign (readwrite /reign), nobody (no role)")
    return reign_pw, nobody_pw


def users_kill(t, cluster, name, env_uri, uri, reign_pw):
    """a (the password in REIGN_PASSWORD) leads, b (password_file=, in uri) stands; a is
    SIGKILLed and b elected, a's guardian logged in as reign (kill_leader); neither printed the
    password.  Returns b, leading, and every process."""
    a = t.campaign("a", name, env_uri, env={"REIGN_PASSWORD": reign_pw})
    leader, ev = etcde.settled(t, name, uri, [a], cluster=cluster)
    b = t.campaign("b", name, uri)
    alive, procs = [a, b], [a, b]
    etcde.standing(t, name, uri, 2)
    leader, ev = kill_leader(t, cluster, name, uri, leader, ev, alive, procs, None)
    for p in procs:
        check(reign_pw not in p.err() and reign_pw not in "\n".join(p.lines()),
              f"{p.label}'s output shows the password")
    return leader, procs


def scenario_auth(t):
    cluster = etcde.Cluster(t, tls=True, n=1)
    reign_pw, nobody_pw = enable_auth(cluster)
    crt, key = issue_client_cert(cluster, "client-no-cn", "/O=reign throwaway test client")
    pw_file = secret_file(t, "reign.password", reign_pw)
    uri = cluster.uri(user="reign", cert=crt, key=key, password_file=pw_file, **PARAMS)
    env_uri = cluster.uri(user="reign", cert=crt, key=key, **PARAMS)

    name = t.unique("auth")
    check_value(t, cluster, uri, f"{name}/v", "as reign")
    rc, out, err = t.reign(["--uri", env_uri, "value", "get", f"{name}/v"],
                           env={"REIGN_PASSWORD": reign_pw})
    check(rc == 0 and out.rstrip("\n") == "as reign",
          f"value get with REIGN_PASSWORD: exit {rc}: {out.strip()} {err.strip()}")

    leader, procs = users_kill(t, cluster, name, env_uri, uri, reign_pw)

    # A client certificate with a Common Name: gRPC takes it (the user's token decides, as for
    # etcdctl).
    cn_uri = cluster.uri(user="reign", password_file=pw_file, **PARAMS)
    rc, out, err = t.reign(["--uri", cn_uri, "value", "get", f"{name}/v"])
    check(rc == 0, f"a client certificate with a Common Name over gRPC: exit {rc}: {err.strip()}")
    # A wrong password, in the URI: refused, and never printed.
    before = cluster.snapshot("/reign")
    err = expect_failure(t, ["--uri", cluster.uri(user="reign:wrongpassword", cert=crt, key=key,
                                                  **PARAMS), "value", "get", f"{name}/v"],
                         ["refused the credentials of user 'reign'"], "a wrong password")
    check("wrongpassword" not in err, f"the password was printed: {err.strip()}")
    # A user without a role: no session key can be written, so nothing at all.
    nobody = cluster.uri(user="nobody", cert=crt, key=key,
                         password_file=secret_file(t, "nobody.password", nobody_pw), **PARAMS)
    expect_failure(t, ["--uri", nobody, "value", "set", f"{name}/w", "no"],
                   ["etcd", "permission denied", "user 'nobody' needs a role"],
                   "a user without permission on /reign")
    # The cluster's client certificate has a Common Name: the gateway refuses it (below).
    expect_failure(t, ["--uri", cluster.uri(user="reign", password_file=pw_file, api="gateway",
                                            **PARAMS),
                       "value", "get", f"{name}/v"], ["etcd"],
                   "a client certificate with a Common Name, authentication on, the gateway")
    check(cluster.snapshot("/reign") == before, "a refused client changed /reign")

    etcde.standing(t, name, uri, 1)
    etcde.resign_all([leader])
    t.check_leadership(procs, min_leaderships=2)


def scenario_auth_plain(t):
    cluster = etcde.Cluster(t, n=1)
    reign_pw, _ = enable_auth(cluster)
    pw_file = secret_file(t, "reign.password", reign_pw)
    uri = cluster.uri(user="reign", password_file=pw_file, **PARAMS)
    check(uri.startswith("etcd://"), f"not a plain URI: {uri}")
    name = t.unique("auth-plain")
    leader, procs = users_kill(t, cluster, name, cluster.uri(user="reign", **PARAMS), uri,
                               reign_pw)
    etcde.standing(t, name, uri, 1)
    etcde.resign_all([leader])
    t.check_leadership(procs, min_leaderships=2)


def token_refusals(p, mark):
    """The lines of p's log past offset mark that speak of a token etcd did not know (what
    sends the client to log in again)."""
    return [line for line in p.err()[mark:].splitlines() if "auth token" in line]


def scenario_auth_token_lost(t):
    cluster = etcde.Cluster(t)
    reign_pw, _ = enable_auth(cluster)
    pw_file = secret_file(t, "reign.password", reign_pw)
    params = dict(user="reign", password_file=pw_file, **PARAMS)
    uri = cluster.uri(**params)
    check(uri.startswith("etcd://"), f"not a plain URI: {uri}")
    name = t.unique("auth-token-lost")
    # Each candidate starts on a member of its own: every restart strikes one of them.
    orders = {"a": [1, 2, 3], "b": [2, 3, 1], "c": [3, 1, 2]}
    # --log-level debug: a request refused for its token is logged at info by the keepalive, a
    # grant and the watch streams, but at debug by the reads and writes of the election.
    alive = [t.campaign(k, name, cluster.uri(o, **params), log_level="debug")
             for k, o in orders.items()]
    procs = list(alive)
    etcde.standing(t, name, uri, 3)
    leader, ev = etcde.settled(t, name, uri, alive, cluster=cluster)
    marks = {p: len(p.err()) for p in procs}

    for i in cluster.all():
        cluster.restart_server(i, procs)
    restarted_ns = time.monotonic_ns()
    log("every member restarted: none knows a token issued before")
    for p in procs:
        check(p.alive(), f"{p.label} exited ({p.returncode()}) over the restarts: "
                         f"{(p.err().strip().splitlines() or ['no message'])[-1]}")

    # The election carries on: one leader (maybe another term, if the restarts cost the
    # leader its lease), then a handoff to a successor that is elected after the restarts.
    leader, lev = etcde.settled(t, name, uri, alive, above_term=ev.term - 1,
                                what="one leader after the restarts", cluster=cluster)
    check(lev.term >= ev.term, f"term {lev.term} after {ev.term}")
    etcde.standing(t, name, uri, 3)
    leader.send(signal.SIGTERM)
    rc = leader.wait()
    check(rc == 0, f"{leader.label} exited {rc} after SIGTERM: "
                   f"{(leader.err().strip().splitlines() or ['no message'])[-1]}")
    alive.remove(leader)
    new, nev = etcde.settled(t, name, uri, alive, above_term=lev.term,
                             what=f"a successor of {leader.label} after the restarts",
                             cluster=cluster)
    check(nev.ns > restarted_ns, f"{new.label} elected at {nev.ns}, before the restarts ended "
                                 f"at {restarted_ns}")
    check(nev.term > ev.term and nev.token > ev.token,
          f"{new.label}: term {nev.term} token {nev.token} after term {ev.term} "
          f"token {ev.token} before the restarts")
    rc, out, err = t.reign(["--uri", uri, "history", name, "--json"])
    check(rc == 0, f"reign history {name}: exit {rc}: {err.strip()}")
    h = {x["term"]: x for x in json.loads(out)["terms"]}
    check(h.get(lev.term, {}).get("id") == leader.label
          and h.get(nev.term, {}).get("id") == new.label,
          f"history does not name {leader.label} (term {lev.term}) and {new.label} "
          f"(term {nev.term}): {sorted(h.items())}")
    log(f"{leader.label} resigned, {new.label} leads (term {nev.term} token {nev.token})")
    check_value(t, cluster, uri, f"{name}/v", "after the restarts")

    etcde.standing(t, name, uri, len(alive))
    etcde.resign_all(alive)
    t.check_leadership(procs, min_leaderships=2)

    # Every candidate met its token unknown: each made a request that needs one after the
    # restarts (its resignation's delete at the latest), which no member knew by then.  The
    # successor, elected by writes after the restarts, logged in again (one that met it only
    # as it left may have exited first).
    check("logged in as user 'reign'" in new.err()[marks[new]:],
          f"{new.label}'s log never says it logged in again after the restarts")
    for p in procs:
        lines = token_refusals(p, marks[p])
        log(f"{p.label}: {len(lines)} line(s) of an unknown token since the restarts"
            + (f", the first: {lines[0].strip()}" if lines else ""))
        check(any("invalid auth token" in line for line in lines),
              f"{p.label}'s log never says etcd did not know its token after the restarts")
        check(reign_pw not in p.err() and reign_pw not in "\n".join(p.lines()),
              f"{p.label}'s output shows the password")


SCENARIOS = {
    "elect": scenario_elect,
    "bad_files": scenario_bad_files,
    "auth": scenario_auth,
    "auth_plain": scenario_auth_plain,
    "auth_token_lost": scenario_auth_token_lost,
}


if __name__ == "__main__":
    etcde.main_scenarios("test_tls.py", "e2e_etcd_tls", SCENARIOS)
