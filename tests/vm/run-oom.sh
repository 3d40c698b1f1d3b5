#!/usr/bin/env bash
# The OOM check alone: tests/vm/run-kernel.sh with MEMCG_VM_CHECKS=oom (a
# busybox guest runs memcg-exporter at probe_interval 10s with a page cache
# workload held at its memory.max, an anonymous leak growing into its
# memory.max, and a cgroup OOM-killed and removed as soon as the kernel
# allows; a real Prometheus on the host evaluates the shipped rules and
# tests/vm/oom_e2e.py checks what fired and when: docs/oom.md#measured).
# packaging/run-tests runs stage 1 and the OOM check in one boot per kernel.
# Usage: tests/vm/run-oom.sh BUILD_DIR      (exit 0 = pass)
# OOM_CACHE_HOLD, MEMCG_VM_KERNEL: see run-kernel.sh.
exec env MEMCG_VM_CHECKS=oom "$(dirname "$0")/run-kernel.sh" "$@"
