#!/usr/bin/env bash
# Stage 1: a real Linux kernel (Debian's cloud kernel under QEMU, software
# emulation) boots an initramfs with the project's binaries and runs
# memcg-vmcheck against memcg-exporter on a live cgroup v2 tree.
# Usage: tests/vm/run-stage1.sh BUILD_DIR      (exit 0 = pass)
# SOAK_SECONDS (default 60) sets the churn soak's length, e.g. 3600 for an hour;
# SOAK_MIN_RATE (default 40) the cgroup creations and removals per planned
# second it must reach (it runs on, up to 3x its length, until it has).
# MEMCG_VM_KERNEL=6.12 boots Debian 13's kernel instead of 6.1 (tests/vm/lib.sh);
# FIXTURES_OUT=DIR writes the guest kernel's memory.* files of a parent, a
# busy, an OOM-killed and a throttled cgroup and the root into DIR (the
# layout of tests/fixtures/kernel-6.1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
. "$here/lib.sh"

vm_packages qemu-system-x86 busybox-static
kernel=$(vm_kernel)
work=$(mktemp -d /tmp/memcg-vm1.XXXXXX)
trap 'rm -rf "$work"' EXIT

ir="$work/ir"
vm_initramfs_root "$ir"
vm_copy_with_libs "$build/exporter/memcg-exporter" "$ir" bin
vm_copy_with_libs "$build/oci_hook/memcg-exporter-oci-hook" "$ir" bin
install -m755 "$build/tests/memcg-vmload" "$build/tests/memcg-vmcheck" "$build/tests/memcg-vmsoak" "$ir/bin/"
vm_copy_with_libs "$build/tests/memcg-bench" "$ir" bin
install -m755 "$here/stage1-init.sh" "$ir/init"
vm_pack_initramfs "$ir" "$work/initramfs.gz"

vm_log "booting $(basename "$kernel") with the stage-1 initramfs"
boot() {
  timeout $((600 + 3 * ${SOAK_SECONDS:-60})) "${VM_QEMU[@]}" -kernel "$kernel" -initrd "$work/initramfs.gz" \
    -append "$VM_CLOCK console=ttyS0 panic=-1 quiet loglevel=2 memcg_soak_seconds=${SOAK_SECONDS:-60} memcg_soak_min_rate=${SOAK_MIN_RATE:-40} memcg_fixtures=$([ -n "${FIXTURES_OUT:-}" ] && echo 1 || echo 0)" </dev/null > "$work/serial.log" 2>&1
}
rc=0
vm_boot "$work/serial.log" boot || rc=$?
grep -aE '^(VMSTAGE1|CHECK|VMCOST|VMBENCH|VMCHECK|SOAK|age violation|age context|current mismatch|stat out of bound|held-to-account|log:)' "$work/serial.log" || true
if [ -n "${FIXTURES_OUT:-}" ]; then
  grep -a '^FIXTURE ' "$work/serial.log" | tr -d '\r' | while read -r _ name data; do
    mkdir -p "$FIXTURES_OUT/$(dirname "$name")"
    echo "$data" | base64 -d > "$FIXTURES_OUT/$name"
  done
  vm_log "kernel files written to $FIXTURES_OUT"
fi
# isa-debug-exit: guest writes v, QEMU exits (v << 1) | 1; 1 = verdict 0.
if [ "$rc" != 1 ]; then
  vm_log "stage 1 FAILED (qemu exit $rc); serial log:"
  tail -n 60 "$work/serial.log"
  exit 1
fi
vm_log "stage 1 passed"
