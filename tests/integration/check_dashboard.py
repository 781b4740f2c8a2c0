#!/usr/bin/env python3
"""Checks configs/grafana/seccheckd.json against a scrape of a running daemon.

Usage: check_dashboard.py DASHBOARD SCRAPE

The file is a dashboard Grafana imports: its JSON model's keys (title, uid,
panels, schemaVersion, templating...), a schema version Grafana 9 and later
read, the Prometheus data source as a variable (${datasource}) and never a
data source's uid, panels with unique ids and refIds on a 24-column grid
without overlaps. Every metric every panel queries is in the scrape, with
the labels its `by (...)` groups by, each selector filtering on $instance;
and the panels cover what the dashboard is for (events, drops, alerts,
delivery, the writer, restarts, the database). Prints one line per problem;
exit 1 if there is any.
"""
import json
import re
import sys

REQUIRED_KEYS = ["title", "uid", "panels", "schemaVersion", "version", "time", "templating", "annotations",
                 "editable", "refresh", "timezone"]
PANEL_TYPES = {"row", "timeseries"}
# What the dashboard must show (issue 28 item 13), by the metric it reads.
MUST_QUERY = {
    "seccheckd_messages_received_total": "events received",
    "seccheckd_messages_stored_total": "events stored",
    "seccheckd_messages_rejected_total": "events rejected",
    "seccheckd_sandbox_dropped_total": "events dropped by the sandboxes",
    "seccheckd_messages_received_by_type_total": "events by type",
    "seccheckd_alerts_total": "alerts by rule and priority",
    "seccheckd_alert_delivery_lag": "delivery lag",
    "seccheckd_alert_deliveries_total": "delivery failures",
    "seccheckd_writer_queue_depth": "the writer queue",
    "seccheckd_pauses_total": "fair-share pauses",
    "seccheckd_connection_paused_seconds_total": "pauses per connection",
    "seccheckd_restarts_total": "restarts",
    "seccheckd_db_bytes": "database size",
}
MUST_GROUP = {("seccheckd_alerts_total", "rule"), ("seccheckd_alerts_total", "priority"),
              ("seccheckd_connection_paused_seconds_total", "conn")}

problems = []


def problem(msg):
    problems.append(msg)


def parse_scrape(text):
    """{metric name: set of label names seen on its samples}"""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
        if not m:
            continue
        labels = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
        series.setdefault(m.group(1), set()).update(labels)
    return series


def walk(node, path="$"):
    """Every (path, value) in the JSON tree."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, "%s.%s" % (path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, "%s[%d]" % (path, i))


def check_model(d):
    for k in REQUIRED_KEYS:
        if k not in d:
            problem("the dashboard lacks the key %r" % k)
    if not isinstance(d.get("schemaVersion"), int) or not 36 <= d["schemaVersion"] <= 41:
        problem("schemaVersion %r: Grafana 9.0 (36) to 11 (41) import it" % d.get("schemaVersion"))
    if d.get("id") is not None:
        problem("id must be null: Grafana gives an imported dashboard its own")
    if d.get("timezone") != "utc":
        problem("timezone %r: seccheckd's times are UTC everywhere" % d.get("timezone"))
    variables = d.get("templating", {}).get("list", [])
    ds = [v for v in variables if v.get("type") == "datasource"]
    if len(ds) != 1 or ds[0].get("name") != "datasource" or ds[0].get("query") != "prometheus":
        problem("templating needs one datasource variable named datasource over prometheus, got %r" % ds)
    for path, v in walk(d):
        if path.endswith(".datasource") and isinstance(v, dict):
            builtin = v.get("type") == "grafana"
            if not builtin and v != {"type": "prometheus", "uid": "${datasource}"}:
                problem("%s: %r is not the ${datasource} variable" % (path, v))
        if path.endswith(".datasource") and isinstance(v, str):
            problem("%s: a data source named %r (use the variable)" % (path, v))


def check_grid(panels):
    ids, cells = set(), {}
    for p in panels:
        t = p.get("title", "?")
        if p.get("id") in ids or not isinstance(p.get("id"), int):
            problem("panel %r: id %r missing or not unique" % (t, p.get("id")))
        ids.add(p.get("id"))
        if p.get("type") not in PANEL_TYPES:
            problem("panel %r: type %r" % (t, p.get("type")))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] < 0 or g["x"] + g["w"] > 24:
            problem("panel %r: gridPos %r not on the 24-column grid" % (t, g))
            continue
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    problem("panels %r and %r overlap" % (cells[(x, y)], t))
                    break
                cells[(x, y)] = t


def balanced(expr):
    pairs, stack = {")": "(", "}": "{", "]": "["}, []
    for c in re.sub(r'"[^"]*"', "", expr):
        if c in "({[":
            stack.append(c)
        elif c in pairs and (not stack or stack.pop() != pairs[c]):
            return False
    return not stack


def check_queries(panels, series):
    queried, grouped = set(), set()
    for p in panels:
        if p.get("type") == "row":
            continue
        t = p.get("title", "?")
        targets = p.get("targets", [])
        if not targets:
            problem("panel %r queries nothing" % t)
        refs = [x.get("refId") for x in targets]
        if len(set(refs)) != len(refs) or None in refs:
            problem("panel %r: refIds %r not unique" % (t, refs))
        for x in targets:
            expr = x.get("expr", "")
            if not balanced(expr):
                problem("panel %r: unbalanced %r" % (t, expr))
            names = re.findall(r"\b(seccheckd_[a-z0-9_]+)\s*(\{[^}]*\})?", expr)
            if not names:
                problem("panel %r: %r reads no seccheckd metric" % (t, expr))
            for name, selector in names:
                queried.add(name)
                if name not in series:
                    problem("panel %r: %s is not in the daemon's scrape" % (t, name))
                if 'instance=~"$instance"' not in selector:
                    problem("panel %r: %s is not filtered by $instance" % (t, name))
            for labels in re.findall(r"\bby\s*\(([^)]*)\)", expr):
                for label in [s.strip() for s in labels.split(",") if s.strip()]:
                    for name, _ in names:
                        if label == "le" and name.endswith("_bucket"):
                            continue
                        grouped.add((name, label))
                        if name in series and label not in series[name]:
                            problem("panel %r: %s has no label %r in the scrape" % (t, name, label))
    for name, what in MUST_QUERY.items():
        if name not in queried:
            problem("no panel shows %s (%s)" % (what, name))
    for name, label in MUST_GROUP - grouped:
        problem("no panel shows %s by %s" % (name, label))
    return queried


def main():
    dashboard = json.load(open(sys.argv[1]))
    series = parse_scrape(open(sys.argv[2]).read())
    check_model(dashboard)
    panels = dashboard.get("panels", [])
    check_grid(panels)
    queried = check_queries(panels, series)
    for p in problems:
        print("FAIL - " + p)
    print("%d panels, %d metrics queried; the scrape has %d; %d problems" %
          (len(panels), len(queried), len(series), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
