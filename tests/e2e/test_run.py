#!/usr/bin/env python3
"""test_run.py - `reign run NAME -- CMD` runs CMD only while it leads.

CMD is a small shell script that appends "start ID TERM TOKEN PID" to a file, and on SIGTERM
"term ID TOKEN PID" before exiting with status 7.  Two `reign run` processes, a and b:

  * only the leader's CMD runs (one start line), with REIGN_ELECTION/ID/TERM/TOKEN set;
  * `reign cede`: a's CMD is stopped (the process is gone), b's CMD starts;
  * a stands again; SIGTERM to b's reign: its CMD gets SIGTERM (writes its term line) and
    reign exits with CMD's status, 7, after resigning; a takes over and starts CMD again;
  * a's CMD exits by itself (the test sends it SIGTERM directly): reign exits with its
    status, 7, and resigns (no candidate left);
  * `reign run` of a command that exits 3 at once exits 3.

The tokens of the start lines strictly increase.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import check, log, main, wait_for  # noqa: E402

SCRIPT = r'''
echo "start $REIGN_ID $REIGN_TERM $REIGN_TOKEN $$ $REIGN_ELECTION" >> "$RUN_LOG"
trap 'echo "term $REIGN_ID $REIGN_TOKEN $$" >> "$RUN_LOG"; exit 7' TERM
while :; do sleep 0.05; done
'''


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def body(t):
    hosts = t.shared_hosts()
    uri = t.uri(hosts, session_timeout_ms=4000)
    name = t.unique("e2e-run")
    run_log = os.path.join(t.dir, "run.log")
    open(run_log, "w").close()
    env = {"RUN_LOG": run_log}

    def records(kind):
        with open(run_log) as f:
            return [line.split() for line in f if line.startswith(kind + " ")]

    def runner(ident):
        return t.spawn(ident, [t.cli, "--uri", uri, "--log-level", "notice", "run", name,
                               "--id", ident, "--grace", "5", "--", "sh", "-c", SCRIPT], env)

    a = runner("a")
    first = wait_for(lambda: records("start"), "a's command to start")[0]
    t.extra_pids.append(int(first[4]))
    check(first[1] == "a" and first[5] == name, f"start line {first}")
    b = runner("b")
    wait_for(lambda: len((t.status(name, uri) or {}).get("candidates", [])) == 2,
             "b's node in status")
    check(len(records("start")) == 1, f"two commands run: {records('start')}")
    st = t.status(name, uri)
    check(st["leader"]["id"] == "a" and str(st["leader"]["token"]) == first[3] and
          str(st["leader"]["term"]) == first[2], f"status {st} vs {first}")

    # cede: a's command stops, b's starts.
    rc, out, err = t.reign(["--uri", uri, "cede", name, "--wait-ms", "30000"])
    check(rc == 0, f"reign cede: {err.strip()}")
    second = wait_for(lambda: len(records("start")) >= 2 and records("start")[1],
                      "b's command to start")
    t.extra_pids.append(int(second[4]))
    check(second[1] == "b", f"second start line {second}")
    wait_for(lambda: not pid_alive(int(first[4])), "a's command to be stopped after the cede")
    check(a.alive() and b.alive(), "a reign process exited")
    wait_for(lambda: [k["id"] for k in t.status(name, uri)["candidates"]] == ["b", "a"],
             "a standing again behind b")
    check(len(records("start")) == 2, f"{records('start')}")

    # SIGTERM to b's reign: its command gets SIGTERM, reign exits with its status.
    b.send(signal.SIGTERM)
    rc = b.wait()
    check(rc == 7, f"b's reign exited {rc}, want its command's 7")
    check(any(r[1] == "b" and r[2] == second[3] for r in records("term")),
          f"b's command did not get SIGTERM: {records('term')}")
    check(not pid_alive(int(second[4])), "b's command outlived its reign")
    third = wait_for(lambda: len(records("start")) >= 3 and records("start")[2],
                     "a's command to start again")
    t.extra_pids.append(int(third[4]))
    check(third[1] == "a", f"third start line {third}")

    # a's command exits by itself: reign exits with its status and resigns.
    os.kill(int(third[4]), signal.SIGTERM)
    rc = a.wait()
    check(rc == 7, f"a's reign exited {rc} after its command exited 7")
    check(t.status(name, uri)["candidates"] == [], "a did not resign after its command ended")

    tokens = [int(r[3]) for r in records("start")]
    terms = [int(r[2]) for r in records("start")]
    check(all(x < y for x, y in zip(tokens, tokens[1:])), f"tokens {tokens}")
    check(all(x < y for x, y in zip(terms, terms[1:])), f"terms {terms}")
    log(f"commands ran with tokens {tokens}")

    other = t.unique("e2e-run3")
    rc, out, err = t.reign(["--uri", uri, "run", other, "--", "sh", "-c", "exit 3"])
    check(rc == 3, f"run of 'exit 3' exited {rc}: {err.strip()}")
    check(t.status(other, uri)["candidates"] == [], "run did not resign after 'exit 3'")


if __name__ == "__main__":
    main("e2e_run", body)
