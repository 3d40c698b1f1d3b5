#!/bin/sh
# The OOM end-to-end check (tests/vm/kernel-init.sh runs it, last: it never
# ends; tests/vm/run-kernel.sh boots it and tests/vm/oom_e2e.py ends the
# run): a real kernel with cgroup v2 and the guest's network card and disk
# (brought up by the init), memcg-exporter at probe_interval 10s on the
# guest's network, scraped by a real Prometheus on the host through QEMU's
# forwarded port, and three workloads under e2e/:
#   cache   page cache held at memory.max (96 MiB): reclaimable, never killed
#   leak    anonymous memory growing 2 MiB/s until memory.max (384 MiB) kills it
#   victim  a container-like cgroup whose task is OOM-killed and removed as
#           soon as the kernel allows (memcg-vmoom, which times the kill's
#           way to /metrics), created again VICTIMS times (8) while the
#           cache is held: the exporter's wake-up races each removal, and
#           every kill must show on its victim (docs/oom.md#removed-before-read)
# Lines starting OOMTEST or VMOOM are read by the host (oom_e2e.py), which
# ends the run.
CG=/sys/fs/cgroup
echo "OOMTEST kernel $(uname -r)"

grep -q ' /mnt ext4 ' /proc/mounts || echo "OOMTEST FAIL no disk at /mnt"
ip link show eth0 >/dev/null 2>&1 || echo "OOMTEST FAIL no eth0"
truncate -s 512M /mnt/big   # sparse: reading it fills page cache without disk I/O

echo "+memory +pids" > $CG/cgroup.subtree_control
mkdir $CG/e2e $CG/e2e/cache $CG/e2e/leak
echo "+memory +pids" > $CG/e2e/cgroup.subtree_control
echo 100663296 > $CG/e2e/cache/memory.max
echo 402653184 > $CG/e2e/leak/memory.max

cat > /tmp/memcg.toml <<TOML
[collector]
probe_interval = "10s"
[web]
listen = [":9756"]
TOML
memcg-exporter --config /tmp/memcg.toml --root $CG > /tmp/exporter.log 2>&1 &
i=0
until wget -q -O /dev/null http://127.0.0.1:9756/-/ready 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 600 ] && { echo "OOMTEST FAIL exporter not ready"; cat /tmp/exporter.log; break; }
  sleep 0.1
done
echo "OOMTEST ready"

# Starts a command inside a cgroup.
run_in() {
  cg=$1
  shift
  sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG/$cg" "$@"
}
(run_in e2e/cache sh -c 'while :; do cat /mnt/big > /dev/null; sleep 5; done') &
(run_in e2e/leak memcg-vmload leak 2; echo "OOMTEST leak-ended status=$?") &
sleep 20
victims=0 rc=0
while [ $victims -lt 8 ] && [ $rc -eq 0 ]; do
  victims=$((victims + 1))
  memcg-vmoom $CG/e2e/victim e2e/victim 9756 || rc=1
done
echo "OOMTEST victim-done rc=$rc victims=$victims"
[ $rc -eq 0 ] || tail -n 30 /tmp/exporter.log  # in the console's tail the host prints on a failure
# The host ends the run; the exporter's log on request.
while :; do
  sleep 30
  echo "OOMTEST alive $(cat $CG/e2e/cache/memory.current) $(grep oom_kill $CG/e2e/memory.events)"
done
