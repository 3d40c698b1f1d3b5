#!/usr/bin/env bash
# Stage 1 alone: tests/vm/run-kernel.sh with MEMCG_VM_CHECKS=stage1 (a real
# Linux kernel under QEMU boots an initramfs with the project's binaries and
# runs memcg-vmcheck against memcg-exporter on a live cgroup v2 tree).
# packaging/run-tests runs stage 1 and the OOM check in one boot per kernel.
# Usage: tests/vm/run-stage1.sh BUILD_DIR      (exit 0 = pass)
# SOAK_SECONDS, SOAK_MIN_RATE, FIXTURES_OUT, MEMCG_VM_KERNEL: see run-kernel.sh.
exec env MEMCG_VM_CHECKS=stage1 "$(dirname "$0")/run-kernel.sh" "$@"
