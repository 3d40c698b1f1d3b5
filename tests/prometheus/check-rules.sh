#!/usr/bin/env bash
# promtool over the shipped Prometheus files: rules and scrape configs check
# clean, and the rules' unit tests pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prom="$here/../../packaging/prometheus"
promtool=${PROMTOOL:-promtool}
"$promtool" check rules "$prom/memcg-exporter.rules.yml" "$prom/memcg-exporter-kube-state-metrics.rules.yml"
"$promtool" test rules "$here/rules_test.yml" "$here/kube_state_metrics_test.yml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$prom"/. "$work/"
for c in scrape-static.yml scrape-file-sd.yml; do (cd "$work" && "$promtool" check config "$c"); done
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert all(x['targets'] for x in t)" "$prom/targets/memcg-example.json"
# Debian's Prometheus is built without Kubernetes service discovery, so its
# promtool cannot load scrape-kubernetes.yml: check instead that its keep rule
# selects the DaemonSet's pods on their metrics port.
python3 - "$prom/scrape-kubernetes.yml" "$here/../../packaging/kubernetes/memcg-exporter.yaml" <<'PY'
import re, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))["scrape_configs"][0]
assert job["kubernetes_sd_configs"] == [{"role": "pod"}], job
ds = next(d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]
name = pod["metadata"]["labels"]["app.kubernetes.io/name"]
ports = [p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])]
keep = next(r for r in job["relabel_configs"] if r.get("action") == "keep")
assert re.fullmatch(keep["regex"], f"{name};{ports[0]}"), (keep, name, ports)
assert not re.fullmatch(keep["regex"], f"other;{ports[0]}")
assert any(r.get("target_label") == "instance" for r in job["relabel_configs"])
PY
