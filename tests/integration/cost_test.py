#!/usr/bin/env python3
"""memcg-cost against a running exporter on a fixture tree: every part of the
decomposition is reported, the parts add up to the whole daemon, the bare
loop ran over the same cgroups and the re-read floor paced like the daemon."""
import argparse, re, subprocess
from harness import Tree, Exporter, write_config, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--cost", required=True)
args = ap.parse_args()

def test_decomposition_adds_up():
    tree = Tree(args.fixture, "containers")
    cfg = '[collector]\nprobe_interval = "100ms"\nrescan_interval = "300ms"\n[defaults]\nmax_age = "1s"\n'
    with Exporter(args.exporter, tree.root, write_config(cfg)) as ex:
        out = subprocess.run([args.cost, "--port", str(ex.port), "--pid", str(ex.proc.pid), "--seconds", "4",
                              "--scrape-every", "1", "--bare", tree.root], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        print(out.stdout)
        rows = {m.group(1): (float(m.group(2)), float(m.group(3)))
                for m in re.finditer(r"^COST \| ([^|]+?) \| ([0-9.-]+) ms \| ([0-9.-]+) \|", out.stdout, re.M)}
        for part in ("probe", "read", "rescan", "wait", "scrape", "http", "whole daemon"):
            assert part in rows, (part, out.stdout)
        # Passes, the waits between them, reads, rescans and four scrapes all happened in 4 s.
        for part in ("probe", "read", "rescan", "wait", "scrape"):
            assert rows[part][0] > 0, (part, out.stdout)
        parts = sum(v[0] for k, v in rows.items() if k != "whole daemon")
        assert abs(parts - rows["whole daemon"][0]) < 0.01, out.stdout  # other = whole - phases
        # ... and "other" is told apart by the thread it ran on.
        t = re.search(r"^COST other by thread: collector outside its phases ([0-9.-]+) ms \(([0-9.]+) event wake-ups a "
                      r"second between passes\), web server outside /metrics ([0-9.-]+) ms, other threads ([0-9.-]+) ms",
                      out.stdout, re.M)
        assert t, out.stdout
        other = rows["other (web server outside /metrics, other threads)"][0]
        assert abs(float(t.group(1)) + float(t.group(3)) + float(t.group(4)) - other) < 0.01, out.stdout
        # The collector's time between passes is the wait phase's, not "other"'s.
        assert abs(float(t.group(1))) < max(0.5 * rows["wait"][0], 1.0), out.stdout
        assert re.search(r"bare loop over (\d+) cgroups", out.stdout), out.stdout
        front = re.search(r"^COST front: (\d+) bytes received, (\d+) sent", out.stdout, re.M)
        assert front and int(front.group(1)) > 0 and int(front.group(2)) > 0, out.stdout  # the scrapes went through the gate
        assert "| bare memory.current loop |" in out.stdout
        # The same loop beside the daemon, in its window: a tick a second over the same cgroups.
        b = re.search(r"^COST \| bare memory.current loop beside the daemon, in its window \((\d+) ticks over (\d+) "
                      r"cgroups\) \| \| ([0-9.]+) \|", out.stdout, re.M)
        n = re.search(r"bare loop over (\d+) cgroups", out.stdout)
        assert b and 3 <= int(b.group(1)) <= 5 and b.group(2) == n.group(1) and float(b.group(3)) > 0, out.stdout
        assert re.search(r"^COST the whole daemon is [0-9.]+x the bare loop beside it \([0-9.]+x the bare loop of the "
                         r"window after it\)$", out.stdout, re.M), out.stdout
        # The re-read floor ran paced like the daemon (max_age 1 s: reads every second).
        m = re.search(r"re-read: (\d+) memory.stat reads.*paced like the daemon ([0-9.]+) us: ([0-9.]+)x", out.stdout)
        assert m and int(m.group(1)) > 0 and float(m.group(2)) > 0, out.stdout
        # Why the reads happened, and the floor of the job as configured.
        assert re.search(r"^COST reads by reason:.* max_age [0-9.]+/s", out.stdout, re.M), out.stdout
        # ... and how many each cgroup had: max_age 1 s at 100 ms passes is
        # a quiet cgroup's read every 0.9 s, so 4 or 5 in a 4 s window (none
        # for a cgroup read by threshold instead), never more than the rate.
        spread = re.search(r"^COST max_age reads per cgroup in the window \(cgroups x reads\):((?: \d+x\d+)+)$", out.stdout, re.M)
        assert spread, out.stdout
        pairs = [tuple(map(int, p.split("x"))) for p in spread.group(1).split()]
        assert all(reads <= 6 for _, reads in pairs) and sum(c for c, r in pairs if r >= 3) >= 3, out.stdout
        f = re.search(r"floor of this configuration .*: ([0-9.]+) us per cgroup per second = ([0-9.]+)x the bare loop; "
                      r"the whole daemon is ([0-9.]+)x that floor", out.stdout)
        assert f and float(f.group(2)) >= 1.0 and float(f.group(3)) > 0, out.stdout
        # Every file the daemon read, per second, next to the same reads bare:
        # memory.current once per cgroup per pass (the root has none), memory.stat
        # as often as the reads above, and the sum with the daemon's own work on top.
        files = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in
                 re.finditer(r"^COST \| (memory\.[a-z_.]+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|", out.stdout, re.M)}
        assert "memory.current" in files and "memory.stat" in files, out.stdout
        assert files["memory.current"][0] > files["memory.stat"][0] > 0, out.stdout
        assert abs(files["memory.stat"][0] * 4.0 - int(m.group(1))) <= 0.1 * int(m.group(1)) + 1, out.stdout
        assert re.search(r"^COST \| every file as the daemon read it, bare \|", out.stdout, re.M), out.stdout
        assert re.search(r"^COST the daemon's own work on top of its reads: [0-9.-]+ us", out.stdout, re.M), out.stdout

def test_a_watchdog_supervised_exporter_is_continued_to_ping_during_the_bare_window():
    # Under systemd (WatchdogSec=, WATCHDOG_USEC in its environment) an
    # exporter stopped for the whole bare window would miss its pings and be
    # killed; memcg-cost continues it between ticks every half interval.
    tree = Tree(args.fixture, "containers")
    cfg = '[collector]\nprobe_interval = "100ms"\n'
    with Exporter(args.exporter, tree.root, write_config(cfg), env={"WATCHDOG_USEC": "2000000"}) as ex:
        out = subprocess.run([args.cost, "--port", str(ex.port), "--pid", str(ex.proc.pid), "--seconds", "4",
                              "--scrape-every", "1", "--bare", tree.root], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        m = re.search(r"^COST bare window: the exporter was continued (\d+) times .*watchdog \(2 s\)", out.stdout, re.M)
        assert m and int(m.group(1)) == 3, out.stdout  # after ticks 1, 2 and 3 of 4 (every 1 s)
        with open(f"/proc/{ex.proc.pid}/stat") as f:
            assert f.read().split(") ")[1][0] != "T", "left stopped"
        assert ex.proc.poll() is None

run_tests(globals())
