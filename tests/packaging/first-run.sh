#!/usr/bin/env bash
# First metrics on a fresh machine: builds a Debian 12 root with only the
# stock toolchain (mmdebstrap: g++, cmake, make, GoogleTest, Google Benchmark,
# python3, git, as a new build machine has), copies this checkout into it and
# times `packaging/run-local` inside it (chroot, a private mount namespace,
# the host's apt sources) until /metrics answers with cgroup series. Fails if
# run-local cannot build and serve from what `install-build-deps --run`
# installs; prints the time, which no check holds it to.
# Usage: tests/packaging/first-run.sh [PORT]   (as root; needs the Debian mirror)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
port=${1:-19756}
work=$(mktemp -d /var/tmp/memcg-first-run.XXXXXX)
root=$work/root
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

. "$src/packaging/debian-mirror.sh"
mirror=$(debian_mirror)
echo "first-run: a fresh Debian 12 root from $mirror"
mmdebstrap --quiet --variant=apt "${debian_aptopts[@]}" \
  --include=g++,cmake,make,libgtest-dev,libgmock-dev,libbenchmark-dev,python3,git,ca-certificates \
  bookworm "$root" "$mirror" >/dev/null
# The machine's own apt sources (updates and security too), as on the host.
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/src"
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$root/src" -xf -

start=$(date +%s%N)
setsid unshare --mount --propagation private -- sh -c "
  mount --bind /proc '$root/proc' && mount --rbind /dev '$root/dev' && mount --rbind /sys '$root/sys' &&
  exec chroot '$root' /bin/bash -c 'cd /src && exec packaging/run-local --web.listen-address 127.0.0.1:$port'
" >"$work/run-local.log" 2>&1 &
pid=$!
served=
# Where the time went, seen from outside: the build directory appears once
# the packages are installed (cmake configures it), the binary once built.
since() { echo $(( ($(date +%s%N) - start) / 1000000000 )); }
configured= built=
while kill -0 "$pid" 2>/dev/null; do
  [ -n "$configured" ] || [ ! -e "$root/src/build-local/CMakeCache.txt" ] || configured=$(since)
  [ -n "$built" ] || [ ! -x "$root/src/build-local/exporter/memcg-exporter" ] || built=$(since)
  if curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^memcg_memory_current_bytes{'; then
    served=1; break
  fi
  sleep 0.5
done
elapsed=$(since)
if [ -z "$served" ]; then
  echo "first-run: FAIL: packaging/run-local ended without serving metrics:" >&2
  tail -30 "$work/run-local.log" >&2
  exit 1
fi
printf 'FIRSTRUN first metrics %d s after packaging/run-local started (%s CPUs): configured (packages installed) by %s s, built by %s s\n' \
  "$elapsed" "$(nproc)" "${configured:-?}" "${built:-?}"
grep -m1 "running on a simulated demo tree" "$work/run-local.log" || true
# What a newcomer sees a few passes later: no error counter above zero and a
# status page without a warning (the demo's ten minutes: ctest demo).
sleep 10
moved=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^memcg_exporter_[a-z_]*errors[a-z_]*[{ ]/ && $NF != 0' | head -5)
warned=$(curl -sf "http://127.0.0.1:$port/" | grep -o 'class="warn"[^<]*' | head -5 || true)
if [ -n "$moved" ] || [ -n "$warned" ]; then
  printf 'first-run: FAIL: a fresh run shows errors or warnings:\n%s\n%s\n' "$moved" "$warned" >&2
  exit 1
fi
echo "FIRSTRUN no error counter above zero and no warning on the status page 10 s later"
