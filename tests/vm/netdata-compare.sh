#!/bin/bash
# Runs inside the stage-2 guest with netdata-core installed (run-netdata.sh).
# Builds N idle cgroups shaped like a node (bench/qQ/podP/cC), then measures,
# one collector at a time for 60 s, the CPU each spends per pass per cgroup:
# memcg-exporter (whole process, probe_interval 1 s, its default max_age) and
# netdata's cgroups collector thread (update every 1 s). netdata also reads
# cpu, io and pids files per cgroup; memcg-exporter reads memory only.
exec > /dev/ttyS0 2>&1
set -u
n=1000
CG=/sys/fs/cgroup
echo "NETDATA kernel $(uname -r), $(nproc) vCPUs"
systemctl stop netdata memcg-exporter 2>/dev/null
mkdir -p $CG/bench
echo +memory > $CG/bench/cgroup.subtree_control
pods=$(( (n - 4) / 4 ))
for q in 0 1 2; do mkdir -p $CG/bench/q$q; echo +memory > $CG/bench/q$q/cgroup.subtree_control; done
for p in $(seq 0 $((pods - 1))); do
  d=$CG/bench/q$((p % 3))/pod$p
  mkdir -p $d
  echo +memory > $d/cgroup.subtree_control
  mkdir -p $d/c0 $d/c1 $d/c2
done
total=$(find $CG -mindepth 1 -type d | wc -l)
echo "NETDATA cgroups on the host: $total"
ticks() { awk '{print $14 + $15}' "$1"; }   # utime + stime of a /proc stat file
hz=$(getconf CLK_TCK)

# memcg-exporter: the packaged service, default config.
systemctl start memcg-exporter
for _ in $(seq 120); do curl -sf http://127.0.0.1:9756/-/ready >/dev/null && break; sleep 1; done
sleep 15  # past the first passes
pid=$(systemctl show -p MainPID --value memcg-exporter)
p0=$(curl -sf http://127.0.0.1:9756/metrics | awk '$1 == "memcg_exporter_passes_total" {print $2}')
c0=$(ticks /proc/$pid/stat)
sleep 60
c1=$(ticks /proc/$pid/stat)
p1=$(curl -sf http://127.0.0.1:9756/metrics | awk '$1 == "memcg_exporter_passes_total" {print $2}')
ncg=$(curl -sf http://127.0.0.1:9756/metrics | grep -c '^memcg_cgroup_info{')
passes=$(awk -v a="$p0" -v b="$p1" 'BEGIN { print b - a }')
echo "NETDATA memcg-exporter: $ncg cgroups, $passes passes in 60 s, CPU $(( (c1 - c0) * 1000 / hz )) ms (whole process, scrapes excluded but 3 above)"
awk -v c=$((c1 - c0)) -v hz=$hz -v p=$passes -v n=$ncg 'BEGIN { printf "NETDATA memcg-exporter per pass per cgroup: %.1f us\n", c / hz / p / n * 1e6 }'
systemctl stop memcg-exporter

# netdata: cgroups collector at 1 s, room for every cgroup.
mkdir -p /etc/netdata
cat >> /etc/netdata/netdata.conf <<CONF
[global]
  update every = 1
[plugin:cgroups]
  update every = 1
  check for new cgroups every = 10
  max cgroups to allow = 5000
  max cgroups depth to monitor = 0
CONF
systemctl start netdata
for _ in $(seq 24); do  # discovery and chart creation
  sleep 5
  curl -sf http://127.0.0.1:19999/api/v1/charts | grep -q '"cgroup_bench' && break
done
sleep 20
npid=$(systemctl show -p MainPID --value netdata)
tid=""
for t in /proc/$npid/task/*; do
  case "$(cat $t/comm)" in *cgroup*|*CGROUP*) tid=${t##*/}; break ;; esac
done
echo "NETDATA netdata threads: $(cat /proc/$npid/task/*/comm | sort | uniq -c | tr -s ' \n' ' ')"
if [ -n "$tid" ]; then
  curl -sf http://127.0.0.1:19999/api/v1/charts > /tmp/charts.json
  # One chart per collected cgroup: cgroup_<name>.mem_usage (or .mem on cgroup v2 builds).
  charts=$(grep -o '"cgroup_[^"]*\.\(mem_usage\|mem\)"' /tmp/charts.json | sort -u | wc -l)
  echo "NETDATA charts API: $(wc -c < /tmp/charts.json) bytes, $(grep -o '"cgroup_[^".]*\.[a-z_]*"' /tmp/charts.json | sed 's/.*\.//' | sort | uniq -c | sort -rn | head -5 | tr -s ' \n' ' ')"
  grep 'PLUGIN\[cgroups\]\|cgroups.plugin\|CGROUP' /var/log/netdata/error.log 2>/dev/null | tail -n 8 | sed 's/^/NETDATA log: /'
  curl -sf http://127.0.0.1:19999/netdata.conf | sed -n '/^\[plugin:cgroups\]/,/^\[/p' | grep -v '^\s*#\s*$' | head -n 40 | sed 's/^/NETDATA conf: /' 
  t0=$(ticks /proc/$npid/task/$tid/stat)
  a0=$(ticks /proc/$npid/stat)
  sleep 60
  t1=$(ticks /proc/$npid/task/$tid/stat)
  a1=$(ticks /proc/$npid/stat)
  echo "NETDATA netdata: $charts cgroups charted, cgroups thread '$(cat /proc/$npid/task/$tid/comm)' CPU $(( (t1 - t0) * 1000 / hz )) ms in 60 s (whole process $(( (a1 - a0) * 1000 / hz )) ms)"
  [ "$charts" -gt 0 ] && awk -v c=$((t1 - t0)) -v hz=$hz -v n=$charts 'BEGIN { printf "NETDATA netdata per pass per cgroup: %.1f us\n", c / hz / 60 / n * 1e6 }'
else
  echo "NETDATA netdata: no cgroups collector thread found"
fi
systemctl stop netdata
echo "RESULT PASS"
systemctl poweroff --no-block
