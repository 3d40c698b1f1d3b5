#!/usr/bin/env bash
# Stage 2: Debian bookworm with systemd as PID 1 under QEMU. The project's
# .deb is installed into the rootfs with dpkg (its postinst enables the unit),
# then the guest boots and memcg-stage2-test checks the service: Type=notify
# readiness, series for systemd's own services, reload (good and broken), the
# watchdog restarting a stopped loop, and a clean stop.
# Usage: tests/vm/run-stage2.sh BUILD_DIR      (exit 0 = pass)
# STAGE2_EXTRA (packages to add to the rootfs) and STAGE2_TEST (the guest
# script, default stage2-test.sh) make variants: tests/vm/run-netdata.sh;
# STAGE2_BINS (static binaries copied to /usr/local/bin), STAGE2_DIRS
# ("DIR=DEST ...": directories copied into the rootfs), STAGE2_TIMEOUT
# (seconds, default 900), STAGE2_IMAGE_SIZE (default 1G), STAGE2_MODULES=1 (the
# kernel's modules installed in the rootfs: overlay, bridge, netfilter for the
# container runtimes) and STAGE2_SERIAL (where to keep the serial log) serve them.
# The bootstrapped rootfs is cached in $MEMCG_VM_CACHE, keyed by its package list.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
. "$here/lib.sh"

vm_packages qemu-system-x86 mmdebstrap e2fsprogs
[ "${STAGE2_MODULES:-0}" = 1 ] && vm_packages kmod  # depmod
kernel=$(vm_kernel)
work=$(mktemp -d /tmp/memcg-vm2.XXXXXX)
trap 'rm -rf "$work"' EXIT

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >/dev/null)
deb=$(ls "$work"/deb/memcg-exporter_*.deb)

# The package's dependencies are bootstrapped with the base system, so that
# dpkg -i in the chroot needs no network.
deps=$(dpkg-deb --field "$deb" Depends | tr ',' '\n' | sed -E 's/\(.*\)//; s/ //g' | grep -v '^$' | sort -u | paste -sd, -)
include="systemd,systemd-sysv,udev,curl,$deps${STAGE2_EXTRA:+,$STAGE2_EXTRA}"
key=$(echo "bookworm $include" | sha256sum | cut -c1-16)
tarball="$VM_CACHE/rootfs-$key.tar"
mkdir -p "$VM_CACHE"
vm_cache_check "$tarball"
if [ ! -f "$tarball" ]; then
  . "$here/../../packaging/debian-mirror.sh"
  mirror=$(debian_mirror)
  vm_log "bootstrapping bookworm rootfs ($include)"
  mkdir -p "$VM_CACHE"
  mmdebstrap -q --variant=minbase "${debian_aptopts[@]}" --include="$include" --skip=chroot/mount/sys \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' bookworm "$tarball.partial.tar" "$mirror" </dev/null
  mv "$tarball.partial.tar" "$tarball"
  vm_cache_seal "$tarball"
fi

root="$work/rootfs"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$root/etc/machine-id"
echo >> "$root/etc/machine-id"
rm -f "$root"/etc/systemd/system/timers.target.wants/*
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$root/etc/systemd/system/systemd-firstboot.service"

# Install the package as a user would; postinst enables the unit (no systemd
# runs in the chroot, so it is started at boot by multi-user.target).
cp "$deb" "$root/tmp/"
chroot "$root" dpkg -i "/tmp/$(basename "$deb")"
rm "$root/tmp/$(basename "$deb")"
# Tests only: a short watchdog so the SIGSTOP check takes seconds, not 30 s.
mkdir -p "$root/etc/systemd/system/memcg-exporter.service.d"
printf '[Service]\nWatchdogSec=4s\n' > "$root/etc/systemd/system/memcg-exporter.service.d/test-watchdog.conf"
install -m755 "${STAGE2_TEST:-$here/stage2-test.sh}" "$root/usr/local/bin/memcg-stage2-test"
# Settings for the guest's test script (e.g. RUNTIMES_ONLY="k8s"), sourced there.
printf '%s\n' "${STAGE2_ENV:-}" > "$root/etc/memcg-stage2.env"
for b in ${STAGE2_BINS:-}; do install -m755 "$b" "$root/usr/local/bin/"; done  # static helpers a variant needs
for f in ${STAGE2_DIRS:-}; do mkdir -p "$root/${f#*=}" && cp -a "${f%%=*}/." "$root/${f#*=}/"; done
if [ "${STAGE2_MODULES:-0}" = 1 ]; then
  kdir=$(dirname "$(dirname "$kernel")")
  mods=$(vm_modules_dir "$kdir")
  mkdir -p "$root/lib/modules"
  cp -a "$mods" "$root/lib/modules/"
  /sbin/depmod -b "$root" "$(basename "$mods")"
fi
install -m644 "$here/memcg-stage2.service" "$root/etc/systemd/system/"
systemctl --root="$root" enable memcg-stage2.service >/dev/null 2>&1
mkfs.ext4 -q -F -d "$root" "$work/root.img" "${STAGE2_IMAGE_SIZE:-1G}"

vm_log "booting $(basename "$kernel") with systemd as PID 1"
boot() {
  timeout "${STAGE2_TIMEOUT:-900}" "${VM_QEMU[@]}" -kernel "$kernel" \
    -drive file="$work/root.img",if=none,id=d0,format=raw,cache=unsafe -device nvme,drive=d0,serial=root0 \
    -append "$VM_CLOCK console=ttyS0 root=/dev/nvme0n1 rw systemd.unified_cgroup_hierarchy=1 systemd.firstboot=off panic=-1 quiet loglevel=2" \
    </dev/null > "$work/serial.log" 2>&1
}
rc=0
vm_boot "$work/serial.log" boot || rc=$?
[ -z "${STAGE2_SERIAL:-}" ] || cp "$work/serial.log" "$STAGE2_SERIAL"
grep -aE '^(STAGE2|CHECK|RESULT|NETDATA|RUNTIME)' "$work/serial.log" || true
if ! grep -q '^RESULT PASS' "$work/serial.log"; then
  vm_log "stage 2 FAILED (qemu exit $rc); serial log:"
  tail -n 80 "$work/serial.log"
  exit 1
fi
vm_log "stage 2 passed"
