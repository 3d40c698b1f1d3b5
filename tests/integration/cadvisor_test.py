#!/usr/bin/env python3
"""The cadvisor profile drop-in for the kubelet's /metrics/cadvisor: a real
Prometheus scrapes the exporter (profile = "cadvisor") as job "cadvisor",
with a kube-state-metrics stand-in serving kube_pod_info and the memory
requests, runs kubernetes-mixin's memory recording rules
(tests/kubernetes/kubernetes-mixin-memory.rules.yml) and the memory queries
of its dashboards, verbatim from kubernetes-mixin with its default selectors,
and checks each returns the right containers with the right values: the
working set equals memory.current - inactive_file read from the files. The
```promql blocks of docs/kubernetes.md run here too."""
import argparse, os, subprocess
from harness import (Tree, Exporter, KubeStateMetrics, write_config, run_tests, run_hook, documented_queries, K8S_CONTAINER,
                     K8S_CONTAINER_ID, K8S_POD_SLICE, K8S_POD_UID, K8S_MEMORY_REQUEST)
from prometheus import Prometheus

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--hook", required=True)
ap.add_argument("--prometheus", default="prometheus")
ap.add_argument("--promtool", default="promtool")
ap.add_argument("--source", required=True)
args = ap.parse_args()
SOURCE = os.path.abspath(args.source)
RULES = os.path.join(SOURCE, "tests/kubernetes/kubernetes-mixin-memory.rules.yml")
# The memory queries of kubernetes-mixin's dashboards (dashboards/resources/
# namespace.libsonnet and resources/queries), with $cluster = "" and
# $namespace = "shop": (title, query, the labels each result must carry).
DASHBOARD = [
    ("namespace: memory usage by pod",
     'sum(container_memory_working_set_bytes{job="cadvisor", cluster="", namespace="shop", container!="", image!=""}) by (pod)',
     {"pod": "web-0"}),
    ("namespace: memory utilisation (from requests)",
     'sum(container_memory_working_set_bytes{job="cadvisor", cluster="",namespace="shop",container!="", image!=""}) / '
     'sum(kube_pod_container_resource_requests{job="kube-state-metrics", cluster="", namespace="shop", resource="memory"})',
     {}),
    ("node: memory working set by pod",
     'sum(max by (cluster, namespace, pod, container)(container_memory_working_set_bytes{job="cadvisor", cluster="", '
     'node=~"node-1",container!="", image!=""})) by (pod)',
     {"pod": "web-0"}),
]


def scrape_configs(exporter_port, ksm):
    # The exporter as kube-prometheus scrapes the kubelet's cAdvisor
    # endpoint: job "cadvisor", the node and metrics_path as target labels.
    return (f"  - job_name: cadvisor\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
            f"        labels: {{node: node-1, metrics_path: /metrics/cadvisor}}\n" + ksm.scrape_config())


def test_kubernetes_mixin_memory_rules_and_dashboards_on_the_cadvisor_profile():
    tree = Tree(args.fixture, "containers")
    records = os.path.join(os.path.dirname(tree.root), "records")
    os.mkdir(records)
    run_hook(args.hook, "createRuntime", K8S_CONTAINER_ID,
             {"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "shop",
              "io.kubernetes.pod.uid": K8S_POD_UID, "io.kubernetes.cri.image-name": "docker.io/library/nginx:1.25"}, records)
    cfg = write_config(f'[collector]\nprobe_interval = "250ms"\n[metrics]\nprofile = "cadvisor"\n'
                       f'[containers]\nrecords_dir = "{records}"\n')
    want_ws = tree.current(K8S_CONTAINER) - tree.keyed(K8S_CONTAINER, "memory.stat", "inactive_file")
    with KubeStateMetrics() as ksm, Exporter(args.exporter, tree.root, cfg) as ex, \
         Prometheus(args.prometheus, [], rule_files=[RULES], extra_yaml=scrape_configs(ex.port, ksm)) as prom:
        # The exposition passes promtool's lint (names, types, HELP).
        body = ex.get("/metrics")[2]
        lint = subprocess.run([args.promtool, "check", "metrics"], input=body, capture_output=True)
        assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()
        prom.wait_value('count(up == 1)', lambda v: v == 2, "both targets up")
        # The recording rule: one series for the container, with the node joined in.
        sel = '{namespace="shop", pod="web-0", container="web", node="node-1"}'
        got = prom.wait_value("node_namespace_pod_container:container_memory_working_set_bytes" + sel, lambda v: True,
                              "the mixin's working-set rule")
        assert got == want_ws, (got, want_ws)
        for name, key in (("rss", "anon"), ("cache", "file")):
            v = prom.wait_value(f"node_namespace_pod_container:container_memory_{name}" + sel, lambda v: True, name)
            assert v == tree.keyed(K8S_CONTAINER, "memory.stat", key), (name, v)
        assert prom.wait_value("node_namespace_pod_container:container_memory_swap" + sel, lambda v: True, "swap") == 0
        # Only containers with an image are recorded: not the pod's own cgroup, not slices.
        rows = prom.query("node_namespace_pod_container:container_memory_working_set_bytes")
        assert [r["metric"].get("container") for r in rows] == ["web"], rows
        for title, q, labels in DASHBOARD:
            res = prom.query(q)
            assert len(res) == 1, (title, q, res)
            assert all(res[0]["metric"].get(k) == v for k, v in labels.items()), (title, res)
            value = float(res[0]["value"][1])
            want = want_ws / K8S_MEMORY_REQUEST if "requests" in title else want_ws
            assert abs(value - want) < 1e-9 * max(1, want), (title, value, want)
        # The pod's own cgroup: named after its pod, no container, no image.
        pod_path = "/kubepods.slice/kubepods-burstable.slice/" + K8S_POD_SLICE
        pod = prom.query(f'container_memory_usage_bytes{{id="{pod_path}"}}')
        assert len(pod) == 1 and pod[0]["metric"].get("pod") == "web-0" and "container" not in pod[0]["metric"], pod
        # docs/kubernetes.md's queries return data.
        for page, expr in documented_queries(SOURCE, lambda page, section: section == "The cadvisor profile"):
            assert prom.query(expr), (page, expr)
        print(f"  kubernetes-mixin: 4 recording rules, {len(DASHBOARD)} dashboard queries; working set {want_ws} B as read")


run_tests(globals())
