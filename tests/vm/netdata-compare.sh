#!/bin/bash
# Runs inside the stage-2 guest with netdata-core installed (run-netdata.sh).
# One tree of N cgroups shaped like a node (bench/qQ/podP/cC, the controllers a
# container runtime enables, a sleeping process in every leaf); then, each
# alone (the other stopped), for the same window (NETDATA_SECONDS, 180 s):
#   netdata 1.37, only its cgroups plugin, every cgroup at 1 s, measured once
#     it has charted the tree and gone quiet;
#   memcg-exporter, the packaged service at its default configuration,
#     scraped with gzip every 15 s by memcg-cost, its CPU decomposed;
#   the bare loop: one pread of memory.current per cgroup per second;
#   a cAdvisor-style reader (memcg-cadvisor-style), every cgroup at 1 s.
# Eight leaves churn memory throughout.
# CPU is every thread's (/proc/PID/task/*/schedstat, nanoseconds).
# NETDATA_UNSANDBOXED=1 (run-netdata.sh passes it through) adds a second
# memcg-exporter window with the unit's seccomp filters lifted by a drop-in,
# to tell what the hardening's per-syscall filters cost the daemon;
# NETDATA_BASELINE=1 a window of /usr/local/bin/memcg-exporter-baseline (an
# earlier build) under the same unit, between two of this build's; NETDATA_PROFILE=1 a perf profile of
# this build's binary (its symbol table kept) after the measured windows.
exec > /dev/ttyS0 2>&1
set -u
NETDATA_UNSANDBOXED=0 NETDATA_BASELINE='' NETDATA_ALTERNATE=0 NETDATA_PROFILE=0 NETDATA_WINDOWS=1 NETDATA_NO_ASLR=0 NETDATA_LAYOUT=0 NETDATA_SECONDS=180
. /etc/memcg-stage2.env 2>/dev/null
n=1000
# Whole periods of every periodic job of the daemon at its defaults: a quiet
# cgroup's max_age read every 9 passes, a rescan every 10 s with a full walk
# every 60 s, a scrape every 15 s. A 60 s window holds 6.67 refresh cycles,
# and since the cgroups' refreshes sit in about half the passes of a cycle
# (their phases), it counted 6 or 7 max_age reads of most quiet cgroups by
# where it began against them (7 in this guest: 3-5 % more reads than the
# rate); 180 s holds 20.
window=$NETDATA_SECONDS
CG=/sys/fs/cgroup
echo "NETDATA kernel $(uname -r), $(nproc) vCPUs, netdata $(dpkg-query -W -f='${Version}' netdata-core); meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null)"
systemctl stop netdata memcg-exporter 2>/dev/null
# The packaged unit as users run it: stage 2's image shortens the watchdog to
# 4 s for its own watchdog test (a ping every 2 s where the packaged
# WatchdogSec=30s asks for one every 15 s); this comparison measures the
# packaged unit, so that drop-in goes.
rm -f /etc/systemd/system/memcg-exporter.service.d/test-watchdog.conf
systemctl daemon-reload

# One controller per write: a write naming one the parent lacks fails as a
# whole (systemd enables cpu and io at the root only when a unit asks).
enable() { for c in cpu io memory pids; do echo "+$c" > "$1/cgroup.subtree_control" 2>/dev/null; done; }
for c in cpu io memory pids; do echo "+$c" > $CG/cgroup.subtree_control 2>/dev/null; done
mkdir -p $CG/bench
enable $CG/bench
pods=$(( (n - 4) / 4 ))
for q in 0 1 2; do mkdir -p $CG/bench/q$q; enable $CG/bench/q$q; done
for p in $(seq 0 $((pods - 1))); do
  d=$CG/bench/q$((p % 3))/pod$p
  mkdir -p $d
  enable $d
  for c in 0 1 2; do
    mkdir -p $d/c$c
    # Eight leaves churn memory (a 16 MiB anonymous wave), the rest sleep.
    if [ $c = 0 ] && [ $p -lt 8 ]; then
      sh -c 'echo $$ > "$0/cgroup.procs" && exec memcg-vmload wave 16' "$d/c$c" >/dev/null 2>&1 &
    else
      sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep infinity' "$d/c$c" &
    fi
  done
done
bench=$(find $CG/bench -type d | wc -l)
echo "NETDATA controllers: root $(cat $CG/cgroup.subtree_control), a pod $(cat $CG/bench/q0/pod0/cgroup.subtree_control), $(find $CG/bench -name memory.stat | wc -l) with memory.stat"
echo "NETDATA tree: $bench cgroups under bench ($((pods * 3)) leaves with a process, 8 of them busy), $(find $CG -mindepth 1 -type d | wc -l) on the host"

if [ "$NETDATA_LAYOUT" = 1 ]; then
  # Each cgroup's memory.current (its group's first line) with the other
  # files a collector keeps open for it, read as opened in one sweep or a
  # cgroup at a time (docs/performance-history.md, "Files opened kind by kind").
  for d in $(find $CG -mindepth 1 -type d); do
    [ -f "$d/memory.current" ] || continue
    for f in memory.current memory.stat memory.swap.current memory.events memory.pressure memory.peak memory.swap.events cgroup.events; do
      echo "$d/$f"
    done
  done > /tmp/layout.txt
  memcg-open-layout /tmp/layout.txt 8 30 | sed 's/^/NETDATA /'
fi

cpu_ns() {  # every thread of a process
  local t=0
  for f in /proc/$1/task/*/schedstat; do read -r ns _ < "$f" && t=$((t + ns)); done
  echo $t
}

# --- memcg-exporter: the packaged service, its default configuration.
# exporter_window LABEL [RATIOS]: one window of memcg-cost against the running
# service (the bare loop in a window of its own after it), lines prefixed
# "NETDATA memcg-exporter" and LABEL.
exporter_window() {
  local tag="NETDATA memcg-exporter$1"
  # The exporter's process only: the layout is fixed when it starts.
  [ "$NETDATA_NO_ASLR" = 1 ] && sysctl -qw kernel.randomize_va_space=0
  systemctl start memcg-exporter
  [ "$NETDATA_NO_ASLR" = 1 ] && sysctl -qw kernel.randomize_va_space=2
  for _ in $(seq 120); do curl -sf http://127.0.0.1:9756/-/ready >/dev/null && break; sleep 1; done
  # The steady state of a daemon that runs for days: past the initial reads,
  # the first refreshes and the first collector.limits_max_age (60 s), where
  # each cgroup's limit files get their watches (five inotify_add_watch
  # calls once per cgroup: in a window that holds them, a tenth of the
  # collector's samples, a cost no later minute pays).
  sleep 75
  pid=$(systemctl show -p MainPID --value memcg-exporter)
  echo "NETDATA check: $(find $CG/bench -type d | wc -l) cgroups under bench before the exporter's window; seccomp: $(awk '/^Seccomp(_filters)?:/ {printf "%s %s ", $1, $2}' /proc/$pid/status); exporter log: $(journalctl -u memcg-exporter -p warning --no-pager -q | tail -n 3 | tr '\n' ' ')"
  # The same window for the bare memory.current loop over every cgroup, alone
  # (memcg-cost stops the exporter meanwhile).
  # The unit's watchdog (the packaged 30 s), for the bare window's
  # stops; and whether its environment, where memcg-cost looks first, is
  # readable from here.
  wd=$(systemctl show -p WatchdogUSec --value memcg-exporter | awk '/min/ {print $1 * 60; next} {print $1 + 0}')
  echo "NETDATA check: WatchdogSec $wd s; WATCHDOG_USEC in /proc/$pid/environ: $(tr '\0' '\n' < /proc/$pid/environ 2>&1 | grep -c WATCHDOG_USEC)"
  # Then ten 1 s sleeps of its own: what a wake-up costs, inside the daemon's "wait".
  memcg-cost --port 9756 --pid "$pid" --seconds $window --scrape-every 15 --bare $CG --watchdog "$wd" --wakeups 10 > /tmp/cost.txt
  sed "s/^COST/$tag/" /tmp/cost.txt
  me=$(awk -F'|' '/whole daemon/ {gsub(/ /, "", $4); print $4}' /tmp/cost.txt)
  # The two ratios of this window, for the median over windows.
  sed -n 's/^COST the whole daemon is \([0-9.]*\)x the bare loop beside it (\([0-9.]*\)x .*/\1 \2/p' /tmp/cost.txt >> "${2:-/tmp/ratios.txt}"
  # What the daemon holds, kernel included: its cgroup's memory is mostly
  # the kernel's for the files it keeps open (a seq_file buffer of a page
  # per file read through it, dentries, inodes), charged to it, not its RSS.
  svc=$CG/system.slice/memcg-exporter.service
  # A restart since the window began (the watchdog, a crash) is said, not
  # hidden behind an empty RSS: the figures below are then the new process's.
  now_pid=$(systemctl show -p MainPID --value memcg-exporter)
  [ "$now_pid" = "$pid" ] || echo "$tag check: the exporter was restarted during the window (PID $pid, now $now_pid): $(journalctl -u memcg-exporter --no-pager -q | grep -E 'Watchdog|Failed|killed' | tail -n 2 | tr '\n' ' ')"
  pid=$now_pid
  echo "$tag memory: the service's cgroup $(awk '{printf "%.1f", $1 / 1048576}' $svc/memory.current) MiB ($(awk '$1 == "anon" {a = $2} $1 == "kernel" {k = $2} $1 == "slab" {s = $2} END {printf "anon %.1f, kernel %.1f of which slab %.1f", a / 1048576, k / 1048576, s / 1048576}' $svc/memory.stat) MiB), RSS $(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$pid/status) MiB, $(ls /proc/$pid/fd | wc -l) descriptors"
  series=$(curl -sf http://127.0.0.1:9756/metrics | grep -c '{cgroup_id=')
  mcg=$(curl -sf http://127.0.0.1:9756/metrics | awk '$1 == "memcg_exporter_cgroups" {print $2}')
  systemctl stop memcg-exporter
  echo "$tag: $me us per cgroup per second over $mcg cgroups, $(awk -v s=$series -v n=$mcg 'BEGIN { printf "%.1f", s / n }') series per cgroup (memory only: current, swap, stat, events, PSI, limits, peak, freshness)"
  echo "NETDATA check: $(find $CG/bench -type d | wc -l) cgroups under bench, $(cat /sys/fs/cgroup/bench/cgroup.procs 2>/dev/null | wc -l) procs in bench itself, $(pgrep -c sleep) sleep processes"
}
# run_binary BIN: the unit runs BIN instead of the packaged binary (a
# drop-in; everything else of the unit stays); run_binary "" undoes it.
run_binary() {
  local d=/etc/systemd/system/memcg-exporter.service.d/zz-binary.conf
  if [ -n "$1" ]; then printf '[Service]\nExecStart=\nExecStart=%s --config /etc/memcg-exporter/config.toml\n' "$1" > $d
  else rm -f $d; fi
  systemctl daemon-reload
}
: > /tmp/ratios.txt
median() { sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# ratios_line LABEL FILE: a build's ratios over its windows, with their medians.
ratios_line() {
  echo "NETDATA $1 over $(wc -l < "$2") windows: the whole daemon is $(cut -d' ' -f1 "$2" | tr '\n' ' ')x the bare loop beside it (median $(cut -d' ' -f1 "$2" | median)x); $(cut -d' ' -f2 "$2" | tr '\n' ' ')x the bare loop of the window after it (median $(cut -d' ' -f2 "$2" | median)x)"
}
if [ -n "$NETDATA_BASELINE" ] && [ "$NETDATA_ALTERNATE" = 1 ]; then
  # The two builds in pairs, in the order this-baseline, then baseline-this,
  # and so on: a boot whose windows drift one way over its minutes favours
  # neither build, and each pair is a comparison of neighbours.
  : > /tmp/ratios-base.txt
  : > /tmp/pairs.txt
  for k in $(seq 1 "$NETDATA_WINDOWS"); do
    for who in $([ $((k % 2)) = 1 ] && echo "this base" || echo "base this"); do
      if [ "$who" = base ]; then
        run_binary /usr/local/bin/memcg-exporter-baseline
        exporter_window " (baseline $k)" /tmp/ratios-base.txt
        me_base=$me
        run_binary ""
      else
        exporter_window " (window $k)"
        me_this=$me
      fi
    done
    echo "$me_this $me_base" >> /tmp/pairs.txt
    awk -v k="$k" -v a="$me_base" -v b="$me_this" 'BEGIN { if (a > 0) printf "NETDATA pair %d: this build / baseline = %.3f (whole daemon, neighbouring windows)\n", k, b / a }'
  done
  ratios_line "memcg-exporter" /tmp/ratios.txt
  ratios_line "memcg-exporter (baseline)" /tmp/ratios-base.txt
  echo "NETDATA pairs: this build / baseline, median over $(wc -l < /tmp/pairs.txt) pairs: $(awk '$2 > 0 {printf "%.3f\n", $1 / $2}' /tmp/pairs.txt | median)"
  me=$(head -n 1 /tmp/pairs.txt | cut -d' ' -f1)
else
  exporter_window ""
  me_unit=$me  # the ratio below is the packaged unit's
  for k in $(seq 2 "$NETDATA_WINDOWS"); do exporter_window " (window $k)"; done
  if [ "$NETDATA_WINDOWS" -gt 1 ]; then
    # The median of each ratio over this build's windows (windows of one boot drift).
    ratios_line "memcg-exporter" /tmp/ratios.txt
    me=$me_unit
  fi
fi
if [ -n "$NETDATA_BASELINE" ] && [ "$NETDATA_ALTERNATE" != 1 ]; then
  run_binary /usr/local/bin/memcg-exporter-baseline
  exporter_window " (baseline)"
  me_base=$me
  run_binary ""
  # This build again after the baseline: windows of one boot drift (the
  # bare loop by up to 15 %), so each build is measured before and after
  # the other, and the ratios are read against each window's bare loop.
  exporter_window " (again)"
  awk -v a="$me_base" -v b="$me_unit" -v c="$me" 'BEGIN { if (a > 0) printf "NETDATA this build / baseline = %.3f before it, %.3f after it (whole daemon, same boot)\n", b / a, c / a }'
  me=$me_unit
fi
if [ "$NETDATA_UNSANDBOXED" = 1 ]; then
  # Every setting of the unit that installs a seccomp filter, lifted; the
  # namespaces, capabilities and read-only mounts stay.
  mkdir -p /etc/systemd/system/memcg-exporter.service.d
  printf '%s\n' '[Service]' SystemCallFilter= SystemCallArchitectures= RestrictAddressFamilies= \
    MemoryDenyWriteExecute=no RestrictNamespaces=no RestrictRealtime=no RestrictSUIDSGID=no LockPersonality=no \
    ProtectClock=no ProtectHostname=no ProtectKernelModules=no ProtectKernelLogs=no PrivateDevices=no \
    > /etc/systemd/system/memcg-exporter.service.d/zz-no-seccomp.conf
  systemctl daemon-reload
  exporter_window " (no seccomp)"
  rm /etc/systemd/system/memcg-exporter.service.d/zz-no-seccomp.conf
  systemctl daemon-reload
  me=$me_unit
fi
if [ "$NETDATA_PROFILE" = 1 ]; then
  # Sampled alone, after the measured windows: where the exporter's CPU goes,
  # by binary and function (kernel and user), with a gzip scrape every 15 s.
  run_binary /usr/local/bin/memcg-exporter-symbols
  systemctl start memcg-exporter
  sleep 75  # the steady state, as the measured windows
  pid=$(systemctl show -p MainPID --value memcg-exporter)
  # Three scrapes off the record, 2 s apart, as memcg-cost makes before its
  # windows: the first render builds what later ones reuse, and a family is
  # compressed apart once its text repeated twice. Without them the sampled
  # scrapes were those first ones, mostly zlib compressing every family.
  gzip_scrape() { curl -sf -H 'Accept-Encoding: gzip' -o /dev/null http://127.0.0.1:9756/metrics; }
  for _ in 1 2 3; do gzip_scrape; sleep 2; done
  ( for _ in 1 2 3 4; do gzip_scrape; sleep 15; done ) &
  scrapes=$!
  # With kernel call chains: the collector (the main thread) between its
  # passes is mostly the kernel's, and only the chains say where.
  perf record -q -g -F 499 -p "$pid" -o /tmp/perf.data -- sleep 60 >/dev/null 2>&1
  wait $scrapes  # not the leaves' sleeping processes, children of this shell too
  systemctl stop memcg-exporter
  run_binary ""
  perf report -i /tmp/perf.data --stdio --no-children --sort dso -g none 2>/dev/null | grep '%' | head -n 12 | sed 's/^/NETDATA perf dso /'
  perf report -i /tmp/perf.data --stdio --no-children --sort sym -g none 2>/dev/null | grep '%' | head -n 80 | cut -c1-160 | sed 's/^/NETDATA perf /'
  # The collector thread alone, inclusive of what it calls: its system calls,
  # sleeps and interrupts side by side.
  perf report -i /tmp/perf.data --stdio --children --tid "$pid" --sort sym -g none 2>/dev/null | grep '%' | head -n 60 | cut -c1-160 |
    sed 's/^/NETDATA perf collector /'
  # The other threads by name (the http-worker threads render the scrapes), and
  # the scrape's own functions: render, compression, the snapshot's use.
  perf report -i /tmp/perf.data --stdio --no-children --sort comm -g none 2>/dev/null | grep '%' | head -n 8 | sed 's/^/NETDATA perf thread /'
  perf report -i /tmp/perf.data --stdio --no-children --comm http-worker --sort dso,sym -g none 2>/dev/null | grep '%' | head -n 40 |
    cut -c1-160 | sed 's/^/NETDATA perf scrape /'
fi
# --- a cAdvisor-style reader: the memory part of runc's GetStats for every
# cgroup at cAdvisor's default housekeeping interval (1 s), alone
# (tests/bench/cadvisor_style.cpp says what it reads and what it leaves out).
memcg-cadvisor-style $CG --seconds $window --interval 1 > /tmp/cadvisor.txt
sed 's/^CADVISOR_STYLE/NETDATA cadvisor-style:/' /tmp/cadvisor.txt
ca=$(sed -n 's/.*: \([0-9.]*\) us per cgroup per second.*/\1/p' /tmp/cadvisor.txt)
awk -v a="$ca" -v b="$me" 'BEGIN { if (a > 0 && b > 0) printf "NETDATA ratio: cadvisor-style / memcg-exporter = %.1fx CPU per cgroup per second\n", a / b }'
# --- netdata: the cgroups plugin alone, every cgroup, every second. What
# keeps its warm-up short under emulation: no renaming script per new cgroup,
# no network-namespace probe per new cgroup, and a low fd limit (its popen()
# closes every fd up to the limit, one syscall each, per spawn).
cat > /etc/netdata/netdata.conf <<'CONF'
[global]
	bind socket to IP = 127.0.0.1
[db]
	update every = 1
[ml]
	enabled = no
[statsd]
	enabled = no
[plugins]
	cgroups = yes
	enable running new plugins = no
	proc = no
	diskspace = no
	tc = no
	timex = no
	idlejitter = no
	netdata monitoring = no
	apps = no
	slabinfo = no
	perf = no
	nfacct = no
	ebpf = no
	charts.d = no
	python.d = no
	go.d = no
	fping = no
	ioping = no
	freeipmi = no
[plugin:cgroups]
	update every = 1
	check for new cgroups every = 10
	max cgroups to allow = 5000
	max cgroups depth to monitor = 0
	enable by default cgroups matching = !/ !*/init.scope !/system.slice/run-*.scope *
	search for cgroups in subpaths matching = !*/init.scope !/init.scope !/user.slice *
	run script to rename cgroups matching = !*
	script to get cgroup network interfaces = /bin/true
CONF
mkdir -p /etc/systemd/system/netdata.service.d
printf '[Service]\nLimitNOFILE=4096\n' > /etc/systemd/system/netdata.service.d/limits.conf
systemctl daemon-reload
systemctl start netdata
charted() { curl -sf http://127.0.0.1:19999/api/v1/charts | grep -o '"cgroup_bench[^".]*\.' | sort -u | wc -l; }
last=-1 stable=0 waited=0
while [ $waited -lt 1500 ]; do  # discovery, chart creation, metadata writes
  sleep 15
  waited=$((waited + 15))
  now=$(charted)
  if [ "$now" = "$last" ] && [ "$now" -ge $((bench * 9 / 10)) ]; then stable=$((stable + 1)); else stable=0; fi
  [ $stable -ge 2 ] && break
  last=$now
done
npid=$(systemctl show -p MainPID --value netdata)
curl -sf http://127.0.0.1:19999/api/v1/charts > /tmp/charts.json
ncg=$(grep -o '"cgroup_[^".]*\.' /tmp/charts.json | sort -u | wc -l)
ncharts=$(grep -o '"cgroup_[^".]*\.[a-z_]*"' /tmp/charts.json | sort -u | wc -l)
echo "NETDATA netdata after ${waited} s: $ncg cgroups charted ($(charted) of the $bench under bench), $ncharts cgroup charts ($(grep -o '"cgroup_[^".]*\.[a-z_]*"' /tmp/charts.json | sed 's/.*\.//; s/"//' | sort -u | tr '\n' ' '))"
tid=""
for t in /proc/$npid/task/*; do case "$(cat $t/comm)" in *cgroups*|*CGROUP*) tid=${t##*/} ;; esac; done
a0=$(cpu_ns $npid); t0=$( [ -n "$tid" ] && awk '{print $1}' /proc/$npid/task/$tid/schedstat || echo 0)
sleep $window
a1=$(cpu_ns $npid); t1=$( [ -n "$tid" ] && awk '{print $1}' /proc/$npid/task/$tid/schedstat || echo 0)
systemctl stop netdata
nd=$(awk -v c=$((a1 - a0)) -v w=$window -v n=$ncg 'BEGIN { if (n > 0) printf "%.2f", c / 1000 / w / n; else print 0 }')
ndt=$(awk -v c=$((t1 - t0)) -v w=$window -v n=$ncg 'BEGIN { if (n > 0) printf "%.2f", c / 1000 / w / n; else print 0 }')
echo "NETDATA netdata: whole daemon $(( (a1 - a0) / 1000000 )) ms in ${window} s = $nd us per cgroup per second (cgroups thread alone $ndt)"

echo "NETDATA check: $(find $CG/bench -type d | wc -l) cgroups under bench, $(cat /sys/fs/cgroup/bench/cgroup.procs 2>/dev/null | wc -l) procs in bench itself, $(pgrep -c sleep) sleep processes"
awk -v a="$nd" -v b="$me" 'BEGIN { if (b > 0) printf "NETDATA ratio: netdata / memcg-exporter = %.1fx CPU per cgroup per second\n", a / b }'
if [ "$ncg" -gt 0 ] && [ -n "$me" ]; then echo "RESULT PASS"; else echo "RESULT FAIL"; fi
systemctl poweroff --no-block
