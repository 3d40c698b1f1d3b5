#!/usr/bin/env bash
# memcg-exporter side by side with the collector users would otherwise pick,
# Debian's netdata 1.37 reduced to its cgroups plugin, in one boot of the
# stage-2 guest (Debian bookworm, systemd as PID 1, kernel 6.1) over the same
# ~1,000 cgroups (leaves with a process, 8 busy), each alone in its window,
# the bare memory.current loop and a cAdvisor-style reader (the memory part
# of runc's GetStats, every cgroup every second) over the same cgroups.
# Prints NETDATA lines: CPU per cgroup per second of each (memcg-exporter's
# decomposed by memcg-cost), the ratios, and what each collects.
# Informational (asserts only that both collected).
# Usage: tests/vm/run-netdata.sh BUILD_DIR     (netdata-compare.sh runs inside)
# NETDATA_UNSANDBOXED=1 adds a memcg-exporter window without the unit's
# seccomp filters (what the hardening costs per system call).
# NETDATA_BASELINE=PATH adds a window of another memcg-exporter binary (an
# earlier build's exporter/memcg-exporter) under the same unit in the same
# boot, between two windows of this build: a change judged side by side,
# not across boots (±15 % here), and the drift within the boot shown.
# NETDATA_SECONDS=S (default 180) is each window's length: whole periods of
# the daemon's periodic work at its defaults (netdata-compare.sh says which).
# NETDATA_WINDOWS=N (default 1) measures this build in N windows of the
# boot, each against the bare loop beside it and the one after it, and
# prints the median of each ratio.
# NETDATA_ALTERNATE=1, with NETDATA_BASELINE: N pairs of windows instead,
# this build and the baseline as neighbours, in turn first and second
# (this-baseline, baseline-this, ...), with each pair's ratio of the two
# and their median: windows of one boot drift (the later ones faster in
# most boots), which a fixed order would credit to one build.
# NETDATA_NO_ASLR=1 starts every exporter window with address-space layout
# randomisation off in the guest (kernel.randomize_va_space=0): each window's
# process then has the same layout, to tell whether the spread between
# windows of one build follows the layout.
# NETDATA_LAYOUT=1 adds memcg-open-layout over the tree (each cgroup's
# memory.current read through files opened in one sweep or a cgroup at a
# time), with no exporter running.
# NETDATA_PROFILE=1 adds linux-perf to the guest and prints where the
# exporter's CPU goes (this build's binary with its symbol table, sampled
# after the measured windows, so the sampling costs none of them), and the
# collector thread's kernel call chains.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
extra=netdata-core bins="$build/tests/memcg-cost $build/tests/memcg-cadvisor-style $build/tests/memcg-vmload $build/tests/memcg-open-layout"
links=$(mktemp -d /tmp/memcg-netdata-bins.XXXXXX)
trap 'rm -rf "$links"' EXIT
if [ -n "${NETDATA_BASELINE:-}" ]; then  # installed under the name the guest looks for
  ln -s "$(cd "$(dirname "$NETDATA_BASELINE")" && pwd)/$(basename "$NETDATA_BASELINE")" "$links/memcg-exporter-baseline"
  bins="$bins $links/memcg-exporter-baseline"
fi
if [ "${NETDATA_PROFILE:-0}" = 1 ]; then
  objcopy --strip-debug "$build/exporter/memcg-exporter" "$links/memcg-exporter-symbols"  # the symbol table, no DWARF
  extra="$extra,linux-perf" bins="$bins $links/memcg-exporter-symbols"
  export STAGE2_IMAGE_SIZE=2G
fi
# The boot, netdata's and the cAdvisor-style reader's windows, then each
# exporter window: its settling, its window and the bare one after it.
secs=${NETDATA_SECONDS:-180} windows=${NETDATA_WINDOWS:-1}
[ -n "${NETDATA_BASELINE:-}" ] && windows=$((windows * 2))
[ "${NETDATA_UNSANDBOXED:-0}" = 1 ] && windows=$((windows + 1))
export STAGE2_EXTRA=$extra STAGE2_TEST="$here/netdata-compare.sh" STAGE2_BINS=$bins
export STAGE2_TIMEOUT=$((1500 + 3 * secs + windows * (2 * secs + 150)))
export STAGE2_ENV="NETDATA_UNSANDBOXED='${NETDATA_UNSANDBOXED:-0}' NETDATA_BASELINE='${NETDATA_BASELINE:+1}' NETDATA_ALTERNATE='${NETDATA_ALTERNATE:-0}' NETDATA_PROFILE='${NETDATA_PROFILE:-0}' NETDATA_WINDOWS='${NETDATA_WINDOWS:-1}' NETDATA_NO_ASLR='${NETDATA_NO_ASLR:-0}' NETDATA_LAYOUT='${NETDATA_LAYOUT:-0}' NETDATA_SECONDS='${NETDATA_SECONDS:-180}'"
"$here/run-stage2.sh" "$build"
