#!/usr/bin/env python3
"""The daemon over real HTTP on loopback: endpoints, gzip, promtool, the JSON
and refresh APIs, reload, shutdown, and systemd notifications."""
import argparse, gzip, json, os, re, signal, socket, subprocess, tempfile, threading, time
from harness import Tree, Exporter, write_config, parse_metrics, series, rule_setting, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--promtool", default="promtool")
args = ap.parse_args()

FAST = '[collector]\nprobe_interval = "100ms"\n'

def test_endpoints_and_status_codes():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config(FAST)) as ex:
        s, h, body = ex.get("/metrics")
        assert s == 200 and h["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", (s, h)
        assert series(parse_metrics(body.decode()), "memcg_memory_current_bytes", cgroup="system.slice/web.service") == 50331648
        assert re.search(rb'\nmemcg_memory_current_bytes\{cgroup_id="[0-9]+"\} 50331648\n', body), "one short label per series"
        s, h, body = ex.get("/")
        assert s == 200 and h["Content-Type"].startswith("text/html") and b"/metrics" in body and tree.root.encode() in body
        assert ex.get("/-/healthy")[0] == 200
        assert ex.get("/-/ready")[0] == 200
        assert ex.get("/nope")[0] == 404
        assert ex.get("/metrics/extra")[0] == 404
        s, h, _ = ex.get("/metrics", method="POST")
        assert s == 405 and h["Allow"] == "GET, HEAD", (s, h)
        s, h, body = ex.get("/metrics", method="HEAD")
        assert s == 200 and body == b"" and int(h["Content-Length"]) > 1000
        s, _, body = ex.get("/api/v1/refresh", method="POST")
        assert s == 403 and b"refresh_api" in body, "the refresh API is off by default"
        assert ex.get("/api/v1/refresh")[0] == 405

def test_gzip_when_accepted():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root) as ex:
        s, h, body = ex.get("/metrics", {"Accept-Encoding": "gzip"})
        assert s == 200 and h.get("Content-Encoding") == "gzip", h
        text = gzip.decompress(body).decode()
        assert len(body) < len(text) / 3, (len(body), len(text))
        assert parse_metrics(text)[("memcg_exporter_cgroups", ())] == 4
        s, h, body = ex.get("/metrics", {"Accept-Encoding": "gzip;q=0, identity"})
        assert "Content-Encoding" not in h and body.startswith(b"# HELP")

def test_promtool_accepts_live_output():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config(FAST)) as ex:
        tree.set_current("system.slice/web.service", 60 << 20)
        ex.wait_passes(2)
        _, _, body = ex.get("/metrics")
        r = subprocess.run([args.promtool, "check", "metrics"], input=body, capture_output=True)
        assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", (r.stdout, r.stderr)

def test_api_cgroups_matches_once():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root) as ex:
        s, h, body = ex.get("/api/v1/cgroups")
        assert s == 200 and h["Content-Type"] == "application/json"
        doc = json.loads(body)
        once = json.loads(subprocess.run([args.exporter, "--once", "--root", tree.root], capture_output=True, check=True).stdout)
        assert [c["path"] for c in doc["cgroups"]] == [c["path"] for c in once["cgroups"]]
        assert set(doc["cgroups"][1].keys()) == set(once["cgroups"][1].keys())

def families(lines):
    """Lines by family (from its # HELP on), each family once."""
    out, name = {}, None
    for l in lines:
        if l.startswith("# HELP "):
            name = l.split()[2]
            assert name not in out, f"{name} twice: a family's lines must come together"
            out[name] = []
        out.setdefault(name, []).append(l)
    return out

def test_gzip_scrapes_reuse_unchanged_families_and_serve_changed_ones_fresh():
    # Scrapes of successive snapshots: families that did not change are
    # compressed once and reused (first in the body); a value that changed
    # between two scrapes is served new, and every body is valid and whole.
    tree = Tree(args.fixture)
    cg = "system.slice/web.service"
    with Exporter(args.exporter, tree.root, write_config(FAST)) as ex:
        for i in range(4):
            if i == 3:
                tree.set_current(cg, 77 << 20)
            ex.wait_passes(2)
            s, h, z = ex.get("/metrics", {"Accept-Encoding": "gzip"})
            assert s == 200 and h.get("Content-Encoding") == "gzip"
        text = gzip.decompress(z)
        r = subprocess.run([args.promtool, "check", "metrics"], input=text, capture_output=True)
        assert r.returncode == 0 and r.stderr == b"", (r.stdout, r.stderr)
        assert series(parse_metrics(text.decode()), "memcg_memory_current_bytes", cgroup=cg) == 77 << 20
        plain = ex.get("/metrics")[2].decode().splitlines()
        zipped = families(text.decode().splitlines())
        assert set(zipped) == set(families(plain))
        assert zipped["memcg_memory_events_total"] == families(plain)["memcg_memory_events_total"]
        # The family that changed follows the reused ones; the plain body keeps the rendered order.
        order, plain_order = list(zipped), list(families(plain))
        assert order.index("memcg_memory_current_bytes") > order.index("memcg_memory_events_total"), order
        assert plain_order.index("memcg_memory_current_bytes") < plain_order.index("memcg_memory_events_total")

def lines_together(lines):
    """Asserts that each sample follows its own family's HELP and TYPE: no
    family's lines are split by another's."""
    family = None
    for l in lines:
        if l.startswith("# HELP "):
            family = l.split()[2]
        elif l and not l.startswith("#"):
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", l).group(0)
            assert family and (name == family or name.startswith(family + "_")), (family, l)

def test_gzip_scrapes_take_the_largest_changed_family_apart():
    # 100 containers, one of them moving: memory.stat's family changes at
    # every scrape, in one container's lines. Its unchanged runs of lines
    # keep their compressed bytes and come first, the changed run after them
    # in the same family; every body is whole and valid.
    tree = Tree(args.fixture, "kubernetes-100")
    scopes = sorted(d for d, _, files in os.walk(tree.root) if d.endswith(".scope") and "memory.stat" in files)
    cg = os.path.relpath(scopes[len(scopes) // 2], tree.root)
    with Exporter(args.exporter, tree.root, write_config(FAST)) as ex:
        for i in range(5):
            tree.set_keyed(cg, "memory.stat", "anon", (150 + 100 * i) << 20)  # before the probe sees the change
            tree.set_current(cg, (200 + 100 * i) << 20)
            ex.wait_passes(2)
            s, h, z = ex.get("/metrics", {"Accept-Encoding": "gzip"})
            assert s == 200 and h.get("Content-Encoding") == "gzip"
            text = gzip.decompress(z)
            lines_together(text.decode().splitlines())
            got = series(parse_metrics(text.decode()), "memcg_memory_stat_bytes", cgroup=cg, stat="anon")
            assert got == (150 + 100 * i) << 20, (i, got, cg)
        r = subprocess.run([args.promtool, "check", "metrics"], input=text, capture_output=True)
        assert r.returncode == 0 and r.stderr == b"", (r.stdout, r.stderr)
        zipped = families(text.decode().splitlines())["memcg_memory_stat_bytes"]
        plain = families(ex.get("/metrics")[2].decode().splitlines())["memcg_memory_stat_bytes"]
        assert len(plain) > 500 and sorted(l.split("} ")[0] for l in zipped) == sorted(l.split("} ")[0] for l in plain)
        # The line that changed: in the rendered order in the plain body; in
        # the gzip body, in the one run that changed (64 lines), after every
        # reused run.
        [cid] = {dict(l)["cgroup_id"] for (n, l) in parse_metrics(text.decode()) if n == "memcg_cgroup_info" and dict(l)["cgroup"] == cg}
        anon = f'memcg_memory_stat_bytes{{cgroup_id="{cid}",stat="anon"}}'
        at = [i for i, l in enumerate(zipped) if l.startswith(anon + " ")]
        assert len(at) == 1 and at[0] >= len(zipped) - 64, (at, len(zipped))
        assert [i for i, l in enumerate(plain) if l.startswith(anon + " ")][0] < len(plain) - 64

def test_scrapes_of_one_snapshot_share_one_body():
    # A pass every 30 s: every scrape below sees the same snapshot. The body
    # (with the previous scrape's duration in it) is built once and shared,
    # gzip or not, including by concurrent scrapers.
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config('[collector]\nprobe_interval = "30s"\n')) as ex:
        bodies, zipped = [], []
        def scrape(i):
            if i % 2:
                s, h, b = ex.get("/metrics", {"Accept-Encoding": "gzip"})
                assert s == 200 and h.get("Content-Encoding") == "gzip"
                zipped.append(b)
            else:
                bodies.append(ex.get("/metrics")[2])
        threads = [threading.Thread(target=scrape, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert len(set(bodies)) == 1 and len(set(zipped)) == 1, "one body per snapshot"
        # The gzip and the text body were built apart: the exporter's own
        # process, scrape-duration, scrape- and gate-CPU and connection samples may differ,
        # nothing else.
        strip = lambda b: [l for l in b.decode().splitlines() if not l.startswith(("process_", "memcg_exporter_scrape_duration", "memcg_exporter_http_",
                                                                              "memcg_exporter_cpu_seconds_total{phase=\"scrape\"}",
                                                                              "memcg_exporter_cpu_seconds_total{phase=\"http\"}"))]
        # The gzip body may list the families that did not change since the
        # previous scrape first (exporter/http/stable_families.h): the same
        # families, each whole, in any order.
        assert families(strip(gzip.decompress(zipped[0]))) == families(strip(bodies[0]))

def test_mutations_follow_and_threshold_reads():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config(FAST + '[defaults]\nthreshold = "1MiB"\n')) as ex:
        cg = "system.slice/web.service"
        m = ex.metrics()
        assert series(m, "memcg_stat_reads_total", absent=0, cgroup=cg, reason="threshold") == 0
        tree.set_keyed(cg, "memory.stat", "anon", 99 << 20)
        tree.set_current(cg, tree.current(cg) + (512 << 10))  # below the threshold
        ex.wait_passes(2)
        m = ex.metrics()
        assert series(m, "memcg_memory_current_bytes", cgroup=cg) == (48 << 20) + (512 << 10)
        assert series(m, "memcg_memory_stat_bytes", cgroup=cg, stat="anon") == 40 << 20, "cached until the threshold"
        assert series(m, "memcg_stat_pending_change_bytes", cgroup=cg) == 512 << 10
        tree.set_current(cg, tree.current(cg) + (600 << 10))
        ex.wait_passes(2)
        m = ex.metrics()
        assert series(m, "memcg_memory_stat_bytes", cgroup=cg, stat="anon") == 99 << 20
        assert series(m, "memcg_stat_reads_total", cgroup=cg, reason="threshold") == 1
        assert series(m, "memcg_stat_pending_change_bytes", cgroup=cg) == 0
        assert time.time() - series(m, "memcg_stat_last_read_timestamp_seconds", cgroup=cg) < 1.0

def test_refresh_api_forces_reads():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config(FAST + "[web]\nrefresh_api = true\n")) as ex:
        s, _, body = ex.get("/api/v1/refresh?cgroup=system.slice/*", method="POST")
        assert s == 202, (s, body)
        assert json.loads(body) == {"status": "accepted", "cgroup": "system.slice/*", "matching": 2}
        ex.wait_passes(2)
        m = ex.metrics()
        for cg in ("system.slice/web.service", "system.slice/batch.service"):
            assert series(m, "memcg_stat_reads_total", cgroup=cg, reason="forced") == 1, cg
        assert series(m, "memcg_stat_reads_total", absent=0, cgroup="system.slice", reason="forced") == 0
        assert ex.get("/api/v1/refresh", method="POST")[0] == 400
        s, _, body = ex.get("/api/v1/refresh?cgroup=a/%5Bb", method="POST")
        assert s == 400 and b"unterminated" in body, body

def test_refresh_api_is_bounded():
    # One pass every 30 s: requests pile up. At most 32 distinct globs wait
    # (repeats merge), then 429 before any matching work; long globs are 400.
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config('[collector]\nprobe_interval = "30s"\n[web]\nrefresh_api = true\n')) as ex:
        codes = [ex.get(f"/api/v1/refresh?cgroup=system.slice/x{i}*", method="POST")[0] for i in range(40)]
        assert codes[:32] == [202] * 32 and set(codes[32:]) == {429}, codes
        s, h, _ = ex.get("/api/v1/refresh?cgroup=system.slice/x3*", method="POST")
        assert s == 202, "a pending glob again is merged, not refused"
        s, h, _ = ex.get("/api/v1/refresh?cgroup=system.slice/x40*", method="POST")
        assert s == 429 and h.get("Retry-After") == "1", (s, h)
        s, _, body = ex.get("/api/v1/refresh?cgroup=" + "a" * 129, method="POST")
        assert s == 400 and b"too long" in body, (s, body)
        assert ex.get("/-/healthy")[0] == 200

def test_reload_valid_and_invalid():
    tree = Tree(args.fixture)
    cfg = write_config(FAST + '[defaults]\nthreshold = "1MiB"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        cg = "system.slice/web.service"
        m = ex.metrics()
        assert rule_setting(m, "memcg_rule_threshold_bytes", cg) == 1 << 20
        initial = series(m, "memcg_exporter_stat_reads_total", reason="initial")
        open(cfg, "w").write(FAST + '[defaults]\nthreshold = "2MiB"\n[[rule]]\nmatch = "system.slice/*"\nname = "services"\nmax_age = "42s"\n')
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: rule_setting(ex.metrics(), "memcg_rule_max_age_seconds", cg) == 42, "reload applied")
        m = ex.metrics()
        assert series(m, "memcg_cgroup_info", cgroup=cg, rule="services", runtime="systemd", unit="web.service") == 1
        assert rule_setting(m, "memcg_rule_threshold_bytes", cg) == 2 << 20
        assert series(m, "memcg_exporter_stat_reads_total", reason="initial") == initial, "state kept over reload"
        assert m[("memcg_exporter_config_last_reload_successful", ())] == 1
        open(cfg, "w").write(FAST + '[defaults]\nthreshold = "2 MiB"\n')
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_config_last_reload_successful", ())] == 0, "failed reload visible")
        ex.wait_passes(2)
        m = ex.metrics()
        assert rule_setting(m, "memcg_rule_threshold_bytes", cg) == 2 << 20, "old config stays in force"
        assert rule_setting(m, "memcg_rule_max_age_seconds", cg) == 42
        assert ex.get("/-/healthy")[0] == 200
        assert f"{cfg}:4:13: defaults.threshold: invalid size" in ex.logs(), ex.logs()[-2000:]
        assert "keeping the previous configuration" in ex.logs()

def test_shutdown_is_prompt():
    tree = Tree(args.fixture)
    for sig in (signal.SIGTERM, signal.SIGINT):
        # A long probe interval: the daemon must not wait for the next pass.
        with Exporter(args.exporter, tree.root, write_config('[collector]\nprobe_interval = "1m"\n')) as ex:
            rc, elapsed = ex.stop(sig)
            assert rc == 0 and elapsed < 1.0, (sig, rc, elapsed)
            assert "shutting down" in ex.logs()

def test_systemd_notify_protocol():
    tree = Tree(args.fixture)
    sock_path = os.path.join(tempfile.mkdtemp(), "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(5)
    def recv_until(pred, what):
        got = []
        deadline = time.time() + 5
        while time.time() < deadline:
            msg = sock.recv(4096).decode()
            got.append(msg)
            if pred(msg):
                return msg
        raise AssertionError(f"no {what}; got {got}")
    env = {"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "400000"}
    # A probe interval longer than the watchdog: pings must come from the wait too.
    with Exporter(args.exporter, tree.root, write_config('[collector]\nprobe_interval = "3s"\n'), env=env) as ex:
        ready = recv_until(lambda m: "READY=1" in m, "READY=1")
        assert "STATUS=cgroups=4 " in ready and "skip_ratio=" in ready, ready
        t0 = time.time()
        recv_until(lambda m: m == "WATCHDOG=1", "WATCHDOG=1")
        recv_until(lambda m: m == "WATCHDOG=1", "a second WATCHDOG=1")
        assert time.time() - t0 < 1.0, "pings every WatchdogSec/2 while waiting"
        ex.kill(signal.SIGHUP)
        recv_until(lambda m: "RELOADING=1" in m, "RELOADING=1")
        recv_until(lambda m: "READY=1" in m, "READY=1 after reload")
        ex.kill(signal.SIGTERM)
        recv_until(lambda m: "STOPPING=1" in m, "STOPPING=1")
        rc, _ = ex.stop()
        assert rc == 0

def test_bind_failure_is_reported():
    tree = Tree(args.fixture)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([args.exporter, "--root", tree.root, "--web.listen-address", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 1 and "cannot listen on 127.0.0.1:" in r.stderr, (r.returncode, r.stderr)

def test_journal_priorities_when_stderr_is_the_journal():
    tree = Tree(args.fixture)
    log = tempfile.NamedTemporaryFile("w+", delete=False)
    st = os.fstat(log.fileno())
    # systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it connects to stderr.
    env = {**os.environ, "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
    cfg = write_config('[collector]\nprobe_interval = "100ms"\n')
    p = subprocess.Popen([args.exporter, "--root", tree.root, "--config", cfg, "--web.listen-address", "127.0.0.1:0"],
                         stdout=log, stderr=log, env=env)
    time.sleep(0.5)
    open(cfg, "w").write("[collector]\nbogus = 1\n")
    p.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=5) == 0
    lines = open(log.name).read().splitlines()
    assert any(l.startswith("<6>listening on port=") for l in lines), lines
    assert any(l.startswith("<3>configuration reload failed") for l in lines), lines
    assert all(l[:1] == "<" and l[2:3] == ">" for l in lines), lines

run_tests(globals())
