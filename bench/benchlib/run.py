"""run.py - what every harness's command line shares: its common options, the scratch directory,
saving the samples and writing the report at the end (or the one section a harness owns),
--render, and the exit status.
"""

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from .common import ROOT, BenchError, log
from .report import findings_of, write_other_section


def default_reign():
    for p in (ROOT / "build" / "src" / "cli" / "reign",
              ROOT / "build-bench" / "src" / "cli" / "reign"):
        if os.access(p, os.X_OK):
            return str(p)
    return None


def add_run_args(ap, output_help=None, render_help=None, section=None):
    """The options every harness here has: the binary, scratch directory, report, results,
    verbosity.  A harness that writes one section of the report may name it instead of saying
    what --output and --render do."""
    if section:
        output_help = ("the report whose section '%s' to write (default docs/benchmarks.md; "
                       "'-' for none)" % section)
        render_help = "only rewrite the report's section from an earlier run's results"
    ap.add_argument("--reign", default=default_reign(),
                    help="the reign binary (default: build/src/cli/reign)")
    ap.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"), help=output_help)
    ap.add_argument("--json", help="also write every trial's numbers here (default: "
                    "results.json in the scratch directory)")
    ap.add_argument("--render", metavar="JSON", help=render_help)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per trial")


def start_run(args, prefix):
    """The scratch directory, made; and SIGTERM unwinds like Ctrl-C, so that every `finally`
    stops what the run started (servers, candidates)."""
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    log("scratch directory %s" % workdir)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    return workdir


def end_run(run, args, workdir, errors, write, t_start):
    """Saves every trial's numbers, writes the report with write(path, run), and removes the
    scratch directory unless it is wanted (asked for, or a trial failed)."""
    json_path = Path(args.json) if args.json else workdir / "results.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    run["json"] = str(json_path)
    json_path.write_text(json.dumps(run, default=str) + "\n")
    log("samples in %s" % json_path)
    if args.output != "-":
        write(args.output, run)
        log("report in %s" % args.output)
    if not args.keep and not args.workdir and not errors and args.json:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log("scratch directory kept: %s (each candidate's stderr is there)" % workdir)
    log("done in %.1f min" % ((time.monotonic() - t_start) / 60.0))


def rerender(args, write, what, **extra):
    """--render: rewrites the report args.output with write(path, run) from the --json file
    args.render, after storing in that file the `extra` values given (findings, notes), so
    that the next --render keeps them.  Returns main's exit status."""
    path = Path(args.render)
    text = path.read_text()
    run = json.loads(text)
    extra = {k: v for k, v in extra.items() if v}
    if extra:
        run.update(extra)
        indent = 1 if "\n" in text.strip() else None
        path.write_text(json.dumps(run, indent=indent, default=str) + "\n")
    write(args.output, run)
    log("%s of %s rewritten" % (what, args.output))
    return 0


def section_writer(section, render):
    """write(path, run) for a harness that writes one section of the report (one of
    OTHER_SECTIONS): it replaces (or appends) that section with render(run); the rest stays."""
    def write(path, run):
        write_other_section(path, section, render(run))
    return write


def rerender_section(args, section, render):
    """--render for such a harness: rerender(), keeping in the results file the paragraphs of
    --findings where the harness has that option."""
    return rerender(args, section_writer(section, render), "section '%s'" % section,
                    findings=findings_of(getattr(args, "findings", None)))


def run_cli(main):
    """Exit status: 0, 1 on a BenchError (said on one line), 130 when interrupted."""
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        log("error: %s" % e)
        sys.exit(1)
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)
