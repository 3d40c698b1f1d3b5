#!/usr/bin/env python3
"""The demo a newcomer sees first (packaging/run-demo, which run-local runs
on a host without a cgroup v2 memory controller): over its run no read or
parse error, no other error counter moved, a status page without a
warning; and the demo's temporary tree gone after SIGTERM, SIGINT or SIGHUP
to its process group (SIGTERM to the script alone too), with nothing of it
left running.
DEMO_SECONDS (default 20) sets how long the first test watches; the
documented check is DEMO_SECONDS=600."""
import argparse, os, re, shutil, signal, subprocess, tempfile, time, urllib.request
from harness import listening_port, parse_metrics, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--run-demo", required=True)
ap.add_argument("--exporter", required=True)
ap.add_argument("--demo", required=True)
args = ap.parse_args()
SECONDS = float(os.environ.get("DEMO_SECONDS", "20"))


class Demo:
    """packaging/run-demo in a session of its own, TMPDIR a fresh directory."""
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="memcg-demo-test-")
        self.log_path = os.path.join(self.tmp, "log")
        self.tmpdir = os.path.join(self.tmp, "tmp")
        os.mkdir(self.tmpdir)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [args.run_demo, args.exporter, args.demo, "--web.listen-address", "127.0.0.1:0"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "TMPDIR": self.tmpdir},
            # A shell started with SIGHUP ignored (under nohup, say) cannot
            # trap it, and rightly keeps running on it: the test wants the
            # terminal's case, SIGHUP at its default.
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        self.port = listening_port(self.logs, self.proc, "run-demo", timeout=20)

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
            return r.read().decode()

    def group_alive(self):
        try:
            os.killpg(self.proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def close(self):
        if self.group_alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def test_the_demo_shows_no_error_and_no_warning():
    d = Demo()
    try:
        time.sleep(SECONDS)
        m = parse_metrics(d.get("/metrics"))
        passes = m[("memcg_exporter_passes_total", ())]
        assert passes >= SECONDS / 2, passes
        errors = {(n, l): v for (n, l), v in m.items() if "error" in n and v != 0}
        assert not errors, f"error counters moved on the demo: {errors}"
        reset = sum(v for (n, l), v in m.items() if n == "memcg_exporter_kernel_feature" and dict(l).get("feature") ==
                    "memory_peak_fd_reset")
        assert reset == 0, "memory.peak reset offered on a tree that is not cgroupfs"
        page = d.get("/")
        warnings = re.findall(r'class="warn"[^>]*>([^<]*)', page)
        assert not warnings, f"the status page warns on a healthy demo: {warnings}"
        assert "read only, no cgroup file is written" in page, "the status page does not say the demo is not cgroupfs"
        assert re.search(r"<td>errors</td><td>0 read, 0 parse</td>", page), "the status page's errors row"
        assert "\ufffd" not in page, "a replacement character on the status page: " + page[page.index("\ufffd") - 80:][:160]
        noisy = [l for l in d.logs().splitlines() if re.search(r"\b(warning|error|err)\b", l, re.I)]
        assert not noisy, "warnings or errors logged on the demo:\n" + "\n".join(noisy[:10])
    finally:
        d.close()


def stops_cleanly(sig, group=True):
    d = Demo()
    try:
        assert os.listdir(d.tmpdir), "no demo tree under TMPDIR"
        (os.killpg if group else os.kill)(d.proc.pid, sig)
        try:
            d.proc.wait(timeout=30)  # run-demo's own bound: 10 s after SIGTERM, SIGKILL
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{sig!r}: run-demo still runs 30 s later; its log:\n" + d.logs())
        deadline = time.time() + 5
        while d.group_alive() and time.time() < deadline:
            time.sleep(0.05)
        assert not d.group_alive(), f"{sig!r}: part of the demo still runs"
        assert not os.listdir(d.tmpdir), f"{sig!r}: left behind: {os.listdir(d.tmpdir)}"
    finally:
        d.close()


def test_sigterm_to_the_group_removes_the_tree():
    stops_cleanly(signal.SIGTERM)


def test_sigterm_to_the_script_alone_removes_the_tree():
    stops_cleanly(signal.SIGTERM, group=False)


def test_sigint_removes_the_tree():
    stops_cleanly(signal.SIGINT)


def test_sighup_removes_the_tree():
    stops_cleanly(signal.SIGHUP)


run_tests(globals())
