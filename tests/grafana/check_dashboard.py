#!/usr/bin/env python3
"""The fields Grafana needs to import a dashboard: uid, title, schemaVersion,
the datasource variable, unique panel ids, valid grid positions, a datasource
and a query on every panel."""
import json, sys

d = json.load(open(sys.argv[1]))
errors = []
def need(cond, msg):
    if not cond:
        errors.append(msg)

need(isinstance(d.get("uid"), str) and 0 < len(d["uid"]) <= 40, "uid must be a string of 1-40 chars")
need(isinstance(d.get("title"), str) and d["title"], "title missing")
need(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= 36, "schemaVersion must be >= 36")
variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
need(variables.get("datasource", {}).get("type") == "datasource", "a ${datasource} variable of type datasource")
for name in ("instance", "cgroup", "container"):
    need(name in variables, f"variable ${name} missing")
ids = set()
for p in d.get("panels", []):
    pid = p.get("id")
    need(isinstance(pid, int) and pid not in ids, f"panel id {pid!r} missing or duplicate")
    ids.add(pid)
    g = p.get("gridPos", {})
    need(all(isinstance(g.get(k), int) for k in "hwxy"), f"panel {pid}: gridPos needs integer h, w, x, y")
    need(0 <= g.get("x", -1) and g.get("x", 0) + g.get("w", 0) <= 24 and g.get("w", 0) > 0 and g.get("h", 0) > 0,
         f"panel {pid}: gridPos outside the 24-column grid")
    if p.get("type") == "row":
        continue
    need(p.get("datasource", {}).get("uid") == "${datasource}", f"panel {pid}: datasource must be ${{datasource}}")
    targets = p.get("targets", [])
    need(targets and all(t.get("expr") and t.get("refId") for t in targets), f"panel {pid}: every target needs expr and refId")
if errors:
    print("\n".join("dashboard: " + e for e in errors))
    sys.exit(1)
print(f"dashboard: {len(ids)} panels, structure ok")
