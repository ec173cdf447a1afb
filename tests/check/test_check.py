#!/usr/bin/env python3
"""test_check.py STORE MODE - `reign check` against a real store (standard library only).

STORE: zk, etcd, sqlite, postgres or mariadb (the shared servers of tests/integration and
tests/sql, as the contract tests use them).  MODE:

  pass       the whole check with short timeouts in the URI: exit 0, every phase ok (the cut
             skipped, with its reason, on SQLite), PASS, and no candidate left running;
  fault      REIGN_CHECK_TEST_FAULT=claim-without-lease (a candidate that says ELECTED
             without holding the leadership): exit 1, the overlap named, FAIL;
  json       --json, once passing and once with the fault: one JSON object each, with the
             result, the phases, the round trip and the violations;
  errors     no server: an unreachable store is an error within its connect timeout (exit 1,
             a message that names it), and usage errors exit 2;
  interrupt  SIGINT while a leader killed without its guardian is timing out: exit 1,
             "interrupted", and no candidate left running.

No timed assertion: a timeout only bounds a run that must end (a correct one takes seconds).
Passwords reach reign through the URI's password_file, never on a command line.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading

RUN_TIMEOUT = 240  # seconds: the bound of one run; a correct one takes well under a minute

# Short timeouts, within each store's rules: ZooKeeper's test server has tickTime=200 (so
# sessions down to 400 ms), etcd's minimum is 2 s, and the SQL lease settings are those of
# the other SQL tests.
SQL_LEASE = "lease_ms=2000&renew_ms=400&poll_ms=400&statement_timeout_ms=300"


def fail(msg):
    print(f"test_check: FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def read(path):
    with open(path) as f:
        return f.read().strip()


def env(name):
    v = os.environ.get(name)
    if not v:
        fail(f"${name} is not set (run through ctest)")
    return v


def store_uri(store):
    state = env("REIGN_TEST_STATE_DIR")
    os.makedirs(state, exist_ok=True)
    table = f"chk_{os.getpid()}"
    if store == "zk":
        # The server twice: the cut proxies each host of a list, and the client gets them all.
        hosts = read(env("REIGN_TEST_ZK_FILE"))
        return f"zk://{hosts},{hosts}?session_timeout_ms=2000"
    if store == "etcd":
        return f"etcd://{read(env('REIGN_TEST_ETCD_FILE'))}?session_timeout_ms=2000"
    if store == "sqlite":
        return f"sqlite://{state}/check.db?{SQL_LEASE}"
    var = "REIGN_TEST_PG_DIR" if store == "postgres" else "REIGN_TEST_MARIADB_DIR"
    d = env(var)
    return (f"{read(os.path.join(d, 'uri'))}?{SQL_LEASE}&table={table}"
            f"&password_file={os.path.join(d, 'password')}")


def run(args, fault=False, timeout=RUN_TIMEOUT):
    e = dict(os.environ)
    e.pop("REIGN_URI", None)
    e.pop("REIGN_CHECK_TEST_FAULT", None)
    if fault:
        e["REIGN_CHECK_TEST_FAULT"] = "claim-without-lease"
    cmd = [env("REIGN_CLI")] + args
    print(f"test_check: running reign {' '.join(a for a in args if '://' not in a)}",
          file=sys.stderr, flush=True)
    # A session of its own, so that whatever is left of it can be found (and killed) below.
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, err = p.communicate()
        print(out + err, file=sys.stderr)
        fail(f"reign check did not end within {timeout} s")
    sys.stderr.write(out + err)
    return p.returncode, out, err, p.pid


def leftovers(sid):
    """The processes still in the session of reign check, but for its guardians, which end a
    moment after their clients, on their own (they run in sessions of their own anyway)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(pid))
    return found


def phase_rows(out):
    rows = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("PHASE "):
            for row in lines[i + 1:i + 6]:
                parts = row.split(None, 1)
                rows[parts[0]] = row
    return rows


def mode_pass(store):
    rc, out, _, sid = run(["check", store_uri(store)])
    if rc != 0:
        fail(f"exit {rc}, expected 0")
    lines = out.splitlines()
    if not lines or lines[-1] != "PASS":
        fail("the last line is not PASS")
    rows = phase_rows(out)
    for name in ("handoff", "kill", "kill-no-guardian", "stop", "cut"):
        row = rows.get(name)
        if row is None:
            fail(f"no row for phase {name}")
        if store == "sqlite" and name == "cut":
            if "skipped: a SQLite store is a file" not in row:
                fail(f"the cut is not skipped on SQLite: {row!r}")
        elif not row.rstrip().endswith(" ok"):
            fail(f"phase {name} not ok: {row!r}")
    if not any(line.startswith("safety: ") and "none overlap" in line for line in lines):
        fail("no safety line")
    if not any(line.startswith("round trip: p50 ") for line in lines):
        fail("no round trip line")
    if not any(line.startswith("advice: ") for line in lines):
        fail("no advice line")
    if leftovers(sid):
        fail(f"processes left behind: {leftovers(sid)}")


def mode_fault(store):
    rc, out, _, sid = run(["check", "--rounds", "1", store_uri(store)], fault=True)
    if rc != 1:
        fail(f"exit {rc}, expected 1")
    if "violation: leaderships overlap by " not in out:
        fail("the overlap is not named")
    if out.splitlines()[-1] != "FAIL":
        fail("the last line is not FAIL")
    if leftovers(sid):
        fail(f"processes left behind: {leftovers(sid)}")


def mode_json(store):
    uri = store_uri(store)
    rc, out, _, _ = run(["check", "--json", "--rounds", "2", "--candidates", "2", uri])
    if rc != 0:
        fail(f"exit {rc}, expected 0")
    if len(out.splitlines()) != 1:
        fail("--json printed more than one line")
    o = json.loads(out)
    if o["result"] != "pass" or o["violations"] or o["errors"]:
        fail(f"not a pass: {o}")
    if o["store"] != "sqlite" or o["candidates"] != 2 or not o["election"].startswith(
            "reign-check-"):
        fail(f"the setup is wrong: {o}")
    names = [p["name"] for p in o["phases"]]
    if names != ["handoff", "kill", "kill-no-guardian", "stop", "cut"]:
        fail(f"phases: {names}")
    for p in o["phases"]:
        want = "skipped" if p["name"] == "cut" else "ok"
        if p["result"] != want:
            fail(f"phase {p['name']}: {p['result']}, expected {want}")
        if want == "ok" and (p["done"] != 2 or len(p["takeover_ms"]) != 2
                             or p["takeover_p99_ms"] < p["takeover_p50_ms"]):
            fail(f"phase {p['name']}: {p}")
    if o["round_trip"]["samples"] < 1 or o["advice"]["parameter"] != "lease_ms":
        fail(f"round trip or advice: {o}")
    if o["leaderships"] < 8:
        fail(f"only {o['leaderships']} leaderships for 8 rounds")

    rc, out, _, _ = run(["check", "--json", "--rounds", "1", uri], fault=True)
    if rc != 1:
        fail(f"with the fault: exit {rc}, expected 1")
    o = json.loads(out)
    if o["result"] != "fail" or not any("overlap" in v for v in o["violations"]):
        fail(f"with the fault: {o}")


def mode_errors():
    # A port that nobody listens on: bound, then closed.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc, out, err, _ = run(["check", f"zk://127.0.0.1:{port}?connect_timeout_ms=1000"])
    if rc != 1 or "cannot connect" not in err or out.strip():
        fail(f"an unreachable store: exit {rc}, expected 1 and 'cannot connect'")
    for args in (["check", "--rounds", "0"], ["check", "--candidates", "1"],
                 ["check", "a://x", "b://y"], ["--uri", "zk://x:1", "check", "zk://y:1"]):
        rc, _, _, _ = run(args)
        if rc != 2:
            fail(f"reign {' '.join(args)}: exit {rc}, expected 2")


def mode_interrupt(store):
    # The default lease (10 s): the phase after `kill` waits that long for a takeover.
    uri = store_uri(store).split("?")[0]
    e = dict(os.environ)
    e.pop("REIGN_CHECK_TEST_FAULT", None)
    p = subprocess.Popen([env("REIGN_CLI"), "check", uri], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    timer = threading.Timer(RUN_TIMEOUT, lambda: os.killpg(p.pid, 9))
    timer.start()
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if line.startswith("kill "):  # the line of the phase `kill`: the next one runs
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate()
    finally:
        timer.cancel()
    out = "".join(seen) + out
    sys.stderr.write(out + err)
    if p.returncode != 1:
        fail(f"exit {p.returncode} after SIGINT, expected 1")
    if "\ninterrupted\n" not in out or "kill-no-guardian round 1: interrupted" not in out:
        fail("no word of the interrupt")
    if leftovers(p.pid):
        fail(f"processes left behind: {leftovers(p.pid)}")


def main():
    modes = ("pass", "fault", "json", "errors", "interrupt")
    if len(sys.argv) != 3 or sys.argv[2] not in modes:
        fail(f"usage: test_check.py STORE {'|'.join(modes)}")
    store, mode = sys.argv[1], sys.argv[2]
    if mode == "pass":
        mode_pass(store)
    elif mode == "fault":
        mode_fault(store)
    elif mode == "json":
        mode_json(store)
    elif mode == "interrupt":
        mode_interrupt(store)
    else:
        mode_errors()
    print(f"test_check: {store} {mode}: ok", flush=True)


if __name__ == "__main__":
    main()
