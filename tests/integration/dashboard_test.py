#!/usr/bin/env python3
"""Every PromQL expression of the shipped Grafana dashboard, with its variables
substituted, and every ```promql block of README.md and docs/ must evaluate
without error and return data against a real Prometheus that scrapes the
exporter (over a changing fixture tree with a named container and a service)
and loads the shipped recording and alerting rules."""
import argparse, glob, json, os, re, shutil, subprocess, tempfile, time
from harness import Tree, Exporter, KubeStateMetrics, write_config, run_tests, run_hook, documented_queries, K8S_CONTAINER, K8S_CONTAINER_ID
from prometheus import Prometheus

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--hook", required=True)
ap.add_argument("--prometheus", default="prometheus")
ap.add_argument("--source", required=True)
args = ap.parse_args()

DASHBOARD = os.path.join(os.path.abspath(args.source), "packaging/grafana/memcg-exporter.json")
RULES = os.path.join(os.path.abspath(args.source), "packaging/prometheus/memcg-exporter.rules.yml")
KSM_RULES = os.path.join(os.path.abspath(args.source), "packaging/prometheus/memcg-exporter-kube-state-metrics.rules.yml")
K8S = K8S_CONTAINER

def substitute(expr):
    expr = expr.replace("$__rate_interval", "10s")
    return re.sub(r"\$(instance|cgroup|container|namespace)\b", ".*", expr)

def expressions():
    d = json.load(open(DASHBOARD))
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    for v in d["templating"]["list"]:
        m = re.match(r"label_values\((.*), *(\w+)\)$", v.get("query", {}).get("query", "") if isinstance(v.get("query"), dict) else "")
        if m:
            out.append(("variable $" + v["name"], m.group(1)))
    return out

def test_every_dashboard_query_returns_data():
    tree = Tree(args.fixture, "containers")
    # A systemd service beside the containers, as on every host.
    shutil.copytree(tree.path("system.slice/docker-" + "a" * 64 + ".scope", ""), tree.path("system.slice/nginx.service", ""))
    records = tempfile.mkdtemp(prefix="memcg-records-")
    run_hook(args.hook, "createRuntime", K8S_CONTAINER_ID, {"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": "web-0",
                               "io.kubernetes.pod.namespace": "shop"}, records)
    cfg = write_config(f'[collector]\nprobe_interval = "250ms"\n[defaults]\nmax_age = "2s"\nthreshold = "64KiB"\n'
                       f'[containers]\nrecords_dir = "{records}"\n')
    # kube-state-metrics (a stand-in) names the Kubernetes container for the
    # kube-state-metrics recording rules.
    with KubeStateMetrics() as ksm, Exporter(args.exporter, tree.root, cfg) as ex, \
         Prometheus(args.prometheus, [f"127.0.0.1:{ex.port}"], rule_files=[RULES, KSM_RULES], extra_yaml=ksm.scrape_config()) as prom:
        # Let it change: growth, faults, reclaim, an OOM kill, pressure.
        for i in range(14):
            tree.set_current(K8S, tree.current(K8S) + (256 << 10))
            tree.set_keyed(K8S, "memory.stat", "anon", tree.keyed(K8S, "memory.stat", "anon") + (256 << 10))
            for key, step in (("pgfault", 50), ("pgmajfault", 2), ("pgscan", 10), ("pgsteal", 8),
                              ("workingset_refault_file", 3), ("workingset_refault_anon", 1)):
                tree.set_keyed(K8S, "memory.stat", key, tree.keyed(K8S, "memory.stat", key) + step)
            if i == 6:
                # The kernel counts a kill in the victim's cgroup and in each ancestor.
                parts = K8S.split("/")
                for depth in range(1, len(parts) + 1):
                    tree.set_keyed("/".join(parts[:depth]), "memory.events", "oom_kill", 1)
            tree.write(K8S, "memory.pressure", f"some avg10=1.00 avg60=0.50 avg300=0.10 total={i * 200000}\n"
                                                f"full avg10=0.50 avg60=0.20 avg300=0.05 total={i * 100000}\n")
            time.sleep(1)
        prom.wait_value('count(up{job="memcg"} == 1)', lambda v: v == 1, "target up")
        failed = []
        # The cadvisor profile's queries: cadvisor_test.py runs them on that profile.
        documented = documented_queries(os.path.abspath(args.source), lambda page, section: section != "The cadvisor profile")
        queries = expressions() + documented
        for title, expr in queries:
            q = substitute(expr)
            # Recording rules over recording rules fill in one evaluation
            # after another: a query without data is asked again, for a while.
            deadline = time.time() + 15
            try:
                while not (res := prom.query(q)) and time.time() < deadline:
                    time.sleep(0.5)
            except Exception as e:
                failed.append(f"{title}: error: {e}")
                continue
            if not res:
                failed.append(f"{title}: no data: {q}")
        assert not failed, "\n".join(failed)
        print(f"  {len(expressions())} dashboard expressions and {len(documented)} documented queries returned data")
        # The shipped rules load and evaluate.
        with __import__("urllib.request").request.urlopen(f"http://127.0.0.1:{prom.port}/api/v1/rules") as r:
            groups = json.load(r)["data"]["groups"]
        bad = [(g["name"], rule["name"], rule.get("lastError")) for g in groups for rule in g["rules"] if rule.get("health") != "ok"]
        assert len(groups) == 5 and not bad, bad
        assert prom.value(f'memcg:working_set_bytes{{cgroup="{K8S}"}}') > 0
        assert prom.query("memcg:stat_skip_ratio:rate5m")

run_tests(globals())
