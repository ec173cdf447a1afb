"""docslib.py - what the docs tests share: failures are collected, then reported at once."""

import sys


def report(failures, ok):
    """Prints every failure (exit status 1) or the one line that says what holds (0)."""
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print(ok)
    return 0
