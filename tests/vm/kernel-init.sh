#!/bin/sh
# /init of the real-kernel guest (tests/vm/run-kernel.sh): one boot runs the
# checks the kernel command line names (memcg_checks=stage1,oom), each in
# turn, each a script of its own under /checks, each ending in one line
# "RESULT <check> PASS|FAIL" so that a failure names its check. stage1 ends
# with its processes killed, its cgroups removed and the clock put back;
# oom, last, never ends: the host ends the run (tests/vm/oom_e2e.py). With
# no oom the verdict goes back as QEMU's exit status.
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t cgroup2 none /sys/fs/cgroup
ip link set lo up
echo "VMKERNEL kernel $(uname -r)"

checks=stage1
for a in $(cat /proc/cmdline); do
  case $a in memcg_checks=*) checks=$(echo "${a#*=}" | tr ',' ' ') ;; esac
done
# The guest's network card and disk (the oom check's), brought up once.
if [ -f /lib/modules/order ]; then
  for m in $(cat /lib/modules/order); do insmod /lib/modules/$m.ko || echo "VMKERNEL insmod $m failed"; done
  ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
fi
mkdir -p /mnt
[ -b /dev/nvme0n1 ] && { mount -t ext4 /dev/nvme0n1 /mnt || echo "VMKERNEL mount failed"; }

verdict=0
for c in $checks; do
  echo "VMKERNEL begin $c at $(cut -d' ' -f1 /proc/uptime) s"
  if sh /checks/$c.sh; then echo "RESULT $c PASS"; else echo "RESULT $c FAIL"; verdict=1; fi
done
memcg-vmload exit $verdict
poweroff -f
