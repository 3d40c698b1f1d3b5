#!/usr/bin/env bash
# Real container runtimes drive the plugin: the stage-2 guest (Debian
# bookworm, systemd as PID 1, the .deb installed) with Debian's podman,
# docker.io, containerd and systemd-container; runtimes-test.sh starts
# containers with each cgroup manager/driver and checks them through /metrics.
# Prints the runtime x driver x check table; exit 0 when every row passed.
# RUNTIMES_SERIAL=FILE keeps the guest's serial log (it carries FIXTURE blocks:
# what the OCI hook received, base64).
# RUNTIMES_ONLY="k8s ctr ..." runs only those sections (podman, rootless,
# docker, ctr, k8s, image, nspawn), for working on one.
# The image section runs the container image (packaging/container/build, from
# this build's .deb) with the DaemonSet's settings, which manifest_run.py
# reads from packaging/kubernetes/memcg-exporter.yaml.
# Usage: tests/vm/run-runtimes.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
serial=${RUNTIMES_SERIAL:-$(mktemp /tmp/memcg-runtimes.XXXXXX)}
image=$(mktemp -d /var/tmp/memcg-runtimes-image.XXXXXX)
trap 'rm -rf "$image"' EXIT
if ! out=$("$here/../../packaging/container/build" --build-dir "$build" --out "$image/build" --tag vm 2>&1); then
  echo "$out" >&2
  exit 1
fi
grep '^container/build: image' <<<"$out"
"$here/manifest_run.py" "$here/../../packaging/kubernetes/memcg-exporter.yaml" "$image/build/oci" vm "$image/guest" /var/lib/memcg-image
mv "$image/build/memcg-exporter-vm.oci.tar" "$image/guest/"
printf "IMG_REF='localhost/memcg-exporter:vm'\nIMG_ARCHIVE='/var/lib/memcg-image/memcg-exporter-vm.oci.tar'\n" >> "$image/guest/image.env"
export STAGE2_DIRS="$image/guest=/var/lib/memcg-image"
export STAGE2_EXTRA=podman,crun,conmon,docker.io,containerd,runc,systemd-container,dbus,dbus-user-session,iptables,kmod,uidmap,apparmor
export STAGE2_TEST="$here/runtimes-test.sh" STAGE2_BINS=/bin/busybox STAGE2_TIMEOUT=2400
export STAGE2_IMAGE_SIZE=3G STAGE2_MODULES=1 STAGE2_SERIAL="$serial"
export STAGE2_ENV="RUNTIMES_ONLY='${RUNTIMES_ONLY:-}'"
rc=0
"$here/run-stage2.sh" "$build" >"$serial.out" 2>&1 || rc=$?
# The table: one line per runtime x driver, one column per check.
awk '/^RUNTIME row / {
       k = $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
       c[k, $5] = $6; if (!($5 in cols)) { cols[$5] = 1; colord[++m] = $5 }
     }
     END {
       printf "%-22s", "runtime driver"; for (j = 1; j <= m; j++) printf " %-14s", colord[j]; print ""
       for (i = 1; i <= n; i++) {
         printf "%-22s", order[i]
         for (j = 1; j <= m; j++) { v = c[order[i], colord[j]]; printf " %-14s", v == "" ? "-" : v }
         print ""
       }
     }' "$serial"
grep -a '^RUNTIME row .* FAIL' "$serial" | sed 's/^RUNTIME row /FAILED: /' || true
grep -aE '^(RUNTIME log|RESULT)' "$serial" || true
if [ "$rc" -ne 0 ]; then
  echo "runtimes guest FAILED:" >&2
  grep -v '^RUNTIME' "$serial.out" | tail -n 40 >&2
fi
rm -f "$serial.out"
[ -n "${RUNTIMES_SERIAL:-}" ] || rm -f "$serial"
exit "$rc"
