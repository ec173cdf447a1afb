#!/usr/bin/env python3
"""test_etcd_servers.py - scripts/etcd.sh does what the etcd tests will rely on.

In directories of its own: `start DIR` runs one member and writes connect, endpoints and uri
(etcd://127.0.0.1:PORT); a key put with etcdctl (API v3) reads back through the JSON gateway
with curl (keys and values base64) and the other way round; `stop` leaves no process and no
data behind, and keeps the log.  `start DIR 3` runs a cluster whose `status` shows one leader;
with the leader killed (`stop-server`) the other two elect a new one and serve writes and
linearizable reads; `start-server` brings it back with the data; a paused member
(`pause-server`) does not answer until `resume-server`.  A member whose owner process
(REIGN_ETCD_OWNER_PID) dies is stopped by its watchdog.  The time each step took is printed,
for information only: nothing here depends on how fast a member is.

Usage: test_etcd_servers.py   members of its own under $REIGN_TEST_STATE_DIR (or a temporary
                              directory), stopped at the end whatever happens

Every wait is for an event (an answer, a process gone) with a generous timeout.  The check that
a paused member does not answer looks for half a second: a slow machine can only make it pass
wrongly, never fail wrongly.
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.environ.get("REIGN_SCRIPTS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
SCRIPT = os.path.join(SCRIPTS, "etcd.sh")
WAIT = 60.0  # generous bound for anything that must happen
QUIET = 0.5  # how long "nothing happens" is watched
TIMES = []  # (step, seconds), printed at the end


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def etcd_sh(*args, env=None, check_rc=True):
    proc = subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=WAIT * 3, stdin=subprocess.DEVNULL)
    if check_rc and proc.returncode != 0:
        raise Failure(f"`etcd.sh {' '.join(args)}` exited {proc.returncode}:\n"
                      f"{proc.stdout}{proc.stderr}")
    return proc


def timed(step, *args, env=None):
    start = time.monotonic()
    proc = etcd_sh(*args, env=env)
    TIMES.append((step, time.monotonic() - start))
    return proc.stdout


def read(state, name):
    with open(os.path.join(state, name)) as f:
        return f.read().strip()


def b64(s):
    return base64.b64encode(s.encode()).decode()


def etcdctl(port, *args, check_rc=True):
    """etcdctl (API v3) against one member: (exit status, output, errors)."""
    env = dict(os.environ, ETCDCTL_API="3")
    proc = subprocess.run(["etcdctl", f"--endpoints=http://127.0.0.1:{port}",
                           "--dial-timeout=2s", "--command-timeout=5s", *args],
                          capture_output=True, text=True, env=env, timeout=WAIT)
    if check_rc and proc.returncode != 0:
        raise Failure(f"etcdctl {' '.join(args)} on {port}: {proc.stderr.strip()}")
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def gateway(port, path, body, timeout=5.0):
    """POST a JSON body to the member's gateway with curl; the decoded answer, or None when
    it did not answer within timeout."""
    proc = subprocess.run(["curl", "-s", "-m", str(timeout), f"http://127.0.0.1:{port}{path}",
                           "-d", json.dumps(body)], capture_output=True, text=True,
                          timeout=timeout + WAIT)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)


def gateway_get(port, key):
    """The value of key through the gateway (linearizable range), or None if it has none."""
    answer = gateway(port, "/v3/kv/range", {"key": b64(key)})
    check(answer is not None, f"range of {key!r} on {port}: no answer")
    check("error" not in answer, f"range of {key!r} on {port}: {answer}")
    kvs = answer.get("kvs", [])
    return base64.b64decode(kvs[0]["value"]).decode() if kvs else None


def wait_value(port, key, want, what):
    """Wait until a linearizable read of key on the member returns want.  A member that was
    paused or restarted may call an election of its own when it runs again (pre-vote is off
    in etcd 3.4), and until a leader is elected its reads fail with "leader changed" or time
    out: those answers are waited out, a wrong value is not."""
    errors = []

    def done():
        answer = gateway(port, "/v3/kv/range", {"key": b64(key)}, timeout=2.0)
        if answer is None or "error" in answer:
            errors.append(answer)
            return False
        kvs = answer.get("kvs", [])
        got = base64.b64decode(kvs[0]["value"]).decode() if kvs else None
        check(got == want, f"{what} read {got!r} for {key!r}, expected {want!r}")
        return True
    wait_for(done, f"{what} to serve reads")
    if errors:
        print(f"  {what}: {len(errors)} read(s) failed first: {errors[0]}", flush=True)


# ---- processes ---------------------------------------------------------------------------

def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    return proc_state(pid) not in (None, "Z", "X")


def processes_of(state):
    """Live processes with the state dir's path on their command line (members, watchdogs)."""
    found = []
    prefix = os.path.realpath(state) + "/"
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid() or not alive(int(entry)):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(a.startswith(prefix) or a + "/" == prefix for a in args):
            found.append((int(entry), " ".join(args).strip()))
    return found


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def status(state):
    """`etcd.sh status`: {index: (port, pid, state, role)}."""
    rows = {}
    for line in etcd_sh("status", state).stdout.splitlines():
        i, port, pid, run, role = line.split()
        rows[int(i)] = (port, pid, run, role)
    return rows


# ---- checks ------------------------------------------------------------------------------

def check_files(state, n):
    connect = read(state, "connect").split(",")
    check(len(connect) == n, f"connect names {len(connect)} members, not {n}")
    ports = [a.rpartition(":")[2] for a in connect]
    for i, (addr, port) in enumerate(zip(connect, ports), 1):
        check(addr == f"127.0.0.1:{port}" and port.isdigit(), f"connect entry {addr!r}")
        out = etcd_sh("port", state, str(i)).stdout.strip()
        check(out == port, f"`port {i}` printed {out!r}, expected {port}")
    want = "etcd://" + ",".join(connect)
    check(read(state, "uri") == want, f"uri is {read(state, 'uri')!r}, expected {want!r}")
    check(etcd_sh("uri", state).stdout.strip() == want, "`uri` differs from the uri file")
    check(etcd_sh("connect", state).stdout.strip() == ",".join(connect),
          "`connect` differs from the connect file")
    want = ",".join(f"http://{a}" for a in connect)
    check(read(state, "endpoints") == want, f"endpoints is {read(state, 'endpoints')!r}")
    return ports


def check_put_get(port, other, key):
    """etcdctl writes, the gateway reads; the gateway writes, etcdctl reads (other member)."""
    etcdctl(port, "put", key, "from-etcdctl")
    got = gateway_get(other, key)
    check(got == "from-etcdctl", f"gateway on {other} read {got!r} for {key!r}")
    answer = gateway(port, "/v3/kv/put", {"key": b64(key), "value": b64("from-curl")})
    check(answer is not None and "header" in answer, f"gateway put answered {answer!r}")
    _, out, _ = etcdctl(other, "get", key, "--print-value-only")
    check(out == "from-curl", f"etcdctl on {other} read {out!r} for {key!r}")


def check_stop(state):
    pids = [int(read(state, f"s{i}/pid")) for i in range(1, 4)
            if os.path.exists(os.path.join(state, f"s{i}/pid"))]
    timed("stop", "stop", state)
    for pid in pids:
        check(not alive(pid), f"member {pid} survived stop")
    left = processes_of(state)
    check(not left, f"processes left after stop: {left}")
    for d in sorted(os.listdir(state)):
        if d.startswith("s") and os.path.isdir(os.path.join(state, d)):
            check(not os.path.exists(os.path.join(state, d, "data")), f"{d}/data kept by stop")
            check(os.path.exists(os.path.join(state, d, "etcd.log")), f"{d}/etcd.log removed")
    rc = etcd_sh("status", state, check_rc=False).returncode
    check(rc != 0, "status succeeded after stop")


def check_one(state):
    print("one member: start, put/get, stop", flush=True)
    timed("start 1", "start", state)
    (port,) = check_files(state, 1)
    rows = status(state)
    check(rows[1][2:] == ("running", "leader"), f"status of one member: {rows}")
    check_put_get(port, port, "/reign-selftest/one")
    check_stop(state)


def check_cluster(state):
    print("three members: start, put/get, leader killed, start-server, pause", flush=True)
    timed("start 3", "start", state, "3")
    ports = check_files(state, 3)
    rows = status(state)
    leaders = [i for i, r in rows.items() if r[3] == "leader"]
    check(len(leaders) == 1 and all(r[2] == "running" for r in rows.values()),
          f"status of the cluster: {rows}")
    leader = leaders[0]
    check(etcd_sh("leader", state).stdout.strip() == str(leader), "`leader` disagrees")
    others = [i for i in (1, 2, 3) if i != leader]
    check_put_get(ports[leader - 1], ports[others[0] - 1], "/reign-selftest/three")

    # The leader killed: the other two elect one of themselves and go on serving.
    pid = int(read(state, f"s{leader}/pid"))
    timed("stop-server (leader)", "stop-server", state, str(leader))
    check(not alive(pid), "the killed member is still alive")
    check(status(state)[leader][1:3] == ("-", "stopped"), "status of the killed member")
    start = time.monotonic()
    a, b = ports[others[0] - 1], ports[others[1] - 1]

    def served():
        answer = gateway(a, "/v3/kv/put", {"key": b64("/reign-selftest/after"),
                                           "value": b64("two-of-three")}, timeout=2.0)
        return answer is not None and "header" in answer
    wait_for(served, "a write to two members of three")
    TIMES.append(("write served after leader kill", time.monotonic() - start))
    _, out, _ = etcdctl(b, "get", "/reign-selftest/after", "--print-value-only")
    check(out == "two-of-three", f"linearizable read on the other survivor: {out!r}")
    new_leader = int(etcd_sh("leader", state).stdout.strip())
    check(new_leader in others, f"member {new_leader} leads after {leader} was killed")

    timed("start-server", "start-server", state, str(leader))
    wait_value(ports[leader - 1], "/reign-selftest/after", "two-of-three", "the restarted member")

    # A paused member answers nothing; resumed, it answers again.
    paused = others[0]
    timed("pause-server", "pause-server", state, str(paused))
    check(status(state)[paused][2] == "paused", "status of the paused member")
    answer = gateway(ports[paused - 1], "/v3/kv/range", {"key": b64("/reign-selftest/after")},
                     timeout=QUIET)
    check(answer is None, f"a paused member answered {answer!r}")
    timed("resume-server", "resume-server", state, str(paused))
    wait_value(ports[paused - 1], "/reign-selftest/after", "two-of-three", "the resumed member")
    check_stop(state)


def check_watchdog(state):
    """A member whose owner dies stops by itself."""
    print("watchdog", flush=True)
    owner = subprocess.Popen(["sleep", "3600"])
    try:
        env = dict(os.environ, REIGN_ETCD_OWNER_PID=str(owner.pid))
        etcd_sh("start", state, env=env)
        check(processes_of(state), "nothing runs after start")
    finally:
        owner.kill()
        owner.wait()
    wait_for(lambda: not processes_of(state), "the watchdog to stop the member")
    check(not os.path.exists(os.path.join(state, "s1", "data")), "data dir kept")


def log_tails(state, lines=40):
    for d in sorted(os.listdir(state)) if os.path.isdir(state) else []:
        path = os.path.join(state, d, "etcd.log")
        try:
            with open(path, errors="replace") as f:
                tail = f.readlines()[-lines:]
        except OSError:
            continue
        sys.stderr.write(f"---- {path} (last {lines} lines) ----\n{''.join(tail)}")


def self_test():
    for tool in ("etcd", "etcdctl", "curl"):
        check(shutil.which(tool), f"{tool} not found (scripts/deps.sh installs it)")
    root = os.environ.get("REIGN_TEST_STATE_DIR")
    if root:
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
    else:
        root = tempfile.mkdtemp(prefix="reign-etcd-")
    # Members of this test die with it, whatever happens to it.
    os.environ["REIGN_ETCD_OWNER_PID"] = str(os.getpid())
    current = None
    try:
        for name, step in (("one", check_one), ("three", check_cluster),
                           ("watchdog", check_watchdog)):
            current = os.path.join(root, name)
            step(current)
        current = None
    except Failure:
        if current:
            log_tails(current)
        raise
    finally:
        etcd_sh("stop-all-under", root, check_rc=False)
        left = processes_of(root)
        if left:
            print(f"processes left under {root}: {left}", file=sys.stderr)
            for pid, _ in left:
                os.kill(pid, signal.SIGKILL)
        if not os.environ.get("REIGN_TEST_STATE_DIR"):
            shutil.rmtree(root, ignore_errors=True)
    check(not left, "stop-all-under left processes behind")

    print("\ntimes (for information):")
    for step, secs in TIMES:
        print(f"  {step:32} {secs * 1000:7.0f} ms")


def main():
    if sys.argv[1:]:
        sys.exit(__doc__)
    try:
        self_test()
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
