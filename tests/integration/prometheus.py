"""A real Prometheus server (Debian's `prometheus`) on loopback, for tests."""
import json, os, shutil, socket, subprocess, tempfile, time, urllib.parse, urllib.request

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

class Prometheus:
    def __init__(self, binary, targets, scrape_interval="1s", rule_files=(), extra_yaml=""):
        self.dir = tempfile.mkdtemp(prefix="memcg-prom-")
        self.port = free_port()
        cfg = os.path.join(self.dir, "prometheus.yml")
        rules = "".join(f"  - {r}\n" for r in rule_files)
        with open(cfg, "w") as f:
            f.write(f"global:\n  scrape_interval: {scrape_interval}\n  evaluation_interval: {scrape_interval}\n"
                    + (f"rule_files:\n{rules}" if rule_files else "")
                    + "scrape_configs:\n  - job_name: memcg\n    static_configs:\n"
                    + f"      - targets: [{', '.join(repr(t) for t in targets)}]\n" + extra_yaml)
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen([binary, f"--config.file={cfg}", f"--storage.tsdb.path={self.dir}/data",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError("prometheus did not start:\n" + self.logs())

    def logs(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def query(self, promql):
        """Instant query; returns the result list, raises on an API error."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise AssertionError(f"query failed: {promql}: {doc}")
        return doc["data"]["result"]

    def value(self, promql):
        """The single sample's value, or None when the query returns nothing."""
        res = self.query(promql)
        if not res:
            return None
        assert len(res) == 1, (promql, res)
        return float(res[0]["value"][1])

    def wait_value(self, promql, pred, what, timeout=30):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = self.value(promql)
            if last is not None and pred(last):
                return last
            time.sleep(0.25)
        raise AssertionError(f"{what}: {promql} = {last}\n" + self.logs())

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)  # its TSDB: nothing to keep after the test
