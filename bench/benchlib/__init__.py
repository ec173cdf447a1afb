"""benchlib - what the benchmarks in bench/ share, so that each script holds only its own
measurement and report.

    common  the tree's root, BenchError, log, percentile, fmt, ratio, yes
    zk      a throwaway ZooKeeper server (scripts/zk.sh), its counters, a bare round trip
    etcd    a throwaway etcd member (scripts/etcd.sh), its /metrics, the requests between two
            samples
    fleet   candidate processes (reign, Curator, kazoo) in one election, the failover trial;
            the fleets on other stores' base (StoreFleet), reign on ZooKeeper as their
            reference (zk_reference), a process's memory and guardian from /proc
    report  docs/benchmarks.md: its sections, the machine and source measured, the command
            and checks paragraphs the harnesses share
    run     the command line every harness shares: options, scratch directory, --render, the
            report or its section written, exit status

A script adds bench/ to sys.path and imports the package (`import benchlib as bl`); every name
below is also reachable as bl.<name>.  Python stdlib only.
"""

from .common import BENCH, ROOT, BenchError, fmt, log, percentile, ratio, yes
from .etcd import Etcd, EtcdSample, etcd_delta, etcd_wait_quiet
from .fleet import (IMPLS, JVM_FLAGS, KAZOO_PYTHON, LABEL, READY_TEXT, SHORT, Candidate, Event,
                    Fleet, Impl, StoreFleet, guardians, is_guardian, kill_leader, measure_rss,
                    one_trial, run_config, run_phase, run_trials, status_kb, summarize,
                    zk_reference)
from .report import (OTHER_SECTIONS, checks_lines, command_lines, dpkg_version, find_section,
                     findings_of, finish_report, fleet_notes, machine_info, source_state,
                     splice_section, write_marked_section, write_other_section, write_report,
                     zk_notes)
from .run import (add_run_args, default_reign, end_run, rerender, rerender_section, run_cli,
                  section_writer, start_run)
from .zk import (WATCH_KEYS, RawSession, Sample, ZooKeeper, measure_floor, request_delta,
                 warm_server)

__all__ = [
    "BENCH", "ROOT", "BenchError", "fmt", "log", "percentile", "ratio", "yes",
    "Etcd", "EtcdSample", "etcd_delta", "etcd_wait_quiet",
    "IMPLS", "JVM_FLAGS", "KAZOO_PYTHON", "LABEL", "READY_TEXT", "SHORT", "Candidate", "Event",
    "Fleet", "Impl", "StoreFleet", "guardians", "is_guardian", "kill_leader", "measure_rss",
    "one_trial", "run_config", "run_phase", "run_trials", "status_kb", "summarize",
    "zk_reference",
    "OTHER_SECTIONS", "checks_lines", "command_lines", "dpkg_version", "find_section",
    "findings_of", "finish_report", "fleet_notes", "machine_info", "source_state",
    "splice_section", "write_marked_section", "write_other_section", "write_report",
    "zk_notes",
    "add_run_args", "default_reign", "end_run", "rerender", "rerender_section", "run_cli",
    "section_writer", "start_run",
    "WATCH_KEYS", "RawSession", "Sample", "ZooKeeper", "measure_floor", "request_delta",
    "warm_server",
]
