#!/usr/bin/env python3
"""What a scrape costs through the web front, for two or more builds side by
side in one run: each binary serves the same fixture tree (a 2,500-pod node,
default profile) and is scraped N times in a row, plain and gzip, on one
kept-alive connection; rounds alternate the binaries' order. Prints, per
binary and encoding, the client's median wall time per scrape and the
daemon's CPU per scrape outside the collector (process CPU minus the
probe, read, rescan and wait phases of memcg_exporter_cpu_seconds_total).

  python3 tests/bench/scrape_front.py --fixture build/tests/fixtures/memcg-fixture \\
      --binary now=build/exporter/memcg-exporter --binary before=/path/to/old/memcg-exporter
"""
import argparse, http.client, os, statistics, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Tree, Exporter, parse_metrics  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--fixture", required=True)
ap.add_argument("--binary", action="append", required=True, help="NAME=PATH")
ap.add_argument("--scrapes", type=int, default=200)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--pods", type=int, default=2500)
args = ap.parse_args()

COLLECTOR = ("probe", "read", "rescan", "wait")
TICKS = os.sysconf("SC_CLK_TCK")

def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS

def collector_cpu(body):
    m = parse_metrics(body)
    return sum(m[("memcg_exporter_cpu_seconds_total", (("phase", p),))] for p in COLLECTOR)

def run(binary, root, gzip):
    with Exporter(binary, root) as ex:
        conn = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=30)
        headers = {"Accept-Encoding": "gzip"} if gzip else {}
        def get():
            conn.request("GET", "/metrics", headers=headers)
            r = conn.getresponse()
            return r.read()
        for _ in range(5):
            size = len(get())
        before_cpu, before_col = process_cpu(ex.proc.pid), collector_cpu(ex.get("/metrics")[2].decode())
        waits = []
        for _ in range(args.scrapes):
            t0 = time.perf_counter()
            get()
            waits.append(time.perf_counter() - t0)
        after_cpu, after_col = process_cpu(ex.proc.pid), collector_cpu(ex.get("/metrics")[2].decode())
        conn.close()
        front = ((after_cpu - before_cpu) - (after_col - before_col)) / args.scrapes
        return statistics.median(waits), front, size

binaries = dict(b.split("=", 1) for b in args.binary)
root = Tree(args.fixture, f"kubernetes-{args.pods}").root
results = {}
for rnd in range(args.rounds):
    order = list(binaries.items())
    if rnd % 2:
        order.reverse()
    for name, path in order:
        for gzip in (False, True):
            results.setdefault((name, gzip), []).append(run(path, root, gzip))

print(f"{args.scrapes} scrapes x {args.rounds} rounds, kubernetes-{args.pods} fixture, default profile")
print("| build | encoding | body | wall per scrape (median) | daemon CPU per scrape, collector excluded |")
print("|---|---|---|---|---|")
for (name, gzip), rs in results.items():
    wall = statistics.median(r[0] for r in rs) * 1000
    cpu = statistics.median(r[1] for r in rs) * 1000
    print(f"| {name} | {'gzip' if gzip else 'plain'} | {rs[0][2] / 1e6:.2f} MB | {wall:.2f} ms | {cpu:.2f} ms |")
