"""common.py - what every part of benchlib needs: where the tree is, the one error a benchmark
raises, its log line, and how numbers are summed up and printed.
"""

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # bench/benchlib/common.py
BENCH = ROOT / "bench"


class BenchError(Exception):
    pass


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def percentile(values, p):
    """Nearest-rank percentile: a value that was measured, never an interpolation."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, int(math.ceil(p / 100.0 * len(s))))
    return s[k - 1]


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, float):
        return ("%%.%df" % digits) % v
    return str(v)


def yes(ok):
    """A report's "met?" cell: "–" where nothing was measured."""
    return "–" if ok is None else ("yes" if ok else "**no**")


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return "%.2f" % (a / b)
