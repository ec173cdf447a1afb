"""installlib.py - what the install-tree test and the package test share (standard library only).

Both use reign as a user would after installing it: they build examples/leader.c with the
command the README gives (read from README.md itself, so the README cannot drift from what is
tested), run it against a SQLite file until it leads, run the installed `reign` tool, and check
that its guardian is the helper of the same installed tree.

No timed assertion: a bound (WAIT) only limits the wait for something that must happen.
"""

import os
import re
import shutil
import signal
import subprocess
import sys

WAIT = 60.0  # seconds; a correct run is far below


class Failure(AssertionError):
    """A property the test checks does not hold."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(argv, **kw):
    """Runs argv, shows what it printed when it fails, returns its stdout."""
    log("$ " + " ".join(str(a) for a in argv))
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise Failure(f"{argv[0]} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout


def clean_env(**extra):
    """The environment of a user's shell: none of the variables that would find a library or a
    guardian some other way than the installed tree's own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PKG_CONFIG_PATH", "REIGN_GUARDIAN_PATH",
                        "REIGN_GUARDIAN", "REIGN_URI", "CMAKE_PREFIX_PATH")}
    env.update(extra)
    return env


def readme_commands(readme, first_word):
    """The commands of README.md's shell blocks that start with first_word (continuation lines
    joined, comments cut off)."""
    out, in_sh, cont = [], False, None
    with open(readme, encoding="utf-8") as f:
        for line in f:
            s = line.rstrip("\n")
            if s.startswith("```"):
                in_sh = s.strip() in ("```sh", "```console")
                continue
            if not in_sh:
                continue
            s = re.sub(r"\s+#.*$", "", s).strip()
            if cont is not None:
                cont += " " + s.rstrip("\\").strip()
            elif s.startswith(first_word + " "):
                cont = s.rstrip("\\").strip()
            if cont is not None and not s.endswith("\\"):
                out.append(cont)
                cont = None
    return out


def readme_cc(readme, rpath):
    """The README's command that builds examples/leader.c with pkg-config: the one with an
    -rpath (a tree outside the linker's path) or the one without (the packages)."""
    cands = [c for c in readme_commands(readme, "cc")
             if "examples/leader.c" in c and "pkg-config" in c and ("rpath" in c) == rpath]
    check(len(cands) == 1, f"README.md: expected one `cc examples/leader.c ... pkg-config` line "
          f"{'with' if rpath else 'without'} -rpath, found {cands}")
    return cands[0]


def build_leader(src, workdir, cmd, env):
    """Runs the README's build command in workdir (where examples/ is the source's) and returns
    the program's path.  The command is a fixed line of README.md, not data."""
    os.makedirs(workdir, exist_ok=True)
    link = os.path.join(workdir, "examples")
    if not os.path.exists(link):
        os.symlink(os.path.join(src, "examples"), link)
    run(["bash", "-euc", cmd], cwd=workdir, env=env)
    prog = os.path.join(workdir, "leader")
    check(os.access(prog, os.X_OK), f"{cmd!r} made no ./leader")
    return prog


def cmake_leaders(src, workdir, env, prefix=None):
    """A CMake project of a user's that builds examples/leader.c with find_package(reign), once
    per exported target; each program is run until it leads.  prefix: CMAKE_PREFIX_PATH (a
    tree outside CMake's own search path)."""
    os.makedirs(workdir)
    with open(os.path.join(workdir, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("cmake_minimum_required(VERSION 3.18)\nproject(use_reign C)\n"
                "find_package(reign 0.1 REQUIRED)\n")
        for target in ("reign", "reign_static"):
            f.write(f"add_executable({target} {src}/examples/leader.c)\n"
                    f"target_link_libraries({target} PRIVATE reign::{target})\n")
    build = os.path.join(workdir, "build")
    run(["cmake", "-S", workdir, "-B", build,
         *([f"-DCMAKE_PREFIX_PATH={prefix}"] if prefix else [])], env=env)
    run(["cmake", "--build", build], env=env)
    for target in ("reign", "reign_static"):
        run_leader(os.path.join(build, target), os.path.join(workdir, f"{target}.db"), env)


def run_leader(prog, db, env):
    """Runs the example against a SQLite file until it leads, then SIGTERM: it must resign and
    exit 0."""
    argv = [prog, f"sqlite://{db}", "install-check", "node-1"]
    log("$ " + " ".join(argv))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()  # blocks until it leads or exits; bounded by ctest's timeout
        check(line.startswith("leading: term 1"), f"leader printed {line!r}, stderr: "
              f"{p.stderr.read() if p.poll() is not None else ''}")
        log(f"  {line.strip()}")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=WAIT)
        check(p.returncode == 0 and "stopped leading" in out,
              f"leader after SIGTERM: exit {p.returncode}, stdout {out!r}, stderr {err!r}")
        log(f"  {out.strip()}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def campaign_guardian(reign, db, env):
    """Runs `reign campaign` (which runs a guardian) against a SQLite file until it is elected and
    its guardian says it watches it (a debug line), returns the path of the guardian's
    executable, then stops the campaign with SIGTERM (exit 0)."""
    argv = [reign, "--uri", f"sqlite://{db}", "--log-level", "debug", "campaign",
            "install-check", "--id", "cli-1"]
    log("$ " + " ".join(argv))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        check(line.startswith("elected cli-1 term="), f"reign campaign printed {line!r}")
        want = re.compile(rf"guardian: pid (\d+) watches pid {p.pid}$")
        seen = []
        while True:  # bounded by the campaign's end (EOF) and ctest's timeout
            line = p.stderr.readline()
            check(line, f"reign campaign (pid {p.pid}) ended without a guardian: {seen}")
            seen.append(line.rstrip())
            m = want.search(line.rstrip())
            if m:
                break
        guardian = int(m.group(1))
        exe = os.readlink(f"/proc/{guardian}/exe")
        log(f"  guardian {guardian}: {exe}")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=WAIT)
        check(p.returncode == 0, f"reign campaign after SIGTERM: exit {p.returncode}, {err!r}")
        return exe
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def verify_unit(unit, mandir, env):
    """systemd-analyze verify: the unit parses, its ExecStart is an executable, its
    Documentation= pages exist (looked up in mandir).  Needs no running systemd; skipped, saying
    so, where systemd-analyze is not installed."""
    if not shutil.which("systemd-analyze"):
        log(f"  {unit}: not verified (no systemd-analyze)")
        return
    run(["systemd-analyze", "verify", unit], env=dict(env, MANPATH=mandir))
    log(f"  {unit}: systemd-analyze verify: OK")


def reignd_check(reignd, example_conf, workdir, env):
    """`reignd --check` on the example configuration, with its /etc/reign files (the peer
    secret, the ZooKeeper password) made in workdir instead."""
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    for name, content in (("peer.secret", os.urandom(24).hex()), ("zk.password", "secret")):
        path = os.path.join(workdir, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(content + "\n")
    with open(example_conf, encoding="utf-8") as f:
        conf = f.read().replace("/etc/reign/", workdir + "/")
    path = os.path.join(workdir, "reign.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(conf)
    out = run([reignd, "--check", "-c", path], env=env)
    check(": OK" in out, f"reignd --check said {out!r}")
    log(f"  {out.strip()}")
