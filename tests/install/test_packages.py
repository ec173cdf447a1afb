#!/usr/bin/env python3
"""test_packages.py SOURCE_DIR - the Debian packages, built, installed and used, then purged.

  1. scripts/package.sh --lintian builds libreign0, libreign-dev, reign and reignd from the
     checkout, and lintian finds no error or warning beyond those docs/packaging.md explains;
  2. `apt-get install ./*.deb` installs them on this machine;
  3. used as a user would: examples/leader.c built with the README's pkg-config line (no
     PKG_CONFIG_PATH, no -rpath) leads on a SQLite file; so does a CMake project's with
     find_package(reign); `reign --help` runs; `reign campaign` runs /usr/libexec's guardian;
     `reignd --check` takes the example configuration from /usr/share/doc/reignd/examples;
     the alert rules installed in /usr/share/reignd pass their promtool tests there;
     the installed bash completion completes (tests/docs/test_completion.py); the unit
     starts /usr/sbin/reignd;
  4. `apt-get purge` removes them, and their files are gone, all but root's default store
     (/var/lib/reign/reign.db, made by the installed `reign` run as root without --uri): it
     holds values and the record of the slots that ran, so it stays, as the README's purge
     paragraph and reign(1) say.  The machine's own /var/lib/reign, if any, is moved aside
     for the test and put back.

It changes the machine's /usr, so it runs as root only, refuses to touch reign packages it did
not install, and purges its own whatever happens.  Two suites on one machine (two checkouts'
ctest) would install and purge the same packages under each other: the test holds a
machine-wide lock (flock on LOCK_PATH, released when the process ends, however it ends) from
its first look at dpkg's database to its purge, and waits for another run's.  Skipped (exit
77), saying why, when not root or without dpkg-buildpackage (scripts/deps.sh installs it).
"""

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from installlib import (Failure, build_leader, campaign_guardian, check, clean_env,  # noqa: E402
                        cmake_leaders, log, readme_cc, readme_commands, reignd_check,
                        run, run_leader, verify_unit)

PACKAGES = ["reignd", "reign", "libreign-dev", "libreign0"]
SKIP = 77
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=120"]
LOCK_PATH = os.path.join("/run/lock" if os.path.isdir("/run/lock") else tempfile.gettempdir(),
                         "reign-packages-test.lock")
LOCK_WAIT_S = 300
# reignd's alert rules, their tests and the dashboard (docs/monitoring.md).
MONITORING = ["/usr/share/reignd/prometheus/reign-alerts.yml",
              "/usr/share/reignd/prometheus/reign-alerts.test.yml",
              "/usr/share/reignd/grafana/reign-dashboard.json"]
ROOT_STORE_DIR = "/var/lib/reign"
ROOT_STORE = ROOT_STORE_DIR + "/reign.db"
SAVED_STORE_DIR = ROOT_STORE_DIR + ".packages-test-saved"


def machine_lock():
    """Holds LOCK_PATH exclusively for the rest of the process: waits up to LOCK_WAIT_S for
    another run of this test on this machine.  Fails (a Failure) rather than waiting longer."""
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_S
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise Failure(f"another package test held {LOCK_PATH} for {LOCK_WAIT_S} s")
            if not said:
                log(f"waiting for another package test on this machine ({LOCK_PATH})")
                said = True
            time.sleep(0.5)


def purge_keeps_documented(src):
    """The README's paragraph on `apt-get purge` and reign(1)'s entry for root's store both
    say that the store stays."""
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        paragraphs = f.read().split("\n\n")
    said = [p for p in paragraphs if "apt-get purge" in p and ROOT_STORE in p and "stays" in p]
    check(said, f"README.md's paragraph on apt-get purge does not say that {ROOT_STORE} stays")
    with open(os.path.join(src, "man", "reign.1"), encoding="utf-8") as f:
        page = f.read()
    entry = page[page.rfind(".I " + ROOT_STORE):].split(".TP")[0]
    check("Purging the package leaves it" in entry,
          f"reign(1)'s entry for {ROOT_STORE} does not say that purging leaves it")


def installed(pkgs):
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *pkgs],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return [ln.split()[0] for ln in p.stdout.splitlines()
            if len(ln.split()) > 1 and ln.split()[1] != "not-installed"]


def main():
    src = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("SKIPPED: the package test installs packages: run it as root", file=sys.stderr)
        return SKIP
    if not shutil.which("dpkg-buildpackage"):
        print("SKIPPED: no dpkg-buildpackage (scripts/deps.sh installs dpkg-dev)",
              file=sys.stderr)
        return SKIP
    try:
        machine_lock()
    except Failure as e:
        log(f"FAILED: {e}")
        return 1
    there = installed(PACKAGES)
    if there:
        log(f"FAILED: {' '.join(there)} already installed; this test installs and purges its "
            f"own: apt-get purge {' '.join(there)} first")
        return 1

    if os.path.lexists(SAVED_STORE_DIR):
        log(f"FAILED: {SAVED_STORE_DIR} exists (a run of this test was cut off before putting "
            f"back the machine's {ROOT_STORE_DIR}): move it back first")
        return 1
    tmp = tempfile.mkdtemp(prefix="reign-packages-")
    os.chmod(tmp, 0o755)
    ours = False
    saved = os.path.lexists(ROOT_STORE_DIR)
    if saved:
        os.rename(ROOT_STORE_DIR, SAVED_STORE_DIR)
    try:
        out = os.path.join(tmp, "debs")
        run(["bash", os.path.join(src, "scripts", "package.sh"), "--lintian", out])
        debs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.deb")))
        names = sorted(d.split("_")[0] for d in debs)
        check(names == sorted(PACKAGES), f"package.sh made {debs}, expected {PACKAGES}")
        named = [w[2:] for c in readme_commands(os.path.join(src, "README.md"), "apt-get")
                 for w in c.split() if w.startswith("./") and w.endswith(".deb")]
        wrong = [n for n in named if "*" not in n and n not in debs]
        check(named and not wrong, f"README.md's apt-get lines name {wrong or 'no package'}, "
              f"package.sh made {debs}")

        ours = True
        run([*APT, "install", *("./" + d for d in debs)], cwd=out,
            env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        env = clean_env()
        for path in ("/usr/bin/reign", "/usr/sbin/reignd", "/usr/libexec/reign/reign-guardian",
                     "/usr/share/doc/reignd/examples/reign.conf",
                     "/usr/share/bash-completion/completions/reign",
                     "/usr/share/man/man1/reign.1.gz", "/usr/share/man/man8/reignd.8.gz",
                     "/usr/share/man/man5/reign.conf.5.gz", "/usr/include/reign/reign.h",
                     *MONITORING):
            check(os.path.exists(path), f"{path} was not installed")
        # The alert rules pass their tests where they are installed (promtool: scripts/deps.sh).
        run(["promtool", "test", "rules", MONITORING[1]], env=env)
        with open("/lib/systemd/system/reignd.service", encoding="utf-8") as f:
            check("\nExecStart=/usr/sbin/reignd " in f.read(), "the unit does not start "
                  "/usr/sbin/reignd")
        verify_unit("/lib/systemd/system/reignd.service", "/usr/share/man", env)

        out = run(["reign", "--help"], env=env)
        check(out.startswith("Usage: reign"), f"reign --help printed {out[:80]!r}")
        leader = build_leader(src, os.path.join(tmp, "pc"),
                              readme_cc(os.path.join(src, "README.md"), rpath=False), env)
        run_leader(leader, os.path.join(tmp, "pc", "leader.db"), env)
        exe = campaign_guardian("reign", os.path.join(tmp, "campaign.db"), env)
        check(exe == "/usr/libexec/reign/reign-guardian",
              f"reign campaign ran the guardian {exe}")
        reignd_check("reignd", "/usr/share/doc/reignd/examples/reign.conf",
                     os.path.join(tmp, "etc"), env)

        cmake_leaders(src, os.path.join(tmp, "cm"), env)

        run([sys.executable, os.path.join(src, "tests", "docs", "test_completion.py"),
             "/usr/bin/reign", "/usr/share/bash-completion/completions/reign"], env=env)

        # Root's default store, as root makes it: a value in it.
        run(["reign", "value", "set", "packages-test/kept", "yes"], env=env)
        check(os.path.isfile(ROOT_STORE), f"reign as root did not make {ROOT_STORE}")

        run([*APT, "purge", *PACKAGES], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        ours = False
        left = installed(PACKAGES)
        check(not left, f"still installed after the purge: {left}")
        for path in ("/usr/bin/reign", "/usr/sbin/reignd", "/usr/libexec/reign",
                     "/usr/include/reign", "/lib/systemd/system/reignd.service",
                     "/usr/share/doc/reignd", "/usr/share/reignd"):
            check(not os.path.exists(path), f"{path} is left after the purge")
        check(os.path.isfile(ROOT_STORE), f"the purge removed {ROOT_STORE}")
        purge_keeps_documented(src)
        log("packages: built, lintian clean, installed, used (pkg-config, CMake, reign, guardian, "
            f"reignd --check, completion), purged ({ROOT_STORE} kept, as documented): OK")
        return 0
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f"FAILED: {e}")
        return 1
    finally:
        if ours:
            subprocess.run([*APT, "purge", *PACKAGES], stdout=subprocess.DEVNULL,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        shutil.rmtree(tmp, ignore_errors=True)
        # What this test made of /var/lib/reign goes; the machine's own comes back.
        shutil.rmtree(ROOT_STORE_DIR, ignore_errors=True)
        if saved:
            os.rename(SAVED_STORE_DIR, ROOT_STORE_DIR)


if __name__ == "__main__":
    sys.exit(main())
