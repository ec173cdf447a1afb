#!/usr/bin/env python3
"""test_one_leader.py - five `reign campaign` processes on one SQL lease, one leader.

    test_one_leader.py sqlite|mariadb|postgres

Five candidates of one election start at once.  Exactly one prints `elected`, and keeps
leading through more than a whole lease (renewals work; nobody else takes the row): one
elected line in all.  `reign status --json` names the same candidate, term and token, and
lists the leader first, then the four others (campaign candidates are listed), with null
for what the row does not keep (since when it leads) and the leader's joined time from its
candidates row; the row in the table says
the same (owner, term); the text form of status states the worst-case takeover time, no
shorter than the lease.  Every process then gets SIGTERM and exits 0, check_leadership.py
proves the story, and once all have resigned the election has no leader.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log, wait_for  # noqa: E402

N = 5


def body(t, kind):
    store = sqle.Store(t, kind)
    uri = store.uri()
    name = t.unique("one")
    procs = sqle.campaigns(t, name, uri, [f"c{i}" for i in range(N)])

    sqle.wait_alive(lambda: sum(len(p.elected()) for p in procs) >= 1, "an elected line", procs)
    first = [(p, e) for p in procs for e in p.elected()][0]
    # More than a lease and a poll period later, every follower has looked at the row at
    # least once and found it held; the leader has renewed several times.
    quiet_until = first[1].ns + (sqle.LEASE["lease_ms"] + 2 * sqle.LEASE["poll_ms"]) * 1_000_000
    wait_for(lambda: time.monotonic_ns() > quiet_until, "a lease to pass")
    st = t.status(name, uri)
    elected = [(p, e) for p in procs for e in p.elected()]
    check(len(elected) == 1, f"{len(elected)} elected lines among {N} candidates: {elected}")
    proc, ev = elected[0]
    check(proc.leading(), f"{proc.label} no longer leads: {proc.events()}")
    log(f"leader {proc.label}: {ev}")
    check(ev.token == ev.term, f"token {ev.token} != term {ev.term} on a lease")
    check(st["leader"] is not None, f"status shows no leader: {st}")
    check(st["leader"]["id"] == proc.label,
          f"status says {st['leader']['id']} leads, {proc.label} printed {ev}")
    check(st["leader"]["term"] == ev.term and st["leader"]["token"] == ev.token,
          f"status term/token {st['leader']['term']}/{st['leader']['token']} != {ev}")
    ids = [c["id"] for c in st["candidates"]]
    check(ids[:1] == [proc.label] and sorted(ids) == sorted(p.label for p in procs),
          f"candidates {ids}, want the leader {proc.label} first, then the four others")
    # The row does not say since when its holder leads: unknown, so null, not 0 (1970); a
    # campaign is listed, and its candidates row says when it joined.
    check(st["leader"]["since_ms"] is None and st["candidates"][0]["joined_ms"] is not None,
          f"since_ms {st['leader']['since_ms']!r}, joined_ms "
          f"{st['candidates'][0]['joined_ms']!r}: want null for what the row does not say, "
          "and the leader's joined time")
    row = store.lease_row(name)
    check(row is not None and row.owner == proc.label and row.term == ev.term,
          f"the table's row {row} disagrees with {ev}")
    check(row.remaining_ns > 0, f"the leader's lease has run out by the database: {row}")

    rc, out, err = t.reign(["--uri", uri, "status", name])
    check(rc == 0, f"reign status (text) exited {rc}: {err.strip()}")
    log("status:\n" + out.rstrip())
    worst = [line for line in out.splitlines() if "takeover" in line]
    check(worst, f"status does not state the worst-case takeover time:\n{out}")
    numbers = [int(w) for w in re.findall(r"\d+", worst[0])]
    check(numbers and max(numbers) >= sqle.LEASE["lease_ms"],
          f"worst-case takeover {worst[0]!r} is shorter than the lease")
    for p in procs:
        check(p.alive(), f"{p.label} exited early: {p.err()}")

    sqle.resign_all(procs)
    t.check_leadership(procs, min_leaderships=1)
    st = t.status(name, uri)
    check(st is None or st["leader"] is None, f"a leader after every one resigned: {st}")
    sqle.no_word(procs, ["database is locked"])


if __name__ == "__main__":
    kind = sqle.backend_arg("test_one_leader.py")
    sqle.main(f"e2e_sql_one_leader_{kind}", lambda t: body(t, kind))
