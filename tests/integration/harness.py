"""Shared helpers for the integration tests: a fixture tree the tests mutate
in place (so the exporter's kept-open fds see changes, as on cgroupfs), the
exporter as a real process on a loopback port, and a tiny test runner that
prints 'N passed, N failed'."""
import atexit, glob, gzip, http.server, json, os, re, shutil, signal, subprocess, sys, tempfile, threading, time, traceback, urllib.request, urllib.error

# Every temporary file and directory a test makes goes under one directory of
# its own, removed when the test ends however it ends (short of SIGKILL); the
# exporters it starts put their private socket directories there too
# (TMPDIR), so an exporter killed by a test leaves nothing behind.
tempfile.tempdir = tempfile.mkdtemp(prefix="memcg-test-")
os.environ["TMPDIR"] = tempfile.tempdir
atexit.register(shutil.rmtree, tempfile.tempdir, True)

class Tree:
    """A fixture tree written by memcg-fixture, mutated from Python."""
    def __init__(self, fixture_tool, name="basic"):
        self.root = tempfile.mkdtemp(prefix="memcg-it-")
        subprocess.run([fixture_tool, name, self.root], check=True)

    def path(self, cg, f):
        return self.root if cg == "/" else os.path.join(self.root, cg, f) if f else os.path.join(self.root, cg)

    def write(self, cg, f, text):
        with open(self.path(cg, f), "r+") as fh:  # same inode: kept fds see it
            fh.truncate(0)
            fh.write(text)
        # A cgroup's PSI totals move only with a stall, which the kernel
        # counts in every ancestor too: the root's "some" total moves with
        # them (the exporter's PSI gate reads the root's: plugin/cache/psi_gate.h).
        if f == "memory.pressure" and cg != "/":
            self.stall_at_root()

    def stall_at_root(self):
        p = os.path.join(self.root, "memory.pressure")
        if not os.path.exists(p):
            return
        with open(p, "r+") as fh:
            text = fh.read()
            m = re.search(r"^some .*total=(\d+)", text, re.M)
            if not m:
                return
            fh.seek(0)
            fh.truncate(0)
            fh.write(text[:m.start(1)] + str(int(m.group(1)) + 1) + text[m.end(1):])

    def read(self, cg, f):
        with open(self.path(cg, f)) as fh:
            return fh.read()

    def set_current(self, cg, v):
        self.write(cg, "memory.current", f"{v}\n")

    def current(self, cg):
        return int(self.read(cg, "memory.current"))

    def set_keyed(self, cg, f, key, value):
        lines = self.read(cg, f).splitlines()
        out = [f"{key} {value}" if l.split(" ")[0] == key else l for l in lines]
        self.write(cg, f, "\n".join(out) + "\n")

    def keyed(self, cg, f, key):
        for l in self.read(cg, f).splitlines():
            k, v = l.split(" ")
            if k == key:
                return int(v)
        raise KeyError(key)

# The Kubernetes container of the "containers" fixture (memcg-fixture).
K8S_CONTAINER_ID = "b" * 64
K8S_CONTAINER = ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice/"
                 "cri-containerd-" + K8S_CONTAINER_ID + ".scope")

K8S_POD_SLICE = "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice"

def run_hook(hook, stage, cid, annotations, records, cgroups_path=None):
    """Runs memcg-exporter-oci-hook the way podman or CRI-O do: the OCI state
    on stdin, a bundle whose config.json carries the annotations and the
    cgroupsPath (by default kubelet's systemd-driver form for a container of
    the fixture's burstable pod). Returns the hook's stderr (it always exits 0)."""
    bundle = tempfile.mkdtemp(prefix="memcg-bundle-")
    if cgroups_path is None:
        cgroups_path = f"{K8S_POD_SLICE}:cri-containerd:{cid}"
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump({"ociVersion": "1.0.2", "linux": {"cgroupsPath": cgroups_path}, "annotations": annotations}, f)
    state = json.dumps({"ociVersion": "1.0.2", "id": cid, "status": "creating", "pid": 1, "bundle": bundle})
    r = subprocess.run([hook, stage, records], input=state, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r
    return r.stderr

def documented_queries(source, select=lambda page, section: True):
    """The expressions in the ```promql blocks of README.md and docs/ whose
    page (relative to `source`) and section (its "## " heading) `select`
    accepts: a blank line separates two, comment lines are dropped. Returns
    (page, expression) pairs."""
    pages = ["README.md"] + sorted(os.path.relpath(p, source) for p in glob.glob(os.path.join(source, "docs", "*.md")))
    out = []
    for page in pages:
        section = ""
        for part in re.split(r"^(## .*)$", open(os.path.join(source, page)).read(), flags=re.M):
            if part.startswith("## "):
                section = part[3:].strip()
                continue
            if not select(page, section):
                continue
            for block in re.findall(r"^```promql\n(.*?)^```", part, re.M | re.S):
                for q in re.split(r"\n\s*\n", block):
                    expr = "\n".join(l for l in q.splitlines() if not l.lstrip().startswith("#")).strip()
                    if expr:
                        out.append((page, expr))
    return out

# kube-state-metrics' series for the fixture's Kubernetes container
# (K8S_CONTAINER), in their real label shape, served by a stand-in.
K8S_POD_UID = "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6"
K8S_MEMORY_REQUEST = 64 << 20  # the container's memory request, in kube-state-metrics
KUBE_STATE_METRICS = f"""# TYPE kube_pod_info gauge
kube_pod_info{{namespace="shop",pod="web-0",uid="{K8S_POD_UID}",node="node-1",created_by_kind="StatefulSet",created_by_name="web",host_network="false",pod_ip="10.0.0.7",priority_class=""}} 1
# TYPE kube_pod_container_info gauge
kube_pod_container_info{{namespace="shop",pod="web-0",uid="{K8S_POD_UID}",container="web",image="docker.io/library/nginx:1.25",image_spec="nginx:1.25",image_id="docker.io/library/nginx@sha256:0f",container_id="containerd://{"b" * 64}"}} 1
# TYPE kube_pod_container_resource_requests gauge
kube_pod_container_resource_requests{{namespace="shop",pod="web-0",uid="{K8S_POD_UID}",container="web",node="node-1",resource="memory",unit="byte"}} {K8S_MEMORY_REQUEST}
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{{namespace="shop",pod="web-0",uid="{K8S_POD_UID}",phase="Running"}} 1
"""

class KubeStateMetrics:
    """A loopback HTTP server answering every GET with KUBE_STATE_METRICS."""
    def __init__(self):
        body = KUBE_STATE_METRICS.encode()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *a):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def scrape_config(self):
        return (f"  - job_name: kube-state-metrics\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{self.port}']\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()

def write_config(text):
    fd, path = tempfile.mkstemp(suffix=".toml", prefix="memcg-it-")
    os.write(fd, text.encode())
    os.close(fd)
    return path

def listening_port(logs, proc, what, timeout=10):
    """The port of the first 'listening on port=N' line in logs() of the
    process `proc` started; RuntimeError when it exits or times out first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(r"listening on port=(\d+)", logs())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited:\n" + logs())
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen:\n" + logs())

class Exporter:
    """memcg-exporter on 127.0.0.1:<free port>, logs captured."""
    def __init__(self, binary, root, config=None, env=None, args=(), prefix=()):
        self.log_path = tempfile.mktemp(prefix="memcg-it-log-")
        self.log = open(self.log_path, "w+")
        argv = [*prefix, binary, "--root", root, "--web.listen-address", "127.0.0.1:0", "--log-level", "debug", *args]
        if config:
            argv += ["--config", config]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env={**os.environ, **(env or {})})
        self.port = listening_port(self.logs, self.proc, "exporter")
        self.wait_for(lambda: self.get("/-/ready")[0] == 200, "ready")

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path, headers=None, method="GET"):
        req = urllib.request.Request(self.url(path), headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def metrics(self):
        status, _, body = self.get("/metrics")
        assert status == 200, status
        return parse_metrics(body.decode())

    def passes(self):
        return self.metrics()[("memcg_exporter_passes_total", ())]

    def wait_passes(self, n=1):
        """Waits until n more passes have completed."""
        start = self.passes()
        self.wait_for(lambda: self.passes() >= start + n, f"{n} passes")

    def wait_for(self, cond, what, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}\n" + self.logs()[-3000:])

    def kill(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=5):
        t0 = time.time()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        return rc, time.time() - t0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

def parse_metrics(text):
    """{(name, ((label, value), ...)): float} for every sample. Per-cgroup
    samples also get the `cgroup` path from memcg_cgroup_info, joined on
    cgroup_id as `* on(cgroup_id) group_left(cgroup)` would."""
    raw = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable line: {line!r}"
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        raw[(m.group(1), labels)] = float(m.group(3))
    paths = {dict(l)["cgroup_id"]: dict(l)["cgroup"] for (n, l) in raw if n == "memcg_cgroup_info"}
    out = {}
    for (n, l), v in raw.items():
        d = dict(l)
        if "cgroup_id" in d and "cgroup" not in d and d["cgroup_id"] in paths:
            d["cgroup"] = paths[d["cgroup_id"]]
        out[(n, tuple(sorted(d.items())))] = v
    return out

def series(metrics, name, absent=None, **labels):
    """The one sample of `name` whose labels, cgroup_id aside, are `labels`;
    `absent` when there is none and it is given (a counter that never moved
    is not served: reads by reason)."""
    hits = [v for (n, l), v in metrics.items() if n == name and {k: x for k, x in l if k != "cgroup_id"} == labels]
    if not hits and absent is not None:
        return absent
    if len(hits) != 1:
        raise KeyError(f"{name}{labels}: {len(hits)} samples")
    return hits[0]

def rule_setting(metrics, name, cgroup):
    """A per-rule series (memcg_rule_*) for the rule memcg_cgroup_info names for `cgroup`."""
    info = [dict(l) for (n, l) in metrics if n == "memcg_cgroup_info" and dict(l)["cgroup"] == cgroup]
    assert len(info) == 1, (cgroup, info)
    return series(metrics, name, rule=info[0]["rule"])

def run_tests(namespace):
    tests = [v for k, v in sorted(namespace.items()) if k.startswith("test_") and callable(v)]
    passed = failed = 0
    for t in tests:
        t0 = time.time()
        try:
            t()
            passed += 1
            print(f"PASS {t.__name__} ({time.time() - t0:.1f}s)", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {t.__name__}", flush=True)
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
