#!/bin/bash
# Runs inside the stage-2 guest (Debian bookworm, systemd as PID 1) after the
# memcg-exporter .deb was installed the way a user installs it. Prints CHECK
# lines and RESULT PASS|FAIL to the serial console, then powers off.
exec > /dev/ttyS0 2>&1
set -u
fail=0
unit=memcg-exporter.service
cfg=/etc/memcg-exporter/config.toml
check() {
  local desc=$1
  shift
  if "$@"; then echo "CHECK $desc ok"; else echo "CHECK $desc FAIL"; fail=1; fi
}
metrics() { curl -sf --max-time 10 http://127.0.0.1:9756/metrics; }
metric() { metrics | awk -v k="$1" '$1 == k {print $2}'; }
prop() { systemctl show -p "$1" --value "$unit"; }
wait_for() {  # wait_for SECONDS CMD...
  local t=$1
  shift
  for _ in $(seq $((t * 4))); do "$@" && return 0; sleep 0.25; done
  return 1
}
echo "STAGE2 start uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"

# Enabled and started by the package's postinst at first boot (multi-user.target).
check enabled-by-package systemctl is-enabled --quiet "$unit"
check active-via-notify wait_for 60 systemctl is-active --quiet "$unit"
check type-notify test "$(prop Type)" = notify
check status-from-notify sh -c "systemctl show -p StatusText --value $unit | grep -q 'cgroups=[0-9]'"
pid=$(prop MainPID)
check runs-unprivileged sh -c "test \"\$(stat -c %u /proc/$pid)\" -ne 0"
echo "STAGE2 $(prop StatusText) pid=$pid user=$(stat -c %U /proc/$pid)"

# The default profile: series carry cgroup_id, memcg_cgroup_info maps it to the path.
journald_id() { curl -sf http://127.0.0.1:9756/metrics | sed -n 's/^memcg_cgroup_info{cgroup_id="\([0-9]*\)",cgroup="system.slice\/systemd-journald.service".*/\1/p'; }
journald_served() { id=$(journald_id); [ -n "$id" ] && curl -sf http://127.0.0.1:9756/metrics | grep -q "^memcg_memory_current_bytes{cgroup_id=\"$id\"} "; }
check series-for-system-services wait_for 20 journald_served
jid=$(journald_id)
check stat-series sh -c "curl -sf http://127.0.0.1:9756/metrics | grep -q '^memcg_memory_stat_bytes{cgroup_id=\"$jid\",stat=\"anon\"}'"
check default-profile-budget sh -c "test \$(curl -sf http://127.0.0.1:9756/metrics | grep -c 'cgroup_id=\"$jid\"') -le 30"
check promtool-free-sanity sh -c "curl -sf http://127.0.0.1:9756/metrics | grep -q '^memcg_exporter_build_info{'"
check healthy curl -sf http://127.0.0.1:9756/-/healthy -o /dev/null

# On a systemd host at rest every cgroup is collected, so most rescans trust
# the root's cgroup.stat instead of walking (the default rescan_interval is
# 10 s: within 60 s at least two in a row).
counted() { test "$(metric 'memcg_exporter_rescans_total{method="count"}')" -ge 2 2>/dev/null; }
if wait_for 60 counted; then
  echo "CHECK rescan-by-count ok: $(metric 'memcg_exporter_rescans_total{method="count"}') counted, $(metric 'memcg_exporter_rescans_total{method="walk"}') walked"
else
  echo "CHECK rescan-by-count FAIL: counted $(metric 'memcg_exporter_rescans_total{method="count"}'), walked $(metric 'memcg_exporter_rescans_total{method="walk"}'), collected $(metric memcg_exporter_cgroups), $(tr '\n' ' ' < /sys/fs/cgroup/cgroup.stat), without memory.stat: $(for d in $(find /sys/fs/cgroup -mindepth 1 -type d); do [ -e "$d/memory.stat" ] || echo -n "$d "; done)"
  fail=1
fi

# systemctl reload applies a new rule.
cp "$cfg" /root/config.orig
printf '\n[[rule]]\nmatch = "system.slice/*.service"\nname = "services"\nmax_age = "42s"\n' >> "$cfg"
check reload-command systemctl reload "$unit"
check reload-applied wait_for 10 sh -c "curl -sf http://127.0.0.1:9756/metrics | grep -q '^memcg_rule_max_age_seconds{rule=\"services\"} 42$' && curl -sf http://127.0.0.1:9756/metrics | grep -q '^memcg_cgroup_info{cgroup_id=\"$jid\",cgroup=\"system.slice/systemd-journald.service\",rule=\"services\"'"
# A broken file on reload: reported, the service stays up on the old config.
echo 'bogus_key = 1' >> "$cfg"
systemctl reload "$unit"
check broken-reload-reported wait_for 10 sh -c "test \"\$(curl -sf http://127.0.0.1:9756/metrics | awk '\$1 == \"memcg_exporter_config_last_reload_successful\" {print \$2}')\" = 0"
check broken-reload-keeps-running systemctl is-active --quiet "$unit"
check broken-reload-keeps-old-config sh -c "curl -sf http://127.0.0.1:9756/metrics | grep -q '^memcg_rule_max_age_seconds{rule=\"services\"} 42$'"
check broken-reload-in-journal sh -c "journalctl -u $unit -p err --no-pager -o cat | grep -q 'configuration reload failed.*bogus_key'"
cp /root/config.orig "$cfg"
systemctl reload "$unit"

# The watchdog: a stopped loop gets the service restarted.
restarts=$(prop NRestarts)
kill -STOP "$pid"
check watchdog-restarts wait_for 60 sh -c "test \"\$(systemctl show -p NRestarts --value $unit)\" -gt $restarts && systemctl is-active --quiet $unit"
check watchdog-new-pid sh -c "test \"\$(systemctl show -p MainPID --value $unit)\" != $pid"
check watchdog-in-journal sh -c "journalctl -u $unit --no-pager -o cat | grep -qi 'watchdog timeout'"
check serves-after-restart wait_for 20 curl -sf http://127.0.0.1:9756/-/ready -o /dev/null

# Its own memory limit: under MemoryMax=40M with 1,000 more cgroups (each
# costs the daemon ~57 KiB, mostly kernel memory for its kept files) it
# collects what fits, says why the rest wait, and is not OOM-killed (before
# it was, at every start: 11 restarts in 90 s).
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/membudget
echo +memory > /sys/fs/cgroup/membudget/cgroup.subtree_control
(cd /sys/fs/cgroup/membudget && mkdir -p c{1..1000})  # one mkdir(1), not 1,000 (with no rmdir loop and a shorter settle: guest uptime 166 -> 71 s)
mkdir -p "/etc/systemd/system/$unit.d"
printf '[Service]\nMemoryMax=40M\n' > "/etc/systemd/system/$unit.d/memory-budget-test.conf"
systemctl daemon-reload
systemctl restart "$unit"
restarts=$(prop NRestarts)
left_out() { metric 'memcg_exporter_cgroups_left_out{reason="memory_budget"}'; }
budget_is_40m() { test "$(metric memcg_exporter_memory_budget_bytes)" = 41943040; }
many_left_out() { test "$(left_out)" -gt 500 2>/dev/null; }
no_oom_kill() {
  test "$(prop NRestarts)" = "$restarts" && systemctl is-active --quiet "$unit" &&
    ! grep -q '^oom_kill [1-9]' "/sys/fs/cgroup/system.slice/$unit/memory.events"
}
check memory-budget-own-limit wait_for 30 budget_is_40m
check memory-budget-left-out wait_for 30 many_left_out
sleep 12  # a rescan and the scrapes above: the daemon at its steady size
check memory-budget-no-oom-kill no_oom_kill
check memory-budget-in-journal sh -c "journalctl -u $unit --no-pager -o cat | grep -q \"do not fit in the daemon's memory limit (40 MiB\""
echo "STAGE2 memory budget: $(metric memcg_exporter_cgroups) collected, $(left_out) left out, $(metric memcg_exporter_cgroup_open_fds) of $(metric memcg_exporter_cgroup_max_fds) descriptors; the service's memory.current $(cat /sys/fs/cgroup/system.slice/$unit/memory.current), peak $(cat /sys/fs/cgroup/system.slice/$unit/memory.peak 2>/dev/null), $(grep '^oom_kill ' /sys/fs/cgroup/system.slice/$unit/memory.events)"

# A clean stop.
check stop systemctl stop "$unit"
check stopped-cleanly sh -c "test \"\$(systemctl show -p ActiveState --value $unit)\" = inactive && test \"\$(systemctl show -p Result --value $unit)\" = success"
check stop-in-journal sh -c "journalctl -u $unit --no-pager -o cat | grep -q 'shutting down'"
rm -f "/etc/systemd/system/$unit.d/memory-budget-test.conf"  # the guest powers off next: the cgroups may stay

echo "--- journal of $unit"
journalctl -u "$unit" --no-pager -o short-monotonic | tail -n 25
echo "RESULT $([ $fail = 0 ] && echo PASS || echo FAIL) uptime=$(cut -d' ' -f1 /proc/uptime)"
systemctl poweroff --no-block
