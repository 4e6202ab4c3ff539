#!/usr/bin/env python3
"""Check packaging/grafana-dashboard.json and grafana-fleet-dashboard.json: their structure, and their queries
against a live Prometheus.

  dashcheck.py DASHBOARD                       the structure: importable, a Prometheus datasource variable every
                                               query uses, an instance or pool variable, unique panel ids, panels
                                               inside the 24-column grid
  dashcheck.py DASHBOARD --prometheus URL [--may-be-empty TEXT]...
                                               and every query, with the dashboard's variables filled in, run by
                                               that Prometheus: it must parse and, unless its expression contains
                                               one of the TEXTs, return data

Exit 0 when all holds, 1 with one line per problem. Standard library only.
"""
import json
import sys
import urllib.parse
import urllib.request

VARS = {"$instance": ".*", "$pool": ".*", "$__rate_interval": "10s", "$__range": "1m"}


def structure(d):
    problems = []
    for key in ("title", "uid", "panels", "templating", "schemaVersion"):
        if key not in d:
            problems.append("no %s" % key)
    if any(i.get("type") != "datasource" for i in d.get("__inputs", [])):
        problems.append("__inputs: only datasources expected")
    tv = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = tv.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no datasource variable of type prometheus")
    if "instance" not in tv and "pool" not in tv:
        problems.append("no instance or pool variable")
    ids = set()
    queries = []
    for p in d.get("panels", []):
        pid = p.get("id")
        if pid in ids:
            problems.append("panel id %s repeated" % pid)
        ids.add(pid)
        g = p.get("gridPos", {})
        if not all(k in g for k in "hwxy") or g["x"] < 0 or g["x"] + g["w"] > 24:
            problems.append("panel %s (%s): gridPos %s" % (pid, p.get("title"), g))
        targets = p.get("targets", [])
        if p.get("type") != "row" and not targets:
            problems.append("panel %s (%s): no query" % (pid, p.get("title")))
        refs = set()
        for t in targets:
            if (p.get("datasource") or {}).get("uid") != "${datasource}" or \
                    (t.get("datasource") or {}).get("uid") != "${datasource}":
                problems.append("panel %s (%s): not on the datasource variable" % (pid, p.get("title")))
            if t.get("refId") in refs or not t.get("expr"):
                problems.append("panel %s (%s): a target without expr or with a repeated refId" % (pid, p.get("title")))
            refs.add(t.get("refId"))
            queries.append((p.get("title"), t.get("expr", "")))
    return problems, queries


def fill(expr):
    for k, v in VARS.items():
        expr = expr.replace(k, v)
    return expr


def run_queries(base, queries, may_be_empty):
    problems = []
    for title, expr in queries:
        q = fill(expr)
        url = base.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                res = json.load(r)
        except urllib.error.HTTPError as e:
            problems.append("%s: %s: HTTP %d %s" % (title, q, e.code, e.read().decode(errors="replace")[:200]))
            continue
        except OSError as e:
            problems.append("%s: %s: %s" % (title, q, e))
            continue
        if res.get("status") != "success":
            problems.append("%s: %s: %s" % (title, q, res.get("error")))
        elif not res["data"]["result"] and not any(s in expr for s in may_be_empty):
            problems.append("%s: %s: no data" % (title, q))
        else:
            print("ok %-38s %d series  %s" % (title[:38], len(res["data"]["result"]), q[:90]))
    return problems


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    path, rest = argv[0], argv[1:]
    prom, empty = None, []
    while rest:
        if rest[0] == "--prometheus" and len(rest) > 1:
            prom = rest[1]
        elif rest[0] == "--may-be-empty" and len(rest) > 1:
            empty.append(rest[1])
        else:
            print("dashcheck: bad argument %s" % rest[0], file=sys.stderr)
            return 2
        rest = rest[2:]
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print("dashcheck: %s: %s" % (path, e))
        return 1
    problems, queries = structure(d)
    if prom and not problems:
        problems += run_queries(prom, queries, empty)
    for p in problems:
        print("dashcheck: %s" % p)
    if problems:
        return 1
    print("dashcheck: %d panels, %d queries%s" % (len(d["panels"]), len(queries),
                                                  ", all answered by " + prom if prom else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
