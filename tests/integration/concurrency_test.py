#!/usr/bin/env python3
"""The concurrent parts at once: the collector loop (fast passes and rescans
over a tree whose cgroups come and go), scrapes of /metrics and the JSON API
from many threads, refresh requests, and configuration reloads. Run by the
plain build as a stress test and by the ThreadSanitizer and AddressSanitizer
builds to catch races and memory errors (a report in the exporter's log, or
the exporter halted by it, fails this test)."""
import argparse, re, os, random, shutil, signal, threading, time, urllib.request
from harness import Tree, Exporter, write_config, parse_metrics, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--seconds", type=float, default=8)
args = ap.parse_args()

BASE = """[collector]
probe_interval = "50ms"
rescan_interval = "100ms"
[web]
refresh_api = true
max_connections = 8
[metrics]
profile = "full"
[defaults]
max_age = "{age}"
threshold = "{threshold}"
stats = {stats}
"""
CONFIGS = [BASE.format(age="1s", threshold="4KiB", stats='["*"]'),
           BASE.format(age="300ms", threshold="auto", stats='["anon", "file", "pgfault"]')]

def test_collector_scrapes_refreshes_and_reloads_concurrently():
    tree = Tree(args.fixture)
    cfg = write_config(CONFIGS[0])
    # The sanitizer options come from packaging/run-tests (TSan: halt on the
    # first report, with tests/tsan.supp); either way a report fails below.
    with Exporter(args.exporter, tree.root, cfg) as ex:
        stop = threading.Event()
        errors, counts = [], {"scrapes": 0, "json": 0, "reloads": 0, "churn": 0, "refresh": 0}
        lock = threading.Lock()

        def guarded(fn):
            def run():
                try:
                    while not stop.is_set():
                        fn()
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(repr(e))
            return run

        def scrape():
            s, _, body = ex.get("/metrics", {"Accept-Encoding": "gzip"} if random.random() < 0.3 else None)
            if s != 200:
                raise AssertionError(f"/metrics {s}")
            if not body.startswith(b"\x1f\x8b"):
                neg = re.findall(rb"^memcg_memory_stat_events_per_second\{.*\} -.*$", body, re.M)
                if neg:
                    raise AssertionError(f"negative counter rate: {neg[:3]}")
            with lock:
                counts["scrapes"] += 1

        def api():
            s, _, _ = ex.get("/api/v1/cgroups")
            if s != 200:
                raise AssertionError(f"/api/v1/cgroups {s}")
            s, _, _ = ex.get("/api/v1/refresh?cgroup=system.slice/**", method="POST")
            if s != 202:
                raise AssertionError(f"refresh {s}")
            with lock:
                counts["json"] += 1
                counts["refresh"] += 1

        def reload():
            i = counts["reloads"] % 2
            with open(cfg, "w") as f:
                f.write(CONFIGS[1 - i])
            ex.kill(signal.SIGHUP)
            counts["reloads"] += 1
            time.sleep(0.2)

        def churn():
            # cgroups appear (a copy of a real one) and vanish, values move.
            n = counts["churn"]
            src = os.path.join(tree.root, "system.slice/web.service")
            dst = os.path.join(tree.root, f"system.slice/churn-{n % 5}.service")
            if os.path.exists(dst):
                shutil.rmtree(dst)
            else:
                shutil.copytree(src, dst)
            tree.set_current("system.slice/batch.service", random.randint(1, 1 << 30))
            counts["churn"] += 1
            time.sleep(0.01)

        threads = [threading.Thread(target=guarded(scrape)) for _ in range(6)]
        threads += [threading.Thread(target=guarded(f)) for f in (api, reload, churn)]
        for t in threads:
            t.start()
        # Run for --seconds and on until every activity has done its share:
        # on a loaded machine six scraping threads can starve the churn
        # thread for seconds, and a fixed window then proves too little.
        # The deadline only catches a hang.
        minimum = {"scrapes": 50, "reloads": 10, "churn": 100}
        started = time.monotonic()
        while time.monotonic() - started < 180 and not errors:
            with lock:
                done = all(counts[k] > v for k, v in minimum.items())
            if done and time.monotonic() - started >= args.seconds:
                break
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        stop.set()
        for t in threads:
            t.join(timeout=30)
        print(f"  {counts} in {elapsed:.0f} s")
        assert not errors, errors[:5]
        assert ex.proc.poll() is None, "exporter died:\n" + ex.logs()[-3000:]
        assert all(counts[k] > v for k, v in minimum.items()), counts
        assert ex.logs().count("configuration reloaded") >= 5
        rc, _ = ex.stop()
        assert rc == 0, f"exit {rc}:\n" + ex.logs()[-3000:]
        for bad in ("ThreadSanitizer", "AddressSanitizer", "runtime error"):
            assert bad not in ex.logs(), ex.logs()[-3000:]

run_tests(globals())
