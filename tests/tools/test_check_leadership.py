#!/usr/bin/env python3
"""test_check_leadership.py - the leadership checker against synthetic campaign output.

The checker is what turns fault tests into proofs, so it must itself be shown to catch each
kind of violation (overlap, a term or token that does not grow, an open leadership followed by
another) and to accept the legitimate histories (handoffs, kills, re-election of a process).
"""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_leadership as cl  # noqa: E402

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_leadership.py")


def elected(ident, term, token, ns):
    return f"elected {ident} term={term} token={token} monotonic_ns={ns}\n"


def demoted(ident, reason, ns):
    return f"demoted {ident} reason={reason} monotonic_ns={ns}\n"


class CheckerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, *lines):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.writelines(lines)
        return path

    def run_cli(self, *args):
        p = subprocess.run([sys.executable, CHECKER, *args], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def test_handoff_kill_and_open_end_pass(self):
        a = self.write("a", "some log line\n", elected("a", 1, 100, 1000),
                       demoted("a", "resigned", 2000), elected("a", 4, 400, 9000))
        b = self.write("b", elected("b", 2, 200, 2000))  # killed while leading
        c = self.write("c", elected("c", 3, 300, 5000), demoted("c", "session_lost", 6000))
        leads = cl.check_files([a, b, c], killed={b: 4000})
        self.assertEqual([l.term for l in leads], [1, 2, 3, 4])
        self.assertEqual(leads[1].ended_by, "killed")
        self.assertIsNone(leads[3].end_ns)
        rc, out = self.run_cli("--killed", f"{b}=4000", "--end", "9500", a, b, c)
        self.assertEqual(rc, 0, out)
        self.assertIn("4 leadership(s)", out)

    def test_overlap_fails(self):
        a = self.write("a", elected("a", 1, 10, 1000), demoted("a", "suspended", 3000))
        b = self.write("b", elected("b", 2, 20, 2999), demoted("b", "resigned", 4000))
        with self.assertRaisesRegex(cl.Violation, "two leaders at once"):
            cl.check_files([a, b])
        rc, out = self.run_cli(a, b)
        self.assertEqual(rc, 1)
        self.assertIn("VIOLATION", out)

    def test_leadership_inside_another_fails(self):
        # c begins and ends inside a's long leadership; b follows a properly.
        a = self.write("a", elected("a", 1, 10, 1000), demoted("a", "resigned", 9000))
        b = self.write("b", elected("b", 2, 20, 9000), demoted("b", "resigned", 9500))
        c = self.write("c", elected("c", 3, 30, 5000), demoted("c", "resigned", 6000))
        with self.assertRaises(cl.Violation):
            cl.check_files([a, b, c])

    def test_open_leadership_then_another_fails(self):
        a = self.write("a", elected("a", 1, 10, 1000))  # never demoted, not killed, no --end
        b = self.write("b", elected("b", 2, 20, 5000))
        with self.assertRaisesRegex(cl.Violation, "never ended"):
            cl.check_files([a, b])

    def test_killed_time_ends_leadership(self):
        a = self.write("a", elected("a", 1, 10, 1000))
        b = self.write("b", elected("b", 2, 20, 5000))
        cl.check_files([a, b], killed={a: 4000})
        with self.assertRaises(cl.Violation):
            cl.check_files([a, b], killed={a: 6000})

    def test_token_must_grow(self):
        a = self.write("a", elected("a", 1, 20, 1000), demoted("a", "resigned", 2000))
        b = self.write("b", elected("b", 2, 20, 3000), demoted("b", "resigned", 4000))
        with self.assertRaisesRegex(cl.Violation, "token did not increase"):
            cl.check_files([a, b])

    def test_term_must_grow(self):
        a = self.write("a", elected("a", 2, 10, 1000), demoted("a", "resigned", 2000))
        b = self.write("b", elected("b", 2, 20, 3000), demoted("b", "resigned", 4000))
        with self.assertRaisesRegex(cl.Violation, "term did not increase"):
            cl.check_files([a, b])

    def test_elected_twice_without_demotion_fails(self):
        a = self.write("a", elected("a", 1, 10, 1000), elected("a", 2, 20, 2000))
        with self.assertRaisesRegex(cl.Violation, "without being demoted"):
            cl.check_files([a])

    def test_time_going_backwards_fails(self):
        a = self.write("a", elected("a", 1, 10, 2000), demoted("a", "resigned", 1000))
        with self.assertRaisesRegex(cl.Violation, "before the previous"):
            cl.check_files([a])

    def test_bad_input_is_exit_2(self):
        a = self.write("a", "elected a term=x token=1 monotonic_ns=5\n")
        rc, out = self.run_cli(a)
        self.assertEqual(rc, 2, out)
        self.assertIn("is not an integer", out)
        b = self.write("b", "demoted b monotonic_ns=5\n")
        self.assertEqual(self.run_cli(b)[0], 2)

    def test_min_leaderships(self):
        a = self.write("a", elected("a", 1, 10, 1000), demoted("a", "resigned", 2000))
        self.assertEqual(self.run_cli("--min-leaderships", "1", a)[0], 0)
        self.assertEqual(self.run_cli("--min-leaderships", "2", a)[0], 1)

    def test_killed_path_spelt_differently(self):
        a = self.write("a", elected("a", 1, 10, 1000))
        b = self.write("b", elected("b", 2, 20, 5000))
        other = os.path.join(self.tmp.name, ".", "a")
        rc, out = self.run_cli("--killed", f"{other}=4000", a, b)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
