#!/usr/bin/env python3
"""check_leadership.py - prove from `reign campaign` output that leaderships never overlapped.

Every contender of a test writes its stdout to its own file; each line is one of

    elected <id> term=<term> token=<token> monotonic_ns=<ns>
    demoted <id> reason=<word> monotonic_ns=<ns>

(other lines are ignored).  From these files this checker rebuilds every leadership interval
[elected, end) and proves the safety properties of an election:

  * the leaderships of different processes never overlap: each one starts at or after the end
    of every leadership that started before it;
  * terms strictly increase from one leadership to the next;
  * fencing tokens strictly increase from one leadership to the next.

A leadership ends at its `demoted` line.  A process killed while leading (kill -9) prints no
such line: pass `--killed FILE=NS` with the CLOCK_MONOTONIC time of the kill.  A process still
leading when the test stopped looking ends at `--end NS` if given, and otherwise never (nobody
may have been elected after it).  All times are CLOCK_MONOTONIC nanoseconds, comparable between
processes of one machine (python: time.monotonic_ns()).

Usage:  check_leadership.py [--killed FILE=NS]... [--end NS] [--min-leaderships K] FILE...
Exit status: 0 all proven (a summary is printed), 1 a violation (printed), 2 bad input.

As a module:  check_files(paths, killed={path: ns}, end_ns=None) returns the leaderships in
order or raises Violation; parse_lines() and check() work on data already in memory.
"""

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence


class InputError(Exception):
    """A line or an argument that cannot be understood."""


class Violation(Exception):
    """A safety property does not hold; the message says which and where."""


@dataclass(frozen=True)
class Event:
    kind: str  # "elected" or "demoted"
    ident: str
    ns: int
    term: Optional[int]  # elected only
    token: Optional[int]  # elected only
    reason: Optional[str]  # demoted only
    where: str  # "file:line", for messages


@dataclass(frozen=True)
class Leadership:
    process: str  # the file it came from
    ident: str
    term: int
    token: int
    start_ns: int
    end_ns: Optional[int]  # None: still leading, with no end given
    ended_by: str  # "demoted:<reason>", "killed", "end", "open"
    where: str

    def describe(self) -> str:
        end = "open" if self.end_ns is None else str(self.end_ns)
        return (f"{self.ident} ({self.process}) term={self.term} token={self.token} "
                f"[{self.start_ns}, {end}) ended by {self.ended_by}")


def _fields(words: Sequence[str], where: str) -> Dict[str, str]:
    out = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise InputError(f"{where}: expected key=value, got '{w}'")
        out[key] = value
    return out


def _int_field(fields: Mapping[str, str], key: str, where: str) -> int:
    if key not in fields:
        raise InputError(f"{where}: missing {key}=")
    try:
        return int(fields[key])
    except ValueError:
        raise InputError(f"{where}: {key}='{fields[key]}' is not an integer") from None


def parse_line(line: str, where: str) -> Optional[Event]:
    """One output line to an Event, or None if it is not an elected/demoted line."""
    words = line.split()
    if not words or words[0] not in ("elected", "demoted"):
        return None
    if len(words) < 2:
        raise InputError(f"{where}: '{line.strip()}' has no candidate id")
    kind, ident = words[0], words[1]
    fields = _fields(words[2:], where)
    ns = _int_field(fields, "monotonic_ns", where)
    if kind == "elected":
        return Event(kind, ident, ns, _int_field(fields, "term", where),
                     _int_field(fields, "token", where), None, where)
    if "reason" not in fields:
        raise InputError(f"{where}: missing reason=")
    return Event(kind, ident, ns, None, None, fields["reason"], where)


def parse_lines(lines: Iterable[str], name: str) -> List[Event]:
    """The events of one process, in the order printed."""
    events = []
    for number, line in enumerate(lines, 1):
        ev = parse_line(line, f"{name}:{number}")
        if ev is not None:
            events.append(ev)
    return events


def leaderships_of(events: Sequence[Event], process: str, killed_ns: Optional[int] = None,
                   end_ns: Optional[int] = None) -> List[Leadership]:
    """One process's leadership intervals.  Raises Violation if its own story is inconsistent
    (time going backwards, elected twice without a demotion in between)."""
    out: List[Leadership] = []
    current: Optional[Event] = None
    last_ns = None
    for ev in events:
        if last_ns is not None and ev.ns < last_ns:
            raise Violation(f"{ev.where}: monotonic_ns {ev.ns} is before the previous line's "
                            f"{last_ns}")
        last_ns = ev.ns
        if ev.kind == "elected":
            if current is not None:
                raise Violation(f"{ev.where}: elected again (term {ev.term}) without being "
                                f"demoted from term {current.term} ({current.where})")
            current = ev
        else:
            if current is None:
                # Printed when not leading: not a safety problem, but worth seeing.
                print(f"check_leadership: note: {ev.where}: demoted while not leading",
                      file=sys.stderr)
                continue
            out.append(Leadership(process, current.ident, current.term, current.token,
                                  current.ns, ev.ns, f"demoted:{ev.reason}", current.where))
            current = None
    if current is not None:
        if killed_ns is not None:
            if killed_ns < current.ns:
                raise InputError(f"{process}: killed at {killed_ns}, before its election at "
                                 f"{current.ns} ({current.where})")
            end, how = killed_ns, "killed"
        elif end_ns is not None:
            if end_ns < current.ns:
                raise InputError(f"{process}: --end {end_ns} is before its election at "
                                 f"{current.ns} ({current.where})")
            end, how = end_ns, "end"
        else:
            end, how = None, "open"
        out.append(Leadership(process, current.ident, current.term, current.token, current.ns,
                              end, how, current.where))
    return out


def check(processes: Mapping[str, Sequence[Event]], killed: Optional[Mapping[str, int]] = None,
          end_ns: Optional[int] = None) -> List[Leadership]:
    """Prove the properties over every process's events; returns all leaderships in the order
    they began, or raises Violation."""
    killed = dict(killed or {})
    unknown = set(killed) - set(processes)
    if unknown:
        raise InputError(f"--killed names no given file: {', '.join(sorted(unknown))}")
    all_terms: List[Leadership] = []
    for name, events in processes.items():
        all_terms.extend(leaderships_of(events, name, killed.get(name), end_ns))
    all_terms.sort(key=lambda l: (l.start_ns, l.term))

    latest_end: Optional[Leadership] = None  # the earlier leadership that ends last
    previous: Optional[Leadership] = None
    for lead in all_terms:
        if latest_end is not None and (latest_end.end_ns is None
                                       or lead.start_ns < latest_end.end_ns):
            overlap = ("it never ended" if latest_end.end_ns is None
                       else f"overlap {latest_end.end_ns - lead.start_ns} ns")
            raise Violation("two leaders at once:\n"
                            f"  {latest_end.describe()}\n"
                            f"  {lead.describe()}   ({lead.where})\n"
                            f"  {overlap}")
        if previous is not None:
            if lead.term <= previous.term:
                raise Violation(f"term did not increase: {previous.describe()} then "
                                f"{lead.describe()} ({lead.where})")
            if lead.token <= previous.token:
                raise Violation(f"token did not increase: {previous.describe()} then "
                                f"{lead.describe()} ({lead.where})")
        previous = lead
        if latest_end is None or (latest_end.end_ns is not None
                                  and (lead.end_ns is None or lead.end_ns > latest_end.end_ns)):
            latest_end = lead
    return all_terms


def check_files(paths: Sequence[str], killed: Optional[Mapping[str, int]] = None,
                end_ns: Optional[int] = None) -> List[Leadership]:
    """check() over files, one per process; killed maps a path to the time of its kill."""
    processes = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            processes[path] = parse_lines(f, path)
    # Match --killed to the files however either path was spelt.
    real = {os.path.realpath(p): p for p in paths}
    by_name = {real.get(os.path.realpath(k), k): ns for k, ns in (killed or {}).items()}
    return check(processes, by_name, end_ns)


def summary(leaderships: Sequence[Leadership], processes: int) -> str:
    lines = [f"check_leadership: OK: {len(leaderships)} leadership(s) over {processes} "
             f"process(es), no overlap, terms and tokens strictly increasing"]
    if not leaderships:
        return lines[0]
    origin = leaderships[0].start_ns

    def ms(ns: int) -> str:
        return f"{(ns - origin) / 1e6:+.1f} ms"

    prev_end = None
    for lead in leaderships:
        end = "still leading" if lead.end_ns is None else f"until {ms(lead.end_ns)}"
        gap = ""
        if prev_end is not None:
            gap = f", {(lead.start_ns - prev_end) / 1e6:.1f} ms after the previous"
        lines.append(f"  term {lead.term} token {lead.token}: {lead.ident} from "
                     f"{ms(lead.start_ns)} {end} ({lead.ended_by}{gap})")
        prev_end = lead.end_ns
    return "\n".join(lines)


def _parse_killed(items: Sequence[str]) -> Dict[str, int]:
    out = {}
    for item in items:
        path, sep, ns = item.rpartition("=")
        if not sep or not path:
            raise InputError(f"--killed '{item}' is not FILE=NS")
        try:
            out[path] = int(ns)
        except ValueError:
            raise InputError(f"--killed '{item}': '{ns}' is not an integer") from None
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Prove that leaderships in `reign campaign` "
                                 "output never overlap and that terms and tokens grow.")
    ap.add_argument("files", nargs="+", metavar="FILE", help="one process's stdout")
    ap.add_argument("--killed", action="append", default=[], metavar="FILE=NS",
                    help="FILE's process was killed at NS (CLOCK_MONOTONIC)")
    ap.add_argument("--end", type=int, metavar="NS",
                    help="end of observation: processes still leading end here")
    ap.add_argument("--min-leaderships", type=int, default=0, metavar="K",
                    help="fail unless at least K leaderships were seen")
    args = ap.parse_args(argv)
    try:
        leads = check_files(args.files, _parse_killed(args.killed), args.end)
    except (InputError, OSError) as e:
        print(f"check_leadership: error: {e}", file=sys.stderr)
        return 2
    except Violation as e:
        print(f"check_leadership: VIOLATION: {e}")
        return 1
    if len(leads) < args.min_leaderships:
        print(f"check_leadership: only {len(leads)} leadership(s), expected at least "
              f"{args.min_leaderships}")
        return 1
    print(summary(leads, len(args.files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
