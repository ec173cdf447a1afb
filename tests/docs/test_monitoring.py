#!/usr/bin/env python3
"""test_monitoring.py SOURCE_DIR - the monitoring files of contrib/ against reignd's metrics.

  - contrib/prometheus/reign-alerts.yml passes `promtool check rules`, and its unit tests
    (reign-alerts.test.yml: series that fire each alert and series that must not) pass
    `promtool test rules` (promtool: Debian's prometheus package, scripts/deps.sh);
  - contrib/grafana/reign-dashboard.json is JSON, a dashboard with a ${DS_PROMETHEUS} input
    that every panel and query uses, and every query is PromQL that promtool accepts (each is
    checked as a recording rule, Grafana's variables replaced);
  - the metric names in the rules, the dashboard, docs/monitoring.md and reignd(8) are names
    reignd exports (the families src/reignd/metrics.c writes), or Prometheus's own `up`; and
    docs/monitoring.md and reignd(8) name every family reignd exports.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from docslib import report

failures = []
PROM_OWN = {"up"}


def exported(src):
    """The metric families reignd writes: every "reignd_..." string of metrics.c."""
    text = open(os.path.join(src, "src", "reignd", "metrics.c")).read()
    names = set(re.findall(r'"(reignd_[a-z_]+)', text))
    if "reignd_service_leader" not in names:
        failures.append(f"found no metric names in metrics.c: {sorted(names)}")
    return names


def names_in(text):
    """Metric names in PromQL or prose: reignd_* tokens, and any name before a selector."""
    names = set(re.findall(r"\breignd_[a-z_]+", text))
    names |= set(re.findall(r"\b([a-z_:][a-z0-9_:]*)\{", text))
    return names


def check_names(what, text, known):
    for n in sorted(names_in(text) - known - PROM_OWN):
        failures.append(f"{what} names {n}, which reignd does not export")


def promtool(args, cwd):
    r = subprocess.run(["promtool", *args], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        failures.append(f"promtool {' '.join(args)} (in {cwd}) failed:\n{r.stdout}")


def grafana_to_promql(expr):
    """A dashboard query as Prometheus would get it from Grafana."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def check_dashboard(path, known, tmp):
    try:
        dash = json.load(open(path))
    except ValueError as e:
        failures.append(f"{path} is not JSON: {e}")
        return
    inputs = [i.get("name") for i in dash.get("__inputs", [])]
    if "DS_PROMETHEUS" not in inputs:
        failures.append(f"{path}: no DS_PROMETHEUS datasource input ({inputs})")
    rules = []
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            continue
        title = p.get("title", "?")
        sources = [p.get("datasource")] + [t.get("datasource") for t in p.get("targets", [])]
        if any((d or {}).get("uid") != "${DS_PROMETHEUS}" for d in sources):
            failures.append(f"{path}: panel {title!r} does not use ${{DS_PROMETHEUS}}")
        if not p.get("targets"):
            failures.append(f"{path}: panel {title!r} has no query")
        for t in p.get("targets", []):
            expr = t.get("expr", "")
            check_names(f"{path}: panel {title!r}", expr, known)
            rules.append({"record": f"dashboard:panel_{len(rules)}",
                          "expr": grafana_to_promql(expr)})
    for v in dash.get("templating", {}).get("list", []):
        check_names(f"{path}: variable {v.get('name')}", v.get("definition", ""), known)
    # JSON is YAML: the queries as recording rules, for promtool's parser.
    queries = os.path.join(tmp, "dashboard-queries.yml")
    with open(queries, "w") as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    if shutil.which("promtool"):
        promtool(["check", "rules", queries], tmp)


def main():
    src = os.path.abspath(sys.argv[1])
    known = exported(src)
    prom = os.path.join(src, "contrib", "prometheus")
    rules_path = os.path.join(prom, "reign-alerts.yml")
    if not shutil.which("promtool"):
        failures.append("promtool not found: install Debian's prometheus package "
                        "(scripts/deps.sh does)")
    else:
        promtool(["check", "rules", rules_path], prom)
        promtool(["test", "rules", os.path.join(prom, "reign-alerts.test.yml")], prom)
    check_names(rules_path, open(rules_path).read(), known)
    with tempfile.TemporaryDirectory() as tmp:
        check_dashboard(os.path.join(src, "contrib", "grafana", "reign-dashboard.json"), known,
                        tmp)
    for doc in ("docs/monitoring.md", "man/reignd.8"):
        text = open(os.path.join(src, doc)).read()
        check_names(doc, text, known)
        for n in sorted(known - set(re.findall(r"\breignd_[a-z_]+", text))):
            failures.append(f"{doc} does not name {n}, which reignd exports")
    sys.exit(report(failures, f"monitoring: the alert rules pass their tests; the dashboard "
                              f"and the docs name only the {len(known)} families reignd "
                              f"exports, and the docs every one"))


if __name__ == "__main__":
    main()
