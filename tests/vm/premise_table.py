#!/usr/bin/env python3
"""The premise tables of one PREMISE=1 boot (tests/vm/run-bench.sh) from its
VMBENCH lines on stdin: a memory.stat read against a memory.current read,
quiet and busy, with the kernel's memcg flushes per 100 reads; and the whole
daemon at its defaults against the naive one (threshold 0), in CPU per
cgroup per second (memcg-cost). Markdown, for docs/how-the-cache-decides.md."""
import re
import sys

kernel, reads, daemons = "?", [], []
variant = None
for line in sys.stdin:
    line = line.strip()
    if m := re.match(r"VMBENCH kernel (\S+),", line):
        kernel = m.group(1)
    elif m := re.match(r"VMBENCH PREMISE (\d+) (quiet|busy) cgroups=(\d+) .*current_us=([\d.]+) stat_us=([\d.]+) ratio=([\d.]+) "
                       r"flushes=(-?\d+) periodic=([\d.]+) flushes_per_100_reads=(-?[\d.]+)", line):
        reads.append(m.groups())
    elif m := re.match(r"VMBENCH premise daemon: (\w+) over (\d+) cgroups$", line):
        variant = [m.group(1), m.group(2), None, None, None, None]
        daemons.append(variant)
    elif variant and (m := re.match(r"VMBENCH COST \| whole daemon \| .* \| ([\d.]+) \| ([\d.]+)x \|", line)):
        variant[2], variant[3] = m.group(1), m.group(2)
    elif variant and (m := re.match(r"VMBENCH COST re-read: (\d+) memory.stat reads", line)):
        variant[4] = m.group(1)
    elif m := re.match(r"VMBENCH premise daemon: \w+ over \d+ cgroups: (\d+) memcg flushes", line):
        if variant:
            variant[5] = m.group(1)

print(f"Kernel {kernel}:\n")
print("| cgroups | cgroups read | memory.current read | memory.stat read + parse | ratio | memcg flushes per 100 memory.stat reads |")
print("|---|---|---|---|---|---|")
for size, kind, n, cur, stat, ratio, flushes, periodic, per100 in reads:
    print(f"| {int(size):,} | {kind}: {int(n):,} | {float(cur):.1f} µs | {float(stat):.1f} µs | {float(ratio):.1f}× | "
          f"{float(per100):.1f} ({flushes} in the passes, ~{float(periodic):.0f} of them periodic) |")
print()
print("| cgroups | daemon | CPU per cgroup per second | × its bare memory.current loop | memory.stat reads in the window | memcg flushes (window and bare loops) |")
print("|---|---|---|---|---|---|")
for name, size, us, bare, nreads, flushes in daemons:
    print(f"| {int(size):,} | {'defaults' if name == 'default' else 'naive (threshold 0)'} | {us} µs | {bare}× | {nreads} | {flushes} |")
by_size = {}
for name, size, us, *_ in daemons:
    if us:
        by_size.setdefault(size, {})[name] = float(us)
for size, v in by_size.items():
    if "default" in v and "naive" in v:
        print(f"\nAt {int(size):,} cgroups the naive daemon costs {v['naive'] / v['default']:.1f}× the cached one.")
