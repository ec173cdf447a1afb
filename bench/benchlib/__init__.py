"""benchlib - what the benchmarks in bench/ share, so that each script holds only its own
measurement and report.

    common  the tree's root, BenchError, log, percentile, fmt, ratio
    zk      a throwaway ZooKeeper server (scripts/zk.sh), its counters, a bare round trip
    etcd    a throwaway etcd member (scripts/etcd.sh), its /metrics, the requests between two
            samples
    fleet   candidate processes (reign, Curator, kazoo) in one election, the failover trial
    report  docs/benchmarks.md: its sections, the machine and source measured
    run     the command line every harness shares: options, scratch directory, exit status

A script adds bench/ to sys.path and imports the package (`import benchlib as bl`); every name
below is also reachable as bl.<name>.  Python stdlib only.
"""

from .common import BENCH, ROOT, BenchError, fmt, log, percentile, ratio
from .etcd import Etcd, EtcdSample, etcd_delta, etcd_wait_quiet
from .fleet import (IMPLS, JVM_FLAGS, KAZOO_PYTHON, LABEL, SHORT, Candidate, Event, Fleet, Impl,
                    kill_leader, measure_rss, one_trial, run_config, run_phase, summarize)
from .report import (OTHER_SECTIONS, find_section, findings_of, finish_report, machine_info,
                     source_state, splice_section, write_marked_section, write_other_section,
                     write_report)
from .run import add_run_args, default_reign, end_run, rerender, run_cli, start_run
from .zk import (WATCH_KEYS, RawSession, Sample, ZooKeeper, measure_floor, request_delta,
                 warm_server)

__all__ = [
    "BENCH", "ROOT", "BenchError", "fmt", "log", "percentile", "ratio",
    "Etcd", "EtcdSample", "etcd_delta", "etcd_wait_quiet",
    "IMPLS", "JVM_FLAGS", "KAZOO_PYTHON", "LABEL", "SHORT", "Candidate", "Event", "Fleet", "Impl",
    "kill_leader", "measure_rss", "one_trial", "run_config", "run_phase", "summarize",
    "OTHER_SECTIONS", "find_section", "findings_of", "finish_report", "machine_info",
    "source_state", "splice_section", "write_marked_section", "write_other_section",
    "write_report",
    "add_run_args", "default_reign", "end_run", "rerender", "run_cli", "start_run",
    "WATCH_KEYS", "RawSession", "Sample", "ZooKeeper", "measure_floor", "request_delta",
    "warm_server",
]
