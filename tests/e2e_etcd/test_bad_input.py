#!/usr/bin/env python3
"""test_bad_input.py - bad input on etcd: clear errors, right exit codes, nothing deleted.

    test_bad_input.py unreachable|gateway_off|foreign_data|too_large|library_missing

  unreachable   URIs whose members do not listen (one port, three ports): `reign status`,
                `reign campaign` and `reign value get` give up after the connect timeout
                with exit status 1 (a failure, not a crash) and a message that names etcd
                and the address.
  gateway_off   a three-member cluster with --enable-grpc-gateway=false
                (REIGN_ETCD_EXTRA_OPTS): over gRPC (the default) `reign value set` and
                `reign value get` work as ever; api=rest is refused, naming the parameter;
                with api=gateway the same commands as above exit 1 and the message says the
                JSON gateway is off.
  foreign_data  `etcdctl put /reign/election/x garbage`: `reign campaign x` exits 1 and
                `reign status x` exits 1, each with a message naming the key; the key is still
                there with its value.  Then, in an election that runs (a leads, b waits),
                foreign bytes in the term key and foreign keys among the candidates (junk,
                n_zz): `reign status` exits 0 with sane output listing a and b (as on
                ZooKeeper, tests/e2e/test_foreign_data.py: the leader it names from a garbled
                term is not asserted), nothing is deleted, nobody is demoted or elected, and
                the election goes on: a resigns, b takes over with a higher term and token,
                and status names b with its term (its claim wrote a proper term again).
  too_large     a 2 MB payload (more than etcd's default request limit of 1.5 MiB; by
                --data-file, a command line cannot carry it): `reign campaign --data-file` and
                `reign value set --data-file` exit 1 saying "too large", and nothing is
                written.  A payload of exactly 1,000,000 bytes (reign's limit) is accepted by
                both and read back whole.  On a cluster whose own limit is lower
                (--max-request-bytes=262144), a 500,000-byte payload is refused by etcd: both
                commands exit 1 saying "too large", nothing written.
  library_missing  libhttp_parser (which reads the members' HTTP answers) missing: the same
                commands exit 1 naming the Debian package to install.

No time is asserted: a command that must give up is only bounded by the generous wait.
"""
import json
import os
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcde  # noqa: E402
from etcde import check, log  # noqa: E402

PARAMS = {"session_timeout_ms": etcde.SESSION_MS}
FAIL = 1  # reign's exit status for a failure (2: usage); a signal shows as a negative one


def free_ports(n):
    """n loopback ports nothing listens on (bound, then closed)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def expect_failure(t, args, wants, what):
    """`reign ARGS` must exit 1 with every string of wants (case-insensitive) in its stderr."""
    rc, out, err = t.reign(args)
    log(f"{what}: exit {rc}: {err.strip()}")
    check(rc == FAIL, f"{what}: exit status {rc}, want {FAIL}"
                      + (f" (killed by signal {-rc})" if rc < 0 else "") + f": {err.strip()}")
    for w in wants:
        check(w.lower() in err.lower(), f"{what}: the message does not say {w!r}: {err.strip()}")
    return err


def commands(uri, name):
    return [
        (["--uri", uri, "status", name], "reign status"),
        (["--uri", uri, "campaign", name, "--id", "q"], "reign campaign"),
        (["--uri", uri, "value", "get", "some/key"], "reign value get"),
    ]


def scenario_unreachable(t):
    for ports in (free_ports(1), free_ports(3)):
        hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
        uri = f"etcd://{hosts}?session_timeout_ms={etcde.SESSION_MS}"
        for args, what in commands(uri, "x"):
            expect_failure(t, args, ["etcd", f"127.0.0.1:{ports[0]}"],
                           f"{what} on {len(ports)} silent port(s)")


def scenario_gateway_off(t):
    cluster = etcde.Cluster(t, extra_opts="--enable-grpc-gateway=false")
    uri = cluster.uri(**PARAMS)
    rc, out, err = t.reign(["--uri", uri, "value", "set", "gw/off", "grpc"])
    check(rc == 0, f"value set over gRPC with the gateway off: exit {rc}: {err.strip()}")
    rc, out, err = t.reign(["--uri", uri, "value", "get", "gw/off"])
    check(rc == 0 and out.strip() == "grpc",
          f"value get over gRPC with the gateway off: exit {rc}, {out!r}: {err.strip()}")
    rc, out, err = t.reign(["--uri", cluster.uri(api="rest", **PARAMS), "value", "get", "gw/off"])
    check(rc != 0 and "parameter 'api'" in err,
          f"api=rest: exit {rc}, want a refusal naming the parameter: {err.strip()}")
    uri = cluster.uri(api="gateway", **PARAMS)
    for args, what in commands(uri, "x"):
        expect_failure(t, args, ["etcd", "gateway"], f"{what} with the gateway off")


def scenario_library_missing(t):
    """Without libhttp_parser (dl.h's test hook names no file) every command says which Debian
    package to install, and exits: no crash, no hang."""
    env = dict(os.environ, REIGN_TEST_LIBHTTP_PARSER="/nonexistent/libhttp_parser.so.2.9")
    uri = f"etcd://127.0.0.1:{free_ports(1)[0]}?session_timeout_ms={etcde.SESSION_MS}"
    for args, what in commands(uri, "x"):
        rc, out, err = t.reign(args, env=env)
        log(f"{what} without libhttp_parser: exit {rc}: {err.strip()}")
        check(rc == FAIL, f"{what}: exit status {rc}, want {FAIL}: {err.strip()}")
        check("libhttp-parser2.9" in err, f"{what}: the package is not named: {err.strip()}")


def write_file(t, label, size, byte=b"x"):
    path = os.path.join(t.dir, label)
    with open(path, "wb") as f:
        f.write(byte * size)
    return path


def scenario_foreign_data(t):
    cluster = etcde.Cluster(t)
    uri = cluster.uri(**PARAMS)

    # Foreign bytes inside an election that runs.
    name = t.unique("foreign")
    a = t.campaign("a", name, uri)
    etcde.settled(t, name, uri, [a], cluster=cluster)
    b = t.campaign("b", name, uri)
    etcde.standing(t, name, uri, 2)
    el = a.elected()[0]
    base = f"/reign/election/{name}"
    writes = [(f"{base}/term", b"\x00\xff not a term \x01"),
              (f"{base}/term", b"reign 1\nterm=999999\n"),
              (f"{base}/junk", b"junk"),
              (f"{base}/n_zz", b"not a candidate")]
    for key, value in writes:
        cluster.put(key, value)
        rc, out, err = t.reign(["--uri", uri, "status", name])
        check(rc == 0, f"status after a write to {key}: exit {rc}: {err.strip()}")
        check(not [c for c in out if ord(c) < 0x20 and c != "\n"],
              f"status after a write to {key} printed control characters: {out!r}")
        st = t.status(name, uri)
        check([k["id"] for k in st["candidates"]] == ["a", "b"],
              f"candidates after a write to {key}: {st['candidates']}")
        log(f"foreign bytes in {key}: status sane, a and b in line (leader: {st['leader']})")
    snap = cluster.snapshot(base)
    check(snap.get(f"{base}/junk") == b"junk" and
          snap.get(f"{base}/n_zz") == b"not a candidate", f"foreign keys gone: {list(snap)}")
    check(not a.demoted() and not b.elected(), "the foreign data moved the leadership")
    a.send(signal.SIGTERM)
    check(a.wait() == 0, "a did not exit 0 after SIGTERM")
    # b's claim writes a proper term again: settled() waits until status names b with it.
    _, bel = etcde.settled(t, name, uri, [b], above_term=el.term,
                           what="b elected after a left", cluster=cluster)
    check(bel.token > el.token, f"token {bel.token} after {el.token}")
    etcde.resign_all([b])
    t.check_leadership([a, b], min_leaderships=2)

    # An election key that holds what reign never wrote.
    cluster.ctl("put", "/reign/election/x", "garbage")
    before = cluster.snapshot("/reign")
    expect_failure(t, ["--uri", uri, "campaign", "x", "--id", "q"], ["/reign/election/x"],
                   "reign campaign x over foreign data")
    check(cluster.snapshot("/reign/election/x")["/reign/election/x"] == b"garbage",
          "the foreign value was changed")
    expect_failure(t, ["--uri", uri, "status", "x"], ["/reign/election/x"],
                   "reign status x over foreign data")
    after = cluster.snapshot("/reign")
    check(all(after.get(k) == v for k, v in before.items()),
          f"something was deleted or changed: before {before}, after {after}")


def scenario_too_large(t):
    cluster = etcde.Cluster(t)
    uri = cluster.uri(**PARAMS)
    big = write_file(t, "2MB", 2_000_000)
    expect_failure(t, ["--uri", uri, "campaign", "big", "--id", "q", "--data-file", big],
                   ["too large"], "reign campaign with 2 MB")
    expect_failure(t, ["--uri", uri, "value", "set", "big/v", "--data-file", big],
                   ["too large"], "reign value set with 2 MB")
    keys = cluster.snapshot("/reign")
    check(not [k for k, v in keys.items() if len(v) > 100_000],
          f"a big value was written: {[k for k, v in keys.items() if len(v) > 100_000]}")
    st = etcde.quietly(t.status, "big", uri)
    check(not st or not st["candidates"], f"a candidate of the refused campaign: {st}")

    # reign's own limit is accepted whole.
    limit = write_file(t, "1MB", 1_000_000, b"y")
    p = t.campaign("p", "limit", uri, extra=["--data-file", limit])
    etcde.settled(t, "limit", uri, [p], cluster=cluster)
    st = t.status("limit", uri)
    check(st["leader"]["data"] == "y" * 1_000_000, "the 1,000,000-byte payload did not "
                                                   "come back whole")
    rc, _, err = t.reign(["--uri", uri, "value", "set", "limit/v", "--data-file", limit])
    check(rc == 0, f"value set of 1,000,000 bytes: exit {rc}: {err.strip()}")
    rc, out, err = t.reign(["--uri", uri, "value", "get", "limit/v", "--json"])
    check(rc == 0 and json.loads(out)["data"] == "y" * 1_000_000,
          f"value get of 1,000,000 bytes: exit {rc}: {err.strip()}")
    etcde.resign_all([p])
    log("1,000,000 bytes accepted by campaign and value set")

    # etcd's own limit, lower than reign's: refused by the store.
    small = etcde.Cluster(t, label="etcd-small", n=3, extra_opts="--max-request-bytes=262144")
    suri = small.uri(**PARAMS)
    mid = write_file(t, "500kB", 500_000, b"z")
    expect_failure(t, ["--uri", suri, "campaign", "mid", "--id", "q", "--data-file", mid],
                   ["too large"], "reign campaign with 500 kB over a 256 kB etcd limit")
    expect_failure(t, ["--uri", suri, "value", "set", "mid/v", "--data-file", mid],
                   ["too large"], "reign value set with 500 kB over a 256 kB etcd limit")
    keys = small.snapshot("/reign")
    check(not [k for k, v in keys.items() if len(v) > 100_000],
          f"a big value was written: {[k for k, v in keys.items() if len(v) > 100_000]}")
    st = etcde.quietly(t.status, "mid", suri)
    check(not st or not st["candidates"], f"a candidate of the refused campaign: {st}")


SCENARIOS = {
    "unreachable": scenario_unreachable,
    "gateway_off": scenario_gateway_off,
    "foreign_data": scenario_foreign_data,
    "too_large": scenario_too_large,
    "library_missing": scenario_library_missing,
}


if __name__ == "__main__":
    etcde.main_scenarios("test_bad_input.py", "e2e_etcd_bad_input", SCENARIOS)
