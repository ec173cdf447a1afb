#!/usr/bin/env python3
"""End to end: the built `reign ctl` against a control socket served by
reignd_core's control.c with fake operations (ctl_server.c): human and
--json output of every subcommand, the daemon's refusals as one-line errors
with exit 1, usage errors with exit 2, no daemon, and (as root) another
user refused by the daemon's peer-credential check.

Environment: REIGN (the reign binary), CTL_SERVER (reignd_ctl_server)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from reachable import reachable_copy  # noqa: E402

REIGN = os.environ["REIGN"]
SERVER = os.environ["CTL_SERVER"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def ctl(sock, *args, user=None):
    cmd = [REIGN, "ctl", "--socket", sock, *args]
    if user:
        cmd = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups", "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def one_error_line(err, part):
    lines = err.splitlines()
    return len(lines) == 1 and lines[0].startswith("reign: ctl: ") and part in lines[0]


def main():
    tmp = tempfile.mkdtemp(prefix="reign-ctl-")
    sock = os.path.join(tmp, "run", "reignd.sock")
    srv = subprocess.Popen([SERVER, sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        check(srv.stdout.readline().strip() == "ready", "server did not start")

        rc, out, err = ctl(sock, "status")
        lines = out.splitlines()
        check(rc == 0, f"status: rc {rc} {err}")
        check(lines[0].split() == ["SERVICE", "NODE", "STATE", "HEALTH", "PAUSED", "LEADER",
                                   "TERM", "TOKEN", "FAILOVERS"], f"status header: {out}")
        check(lines[1].split() == ["web", "n1", "active", "healthy", "no", "n1", "7", "12", "1"],
              f"status web row: {out}")
        check("health check failed" in out, f"status reason: {out}")
        check("  db: CONFLICT: another reignd stands with this node's id n1" in out,
              f"status shows an id conflict: {out}")
        check("paused by" not in out, f"nothing paused yet: {out}")

        rc, out, err = ctl(sock, "status", "--json")
        check(rc == 0 and len(out.splitlines()) == 1, f"status --json: {rc} {out!r}")
        st = json.loads(out)
        web = st["services"][0]
        check(set(web) == {"name", "node", "state", "health", "paused", "paused_by", "leader",
                           "term", "token", "failovers", "conflict", "reason"},
              f"status --json keys: {web}")
        check(web["term"] == 7 and web["paused"] is False, f"status --json values: {web}")

        rc, out, err = ctl(sock, "cede", "web", "--delay", "2.5")
        check(rc == 0 and out == "ceded web (out of the election for 2.5 s)\n",
              f"cede: {rc} {out!r} {err!r}")
        rc, out, err = ctl(sock, "cede", "db")  # pending in the daemon, then done
        check(rc == 0 and out == "ceded db\n", f"cede db: {rc} {out!r} {err!r}")

        rc, out, err = ctl(sock, "failover", "web", "--to", "n2")
        check(rc == 0 and out == "failed over web to n2: n2 is active\n",
              f"failover: {rc} {out!r} {err!r}")
        rc, out, err = ctl(sock, "failover", "web", "--to", "n2", "--no-wait")
        check(rc == 0 and out.startswith("handed web over to n2 (not waiting"),
              f"failover --no-wait: {rc} {out!r} {err!r}")
        rc, out, err = ctl(sock, "failover", "web", "--to", "n3")
        check(rc == 1 and out == "" and one_error_line(
            err, "failover web: node 'n3' is not healthy (unhealthy)"),
            f"failover to unhealthy: {rc} {out!r} {err!r}")

        rc, out, err = ctl(sock, "pause", "web")
        check(rc == 0 and out.startswith("paused web (its whole election"),
              f"pause: {rc} {out!r} {err!r}")
        rc, out, err = ctl(sock, "status", "--json")
        check(json.loads(out)["services"][0]["paused"] is True, f"paused shown: {out}")
        rc, out, err = ctl(sock, "status")
        check("  web: paused by n2: no automatic failover on any node" in out,
              f"paused shown in the table's notes: {out}")
        rc, out, err = ctl(sock, "resume", "web", "--json")
        check(rc == 0 and json.loads(out) == {"service": "web"}, f"resume --json: {out!r}")
        rc, out, err = ctl(sock, "pause", "nosuch")
        check(rc == 1 and one_error_line(err, "pause nosuch: no service 'nosuch'"),
              f"pause nosuch: {rc} {err!r}")

        for args, part in [
            ([], "no subcommand"),
            (["reboot"], "unknown subcommand 'reboot'"),
            (["cede"], "no SERVICE"),
            (["failover", "web"], "--to NODE is required"),
            (["status", "web"], "unexpected argument 'web'"),
            (["pause", "web", "--delay", "3"], "--delay is for cede only"),
            (["cede", "web", "--to", "n2"], "--to is for failover only"),
            (["cede", "web", "--no-wait"], "--no-wait is for failover only"),
            (["cede", "web", "--delay", "-1"], "--delay"),
            (["cede", "web", "--delay", "86401"], "--delay"),
            (["status", "--bogus"], "--bogus"),
        ]:
            rc, out, err = ctl(sock, *args)
            check(rc == 2 and part in err, f"usage {args}: {rc} {err!r}")

        rc, out, err = ctl(sock, "--help")
        check(rc == 0 and "Usage: reign ctl status" in out, "--help")

        rc, out, err = ctl(os.path.join(tmp, "none.sock"), "status")
        check(rc == 1 and one_error_line(err, "cannot connect to") and "is reignd running" in err,
              f"no daemon: {rc} {err!r}")

        if os.geteuid() == 0 and shutil.which("setpriv"):
            # Open the file modes so that only the credential check stands
            # in the way, and a copy of reign that nobody may run.
            os.chmod(tmp, 0o711)
            os.chmod(os.path.dirname(sock), 0o711)
            os.chmod(sock, 0o666)
            bindir, exe, extra = reachable_copy(REIGN)
            cmd = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--",
                   exe, "ctl", "--socket", sock, "pause", "web"]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                               env={**os.environ, **extra})
            check(p.returncode == 1 and one_error_line(p.stderr, "without an answer"),
                  f"nobody refused: {p.returncode} {p.stderr!r}")
            shutil.rmtree(bindir)
            rc, out, err = ctl(sock, "status", "--json")
            check(json.loads(out)["services"][0]["paused"] is False, "nobody's pause not taken")
        else:
            print("skipped the other-user check (needs root and setpriv)")
    finally:
        srv.terminate()
        _, serr = srv.communicate(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    if os.geteuid() == 0:
        check("refused a connection from uid 65534" in serr, f"refusal logged: {serr!r}")
        check("pause" not in serr, "refusal log holds no payload")
    check(srv.returncode == 0, f"server exit {srv.returncode}: {serr}")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("test_ctl: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
