#!/usr/bin/env python3
"""What removed cgroups cost the exporter in memory: N pods with a container
in a fixture tree, collected, then all removed; the exporter's RSS with their
tombstones kept (metrics.removed_max = N) against the same run with none kept
(removed_retention = "0s"), and the bound holding when more are removed than
removed_max allows. docs/oom.md#removed-cgroups has a run's figures.

    python3 tests/bench/tombstone_memory.py --exporter build/exporter/memcg-exporter \\
        --fixture build/tests/fixtures/memcg-fixture [--cgroups 500]
"""
import argparse, os, shutil, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Tree, Exporter, write_config, series  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--cgroups", type=int, default=500, help="pods (two cgroups each: 14 fds per cgroup must fit RLIMIT_NOFILE)")
args = ap.parse_args()
TEMPLATE = "system.slice/web.service"


def run(retention, removed_max):
    tree = Tree(args.fixture)
    template = os.path.join(tree.root, TEMPLATE)
    parent = os.path.join(tree.root, "kubepods.slice")
    os.makedirs(parent, exist_ok=True)
    for f in os.listdir(template):  # kubepods.slice as a cgroup of its own
        if os.path.isfile(os.path.join(template, f)) and not os.path.exists(os.path.join(parent, f)):
            shutil.copy(os.path.join(template, f), parent)
    paths = []
    for i in range(args.cgroups):  # a pod and its container: two cgroups
        pod = os.path.join(parent, f"pod{i:04}")
        shutil.copytree(template, pod)
        shutil.copytree(template, os.path.join(pod, "cri-containerd-" + f"{i:064x}" + ".scope"))
        paths.append(pod)
    cfg = write_config(f'[collector]\nrescan_interval = "1s"\n[metrics]\nremoved_retention = "{retention}"\n'
                       f'removed_max = {removed_max}\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_cgroups", ())] > args.cgroups * 2, "collected", timeout=60)
        time.sleep(3)
        before = ex.metrics()[("process_resident_memory_bytes", ())]
        for p in paths:
            shutil.rmtree(p)
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_cgroups", ())] < 20, "removed", timeout=60)
        time.sleep(3)
        m = ex.metrics()
        after = m[("process_resident_memory_bytes", ())]
        kept = m[("memcg_exporter_removed_cgroups", ())]
        dropped = m[("memcg_exporter_removed_dropped_total", ())]
    shutil.rmtree(tree.root, ignore_errors=True)
    return before, after, kept, dropped


for label, retention, bound in (("none kept", "0s", 0), (f"all kept", "10m", 2 * args.cgroups),
                                (f"bound {args.cgroups // 2}", "10m", args.cgroups // 2)):
    before, after, kept, dropped = run(retention, bound)
    print(f"{label:>12}: {2 * args.cgroups} cgroups removed, {kept:.0f} kept, {dropped:.0f} dropped; "
          f"RSS {before / 2**20:.1f} MiB collected -> {after / 2**20:.1f} MiB after removal")
