#!/usr/bin/env python3
"""test_page_render.py PAGE_RENDER - the timeline drawer and the status page, without a daemon.

PAGE_RENDER (tests/reignd/page_render.c) runs timeline_svg() (src/common/timeline_svg.c: the
drawing of `reign history --svg` and of reignd's status page) and reignd_page_render()
(src/reignd/page.c) on JSON given here, and this checks what comes out:

  svg   well-formed XML (python's parser); one bar per term, in its leader's lane, left to
        right in time; a lane too for a candidate given that never led; one gap per time without a leader, the one after the last term too
        when it ended; a current leader's bar reaching now; ids that look like markup
        (<script>, quotes, &, invalid UTF-8, control characters) only ever as text or
        attribute values, given back as they were (bad bytes as U+FFFD); a <title> on every
        bar and gap; no terms: says so; ids of its own from the given one, safe
  html  the page parses, has exactly its one script, whose text holds nothing of the view;
        the store's ids show as text in the candidates, the leader and the timeline
  json  status.json: the view as it was, plus "html" (the page's main part) and "note"
"""

import base64
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

SVG = "{http://www.w3.org/2000/svg}"
NASTY = ['<script>alert("x")</script>', "a&b\"c'd", "]]><!--", "node-1", "\u00e9t\u00e9 \U0001f451"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(tool, mode, data):
    r = subprocess.run([tool, mode], input=json.dumps(data).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"page_render {mode} failed ({r.returncode}): {r.stderr.decode()}")
    return r.stdout.decode()


def term(n, ident, start, end=0, how="resigned", estimated=False, raw=None):
    t = {"term": n, "token": 10 * n, "started_ms": start, "ended_ms": end,
         "end": how if end else "leading", "ended_estimated": estimated}
    if raw is not None:
        t["id_b64"] = base64.b64encode(raw).decode()
    else:
        t["id"] = ident
    return t


def parse_svg(text, what):
    try:
        return ET.fromstring(text)
    except ET.ParseError as e:
        check(False, f"{what}: not well-formed XML: {e}: {text[:300]}")
        return None


def bars(root):
    return [(g, g.find(f"{SVG}rect")) for g in root.iter(f"{SVG}g") if g.get("class") == "term"]


def gaps(root):
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "gap"]


def test_svg(tool):
    base = 1_700_000_000_000
    terms = [
        term(1, NASTY[0], base, base + 5000, "resigned"),
        term(2, NASTY[1], base + 5000, base + 9000, "expired", estimated=True),  # no gap: touching
        term(3, NASTY[0], base + 11000, base + 20000, "ceded"),  # a gap of 2 s before
        term(4, NASTY[2], base + 20010, base + 30000, "lost"),  # a gap of 10 ms before
        term(5, None, base + 31000, raw=b"bad\xff\xfe\x01id"),  # leading, a gap of 1 s before
        term(6, NASTY[4], base + 40000, 0),  # not ended, yet not the last: end unknown
        term(7, NASTY[3], base + 45000, 0),  # leading now
    ]
    terms[4]["ended_ms"], terms[4]["end"] = base + 39000, "guardian"  # term 5 ended after all
    now = base + 60000
    text = run(tool, "svg", {"terms": terms, "now_ms": now, "width": 800, "id": "t\"><x",
                             "title": "election <b>web</b>", "ids": [NASTY[0], "never<led>"]})
    root = parse_svg(text, "the timeline")
    if root is None:
        return
    check(root.tag == f"{SVG}svg", f"the root is an svg element: {root.tag}")
    check(root.get("id") == "tx", f"the element's id keeps [A-Za-z0-9_-] only: {root.get('id')}")
    check(not list(root.iter("script")) and not list(root.iter(f"{SVG}script")),
          "no script element, whatever the ids")
    check("<script>" not in text and "<b>" not in text, "the ids' and title's markup escaped")
    title = root.find(f"{SVG}title")
    check(title is not None and "election <b>web</b>" in title.text,
          f"the title given back as text: {title is not None and title.text}")
    got = bars(root)
    check(len(got) == len(terms), f"one bar per term: {len(got)} for {len(terms)}")
    by_term = {int(g.get("data-term")): (g, r) for g, r in got}
    want_ids = {1: NASTY[0], 2: NASTY[1], 3: NASTY[0], 4: NASTY[2], 5: "bad\ufffd\ufffd\ufffdid",
                6: NASTY[4], 7: NASTY[3]}
    for n, ident in want_ids.items():
        g, _ = by_term[n]
        check(g.get("data-id") == ident, f"term {n}'s id given back: {g.get('data-id')!r}")
        t = g.find(f"{SVG}title")
        check(t is not None and f"term {n}, token {10 * n}" in t.text and
              (ident in t.text or n == 5), f"term {n}'s hover title: {t is not None and t.text}")
    check(by_term[2][0].get("data-end") == "expired" and by_term[6][0].get("data-end") == "unknown"
          and by_term[7][0].get("data-end") == "leading", "each bar's end")
    check("~" in by_term[2][0].find(f"{SVG}title").text, "an estimated end is marked ~")
    xs = [float(by_term[n][1].get("x")) for n in sorted(by_term)]
    check(xs == sorted(xs) and len(set(xs)) == len(xs), f"bars left to right in time: {xs}")
    # Lanes: one per distinct id, in the order they first led; a bar is in its id's lane.
    lanes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "lane"]
    lane_ids = [g.get("data-id") for g in lanes]
    check(lane_ids == [NASTY[0], NASTY[1], NASTY[2], "bad\ufffd\ufffd\ufffdid", NASTY[4], NASTY[3],
                       "never<led>"], f"the lanes, the candidate that never led last: {lane_ids}")
    lane_y = {g.get("data-id"): float(g.find(f"{SVG}rect").get("y")) for g in lanes}
    for n, ident in want_ids.items():
        y = float(by_term[n][1].get("y"))
        check(lane_y[ident] <= y < lane_y[ident] + 26, f"term {n}'s bar in its lane ({y})")
    # The leading bar reaches now (the right end); the one of unknown end, the next's start.
    r7 = by_term[7][1]
    right = float(r7.get("x")) + float(r7.get("width"))
    check(abs(right - (800 - 12)) < 0.5, f"the current leader's bar reaches now: {right}")
    r6 = by_term[6][1]
    check(abs(float(r6.get("x")) + float(r6.get("width")) - float(r7.get("x"))) < 0.5,
          "a term of unknown end runs to the next one's start")
    # Gaps: after 2 (2 s), after 3 (10 ms: still drawn), after 4 (1 s), after 5 (1 s); none
    # after 1 (touching), 6 (no end) or 7 (leading).
    after = sorted(int(g.get("data-after")) for g in gaps(root))
    check(after == [2, 3, 4, 5], f"the gaps without a leader: after terms {after}")
    for g in gaps(root):
        rect = g.find(f"{SVG}rect")
        check(float(rect.get("width")) >= 3, "a gap is wide enough to see and hover")
        check("url(#tx-hatch)" == rect.get("fill"), f"a gap is hatched: {rect.get('fill')}")
        check(g.find(f"{SVG}title") is not None and "no leader" in g.find(f"{SVG}title").text,
              "a gap's hover title")
    check([p.get("id") for p in root.iter(f"{SVG}pattern")] == ["tx-hatch"], "the hatch pattern")
    axis = [g for g in root.iter(f"{SVG}g") if g.get("class") == "axis"]
    check(len(axis) == 1 and len(list(axis[0].iter(f"{SVG}text"))) >= 3, "a time axis")

    # The last leadership ended: the time since is without a leader, open-ended.
    ended = run(tool, "svg", {"terms": terms[:2], "now_ms": base + 20000})
    root = parse_svg(ended, "a timeline ending without a leader")
    if root is not None:
        g = gaps(root)
        check(len(g) == 1 and "no leader since" in g[0].find(f"{SVG}title").text,
              "a gap after the last leadership, up to now")
        check(root.get("id") == "timeline", "the default id")

    # No terms; a phone's width (the least, 320); one term only.
    for what, data in (("no terms", {"terms": [], "now_ms": now, "width": 100}),
                       ("one term", {"terms": [term(1, "solo", base)], "width": 390})):
        root = parse_svg(run(tool, "svg", data), what)
        if root is not None:
            check(int(root.get("width")) >= 320, f"{what}: at least 320 px wide")
            check(len(bars(root)) == len(data["terms"]), f"{what}: its bars")
            if not data["terms"]:
                check("no leaderships recorded" in ET.tostring(root, encoding="unicode"),
                      "no terms: says so")


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.in_script, self.text, self.leaders, self.candidates = [], False, [], [], []
        self.stack = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.in_script = True
            self.scripts.append("")
        if "data-leader" in a:
            self.leaders.append(a["data-leader"])
        if tag == "tr" and "candidate" in (a.get("class") or ""):
            self.candidates.append(a.get("data-id"))

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def view_of(base, history):
    svc = {"name": "web", "node": NASTY[0], "state": "active", "health": "healthy",
           "paused": False, "paused_by": None, "leader": NASTY[0], "term": 3, "token": 30,
           "failovers": 1, "activated": True, "election": "web<i>", "instance": "ab",
           "conflict": None, "failover_to": None, "reason": "elected <b>here</b>",
           "backend": "zookeeper",
           "check": {"type": "<tcp>", "target": "127.0.0.1:80", "interval_ms": 200, "rise": 1,
                     "fall": 2},
           "store": {"leader": {"id": NASTY[0], "term": 3, "token": 30, "since_ms": base},
                     "candidates": [{"id": NASTY[0], "priority": 0, "joined_ms": base,
                                     "service_address": "a:1", "peer_address": ""},
                                    {"id": NASTY[1], "priority": 0, "joined_ms": 0,
                                     "service_address": "<b>", "peer_address": ""}],
                     "takeover_ms": 2000},
           "history": history}
    return {"services": [svc, dict(svc, name="db", store={"error": "cannot read <x>"},
                                   history={"error": "no history on this store",
                                            "unsupported": True})],
            "generated_ms": base + 10000, "version": "1.2<3>"}


def test_page(tool):
    base = 1_700_000_000_000
    history = {"total": 3, "terms": [term(1, NASTY[1], base - 9000, base - 5000, "expired"),
                                     term(2, NASTY[0], base - 4000, base - 1000, "ceded"),
                                     term(3, NASTY[0], base)]}
    view = view_of(base, history)
    html = run(tool, "html", {"view": view, "width": 700})
    p = Page()
    p.feed(html)
    check(len(p.scripts) == 1, f"one script in the page: {len(p.scripts)}")
    script = p.scripts[0] if p.scripts else ""
    for s in ("alert", "web<i>", "here", "node-1", "zookeeper", "127.0.0.1"):
        check(s not in script, f"the script holds nothing of the view ({s!r})")
    check("<script>alert" not in html, "no id as markup in the page")
    text = "".join(p.text)
    for s in (NASTY[0], NASTY[1], "web<i>", "elected <b>here</b>", "cannot read <x>",
              "no history on this store", "<tcp> check", "reign 1.2<3>"):
        check(s in text, f"shown as text: {s!r}")
    check(p.leaders == [NASTY[0]], f"the leader named once (db's store unreadable): {p.leaders}")
    check(p.candidates == [NASTY[0], NASTY[1]] * 1, f"web's candidates: {p.candidates}")
    svg = re.search(r"<svg.*?</svg>", html, re.S)
    check(svg is not None, "the timeline in the page")
    if svg:
        root = parse_svg(svg.group(0), "the page's timeline")
        if root is not None:
            check(len(bars(root)) == 3 and len(gaps(root)) == 2,
                  f"the page's timeline: {len(bars(root))} bars, {len(gaps(root))} gaps")
            check(root.get("width") == "700", f"drawn at the width asked: {root.get('width')}")

    out = json.loads(run(tool, "json", {"view": view, "width": 500, "note": "slow <store>"}))
    check(out["services"] == view["services"] and out["generated_ms"] == view["generated_ms"],
          "status.json: the view as it was")
    check(out["note"] == "slow <store>", f"status.json's note: {out.get('note')}")
    inner = Page()
    inner.feed(out["html"])
    check(not inner.scripts and "<main" not in out["html"], "status.json's html: the main part only")
    check("slow <store>" in "".join(inner.text), "the note shown, as text")
    check('width="500"' in out["html"], "status.json's timeline at the width asked")
    none = json.loads(run(tool, "json", {"view": {"services": [], "generated_ms": base}}))
    check("no services" in none["html"] and none["note"] is None, "no services: says so")


def main():
    tool = sys.argv[1]
    test_svg(tool)
    test_page(tool)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
