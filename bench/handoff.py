#!/usr/bin/python3
"""handoff.py - where a graceful handoff's time goes: reign's trace against the bare client.

Two `reign campaign` candidates on a throwaway standalone ZooKeeper (scripts/zk.sh); the leader
gets SIGTERM and the successor prints `elected`; a new candidate joins and, once it stands, the
election is left idle for --gap-ms before the next round (a real failover meets a server and
clients that were asleep).  Each configuration runs twice: without the trace (the figures), and
with REIGN_TRACE (reign(1), ENVIRONMENT) to break each handoff into its steps, on both processes,
on the monotonic clock:

  kill -> signal seen       the harness's kill(2) to the old leader's loop running its handler
  signal -> deletes sent    resign decided, the application told, both deletes handed to the client
  deletes -> watch event    the server deletes; the successor's client thread has the event
  event -> loop             the successor's loop thread takes it (eventfd)
  loop -> claim sent        the successor decides and sends its claim multi
  claim -> answer           the server runs the multi; the client thread has the answer
  answer -> loop            the loop thread takes it
  loop -> elected           ELECTED emitted
  elected -> printed        the `elected` line written

In the same run, bench/handoff_floor.c makes the same chain of requests (delete; the watch event;
the claim multi) with bare C client code, idle for the same gap: on libzookeeper_mt with an
eventfd (reign's design) and, where Debian's libzookeeper-st2 is installed, on libzookeeper_st
driven by the caller's poll loop.  With --fsync the whole is repeated on the same server with
forceSync=yes.  Writes a section of docs/benchmarks.md and a JSON file.  Measures, never asserts.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import log, percentile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MARK_BEGIN = "<!-- handoff: written by bench/handoff.py -->"
MARK_END = "<!-- /handoff -->"

SEGMENTS = [
    ("kill", "signal", "kill -> signal seen"),
    ("signal", "deletes", "signal -> let go (deletes sent)"),
    ("deletes", "event", "let go -> successor's watch event"),
    ("event", "taken", "event -> successor's loop"),
    ("taken", "claim", "loop -> claim sent"),
    ("claim", "answer", "claim -> answer (server)"),
    ("answer", "answer_taken", "answer -> loop"),
    ("answer_taken", "elected", "loop -> ELECTED"),
    ("elected", "printed", "ELECTED -> line printed"),
]


class Candidate:
    def __init__(self, reign, uri, name, ident, env):
        self.id = ident
        self.proc = subprocess.Popen([reign, "--uri", uri, "campaign", name, "--id", ident],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)

    def wait_line(self, word, limit_s=30):
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                raise bl.BenchError("candidate %s ended" % self.id)
            if line.startswith(word + " "):
                return line
        raise bl.BenchError("no %s line from %s" % (word, self.id))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def standing(reign, uri, name):
    r = subprocess.run([reign, "--uri", uri, "status", name, "--json"], capture_output=True,
                       text=True, timeout=30)
    try:
        return len(json.loads(r.stdout)["candidates"])
    except (ValueError, KeyError):
        return 0


def read_trace(path, offset):
    """The trace's lines from offset: (ns, pid, tid, step, rest)."""
    out = []
    with open(path) as f:
        f.seek(offset)
        for line in f:
            parts = line.rstrip("\n").split(" ", 4)
            if len(parts) < 4:
                continue
            out.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[3],
                        parts[4] if len(parts) > 4 else ""))
    return out


def breakdown(lines, t0, old_pid, new_pid):
    """The handoff's stamps, from the first of each step after the kill; None if one is missing."""
    at = {"kill": t0}

    def first(pid, step, pred=lambda rest: True, after=None, thread=None):
        for ns, p, tid, s, rest in lines:
            if p == pid and s == step and ns >= (after or t0) and pred(rest) and \
                    (thread is None or (tid == p) == thread):
                return ns
        return None

    at["signal"] = first(old_pid, "cli.signal")
    at["deletes"] = first(old_pid, "zk.send", lambda r: r.startswith(("delete", "multi")))
    at["event"] = first(new_pid, "zk.event", lambda r: r.startswith("2 "))
    at["taken"] = first(new_pid, "zk.take_event", lambda r: r.startswith("2 "))
    at["claim"] = first(new_pid, "zk.send", lambda r: r.startswith("multi"))
    at["answer"] = first(new_pid, "zk.answer", lambda r: r.startswith("multi"))
    at["answer_taken"] = first(new_pid, "zk.take", lambda r: r.startswith("multi"))
    at["elected"] = first(new_pid, "election.elected")
    at["printed"] = first(new_pid, "cli.print", after=at["elected"])
    if any(v is None for v in at.values()):
        return None
    return {k: (v - t0) / 1e6 for k, v in at.items()}


def run_reign(reign, uri, rounds, warmup, gap_s, trace):
    """`rounds` graceful handoffs after `warmup` discarded ones: [{"ms", "steps"}]."""
    env = dict(os.environ, REIGN_GUARDIAN="on")
    if trace:
        env["REIGN_TRACE"] = trace
    name = "handoff-%d-%d" % (os.getpid(), int(time.monotonic() * 1000) % 100000)
    old = Candidate(reign, uri, name, "c0", env)
    old.wait_line("elected")
    new = Candidate(reign, uri, name, "c1", env)
    out = []
    try:
        for r in range(rounds + warmup):
            while standing(reign, uri, name) < 2:
                time.sleep(0.01)
            time.sleep(gap_s)
            offset = os.path.getsize(trace) if trace and os.path.exists(trace) else 0
            t0 = time.monotonic_ns()
            old.proc.send_signal(signal.SIGTERM)
            line = new.wait_line("elected")
            ns = int(line.split("monotonic_ns=")[1].split()[0])
            old.proc.wait(timeout=30)
            steps = None
            if trace:
                steps = breakdown(read_trace(trace, offset), t0, old.proc.pid, new.proc.pid)
            if r >= warmup:
                out.append({"ms": (ns - t0) / 1e6, "steps": steps})
            old, new = new, Candidate(reign, uri, name, "c%d" % (r + 2), env)
    finally:
        old.stop()
        new.stop()
    return out


def run_floor(binary, connect, rounds, gap_ms):
    r = subprocess.run([binary, connect, str(rounds), str(gap_ms)], capture_output=True,
                       text=True, timeout=rounds * (gap_ms / 1000.0 + 1) + 60)
    if r.returncode != 0:
        raise bl.BenchError("%s failed: %s" % (binary, r.stderr))
    return json.loads(r.stdout)["ms"]


def stats(xs):
    return {"n": len(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
            "p99": percentile(xs, 99), "max": max(xs)}


def measure(args):
    work = Path(tempfile.mkdtemp(prefix="reign-handoff-"))
    zk = bl.ZooKeeper(work / "zk")
    zk.start()
    results = {"machine": bl.machine_info(zk.fourlw("srvr").splitlines()[0],
                                                bl.source_state(args.reign)),
               "rounds": args.rounds, "warmup": args.warmup, "configs": []}
    load = [os.getloadavg()[0]]
    try:
        gaps = [int(g) for g in args.gaps.split(",")]
        for fsync in ([False, True] if args.fsync else [False]):
            if fsync:
                zk.set_force_sync(True)
            label = "forceSync=yes" if fsync else "forceSync=no"
            log("%s: warming the server" % label)
            bl.warm_server(zk, args.warm_s)
            uri = "zk://%s" % zk.connect
            for gap in gaps:
                cfg = {"server": label, "gap_ms": gap}
                what = "%s, idle %d ms" % (label, gap)
                log("%s: reign, %d rounds" % (what, args.rounds))
                cfg["reign"] = run_reign(args.reign, uri, args.rounds, args.warmup,
                                         gap / 1000.0, None)
                trace = str(work / ("trace-%s-%d.log" % ("fsync" if fsync else "nosync", gap)))
                log("%s: reign traced, %d rounds" % (what, args.rounds))
                cfg["reign_traced"] = run_reign(args.reign, uri, args.rounds, args.warmup,
                                                gap / 1000.0, trace)
                for mode in ("mt", "st"):
                    binary = Path(args.floor_dir) / ("handoff-floor-" + mode)
                    if binary.exists():
                        log("%s: the bare client (%s), %d rounds" % (what, mode, args.rounds))
                        cfg["floor_" + mode] = run_floor(str(binary), zk.connect, args.rounds,
                                                         gap)
                results["configs"].append(cfg)
                load.append(os.getloadavg()[0])
    finally:
        zk.stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(work)])
    results["load"] = load
    return results


def f(x, d=2):
    return "-" if x is None else ("%.*f" % (d, x))


def render(res, command, failover_runs=None, findings=None):
    m = res["machine"]
    w = [MARK_BEGIN, "## Graceful handoff: where the time goes", ""]
    w.append("Generated by `bench/handoff.py` on %s; do not edit by hand.  Machine: %s, %s CPUs, "
             "%s; %s, Linux %s; %s; libzookeeper-mt %s; reign at commit %s.  Load average "
             "(1 min) %s over the run." % (
                 m["date"], m["cpu"], m["nproc"], m["memory"], m["os"], m["kernel"],
                 m["zookeeper"], m["libzookeeper"], m["commit"],
                 " / ".join("%.2f" % x for x in res["load"])))
    w.append("")
    w.append("Two `reign campaign` candidates on a standalone server from `scripts/zk.sh`; "
             "SIGTERM to the leader until the successor's `elected` (its own monotonic stamp); "
             "%d rounds after %d discarded, each after the election stood idle for the gap "
             "given (300 ms is what a real failover finds: a server and clients that were "
             "asleep; 0 ms, the next round as soon as the new candidate stands).  The bare "
             "client makes the same chain (the delete, the successor's watch event, its claim "
             "multi: check the term's version, create the leader node, set the term) from "
             "`bench/handoff_floor.c`, idle for the same gap, in the same run: mt is "
             "libzookeeper_mt handing results to the caller's thread through an eventfd, as "
             "reign does; st is libzookeeper_st driven by the caller's poll loop." % (
                 res["rounds"], res["warmup"]))
    w.append("")
    w.append("| server, idle gap | reign p50 / p90 / p99 | reign traced p50 | bare client, mt "
             "p50 / p90 / p99 | bare client, st p50 / p90 / p99 | reign - bare mt (p50) |")
    w.append("|---|---|---|---|---|---|")
    for c in res["configs"]:
        r = stats([x["ms"] for x in c["reign"]])
        t = stats([x["ms"] for x in c["reign_traced"]])
        mt = stats(c["floor_mt"]) if c.get("floor_mt") else None
        st = stats(c["floor_st"]) if c.get("floor_st") else None

        def three(s):
            return "-" if not s else "%s / %s / %s" % (f(s["p50"]), f(s["p90"]), f(s["p99"]))
        w.append("| %s, %d ms | %s | %s | %s | %s | %s |" % (
            c["server"], c["gap_ms"], three(r), f(t["p50"]), three(mt), three(st),
            f(r["p50"] - mt["p50"]) if mt else "-"))
    w.append("")
    w.append("Milliseconds.  Each step of the traced handoffs (median over the rounds, and the "
             "median time since the kill at which the step ended):")
    w.append("")
    head = "| step |" + "".join(" %s, %d ms: step / since kill |" % (c["server"], c["gap_ms"])
                                for c in res["configs"])
    w.append(head)
    w.append("|---|" + "---|" * len(res["configs"]))
    for a, b, label in SEGMENTS:
        row = "| %s |" % label
        for c in res["configs"]:
            steps = [x["steps"] for x in c["reign_traced"] if x["steps"]]
            d = [s[b] - s[a] for s in steps]
            row += " %s / %s |" % (f(statistics.median(d), 3) if d else "-",
                                   f(statistics.median([s[b] for s in steps]), 3)
                                   if steps else "-")
        w.append(row)
    w.append("")
    for path in failover_runs or []:
        w += compare_failover(path)
    if findings:
        w += [Path(findings).read_text().rstrip("\n"), ""]
    w.append("Command: `%s`." % command)
    w.append("")
    w.append(MARK_END)
    return "\n".join(w) + "\n"


def compare_failover(path):
    """A bench/failover.py run's graceful medians, reign next to Curator and kazoo."""
    run = json.loads(Path(path).read_text())
    sync = run.get("zk_conf", {}).get("forceSync", "yes")
    w = ["Graceful failover (SIGTERM to `elected`) in one `bench/failover.py` run with "
         "forceSync=%s (`%s`, %s): p50 / p99 ms." % (sync, path, run["machine"]["date"]), "",
         "| candidates | reign | Curator | kazoo | reign : kazoo (p50) |", "|---|---|---|---|---|"]
    by = {}
    for r in run["results"]:
        xs = [g["latency_ms"] for g in r["graceful"] if not g.get("warmup")]
        if xs:
            by[(r["impl"], r["n"])] = (percentile(xs, 50), percentile(xs, 99))
    for n in sorted({k[1] for k in by}):
        cell = {i: by.get((i, n)) for i in ("reign", "curator", "kazoo")}
        ratio = (cell["reign"][0] / cell["kazoo"][0]) if cell["reign"] and cell["kazoo"] else None
        w.append("| %d | %s | %s | %s | %s |" % (n, *[
            "%s / %s" % (f(c[0]), f(c[1])) if c else "-" for c in cell.values()], f(ratio)))
    w.append("")
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reign", default=str(ROOT / "build" / "src" / "cli" / "reign"))
    ap.add_argument("--floor-dir", default=str(ROOT / "build" / "bench"),
                    help="where handoff-floor-mt (and -st) are")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--gaps", default="300,0", help="idle before each round, ms (default 300,0)")
    ap.add_argument("--warm-s", type=float, default=5.0)
    ap.add_argument("--fsync", action="store_true", help="also with forceSync=yes")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--doc")
    ap.add_argument("--render", help="write the report from this results file; measure nothing")
    ap.add_argument("--findings", metavar="FILE", help="markdown appended to the section: what "
                    "the run shows, written by whoever ran it")
    ap.add_argument("--failover", action="append", metavar="JSON",
                    help="a bench/failover.py results file to compare with Curator and kazoo "
                         "(repeatable)")
    args = ap.parse_args()
    command = "bench/handoff.py --rounds %d --gaps %s%s --json %s --doc %s" % (
        args.rounds, args.gaps, " --fsync" if args.fsync else "", args.json or "-",
        args.doc or "-")
    if args.render:
        res = json.loads(Path(args.render).read_text())
    else:
        res = measure(args)
        res["command"] = command
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    text = render(res, res.get("command", command), args.failover, args.findings)
    if args.doc:
        bl.write_marked_section(args.doc, text, MARK_BEGIN, MARK_END)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
