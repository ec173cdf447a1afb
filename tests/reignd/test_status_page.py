"""test_status_page.py [STORE] - reignd's status page end to end, seen by a real browser.

Three reignd (A, B, C) on one election of the shared ZooKeeper server (or STORE: etcd's shared
member, a SQLite file, the shared MariaDB or PostgreSQL server), as test_reignd_e2e.py starts
them (its Cluster and Node: dummy services, hooks, fences).  Then, with headless
Chromium (Debian's chromium: scripts/deps.sh) and the page's own script running
(--virtual-time-budget):

  1. A is active: /status.json on B (a standby) names A as the election's leader, lists the
     three candidates and one leadership; the page's HTML carries a Content-Security-Policy
     that allows its inline script and style by their hashes, and nothing else; POST is
     refused; the DOM Chromium builds after the script ran names A as active, lists A, B and C,
     has one bar per leadership, and was drawn again by the script (at the browser's width);
  2. `reign ctl failover web --to B`: the page, read again on C, names B and has one term
     more, A's ended;
  3. B's reignd is killed: its guardian ends its leadership, another node takes over after a
     time without a leader, which the timeline marks (a gap, after B's term);
  4. `reign history NAME --svg FILE` draws the same leaderships: well-formed, one bar each;

On a store that keeps no history the page says so where the timeline would be, and
`reign history --svg` fails with the reason.
  5. screenshots of the page after the failovers at 1280x800 and at a phone's 390x844, kept in
     the test's directory (and copied to $REIGN_STATUS_PAGE_SHOTS, if set: docs/ has them);
     a daemon whose page was read stops cleanly on SIGTERM.

No assertion on how long anything takes: every wait is for an event, bounded generously.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_reignd_e2e as rd  # noqa: E402
import e2elib  # noqa: E402
from e2elib import Failure, check, log, wait_for  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise Failure("no chromium: install it (scripts/deps.sh)")


def browse(t, url, *what, size="1280,800"):
    """Runs headless Chromium on url for 3 s of the page's (virtual) time, the script's
    fetches included; returns its standard output (the DOM for --dump-dom)."""
    profile = os.path.join(t.dir, "chromium-profile")
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--hide-scrollbars",
            f"--window-size={size}", "--virtual-time-budget=3000", *what, url]
    try:
        r = subprocess.run(args, capture_output=True, timeout=e2elib.WAIT * 2)
    except subprocess.TimeoutExpired:
        raise Failure(f"chromium did not finish on {url}") from None
    check(r.returncode == 0, f"chromium failed ({r.returncode}): {r.stderr.decode()[-800:]}")
    return r.stdout.decode("utf-8", "replace")


class Dom(HTMLParser):
    """What the checks look at in the page's DOM."""

    def __init__(self, text):
        super().__init__()
        self.leaders, self.candidates, self.terms, self.gaps, self.svg_widths = [], [], [], [], []
        self.scripts, self.states, self.nohistory, self.lanes = 0, [], False, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if "data-leader" in a:
            self.leaders.append(a["data-leader"])
        if tag == "tr" and "candidate" in cls:
            self.candidates.append(a.get("data-id"))
        if tag == "g" and "term" in cls:
            self.terms.append((int(a["data-term"]), a.get("data-id"), a.get("data-end")))
        if tag == "g" and "lane" in cls:
            self.lanes.append(a.get("data-id"))
        if tag == "g" and "gap" in cls:
            self.gaps.append(int(a["data-after"]))
        if tag == "svg" and "reign-timeline" in cls:
            self.svg_widths.append(int(a["width"]))
        if tag == "script":
            self.scripts += 1
        if tag == "span" and "state" in cls:
            self.states.append(None)
        if "nohistory" in cls:
            self.nohistory = True


def get(node, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{node.metrics_port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=e2elib.WAIT) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def view(node):
    code, _, body = get(node, "/status.json")
    check(code == 200, f"{node.name}'s /status.json: {code} {body[:300]}")
    return next(s for s in json.loads(body)["services"] if s["name"] == "web")


def leader_and_terms(node):
    v = view(node)
    store, history = v.get("store") or {}, v.get("history") or {}
    leader = (store.get("leader") or {}).get("id")
    return leader, history.get("terms", [])


def kept(node):
    """Whether the store keeps a history (else the page says it does not, and shows none)."""
    history = view(node).get("history") or {}
    check("terms" in history or history.get("unsupported"), f"the history: {history}")
    return "terms" in history


def wait_page(node, leader, n_terms):
    """Until node's status.json names `leader` and holds n_terms leaderships, the last one
    that leader's and current (on a store without history: names `leader`)."""
    history = kept(node)

    def ready():
        got, terms = leader_and_terms(node)
        return got == leader and (not history or (
            len(terms) == n_terms and terms[-1]["id"] == leader and terms[-1]["end"] == "leading"))
    wait_for(ready, f"{node.name}'s page to show {leader} leading, {n_terms} leaderships")
    return leader_and_terms(node)[1]


def check_csp(node):
    code, headers, html = get(node, "/status")
    check(code == 200 and headers.get("Content-Type", "").startswith("text/html"),
          f"/status: {code} {headers}")
    csp = headers.get("Content-Security-Policy", "")
    for tag, directive in (("script", "script-src"), ("style", "style-src")):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S).group(1)
        digest = f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
        check(f"{directive} {digest}" in csp, f"the CSP allows the page's {tag}: {csp}")
    check("default-src 'none'" in csp and "connect-src 'self'" in csp, f"the CSP: {csp}")
    check(headers.get("Cache-Control") == "no-store", f"/status is not cached: {headers}")
    code, headers, _ = get(node, "/status.json", method="POST")
    check(code == 405, f"POST /status.json is refused: {code}")
    code, _, _ = get(node, "/status/other")
    check(code == 404, f"another path: {code}")


def check_dom(dom, leader, nodes, terms, what):
    check(dom.leaders == [leader], f"{what}: the page names {leader} active: {dom.leaders}")
    check(sorted(dom.candidates) == sorted(nodes), f"{what}: the candidates: {dom.candidates}")
    want = [(x["term"], x["id"], x["end"]) for x in terms]
    check(dom.terms == want, f"{what}: one bar per leadership: {dom.terms}, want {want}")
    check(dom.scripts == 1, f"{what}: the page's one script: {dom.scripts}")
    if not terms:  # a store without history: the page says so
        check(dom.nohistory and not dom.svg_widths, f"{what}: no history, said so")
        return
    check(sorted(dom.lanes) == sorted(set(nodes) | {x["id"] for x in terms}),
          f"{what}: a lane per leader and per candidate: {dom.lanes}")
    # Served at 960 px; the script fetched status.json at the width it has, and drew it again.
    check(dom.svg_widths and dom.svg_widths[0] != 960,
          f"{what}: the timeline was redrawn by the page's script: {dom.svg_widths}")


def scenario(t):
    c = rd.Cluster(t)
    a, b, n3 = c.node("A"), c.node("B"), c.node("C")
    rd.format_election(a)
    for n in (a, b, n3):
        n.start_service()
    a.start()
    c.wait_line("A", "become_active")
    a.wait_state("active")
    for n in (b, n3):
        n.start()
        n.wait_standing()

    # 1. A leads: what B's page says of it, as JSON and in a browser.
    terms = wait_page(b, "A", 1)
    wait_for(lambda: sorted(k["id"] for k in view(b)["store"]["candidates"]) == ["A", "B", "C"],
             "B's page to list the three candidates")
    v = view(b)
    check(v["state"] == "standby" and v["node"] == "B" and v["health"] == "healthy",
          f"B's own state on its page: {v}")
    check(v["check"]["type"] == "tcp" and v["check"]["target"] == f"127.0.0.1:{b.service_port}",
          f"B's health check on its page: {v['check']}")
    check_csp(b)
    url_b = f"http://127.0.0.1:{b.metrics_port}/status"
    check_dom(Dom(browse(t, url_b, "--dump-dom")), "A", ["A", "B", "C"], terms, "B's page")

    # 2. A graceful failover to B: C's page shows B and one leadership more.
    r = rd.failover(a, "B")
    check(r["ok"], f"failover to B: {r}")
    b.wait_state("active")
    terms = wait_page(n3, "B", 2)
    history = kept(n3)
    check(not history or (terms[0]["id"] == "A" and terms[0]["end"] != "leading"
                          and terms[0]["ended_ms"]), f"A's leadership ended: {terms[:1]}")
    url_c = f"http://127.0.0.1:{n3.metrics_port}/status"
    a.wait_standing()
    wait_for(lambda: sorted(k["id"] for k in view(n3)["store"]["candidates"]) == ["A", "B", "C"],
             "C's page to list A standing again")
    check_dom(Dom(browse(t, url_c, "--dump-dom")), "B", ["A", "B", "C"], terms,
              "C's page after the failover")

    # 3. B's reignd killed: its guardian ends the leadership; a standby takes over after a
    # time without a leader, which the timeline marks after B's term.
    b.proc.kill9()
    wait_for(lambda: c.lines("A", "become_active")[1:] or c.lines("C", "become_active"),
             "A or C to take over from the killed B")
    new = "C" if c.lines("C", "become_active") else "A"
    watcher = a if new == "C" else n3
    terms = wait_page(watcher, new, 3)
    check(not history or (terms[1]["id"] == "B" and terms[1]["end"] in ("guardian", "expired")),
          f"B's leadership ended by its guardian: {terms[1:2]}")
    url = f"http://127.0.0.1:{watcher.metrics_port}/status"
    dom = Dom(browse(t, url, "--dump-dom"))
    check([x[0] for x in dom.terms] == [x["term"] for x in terms], f"the terms: {dom.terms}")
    check(not history or terms[2]["started_ms"] <= terms[1]["ended_ms"] or 2 in dom.gaps,
          f"the time without a leader after term 2 marked: gaps after {dom.gaps}")

    # 4. reign history --svg: the same leaderships, drawn for any election (that has them).
    path = os.path.join(t.dir, "history.svg")
    rc, out, err = t.reign(["--uri", c.uri(), "history", c.election, "--svg", path])
    if history:
        check(rc == 0, f"reign history --svg failed ({rc}): {err}")
        root = ET.parse(path).getroot()
        bars = [g for g in root.iter(f"{SVG}g") if g.get("class") == "term"]
        check([int(g.get("data-term")) for g in bars] == [x["term"] for x in terms],
              f"reign history --svg: a bar per leadership: {[g.get('data-term') for g in bars]}")
    else:
        check(rc == 1 and "not kept" in err and not os.path.exists(path),
              f"reign history --svg on a store without history ({rc}): {err}")

    # 5. The pictures, after the failovers: the new active's page.
    active = a if new == "A" else n3
    url = f"http://127.0.0.1:{active.metrics_port}/status"
    shots = {}
    for name, size in (("status-page.png", "1280,800"), ("status-page-phone.png", "390,844")):
        shots[name] = os.path.join(t.dir, name)
        browse(t, url, f"--screenshot={shots[name]}", size=size)
        check(os.path.getsize(shots[name]) > 1000, f"the screenshot {name}")
    dest = os.environ.get("REIGN_STATUS_PAGE_SHOTS")
    if dest:
        for name, path in shots.items():
            shutil.copyfile(path, os.path.join(dest, name))
            log(f"copied {name} to {dest}")

    # A daemon whose page was read stops cleanly (under the sanitizers: nothing leaked).
    watcher.proc.send(signal.SIGTERM)
    check(watcher.proc.wait() == 0, f"{watcher.name} exited with {watcher.proc.returncode()}")
    check("Sanitizer" not in watcher.proc.err(), f"{watcher.name}: {watcher.proc.err()[-2000:]}")


if __name__ == "__main__":
    store = sys.argv[1] if len(sys.argv) == 2 else "zk"
    if len(sys.argv) > 2 or store not in ("zk", "etcd", *rd.sqle.BACKENDS):
        sys.exit(f"usage: {sys.argv[0]} [zk|etcd|{'|'.join(rd.sqle.BACKENDS)}]")
    rd.STORE = store  # the Cluster's store: the shared ZooKeeper server, or the etcd member
    e2elib.main("reignd_status_page" + ("" if store == "zk" else f"_{store}"),
                rd.checked(scenario))
