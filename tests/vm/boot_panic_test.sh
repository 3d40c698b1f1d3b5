#!/usr/bin/env bash
# vm_boot (tests/vm/lib.sh) on recorded serial logs: it boots once more only
# when the kernel panicked before the guest's init wrote anything, at most
# once, and a guest that failed for any other reason is not booted again.
# Usage: tests/vm/boot_panic_test.sh      (exit 0 = pass; ctest boot-retry)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=$(mktemp -d /tmp/memcg-boot-panic.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected $2, got $3"; failures=$((failures + 1)); fi
}

# The console of the boot that failed CI (shortened), CRLF as QEMU writes it.
early_panic() {
  printf '%s\r\n' \
    '[    4.397353] RIP: 0010:sched_clock_tick+0x5/0xd0' \
    '[    4.404518]  sched_tick+0x3a/0x250' \
    '[    4.405837] Kernel panic - not syncing: Fatal exception in interrupt' \
    '[    6.924119] Kernel Offset: 0x3b800000 from 0xffffffff81000000'
}
# A guest whose init ran, then a panic (the test's own doing, or the kernel's
# under it): never booted again.
late_panic() {
  printf '%s\r\n' 'VMSTAGE1 at 8.66 s: vmcheck' '[   95.100000] Kernel panic - not syncing: Out of memory' \
    '[   95.200000] Kernel Offset: disabled'
}
passed() { printf '%s\r\n' '[    1.000000] random: crng init done' 'VMSTAGE1 verdict=0'; }
# The OOM guest's init ran, then the kernel faulted on a no-op it had patched
# (the console of a CI run, shortened): booted again.
patched_panic() {
  printf '%s\r\n' 'OOMTEST kernel 6.12.117+deb13-cloud-amd64' \
    '[    8.182457]  do_mkdirat+0xed/0x180' \
    '[    8.183661] RIP: 0010:kmem_cache_free+0x103/0x440' \
    '[    8.183681] Code: bb ca 1a 01 49 8b 44 24 08 4d 89 e5 a8 01 0f 85 bc 02 00 00 0f 1f 44 00 00 31 c0 41 80 7d 33 f5 48 89 5c 24 10 4c 0f 45 e8 66 <90> 4d 8b 45 38' \
    '[    8.183901] Kernel panic - not syncing: Fatal exception in interrupt'
}
# ... and one that faulted on a real instruction after init ran: not.
late_oops() {
  printf '%s\r\n' 'OOMTEST kernel 6.12.117+deb13-cloud-amd64' \
    '[    9.000000] Code: 48 89 e5 <48> 8b 07 5d c3' \
    '[    9.000100] Kernel panic - not syncing: Fatal exception'
}

early_panic > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "panic before init" yes "$r"
{ echo 'qemu-system-x86_64: warning: host does not support a feature'; early_panic; } > "$work/a"
vm_boot_panicked "$work/a" && r=yes || r=no; check "QEMU's own warning first" yes "$r"
late_panic > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "panic after init" no "$r"
passed > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "a passing guest" no "$r"
patched_panic > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "a fault on a patched no-op after init" yes "$r"
late_oops > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "a fault on an instruction after init" no "$r"
: > "$work/a"; vm_boot_panicked "$work/a" && r=yes || r=no; check "an empty console" no "$r"

# Fake guests: each boot appends to $work/boots and writes the console the
# list in $work/plan gives for that boot; exit status 1 is QEMU's "verdict 0".
guest() {
  echo x >> "$work/boots"
  local n; n=$(wc -l < "$work/boots")
  case "$(sed -n "${n}p" "$work/plan")" in
    early) early_panic > "$work/log"; return 0 ;;
    late) late_panic > "$work/log"; return 0 ;;
    pass) passed > "$work/log"; return 1 ;;
  esac
}
run() {  # run PLAN...: prints "<boots> <status>"
  printf '%s\n' "$@" > "$work/plan"
  : > "$work/boots"
  local rc=0
  vm_boot "$work/log" guest 2>/dev/null || rc=$?
  echo "$(wc -l < "$work/boots") $rc"
}
check "early panic, then a pass: booted twice, the pass's status" "2 1" "$(run early pass)"
check "early panic twice: booted twice, not a pass" "2 0" "$(run early early early)"
check "a late panic: booted once" "1 0" "$(run late pass)"
check "a pass: booted once" "1 1" "$(run pass pass)"
[ "$(run early early early)" = "2 0" ] && grep -q 'Kernel panic' "$work/log" && r=kept || r=lost
check "the second panic stays on the console for the caller" kept "$r"

[ "$failures" = 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
