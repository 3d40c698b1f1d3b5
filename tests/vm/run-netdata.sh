#!/usr/bin/env bash
# memcg-exporter side by side with the collector users would otherwise pick,
# Debian's netdata 1.37 reduced to its cgroups plugin, in one boot of the
# stage-2 guest (Debian bookworm, systemd as PID 1, kernel 6.1) over the same
# ~1,000 cgroups (leaves with a process, 8 busy), each alone in its window,
# and the bare memory.current loop over the same cgroups. Prints NETDATA
# lines: CPU per cgroup per second of each whole daemon (memcg-exporter's
# decomposed by memcg-cost), the ratios, and what each collects.
# Informational (asserts only that both collected).
# Usage: tests/vm/run-netdata.sh BUILD_DIR     (netdata-compare.sh runs inside)
# NETDATA_UNSANDBOXED=1 adds a memcg-exporter window without the unit's
# seccomp filters (what the hardening costs per system call).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
export STAGE2_EXTRA=netdata-core STAGE2_TEST="$here/netdata-compare.sh"
export STAGE2_BINS="$build/tests/memcg-cost $build/tests/memcg-vmload" STAGE2_TIMEOUT=3000
export STAGE2_ENV="NETDATA_UNSANDBOXED='${NETDATA_UNSANDBOXED:-0}'"
exec "$here/run-stage2.sh" "$build"
