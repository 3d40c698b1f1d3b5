#!/usr/bin/env bash
# The real-kernel checks of one kernel in one boot: a busybox guest
# (tests/vm/kernel-init.sh) with a network card and a disk runs stage 1
# (tests/vm/stage1-check.sh: memcg-vmcheck, the held-to-account check, the
# churn soak, ...) and then the OOM end to end (tests/vm/oom-check.sh), which
# a real Prometheus on the host scrapes through QEMU's forwarded loopback
# port while tests/vm/oom_e2e.py follows the console and the alerts.
# Prints one line per check, "RESULT <kernel> <check> PASS|FAIL"; exit 0 when
# every check passed.
# Usage: tests/vm/run-kernel.sh BUILD_DIR
# MEMCG_VM_KERNEL (default 6.1): the kernel (tests/vm/lib.sh).
# MEMCG_VM_CHECKS (default "stage1 oom"): the checks, in this order; oom, if
#   named, runs last (the host ends that run).
# MEMCG_VM_STAGE1_DONE=FILE: touched when stage 1's result is on the console
#   (packaging/run-tests starts stage 2 then, beside the OOM checks).
# SOAK_SECONDS (default 60), SOAK_MIN_RATE (default 40): stage 1's churn soak;
# FIXTURES_OUT=DIR: stage 1 writes the guest kernel's memory.* files of a
#   parent, a busy, an OOM-killed and a throttled cgroup and the root there
#   (the layout of tests/fixtures/kernel-6.1);
# OOM_CACHE_HOLD (seconds, default 240): how long the OOM check's page cache
#   is held at its limit without a headroom alert.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
. "$here/lib.sh"

read -r -a checks <<<"${MEMCG_VM_CHECKS:-stage1 oom}"
oom=no
for c in "${checks[@]}"; do
  [ -f "$here/$c-check.sh" ] || { vm_log "no check $c (tests/vm/$c-check.sh)"; exit 2; }
  [ "$c" = oom ] && oom=yes
done
[ "$oom" = no ] || [ "${checks[-1]}" = oom ] || { vm_log "oom must be the last check"; exit 2; }
soak=${SOAK_SECONDS:-60}
work=$(mktemp -d /tmp/memcg-vmk.XXXXXX)
qemu_pid=
cleanup() {
  [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
  rm -rf "$work"
  # Whatever happened, whoever waits for stage 1 goes on.
  [ -z "${MEMCG_VM_STAGE1_DONE:-}" ] || touch "$MEMCG_VM_STAGE1_DONE"
}
trap cleanup EXIT
vm_packages qemu-system-x86 busybox-static e2fsprogs kmod
[ "$oom" = no ] || vm_packages prometheus
kernel=$(vm_kernel)

ir="$work/ir"
vm_initramfs_root "$ir"
vm_copy_with_libs "$build/exporter/memcg-exporter" "$ir" bin
vm_copy_with_libs "$build/oci_hook/memcg-exporter-oci-hook" "$ir" bin
install -m755 "$build/tests/memcg-vmload" "$build/tests/memcg-vmcheck" "$build/tests/memcg-vmsoak" \
  "$build/tests/memcg-vmoom" "$ir/bin/"
vm_copy_with_libs "$build/tests/memcg-bench" "$ir" bin
mkdir -p "$ir/checks"
for c in "${checks[@]}"; do install -m755 "$here/$c-check.sh" "$ir/checks/$c.sh"; done
install -m755 "$here/kernel-init.sh" "$ir/init"
vm_net_modules "$kernel" "$ir/lib/modules"
vm_pack_initramfs "$ir" "$work/initramfs.gz"
truncate -s 1G "$work/disk.img"
mkfs.ext4 -q -F "$work/disk.img"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
list=$(IFS=,; echo "${checks[*]}")
append="$VM_CLOCK console=ttyS0 panic=-1 quiet loglevel=2 memcg_checks=$list memcg_soak_seconds=$soak"
append+=" memcg_soak_min_rate=${SOAK_MIN_RATE:-40} memcg_fixtures=$([ -n "${FIXTURES_OUT:-}" ] && echo 1 || echo 0)"
# Stage 1 takes up to 600 s plus 3x its soak; the OOM check's host side has
# limits of its own (oom_e2e.py: ready, then at most 720 s).
extra=0
[ "$oom" = yes ] && extra=1500
limit=$((600 + 3 * soak + extra))
vm_log "booting $(basename "$kernel"): ${checks[*]}; the guest's port 9756 on 127.0.0.1:$port"
guest() {
  : > "$work/serial.log"
  timeout "$limit" "${VM_QEMU[@]}" -kernel "$kernel" -initrd "$work/initramfs.gz" \
    -drive file="$work/disk.img",if=none,id=d0,format=raw,cache=unsafe -device nvme,drive=d0,serial=disk0 \
    -netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:9756" -device virtio-net-pci,netdev=n0 \
    -append "$append" </dev/null > "$work/serial.log" 2>&1 &
  qemu_pid=$!
  if [ -n "${MEMCG_VM_STAGE1_DONE:-}" ]; then
    (until grep -aq '^RESULT stage1' "$work/serial.log" || ! kill -0 "$qemu_pid" 2>/dev/null; do sleep 2; done
     touch "$MEMCG_VM_STAGE1_DONE") &
  fi
  local rc=0
  if [ "$oom" = yes ]; then
    python3 "$here/oom_e2e.py" --serial "$work/serial.log" --port "$port" --cache-hold "${OOM_CACHE_HOLD:-240}" \
      --rules "$here/../../packaging/prometheus/memcg-exporter.rules.yml" --qemu-pid "$qemu_pid" \
      --ready-timeout $((limit - 720)) || rc=$?
    kill "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    echo "RESULT oom $([ "$rc" = 0 ] && echo PASS || echo FAIL)" >> "$work/serial.log"
  else
    wait "$qemu_pid" || rc=$?
    rc=$([ "$rc" = 1 ] && echo 0 || echo 1)  # isa-debug-exit: the guest's verdict v exits QEMU with (v << 1) | 1
  fi
  qemu_pid=
  return "$rc"
}
rc=0
vm_boot "$work/serial.log" guest || rc=$?
grep -aE '^(VMKERNEL|VMSTAGE1|CHECK|VMCOST|VMBENCH|VMCHECK|SOAK|age violation|age context|current mismatch|stat out of bound|held-to-account|log:)' "$work/serial.log" || true
if [ -n "${FIXTURES_OUT:-}" ]; then
  grep -a '^FIXTURE ' "$work/serial.log" | tr -d '\r' | while read -r _ name data; do
    mkdir -p "$FIXTURES_OUT/$(dirname "$name")"
    echo "$data" | base64 -d > "$FIXTURES_OUT/$name"
  done
  vm_log "kernel files written to $FIXTURES_OUT"
fi
# One line per check: its own verdict, or FAIL when the guest never said.
for c in "${checks[@]}"; do
  r=$(tr -d '\r' < "$work/serial.log" | awk -v c="$c" '$1 == "RESULT" && $2 == c {print $3}' | tail -1)
  echo "RESULT $VM_KERNEL $c ${r:-FAIL}"
  [ "$r" = PASS ] || rc=1
done
if [ "$rc" != 0 ]; then
  vm_log "FAILED on $VM_KERNEL; the console's last lines:"
  tail -n 60 "$work/serial.log"
  exit 1
fi
vm_log "every check passed on $VM_KERNEL"
