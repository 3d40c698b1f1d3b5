#!/usr/bin/env bash
# Informational: memcg-exporter against the collector users would otherwise
# pick, Debian's netdata (its cgroups plugin), on the same real-kernel tree in
# the stage-2 guest (Debian bookworm, systemd as PID 1). Prints NETDATA lines:
# CPU per collection pass per cgroup of each, measured one after the other.
# Status: netdata 1.37 (netdata-core + netdata-plugins-bash) starts, its
# cgroups plugin detects the unified hierarchy, but it charted none of the
# ~1,000 cgroups (nor systemd's services) within two minutes in this guest,
# so there is no ratio yet; the memcg-exporter half works.
# Usage: tests/vm/run-netdata.sh BUILD_DIR   (1000 cgroups; netdata-compare.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export STAGE2_EXTRA=netdata-core,netdata-plugins-bash STAGE2_TEST="$here/netdata-compare.sh"
exec "$here/run-stage2.sh" "$1"
