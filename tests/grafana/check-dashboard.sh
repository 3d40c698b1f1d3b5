#!/usr/bin/env bash
# Checks the shipped Grafana dashboard:
#  1. the fields Grafana requires (check_dashboard.py), and
#  2. Grafana's own dashboard types: `tsc` type-checks the JSON against
#     `Dashboard` from the npm package @grafana/schema, so a field Grafana would
#     reject (a wrong type, a misspelled enum) fails.
# The npm packages go into WORK_DIR (default: a folder in the build dir), never the repo.
# Usage: tests/grafana/check-dashboard.sh WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dash="$here/../../packaging/grafana/memcg-exporter.json"
work=$1
python3 "$here/check_dashboard.py" "$dash"

mkdir -p "$work"
cd "$work"
if [ ! -x node_modules/.bin/tsc ] || [ ! -d node_modules/@grafana/schema ]; then
  [ -f package.json ] || echo '{"private": true}' > package.json
  npm install --no-audit --no-fund --loglevel=error @grafana/schema typescript >/dev/null
fi
# The JSON goes in as an object literal, not an imported .json module: an
# import widens every string to `string`, which no literal union in the schema
# (VariableType, panel types, ...) accepts, while a literal assigned to a
# `Dashboard` is checked field by field, misspelled extra fields included.
{
  echo "import type { Dashboard } from '@grafana/schema';"
  printf 'const d: Dashboard = '
  cat "$dash"
  echo ";"
  echo "export default d;"
} > check.ts
cat > tsconfig.json <<'JSON'
{"compilerOptions": {"strict": true, "moduleResolution": "bundler",
  "module": "esnext", "target": "es2020", "noEmit": true, "skipLibCheck": true},
 "files": ["check.ts"]}
JSON
node_modules/.bin/tsc -p tsconfig.json
echo "dashboard type-checks against @grafana/schema $(node -p 'require("@grafana/schema/package.json").version')"
