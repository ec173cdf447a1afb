"""report.py - docs/benchmarks.md and the facts around a run: the source and machine measured, the
report's prose reflowed, and the sections each harness owns in the one file (a harness rewrites
its own and keeps the others').
"""

import datetime
import os
import platform
import re
import subprocess
import textwrap
from pathlib import Path

from .common import ROOT


def source_state(reign):
    """The commit the run started from and the binary measured (taken before the run: others
    may commit while it lasts)."""
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    commit = r.stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src",
                            "include", "CMakeLists.txt"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True).stdout.strip()
    if dirty:
        commit += " (the working tree had uncommitted changes under src/ or include/)"
    if reign and os.path.exists(reign):
        built = datetime.datetime.fromtimestamp(os.path.getmtime(reign)).astimezone()
        commit += "; the `reign` binary measured was built %s" % built.strftime(
            "%Y-%m-%d %H:%M %Z")
    return commit


def dpkg_version(pkg):
    """The version of an installed Debian package, or "?"."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or "?"


def machine_info(zk_version, commit):
    def first(path, key):
        try:
            for line in open(path):
                if line.startswith(key):
                    return re.split("[:=]", line, 1)[1].strip().strip('"')
        except OSError:
            pass
        return "?"

    def cmd(argv):
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            return r.stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory": "%.1f GB" % (int(mem_kb) / 1024.0 / 1024.0) if mem_kb.isdigit() else "?",
        "kernel": platform.release(),
        "os": first("/etc/os-release", "PRETTY_NAME"),
        "zookeeper": zk_version,
        "java": cmd(["java", "-version"]),
        "python": platform.python_version(),
        "curator": dpkg_version("libcurator-recipes-java"),
        "kazoo": dpkg_version("python3-kazoo"),
        "libzookeeper": dpkg_version("libzookeeper-mt2"),
        "commit": commit,
    }


def command_lines(run):
    """A report's lines on how its run was made: the command, and the file of every trial's
    numbers when that is in the tree."""
    lines = ["", "Command:", "", "    " + run["command"]]
    try:
        rel = Path(run.get("json", "")).resolve().relative_to(ROOT)
        lines += ["", "Every trial's numbers: `%s`." % rel]
    except ValueError:
        pass
    return lines


def fleet_notes(names, counts, by, summ, label, rest_fleet):
    """What a report's checks say of the runs on a store other than ZooKeeper: by and summ map
    (name, candidate count) to a result and its summary, label a name to its label, and
    rest_fleet names the set of candidates that had the window at rest."""
    notes = []
    for name in names:
        for n in counts:
            r = by.get((name, n))
            if r is None:
                notes.append("%s with %d candidates was not run." % (label[name], n))
                continue
            for e in r["errors"]:
                notes.append("%s with %d candidates stopped early: %s" % (label[name], n, e))
            for k, what in (("overlaps", "times a new leader's `elected` stamp preceded the old "
                             "leader's `demoted` stamp"),
                            ("term_violations", "leaderships whose term did not exceed every "
                             "earlier one's"),
                            ("clock_violations", "`elected` stamps outside [kill, read]")):
                if r.get(k):
                    notes.append("%s with %d candidates: %d %s." % (label[name], n, r[k], what))
            for key, s in summ.get((name, n), {}).items():
                if s.get("bad_exits"):
                    notes.append("%s with %d candidates: %d resigned leaders did not exit with "
                                 "status 0." % (label[name], n, s["bad_exits"]))
            rest = r.get("fleets", {}).get(rest_fleet, {}).get("rest")
            if rest and rest.get("leadership_changed"):
                notes.append("%s with %d candidates: the leadership changed during the window "
                             "at rest." % (label[name], n))
    return notes


def zk_notes(run, see=""):
    """What a report's checks say of its reference run on ZooKeeper (zk_reference())."""
    notes = []
    for r in run.get("zk_results", []):
        for e in r["errors"]:
            notes.append("ZooKeeper with %d candidates stopped early: %s" % (r["n"], e))
        for k in ("overlaps", "clock_violations"):
            if r.get(k):
                notes.append("ZooKeeper with %d candidates: %d %s%s." % (
                    r["n"], r[k], k.replace("_", " "), see))
    if run.get("zk_info", {}).get("missing"):
        notes.append("ZooKeeper was not run: %s." % run["zk_info"]["missing"])
    return notes


def checks_lines(notes, none):
    """A report's "### Checks": a bullet a note, or the one `none` says when there is none."""
    return ["", "### Checks", ""] + ["- " + note for note in notes or [none]] + [""]


def finish_report(lines, method):
    """The report's text: its lines, then the method's paragraphs (one source of prose,
    reflowed here, so edits need not re-wrap it by hand); prose at 100 columns like the rest
    of docs/, tables, code and headings as they are."""
    lines = list(lines)
    for para in method.strip().split("\n\n"):
        lines += [para if para.startswith("#") else " ".join(para.split()), ""]
    out = []
    for line in lines:
        if not line or line.startswith(("|", "#", "    ")):
            out.append(line)
        elif line.startswith("- "):
            out.append(textwrap.fill(line, width=100, subsequent_indent="  ",
                                     break_on_hyphens=False))
        else:
            out.append(textwrap.fill(line, width=100, break_on_hyphens=False))
    return "\n".join(out).rstrip("\n") + "\n"


# Level-2 sections of docs/benchmarks.md that other harnesses write: bench/failover.py, which
# writes the rest of the file, keeps them as they are (write_report), and each of those harnesses
# replaces only its own (write_other_section).
OTHER_SECTIONS = ("## SQL lease elections", "## Many elections on one session",
                  "## Designation latency", "## Task queue throughput",
                  "## reignd: failover and footprint",
                  "## Crash failover with the guardian",
                  "## Slots: what a late copy costs",
                  "## Graceful handoff: where the time goes",
                  "## Before and after the election tables",
                  "## Every capability on every store",
                  "## etcd")


def write_other_section(path, section, text):
    """Replaces (or appends) one of OTHER_SECTIONS in the report; the rest stays."""
    path = Path(path)
    old = path.read_text() if path.exists() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(splice_section(old, section, text))


def write_marked_section(path, text, begin, end):
    """Replaces the report's text between the markers `begin` and `end` (both included) by
    `text`, which carries them; appends it when the report has none."""
    doc = Path(path).read_text()
    if begin in doc:
        a = doc.index(begin)
        b = doc.index(end) + len(end) + 1
        doc = doc[:a] + text + doc[b:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    Path(path).write_text(doc)


BEGIN_MARK = re.compile(r"<!-- [\w-]+: written by ")


def find_section(doc, heading):
    """Line range [start, end) of the section whose heading line is `heading`: up to the next
    level-1 or level-2 heading, or the end.  None if there is no such section."""
    lines = doc.split("\n")
    try:
        start = lines.index(heading)
    except ValueError:
        return None
    # A section another harness writes between markers (<!-- name: written by ... --> before
    # its heading, <!-- /name --> after it) owns its opening marker.
    head = start
    while start > 0 and (BEGIN_MARK.match(lines[start - 1]) or
                         (not lines[start - 1].strip() and start > 1 and
                          BEGIN_MARK.match(lines[start - 2]))):
        start -= 1
    end = head + 1
    while end < len(lines) and not re.match(r"#{1,2} ", lines[end]) and \
            not BEGIN_MARK.match(lines[end]):
        end += 1
    return start, end


def splice_section(doc, heading, section):
    """doc with the section `heading` replaced by `section` (whose first line is the heading),
    or with `section` appended at the end if doc has none."""
    lines = doc.rstrip("\n").split("\n") if doc.strip() else []
    new = section.rstrip("\n").split("\n")
    where = find_section("\n".join(lines), heading)
    if where is None:
        lines += [""] + new if lines else new
    else:
        start, end = where
        tail = lines[end:]
        lines = lines[:start] + new + ([""] + tail if tail else [])
    return "\n".join(lines) + "\n"


def write_report(path, text):
    """Writes bench/failover.py's report, keeping the sections other harnesses own."""
    path = Path(path)
    try:
        old = path.read_text()
    except OSError:
        old = ""
    for heading in OTHER_SECTIONS:
        where = find_section(old, heading)
        if where is not None:
            kept = "\n".join(old.split("\n")[where[0]:where[1]])
            text = splice_section(text, heading, kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def findings_of(path):
    """The paragraphs (blank-line separated) of a text file, each on one line; None without
    a file."""
    if not path:
        return None
    text = Path(path).read_text()
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
