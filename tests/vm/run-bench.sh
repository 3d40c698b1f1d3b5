#!/usr/bin/env bash
# The large-tree benchmark inside a real kernel (QEMU, software emulation),
# where the guest's root may raise RLIMIT_NOFILE as far as three collectors
# over N cgroups need (37 fds per cgroup: 12 each and the bare loop's):
# memcg-bench over N synthetic cgroups on tmpfs (all busy scenarios), then
# over N real, idle cgroups (read only).
# Informational: prints the tables, asserts nothing but that both runs finish.
# Usage: tests/vm/run-bench.sh BUILD_DIR [N=10000] [TICKS=40]
#        SYNTHETIC=0 skips the tmpfs tree (the real cgroups and the daemon only)
#        SCRAPE_ONLY=1 only measures one scrape per profile (memcg-bench --scrape-only)
#        COST=1: the whole daemon over N real cgroups for TICKS seconds, at the
#        default configuration and then at max_age 30 s, each decomposed by
#        memcg-cost next to the bare memory.current loop
#        PREMISE=1: the premise on this kernel at 1,000 and N cgroups, 8 busy:
#        memory.stat vs memory.current read CPU (quiet, busy) with the
#        kernel's memcg flushes counted by a kprobe (memcg-premise), and the
#        whole daemon at its defaults vs the naive one (threshold 0), each by
#        memcg-cost; MEMCG_VM_KERNEL=6.12 for Debian 13's kernel
#        COST=1 BASELINE=EXE: instead, EXE (an earlier build's memcg-exporter)
#        and this build alternately at the default configuration, two
#        windows each, in one boot (a before/after of a change)
#        MICRO=1: memcg-microbench inside the guest, where every instruction
#        of the daemon's own code pays the emulator's price (MICRO_FILTER, by
#        default the bare loop, a pass of still cgroups and a pass at the
#        defaults, over 1,000 fixture cgroups on tmpfs), TICKS seconds each;
#        MICRO_BASELINE=EXE (an earlier build's memcg-microbench) runs
#        alternately with this build's, twice each, in one boot
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
n=${2:-10000}
ticks=${3:-40}
. "$here/lib.sh"

vm_packages qemu-system-x86 busybox-static
kernel=$(vm_kernel)
work=$(mktemp -d /tmp/memcg-vmb.XXXXXX)
trap 'rm -rf "$work"' EXIT

ir="$work/ir"
vm_initramfs_root "$ir"
vm_copy_with_libs "$build/tests/memcg-bench" "$ir" bin
vm_copy_with_libs "$build/exporter/memcg-exporter" "$ir" bin
install -m755 "$build/tests/memcg-vmload" "$build/tests/memcg-cost" "$build/tests/memcg-premise" "$ir/bin/"
install -m755 "$here/bench-init.sh" "$ir/init"
if [ "${MICRO:-0}" = 1 ]; then
  vm_copy_with_libs "$build/tests/memcg-microbench" "$ir" bin
  if [ -n "${MICRO_BASELINE:-}" ]; then
    install -m755 "$MICRO_BASELINE" "$work/memcg-microbench-baseline"
    vm_copy_with_libs "$work/memcg-microbench-baseline" "$ir" bin
  fi
fi
if [ -n "${BASELINE:-}" ]; then  # under its own name: it may be called memcg-exporter too
  install -m755 "$BASELINE" "$work/memcg-exporter-baseline"
  vm_copy_with_libs "$work/memcg-exporter-baseline" "$ir" bin
fi
# The synthetic tree's real memory.stat bodies, where the binary looks for them.
fixtures="$here/../fixtures/kernel-6.1"
mkdir -p "$ir$(cd "$fixtures" && pwd)"
cp -r "$fixtures/." "$ir$(cd "$fixtures" && pwd)/"
vm_pack_initramfs "$ir" "$work/initramfs.gz"

vm_log "booting $(basename "$kernel"): memcg-bench over $n cgroups, $ticks ticks"
# 6 GiB: the tmpfs tree, N real memcgs and two collectors' state.
boot() {
  timeout 3600 "${VM_QEMU[@]}" -m 6144 -kernel "$kernel" -initrd "$work/initramfs.gz" \
    -append "$VM_CLOCK console=ttyS0 panic=-1 quiet loglevel=2 memcg_bench_n=$n memcg_bench_ticks=$ticks memcg_bench_synthetic=${SYNTHETIC:-1} memcg_bench_scrape=${SCRAPE_ONLY:-0} memcg_bench_cost=${COST:-0} memcg_bench_baseline=$([ -n "${BASELINE:-}" ] && echo 1 || echo 0) memcg_bench_premise=${PREMISE:-0} memcg_bench_micro=${MICRO:-0} memcg_bench_micro_filter=${MICRO_FILTER:-BM_BareLoop|BM_QuietPassPolled/1000|BM_DefaultPassPolled}" </dev/null > "$work/serial.log" 2>&1
}
rc=0
vm_boot "$work/serial.log" boot || rc=$?
grep -aE '^(VMBENCH|memcg-bench|\|)' "$work/serial.log" || true
[ "${PREMISE:-0}" = 1 ] && grep -a '^VMBENCH' "$work/serial.log" | tr -d '\r' | python3 "$here/premise_table.py"
if [ "$rc" != 1 ]; then
  vm_log "benchmark VM FAILED (qemu exit $rc); serial log:"
  tail -n 40 "$work/serial.log"
  exit 1
fi
