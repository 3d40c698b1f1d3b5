#!/usr/bin/env bash
# promtool over the shipped Prometheus files: rules and scrape configs check
# clean, and the rules' unit tests pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prom="$here/../../packaging/prometheus"
promtool=${PROMTOOL:-promtool}
"$promtool" check rules "$prom/memcg-exporter.rules.yml"
"$promtool" test rules "$here/rules_test.yml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$prom"/. "$work/"
for c in scrape-static.yml scrape-file-sd.yml; do (cd "$work" && "$promtool" check config "$c"); done
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert all(x['targets'] for x in t)" "$prom/targets/memcg-example.json"
