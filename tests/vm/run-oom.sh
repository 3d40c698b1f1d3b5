#!/usr/bin/env bash
# The OOM story end to end on a real kernel: the guest (tests/vm/oom-init.sh,
# busybox, cgroup v2) runs memcg-exporter at probe_interval 10s with a page
# cache workload held at its memory.max, an anonymous leak growing into its
# memory.max, and a cgroup OOM-killed and removed as soon as the kernel
# allows; a real Prometheus on the host scrapes it through QEMU's
# forwarded loopback port, evaluates the shipped rules, and
# tests/vm/oom_e2e.py checks what fired and when (docs/oom.md#measured has
# its figures).
# Usage: tests/vm/run-oom.sh BUILD_DIR      (exit 0 = pass)
# MEMCG_VM_KERNEL=6.12 boots Debian 13's kernel (tests/vm/lib.sh);
# OOM_CACHE_HOLD (seconds, default 240) how long the page cache is held at its
# limit without a headroom alert.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
. "$here/lib.sh"

vm_packages qemu-system-x86 busybox-static e2fsprogs prometheus kmod
kernel=$(vm_kernel)
work=$(mktemp -d /tmp/memcg-vmoom.XXXXXX)
qemu_pid=
cleanup() {
  [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ir="$work/ir"
vm_initramfs_root "$ir"
vm_copy_with_libs "$build/exporter/memcg-exporter" "$ir" bin
install -m755 "$build/tests/memcg-vmload" "$build/tests/memcg-vmoom" "$ir/bin/"
install -m755 "$here/oom-init.sh" "$ir/init"
vm_net_modules "$kernel" "$ir/lib/modules"
vm_pack_initramfs "$ir" "$work/initramfs.gz"
truncate -s 1G "$work/disk.img"
mkfs.ext4 -q -F "$work/disk.img"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
vm_log "booting $(basename "$kernel") with the OOM initramfs; the exporter on 127.0.0.1:$port"
guest() {
  "${VM_QEMU[@]}" -kernel "$kernel" -initrd "$work/initramfs.gz" \
    -drive file="$work/disk.img",if=none,id=d0,format=raw,cache=unsafe -device nvme,drive=d0,serial=disk0 \
    -netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:9756" -device virtio-net-pci,netdev=n0 \
    -append "$VM_CLOCK console=ttyS0 panic=-1 quiet loglevel=2" </dev/null > "$work/serial.log" 2>&1 &
  qemu_pid=$!
  python3 "$here/oom_e2e.py" --serial "$work/serial.log" --port "$port" --cache-hold "${OOM_CACHE_HOLD:-240}" \
    --rules "$here/../../packaging/prometheus/memcg-exporter.rules.yml" --qemu-pid "$qemu_pid"
}
vm_boot "$work/serial.log" guest
