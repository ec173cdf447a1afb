#!/usr/bin/env python3
"""test_default_store.py - with no --uri and no REIGN_URI, reign uses a SQLite file of the user's.

With HOME and XDG_STATE_HOME pointing at directories of the test's own, and neither --uri
nor REIGN_URI:

  * `reign run NAME -- true` exits 0 and leaves $XDG_STATE_HOME/reign/reign.db, in a
    directory of mode 0700, and nothing in HOME;
  * a `reign campaign` leads and `reign status --json` (also with no store given) names it:
    both found the same default file; after the campaign resigns there is no leader;
  * without XDG_STATE_HOME, the file is $HOME/.local/state/reign/reign.db;
  * `reign --help` and reign(1) name the same three defaults, root's included.

Root's default is /var/lib/reign/reign.db, which a test must not touch: run as root, the
test runs reign as user nobody (setpriv), whose default is the one under test.  The build tree
may sit in a directory nobody cannot enter (a clone in a `mktemp -d`), so the binary and
libreign are copied, with the test's files, into a temporary directory nobody can reach.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import sqle  # noqa: E402
from reachable import reachable_copy  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

NOBODY = 65534


def body(t):
    as_root = os.geteuid() == 0
    nobody = []
    cli, where, extra = t.cli, t.dir, {}
    if as_root:
        nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
        where, cli, extra = reachable_copy(t.cli, "reign-default-store-")
        log(f"running reign as user nobody (root's default store is /var/lib/reign), from {where}")
    try:
        scenarios(t, as_root, nobody, cli, where, extra)
    finally:
        if as_root:
            shutil.rmtree(where, ignore_errors=True)


def scenarios(t, as_root, nobody, cli, where, extra):
    def argv(args, env):
        """reign with args, with no REIGN_URI (and no XDG_STATE_HOME unless env has one)."""
        unset = ["-u", "REIGN_URI"] + ([] if "XDG_STATE_HOME" in env else ["-u", "XDG_STATE_HOME"])
        sets = [f"{k}={v}" for k, v in extra.items()]
        return ["env", *unset, *sets, *nobody, cli, *args]

    def dirs(label):
        home = os.path.join(where, label, "home")
        state = os.path.join(where, label, "state")
        for d in (os.path.join(where, label), home, state):
            os.makedirs(d, exist_ok=True)
            if as_root:
                os.chown(d, NOBODY, NOBODY)
        return home, state

    def run(args, env):
        full = dict(os.environ, **env)
        r = subprocess.run(argv(args, env), env=full, capture_output=True, timeout=60)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    # 1. XDG_STATE_HOME given.
    home, state = dirs("xdg")
    env = {"HOME": home, "XDG_STATE_HOME": state}
    name = t.unique("default")
    rc, out, err = run(["run", name, "--", "true"], env)
    check(rc == 0, f"reign run ... true with the default store exited {rc}: {err.strip()}")
    db = os.path.join(state, "reign", "reign.db")
    check(os.path.isfile(db), f"{db} was not created; {state} holds {os.listdir(state)}")
    mode = stat.S_IMODE(os.stat(os.path.dirname(db)).st_mode)
    check(mode == 0o700, f"{os.path.dirname(db)} has mode {mode:o}, want 700")
    check(os.listdir(home) == [], f"files in HOME: {os.listdir(home)}")
    log(f"ok: reign run with the default store made {db} (directory mode {mode:o})")

    # 2. campaign and status find the same default file.
    name2 = t.unique("default-campaign")
    p = t.spawn("campaign", argv(["--log-level", "info", "campaign", name2, "--id", "dflt"], env),
                env=env)
    wait_for(lambda: p.elected() or not p.alive(), "the campaign on the default store to lead")
    check(p.alive() and p.elected(), f"not elected: {p.err()[-2000:]}")
    rc, out, err = run(["status", name2, "--json"], env)
    check(rc == 0, f"status with the default store exited {rc}: {err.strip()}")
    st = json.loads(out)
    check(st["leader"] and st["leader"]["id"] == "dflt" and
          st["leader"]["term"] == p.elected()[-1].term, f"status {st} vs {p.elected()}")
    p.send(signal.SIGTERM)
    check(p.wait() == 0, "the campaign did not exit 0")
    rc, out, err = run(["status", name2, "--json"], env)
    check(rc == 0 and json.loads(out)["leader"] is None,
          f"status after the resignation: {rc} {out.strip()} {err.strip()}")
    check(sorted(os.listdir(os.path.dirname(db)))[0] == "reign.db",
          f"{os.path.dirname(db)}: {os.listdir(os.path.dirname(db))}")
    log("ok: campaign and status share the default store")

    # 3. No XDG_STATE_HOME: under HOME.
    home, state = dirs("home")
    rc, out, err = run(["run", t.unique("default-home"), "--", "true"], {"HOME": home})
    check(rc == 0, f"reign run with HOME only exited {rc}: {err.strip()}")
    db = os.path.join(home, ".local", "state", "reign", "reign.db")
    check(os.path.isfile(db), f"{db} was not created")
    log(f"ok: without XDG_STATE_HOME: {db}")

    # 4. What --help and the man page say is what reign does (root's from the source: a test
    # must not touch /var/lib/reign).
    rc, out, err = run(["--help"], {"HOME": home})
    check(rc == 0, f"reign --help exited {rc}: {err.strip()}")
    said = " ".join(out.split())
    man = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "reign.1")
    with open(man, encoding="utf-8") as f:
        page = " ".join(f.read().replace("\\-", "-").split())
    for default in ("$XDG_STATE_HOME/reign/reign.db", "~/.local/state/reign/reign.db",
                    "/var/lib/reign/reign.db for root"):
        check(default in said, f"reign --help does not name the default {default!r}:\n{out}")
        check(default in page.replace(".I ", "").replace(".IR ", "").replace(" ,", ","),
              f"reign(1) does not name the default {default!r}")
    log("ok: --help and reign(1) name the defaults the tool uses")


if __name__ == "__main__":
    sqle.main("e2e_sql_default_store", body)
