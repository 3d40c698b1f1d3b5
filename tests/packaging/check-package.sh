#!/usr/bin/env bash
# Builds the .deb from a configured build dir and checks it offline:
# contents and conffiles, maintainer scripts, lintian (no errors),
# systemd-analyze verify (clean, stderr included) and security (<= 2.0).
# Usage: tests/packaging/check-package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/memcg-pkg.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if "$@"; then echo "ok   $*" | cut -c1-120; else echo "FAIL $*"; fail=1; fi; }
check_not() { if "$@"; then echo "FAIL not: $*" | cut -c1-120; fail=1; else echo "ok   not: $*" | cut -c1-120; fi; }

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >/dev/null)
deb=$(ls "$work"/out/memcg-exporter_*.deb)
echo "package: $(basename "$deb")"

contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for f in ./usr/bin/memcg-exporter ./lib/systemd/system/memcg-exporter.service ./etc/memcg-exporter/config.toml \
         ./usr/share/man/man1/memcg-exporter.1.gz ./usr/share/doc/memcg-exporter/copyright \
         ./usr/share/doc/memcg-exporter/changelog.gz ./usr/share/doc/memcg-exporter/config.example.toml \
         ./usr/share/doc/memcg-exporter/README.md ./usr/share/doc/memcg-exporter/docs/metrics.md \
         ./usr/libexec/memcg-exporter/memcg-exporter-oci-hook ./usr/libexec/memcg-exporter/memcg-exporter-identity \
         ./usr/share/containers/oci/hooks.d/memcg-exporter-create.json \
         ./usr/share/containers/oci/hooks.d/memcg-exporter-poststop.json; do
  check grep -qxF "$f" <<<"$contents"
done
check test "$(dpkg-deb --field "$deb" Package)" = memcg-exporter
check_not grep -q "libcivetweb" <<<"$(dpkg-deb --field "$deb" Depends)"  # one server, our own (docs/development.md)
check grep -q "procps" <<<"$(dpkg-deb --field "$deb" Depends)"  # kill(1) for ExecReload
mkdir -p "$work/control"
dpkg-deb --control "$deb" "$work/control"
check grep -qx /etc/memcg-exporter/config.toml "$work/control/conffiles"
for s in postinst prerm postrm; do check sh -n "$work/control/$s"; done

# lintian: errors fail, warnings are shown.
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' || true)
[ -n "$lint" ] && echo "$lint"
check test -z "$(grep '^E:' <<<"$lint")"

# A root with the package's files, the host's base units and kill(1), so that
# verify resolves everything the unit names.
root="$work/root"
dpkg-deb -x "$deb" "$root"
mkdir -p "$root/bin" "$root/usr/lib/systemd"
cp -a /lib/systemd/system/. "$root/lib/systemd/system/"
cp /bin/kill "$root/bin/kill"
verify_err=$(systemd-analyze verify --man=no --root="$root" /lib/systemd/system/memcg-exporter.service 2>&1) && verify_rc=0 || verify_rc=$?
[ -n "$verify_err" ] && echo "$verify_err"
check test "$verify_rc" = 0
check test -z "$verify_err"

score=$(systemd-analyze security --offline=true --root="$root" --threshold=20 memcg-exporter.service 2>&1 | tail -1) \
  && sec_rc=0 || sec_rc=$?
echo "$score"
check test "$sec_rc" = 0

# The hooks.d files are JSON naming the installed hook.
for h in create poststop; do
  check python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['hook']['path']=='/usr/libexec/memcg-exporter/memcg-exporter-oci-hook' and d['version']=='1.0.0'" \
    "$root/usr/share/containers/oci/hooks.d/memcg-exporter-$h.json"
done

# TLS is the gate's, linked against libssl.so.3: no private libssl.so shim
# (0.1's CivetWeb TLS dlopen()ed one), no RPATH to find it.
check grep -q "NEEDED.*libssl.so.3" <<<"$(readelf -d "$root/usr/bin/memcg-exporter")"
check test ! -e "$root/usr/lib/x86_64-linux-gnu/memcg-exporter"
check test -z "$(readelf -d "$root/usr/bin/memcg-exporter" | grep -E '\((RPATH|RUNPATH)\)')"
check grep -q "libssl3" <<<"$(dpkg-deb --field "$deb" Depends)"

# The config the package ships must load.
check "$root/usr/bin/memcg-exporter" --config "$root/etc/memcg-exporter/config.toml" --check-config >/dev/null
exit $fail
