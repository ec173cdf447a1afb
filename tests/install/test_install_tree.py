#!/usr/bin/env python3
"""test_install_tree.py BUILD_DIR SOURCE_DIR - an installed tree works wherever it is installed.

Installs the build with `cmake --install --prefix` into a throwaway directory and uses it as a
user would, with no LD_LIBRARY_PATH, PKG_CONFIG_PATH beyond the tree's own, or
REIGN_GUARDIAN_PATH:

  - the installed `reign --help` and `reignd --version` run (their RUNPATH finds libreign);
  - the installed systemd unit starts the installed reignd;
  - examples/leader.c builds with the README's pkg-config command and leads on a SQLite file;
    so does a static build, and a CMake project with find_package(reign) (shared and static);
  - `reign campaign` runs the tree's own guardian (libreign finds it beside itself);
  - `reignd --check` accepts the example configuration;
  - libreign exports the public API only;
  - then the tree is moved to another directory, and the programs, reign.pc and the guardian
    still work from there.
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from installlib import (Failure, build_leader, campaign_guardian, check, clean_env,  # noqa: E402
                        cmake_leaders, log, readme_cc, reignd_check, run, run_leader,
                        verify_unit)


def find_one(root, name):
    hits = [os.path.join(d, name) for d, _, files in os.walk(root) if name in files]
    check(len(hits) == 1, f"expected one {name} under {root}, found {hits}")
    return hits[0]


def check_tree(prefix, src, work, env):
    """Everything a user does with an installed tree at prefix."""
    reign = os.path.join(prefix, "bin", "reign")
    reignd = os.path.join(prefix, "sbin", "reignd")
    helper = os.path.join(prefix, "libexec", "reign", "reign-guardian")
    out = run([reign, "--help"], env=env)
    check(out.startswith("Usage: reign"), f"reign --help printed {out[:80]!r}")
    run([reignd, "--version"], env=env)
    check(os.access(helper, os.X_OK), f"no guardian helper at {helper}")

    pc = find_one(prefix, "reign.pc")
    env = dict(env, PKG_CONFIG_PATH=os.path.dirname(pc))
    leader = build_leader(src, os.path.join(work, "pc"), readme_cc(os.path.join(src,
                          "README.md"), rpath=True), env)
    run_leader(leader, os.path.join(work, "pc", "leader.db"), env)

    exe = campaign_guardian(reign, os.path.join(work, "campaign.db"), env)
    check(os.path.realpath(exe) == os.path.realpath(helper),
          f"reign campaign ran the guardian {exe}, not the tree's own {helper}")
    reignd_check(reignd, os.path.join(src, "examples", "reignd", "reign.conf"),
                 os.path.join(work, "etc"), env)
    return env


def main():
    build, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="reign-install-")
    try:
        prefix = os.path.join(tmp, "prefix")
        run(["cmake", "--install", build, "--prefix", prefix])
        env = clean_env()

        unit = find_one(prefix, "reignd.service")
        with open(unit, encoding="utf-8") as f:
            execs = [ln for ln in f if ln.startswith("ExecStart=")]
        want = f"ExecStart={prefix}/sbin/reignd "
        check(len(execs) == 1 and execs[0].startswith(want),
              f"{unit}: {execs}, expected a line starting with {want!r}")
        verify_unit(unit, os.path.join(prefix, "share", "man"), env)
        for path in ("include/reign/reign.h", "include/reign/adapters/libuv.h",
                     "share/man/man1/reign.1", "share/man/man5/reign.conf.5",
                     "share/man/man8/reignd.8", "share/bash-completion/completions/reign",
                     "share/reignd/prometheus/reign-alerts.yml",
                     "share/reignd/prometheus/reign-alerts.test.yml",
                     "share/reignd/grafana/reign-dashboard.json"):
            check(os.path.isfile(os.path.join(prefix, path)), f"{path} was not installed")

        env = check_tree(prefix, src, os.path.join(tmp, "w1"), env)

        # static, with the same reign.pc
        static = os.path.join(tmp, "leader-static")
        cflags = run(["pkg-config", "--cflags", "reign"], env=env).split()
        libs = run(["pkg-config", "--static", "--libs", "reign"], env=env).split()
        libs = ["-l:libreign.a" if a == "-lreign" else a for a in libs]
        run(["cc", "-std=c11", "-Wall", "-Werror", *cflags,
             os.path.join(src, "examples", "leader.c"), "-o", static, *libs], env=env)
        out = run(["readelf", "-d", static])
        check("libreign" not in out, f"{static} links libreign.so: {out}")
        run_leader(static, os.path.join(tmp, "static.db"), env)

        # only the public API is exported
        lib = [p for p in os.listdir(os.path.dirname(find_one(prefix, "libreign.a")))
               if p.startswith("libreign.so.") and p.count(".") == 4]
        check(len(lib) == 1, f"no libreign.so.X.Y.Z: {lib}")
        syms = run(["nm", "-D", "--defined-only",
                    os.path.join(os.path.dirname(find_one(prefix, "libreign.a")), lib[0])])
        bad = [ln.split()[-1] for ln in syms.splitlines()
               if not ln.split()[-1].startswith(("reign_", "REIGN_"))
               or ln.split()[-1].startswith("reign__")]
        check(not bad, f"libreign exports symbols outside the public API: {bad}")

        # CMake: find_package(reign), shared and static
        cmake_leaders(src, os.path.join(tmp, "cm"), env, prefix=prefix)

        # moved: the programs, reign.pc and the guardian follow the tree
        moved = os.path.join(tmp, "moved")
        os.rename(prefix, moved)
        log(f"moved {prefix} to {moved}")
        check_tree(moved, src, os.path.join(tmp, "w2"), clean_env())
        log("install tree: programs, unit, reign.pc (shared, static), CMake package (shared, "
            "static), guardian, reignd --check, exports, moved tree: OK")
        return 0
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f"FAILED: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
