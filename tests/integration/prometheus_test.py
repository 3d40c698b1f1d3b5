#!/usr/bin/env python3
"""A real Prometheus server scrapes the exporter running over a fixture tree
that the test mutates; Prometheus' HTTP API must show values that follow."""
import argparse, os, time
from harness import Tree, Exporter, write_config, parse_metrics, run_tests
from prometheus import Prometheus

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--prometheus", default="prometheus")
args = ap.parse_args()

CG = "system.slice/web.service"
SEL = f'cgroup="{CG}"'

def at(expr):
    """`expr` for the cgroup CG, selected by path as users do: joined with
    memcg_cgroup_info on cgroup_id (series carry the short id only)."""
    return f'({expr} * on(instance, job, cgroup_id) group_left(cgroup) memcg_cgroup_info{{{SEL}}})'

def grow(tree, steps):
    """CG grows by 2 MiB/s with 500 page faults/s for steps/4 s; returns the
    final memory.current and pgfault."""
    pgfault = tree.keyed(CG, "memory.stat", "pgfault")
    current = tree.current(CG)
    for _ in range(steps):
        current += 512 << 10
        pgfault += 125
        tree.set_keyed(CG, "memory.stat", "pgfault", pgfault)
        tree.set_current(CG, current)
        time.sleep(0.25)
    return current, pgfault

def test_prometheus_sees_values_rates_and_reads_follow_mutations():
    tree = Tree(args.fixture)
    cfg = write_config('[collector]\nprobe_interval = "250ms"\n[defaults]\nthreshold = "1MiB"\n'
                       'stats = ["anon", "pgfault"]\n')
    with Exporter(args.exporter, tree.root, cfg) as ex, Prometheus(args.prometheus, [f"127.0.0.1:{ex.port}"]) as prom:
        prom.wait_value('up{job="memcg"}', lambda v: v == 1, "target up")
        prom.wait_value(at("memcg_memory_current_bytes"), lambda v: v == 48 << 20, "initial current")
        threshold_reads = "sum(" + at('memcg_stat_reads_total{reason="threshold"}') + ") or vector(0)"
        reads0 = prom.value(threshold_reads)
        assert reads0 == 0, reads0

        # Grow by 2 MiB/s with 500 page faults/s for ~6 s: every probe crosses
        # the threshold within a few passes, so memory.stat is re-read.
        current, pgfault = grow(tree, 24)
        prom.wait_value(at("memcg_memory_current_bytes"), lambda v: v == current, "current follows")
        prom.wait_value(at('memcg_memory_stat_events_total{stat="pgfault"}'), lambda v: v == pgfault, "pgfault follows")
        reads = prom.value(threshold_reads)
        assert reads >= 3, f"threshold reads: {reads}"
        # Prometheus' view of the cached counter: its increase over a window
        # holding the whole mutation (3000 page faults; extrapolation and the
        # scrape phase move it a little). A short rate() window would depend on
        # how long the waits above took (a loaded sanitizer run: 13/s).
        prom_increase = prom.value(at('increase(memcg_memory_stat_events_total{stat="pgfault"}[1m])'))
        assert 1500 <= prom_increase <= 6000, prom_increase
        # memory.current is probed every pass, so deriv() sees the growth (~2 MiB/s).
        growth = prom.value(f'max_over_time({at("deriv(memcg_memory_current_bytes[4s])")}[30s:1s])')
        assert (1 << 20) <= growth <= (4 << 20), growth

        # Then quiet: reads stop except for max_age, skips keep counting.
        skips = prom.value("memcg_exporter_stat_skips_total")
        prom.wait_value("memcg_exporter_stat_skips_total", lambda v: v >= skips + 8, "skips while quiet")
        assert prom.value(threshold_reads) == reads
        age = prom.value(f'time() - {at("memcg_stat_last_read_timestamp_seconds")}')
        assert -1 <= age <= 11, age
        assert prom.value('memcg_exporter_build_info') == 1

def test_full_profile_keeps_the_exporters_own_rates_and_the_path_label():
    tree = Tree(args.fixture)
    cfg = write_config('[collector]\nprobe_interval = "250ms"\n[metrics]\nprofile = "full"\n[defaults]\nthreshold = "1MiB"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex, Prometheus(args.prometheus, [f"127.0.0.1:{ex.port}"]) as prom:
        prom.wait_value(f'memcg_memory_current_bytes{{{SEL}}}', lambda v: v == 48 << 20, "the path on every series")
        current, pgfault = grow(tree, 12)
        prom.wait_value(f'memcg_memory_stat_events_total{{{SEL},stat="pgfault"}}', lambda v: v == pgfault, "pgfault follows")
        # The agent's own rate between its reads: ~500 page faults/s.
        agent_rate = prom.value(f'max_over_time(memcg_memory_stat_events_per_second{{{SEL},stat="pgfault"}}[10s])')
        assert 250 <= agent_rate <= 1000, agent_rate
        assert 0 <= prom.value(f"memcg_stat_age_seconds{{{SEL}}}") <= prom.value(f"memcg_stat_max_age_seconds{{{SEL}}}")
        assert prom.value(f'memcg_stat_reads_total{{{SEL},reason="initial"}}') == 1

def test_prometheus_takes_the_bodies_with_a_family_served_in_runs():
    # 100 containers, one of them changing before every check: from the third
    # gzip scrape on, memory.stat's family is served in runs of lines, the
    # changed run after the others (stable_families.h). Prometheus must take
    # every such body whole: the target stays up, every series is there, and
    # the value follows.
    tree = Tree(args.fixture, "kubernetes-100")
    scopes = sorted(d for d, _, files in os.walk(tree.root) if d.endswith(".scope") and "memory.stat" in files)
    cg = os.path.relpath(scopes[len(scopes) // 2], tree.root)
    anon_of = (f'memcg_memory_stat_bytes{{stat="anon"}} * on(instance, job, cgroup_id) group_left(cgroup) '
               f'memcg_cgroup_info{{cgroup="{cg}"}}')
    cfg = write_config('[collector]\nprobe_interval = "250ms"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex, Prometheus(args.prometheus, [f"127.0.0.1:{ex.port}"]) as prom:
        prom.wait_value('up{job="memcg"}', lambda v: v == 1, "target up")
        for i in range(6):
            anon = (150 + 100 * i) << 20
            tree.set_keyed(cg, "memory.stat", "anon", anon)  # before the probe sees the change
            tree.set_current(cg, (200 + 100 * i) << 20)
            prom.wait_value(anon_of, lambda v: v == anon, f"anon follows, change {i}")
        served = sum(1 for (name, _) in parse_metrics(ex.get("/metrics")[2].decode()) if name == "memcg_memory_stat_bytes")
        assert served > 500 and prom.value("count(memcg_memory_stat_bytes)") == served
        assert prom.value('min_over_time(up{job="memcg"}[1m])') == 1

run_tests(globals())
