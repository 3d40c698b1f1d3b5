#!/bin/sh
# /init of the benchmark initramfs (tests/vm/run-bench.sh).
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o size=3g tmp /tmp
mount -t cgroup2 none /sys/fs/cgroup
ip link set lo up
CG=/sys/fs/cgroup
n=10000
ticks=40
synthetic=1
scrape_only=0
cost=0
baseline=0
premise=0
micro=0
micro_filter=
for a in $(cat /proc/cmdline); do
  case $a in
    memcg_bench_cost=*) cost=${a#*=} ;;
    memcg_bench_n=*) n=${a#*=} ;;
    memcg_bench_ticks=*) ticks=${a#*=} ;;
    memcg_bench_synthetic=*) synthetic=${a#*=} ;;
    memcg_bench_scrape=*) scrape_only=${a#*=} ;;
    memcg_bench_baseline=*) baseline=${a#*=} ;;
    memcg_bench_premise=*) premise=${a#*=} ;;
    memcg_bench_micro=*) micro=${a#*=} ;;
    memcg_bench_micro_filter=*) micro_filter=${a#*=} ;;
  esac
done
echo "VMBENCH kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null), $n cgroups, $ticks ticks"
ulimit -n 1048576 || { echo "VMBENCH cannot raise RLIMIT_NOFILE"; memcg-vmload exit 1; }
echo "+memory" > $CG/cgroup.subtree_control
mkdir $CG/agent
echo $$ > $CG/agent/cgroup.procs
rc=0

# The daemon's own code under the emulator: the micro-benchmarks' fixture
# trees live on tmpfs, so their reads cost the guest little and what a
# benchmark adds to BM_BareLoop's reads of the same files is instructions
# (docs/performance-history.md, "The daemon's own instructions under the emulator").
# With a baseline build, the two alternately, twice each.
if [ "$micro" = 1 ]; then
  builds=memcg-microbench
  [ -x /bin/memcg-microbench-baseline ] && builds="memcg-microbench-baseline memcg-microbench memcg-microbench-baseline memcg-microbench"
  for b in $builds; do
    echo "VMBENCH micro: $b"
    out=$($b --benchmark_filter="$micro_filter" --benchmark_min_time="$ticks" 2>&1) || rc=1
    echo "$out" | grep '^BM_' | sed "s/^/VMBENCH micro $b: /"
  done
  echo "VMBENCH done rc=$rc"
  memcg-vmload exit $rc
  poweroff -f
fi

# The premise on this kernel (docs/how-the-cache-decides.md): a memory.stat
# read against a memory.current read, quiet and busy, with the kernel's memcg
# flushes counted; then the whole daemon at its defaults against the naive
# daemon (threshold 0: memory.stat re-read every pass), each decomposed by
# memcg-cost; at 1,000 cgroups and again at N.
if [ "$premise" = 1 ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
  # The function a memcg flush runs: 6.1's whole-tree flush, 6.8+'s subtree one.
  for f in cgroup_rstat_flush_irqsafe cgroup_rstat_flush css_rstat_flush; do
    grep -qE " [tT] $f\$" /proc/kallsyms && { fn=$f; break; }
  done
  echo "p:memcgflush $fn" > /sys/kernel/tracing/kprobe_events && echo 1 > /sys/kernel/tracing/events/kprobes/memcgflush/enable ||
    echo "VMBENCH premise: no kprobe on $fn"
  echo "VMBENCH premise: flushes counted at $fn; memcg_flush_stats tracepoint: $([ -d /sys/kernel/tracing/events/memcg/memcg_flush_stats ] && echo yes || echo no)"
  mkdir -p $CG/bench $CG/daemon
  echo +memory > $CG/bench/cgroup.subtree_control
  for q in 0 1 2; do mkdir -p $CG/bench/q$q; echo +memory > $CG/bench/q$q/cgroup.subtree_control; done
  made=0
  grow() {  # pods up to $1 cgroups in all (4 per pod: the pod and 3 containers)
    want=$(( ($1 - 4) / 4 ))
    seq $made $((want - 1)) | awk -v cg=$CG/bench '{print cg "/q" ($1 % 3) "/pod" $1}' | xargs mkdir
    seq $made $((want - 1)) | awk -v cg=$CG/bench '{print cg "/q" ($1 % 3) "/pod" $1 "/cgroup.subtree_control"}' |
      while read -r f; do echo +memory > "$f"; done
    seq $made $((want - 1)) | awk -v cg=$CG/bench '{for (c = 0; c < 3; c++) print cg "/q" ($1 % 3) "/pod" $1 "/c" c}' | xargs mkdir
    made=$want
  }
  grow 1000
  busy=""
  for p in 0 1 2 3 4 5 6 7; do
    sh -c 'echo $$ > "$0/cgroup.procs" && exec memcg-vmload wave 16' "$CG/bench/q$((p % 3))/pod$p/c0" >/dev/null 2>&1 &
    busy="$busy,q$((p % 3))/pod$p/c0"
  done
  printf '[defaults]\nthreshold = 0\n' > /tmp/naive.toml
  for size in 1000 $n; do
    [ "$size" -gt "$made" ] && grow "$size"
    cgs=$(find $CG/bench -type d | wc -l)
    echo "VMBENCH premise: $cgs cgroups under bench, 8 busy leaves"
    memcg-premise --root $CG/bench --busy "${busy#,}" --label "$cgs" --kprobe memcgflush 2>&1 | sed 's/^/VMBENCH /'
    for variant in default naive; do
      args=""
      [ $variant = naive ] && args="--config /tmp/naive.toml"
      echo "VMBENCH premise daemon: $variant over $cgs cgroups"
      sh -c 'echo $$ > /sys/fs/cgroup/daemon/cgroup.procs && exec memcg-exporter "$@" --root /sys/fs/cgroup/bench --web.listen-address 127.0.0.1:9756' sh $args >/tmp/exporter.log 2>&1 &
      xpid=$!
      i=0
      while [ $i -lt 300 ] && ! wget -qO /dev/null http://127.0.0.1:9756/-/ready 2>/dev/null; do sleep 1; i=$((i + 1)); done
      sleep 20
      h0=$(awk '$1 == "memcgflush" {print $2}' /sys/kernel/tracing/kprobe_profile)
      memcg-cost --port 9756 --pid $xpid --seconds "$ticks" --scrape-every 15 --bare $CG/bench 2>&1 | sed 's/^/VMBENCH /' || rc=1
      h1=$(awk '$1 == "memcgflush" {print $2}' /sys/kernel/tracing/kprobe_profile)
      echo "VMBENCH premise daemon: $variant over $cgs cgroups: $((h1 - h0)) memcg flushes during the window and the bare loops"
      kill $xpid
      wait $xpid 2>/dev/null
    done
  done
  echo "VMBENCH done rc=$rc"
  memcg-vmload exit $rc
  poweroff -f
fi

if [ "$cost" = 1 ]; then
  # The whole daemon at its default configuration over N real cgroups shaped
  # like a node (bench/qQ/podP/cC), 8 leaves churning memory, one gzip scrape
  # every 15 s, decomposed by memcg-cost; then the bare memory.current loop
  # over the same cgroups, alone, for the same time.
  mkdir -p $CG/bench
  echo +memory > $CG/bench/cgroup.subtree_control
  pods=$(( (n - 4) / 4 ))
  for q in 0 1 2; do mkdir -p $CG/bench/q$q; echo +memory > $CG/bench/q$q/cgroup.subtree_control; done
  p=0
  while [ $p -lt $pods ]; do
    d=$CG/bench/q$((p % 3))/pod$p
    mkdir $d
    echo +memory > $d/cgroup.subtree_control
    mkdir $d/c0 $d/c1 $d/c2
    p=$((p + 1))
  done
  for p in 0 1 2 3 4 5 6 7; do
    sh -c 'echo $$ > "$0/cgroup.procs" && exec memcg-vmload wave 16' "$CG/bench/q$((p % 3))/pod$p/c0" >/dev/null 2>&1 &
  done
  echo "VMBENCH cost: $(find $CG/bench -type d | wc -l) cgroups under bench, 8 busy leaves"
  mkdir $CG/daemon
  # The default configuration, then max_age 30 s (the re-reads' share), each
  # alone over the same cgroups in this boot.
  printf '[defaults]\nmax_age = "30s"\n' > /tmp/max-age-30s.toml
  variants="default max-age-30s"
  # A before/after: an earlier build and this one, alternately, twice.
  [ "$baseline" = 1 ] && variants="baseline default baseline default"
  for variant in $variants; do
    args=""
    exe=memcg-exporter
    case $variant in
      baseline) exe=memcg-exporter-baseline ;;
      default) ;;
      *) args="--config /tmp/$variant.toml" ;;
    esac
    echo "VMBENCH cost variant: $variant"
    sh -c 'echo $$ > /sys/fs/cgroup/daemon/cgroup.procs && exec "$0" "$@" --root /sys/fs/cgroup/bench --web.listen-address 127.0.0.1:9756' $exe $args >/tmp/exporter.log 2>&1 &
    xpid=$!
    i=0
    while [ $i -lt 120 ] && ! wget -qO /dev/null http://127.0.0.1:9756/-/ready 2>/dev/null; do sleep 1; i=$((i + 1)); done
    # Past the initial reads and the first refreshes, and past the first
    # periodic limits read (collector.limits_max_age, 60 s): that one reads
    # every cgroup's five limit files and sets their inotify watches, after
    # which the limits are read only when written. A window from 30 s
    # measured that one-off read of all 1,000 cgroups (16.6 a second of
    # each limit file) as if it were the steady state.
    sleep 75
    memcg-cost --port 9756 --pid $xpid --seconds "${ticks}" --scrape-every 15 --bare $CG/bench 2>&1 | sed 's/^/VMBENCH /' || rc=1
    grep -E 'level=(warning|error)' /tmp/exporter.log | head -n 5 | sed 's/^/VMBENCH log: /'
    kill $xpid
    wait $xpid 2>/dev/null
  done
  echo "VMBENCH done rc=$rc"
  memcg-vmload exit $rc
  poweroff -f
fi

if [ "$scrape_only" = 1 ]; then
  # One collector over a Kubernetes-shaped tmpfs tree with 1 % changing, then
  # one scrape per profile (series and bytes per cgroup, gzip CPU).
  echo "VMBENCH scrape only, Kubernetes-shaped tree on tmpfs"
  memcg-bench --scrape-only 1 --cgroups "$n" --ticks "$ticks" --busy 1 --dir /tmp/bench 2>&1 | sed 's/^/VMBENCH /' || rc=1
  echo "VMBENCH done rc=$rc"
  memcg-vmload exit $rc
  poweroff -f
fi

if [ "$synthetic" = 1 ]; then
  echo "VMBENCH synthetic tree on tmpfs"
  memcg-bench --cgroups "$n" --ticks "$ticks" --dir /tmp/bench 2>&1 | sed 's/^/VMBENCH /' || rc=1
fi

# Real cgroups, shaped like a node: bench / 3 QoS slices / pods / 3 containers.
pods=$(( (n - 4) / 4 ))
echo "VMBENCH creating $((pods * 4 + 4)) real cgroups"
mkdir $CG/bench
echo +memory > $CG/bench/cgroup.subtree_control
for q in 0 1 2; do
  mkdir $CG/bench/q$q
  echo +memory > $CG/bench/q$q/cgroup.subtree_control
done
seq 0 $((pods - 1)) | awk -v cg=$CG/bench '{print cg "/q" ($1 % 3) "/pod" $1}' | xargs mkdir
for d in $CG/bench/q*/pod*; do echo +memory > $d/cgroup.subtree_control; done
seq 0 $((pods - 1)) | awk -v cg=$CG/bench '{for (c = 0; c < 3; c++) print cg "/q" ($1 % 3) "/pod" $1 "/c" c}' | xargs mkdir
echo "VMBENCH real cgroups: $(find $CG/bench -type d | wc -l)"
memcg-bench --use-root $CG/bench --ticks "$ticks" 2>&1 | sed 's/^/VMBENCH /' || rc=1

# The daemon itself over the same tree: RSS after the first pass, after
# scrapes (the body is built and freed per scrape) and its peak.
memcg-exporter --root $CG/bench --web.listen-address 127.0.0.1:9756 >/tmp/exporter.log 2>&1 &
pid=$!
for i in $(seq 1 120); do wget -qO /dev/null http://127.0.0.1:9756/-/ready 2>/dev/null && break; sleep 1; done
rss() { grep -E '^(VmRSS|VmHWM)' /proc/$pid/status | tr -s ' \t\n' ' '; }
echo "VMBENCH exporter over $n real cgroups, after the first pass: $(rss) fds=$(ls /proc/$pid/fd | wc -l)"
for i in 1 2 3; do wget -O /tmp/body http://127.0.0.1:9756/metrics 2>&1 | tail -n 1 | sed "s/^/VMBENCH wget: /"; done
echo "VMBENCH exporter after 3 scrapes ($(wc -c < /tmp/body) bytes each): $(rss)"
sleep 20
echo "VMBENCH exporter 20 s later: $(rss)"
kill $pid
echo "VMBENCH done rc=$rc"
memcg-vmload exit $rc
poweroff -f
