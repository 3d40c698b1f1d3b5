#!/usr/bin/env python3
"""The status page in a real headless browser (Debian's chromium): the DOM
after its script ran must show the cgroups table with container names,
freshness and costs, escape hostile names, and a screenshot is saved."""
import argparse, json, os, shutil, subprocess, tempfile
from html.parser import HTMLParser
from harness import Tree, Exporter, write_config, run_tests, run_hook, K8S_CONTAINER, K8S_CONTAINER_ID

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--hook", required=True)
ap.add_argument("--chromium", default="chromium")
ap.add_argument("--artifacts", required=True)
args = ap.parse_args()

K8S = K8S_CONTAINER
HOSTILE = "system.slice/<img src=x onerror=alert(1)>.service"

class Dom(HTMLParser):
    """Rows of table#cgroups as lists of cell texts, plus what else we check."""
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.in_table = [], None, None, False
        self.table_attrs, self.scripts, self.imgs, self.ids = {}, 0, 0, {}
        self.current_id = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == "cgroups":
            self.in_table, self.table_attrs = True, a
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.imgs += 1
        if "id" in a:
            self.current_id = a["id"]
            self.ids[a["id"]] = ""
        if self.in_table and tag == "tr":
            self.row = []
        if self.in_table and tag == "td":
            self.cell = ""
    def handle_endtag(self, tag):
        if tag == "table":
            self.in_table = False
        if self.in_table and tag == "td" and self.row is not None:
            self.row.append(self.cell)
            self.cell = None
        if self.in_table and tag == "tr" and self.row:
            self.rows.append(self.row)
            self.row = None
    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
        if self.current_id:
            self.ids[self.current_id] += data

def chromium(*extra, url):
    profile = tempfile.mkdtemp(prefix="memcg-chromium-")
    try:
        return subprocess.run([args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               f"--user-data-dir={profile}", *extra, url], capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile, ignore_errors=True)

def test_status_page_in_a_real_browser():
    tree = Tree(args.fixture, "containers")
    os.makedirs(tree.path(HOSTILE, ""), exist_ok=True)
    for f in os.listdir(tree.path("system.slice", "")):
        if f.startswith("memory."):
            shutil.copy(tree.path("system.slice", f), tree.path(HOSTILE, f))
    records = tempfile.mkdtemp(prefix="memcg-records-")
    run_hook(args.hook, "createRuntime", K8S_CONTAINER_ID, {"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": "web-0",
                               "io.kubernetes.pod.namespace": "shop"}, records)
    cfg = write_config(f'[collector]\nprobe_interval = "200ms"\n[containers]\nrecords_dir = "{records}"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        ex.wait_passes(3)
        r = chromium("--dump-dom", url=ex.url("/"))
        assert r.returncode == 0 and "<table" in r.stdout, r.stderr[-2000:]
        dom = Dom()
        dom.feed(r.stdout)
        assert dom.table_attrs.get("data-ready") == "yes", "the page's script ran without error"
        rows = {row[0]: row for row in dom.rows}
        assert len(rows) == 10, list(rows)  # 9 fixture cgroups + the hostile one
        k8s = rows[K8S]
        assert k8s[1] == "shop/web-0/web (containerd)", k8s
        assert k8s[2] == "100.0 MiB" and k8s[3] == "90.0 MiB", k8s  # current, working set (current - inactive_file)
        assert k8s[4].endswith(" / 10 s"), k8s                     # age / max_age
        assert k8s[6] == "1" and int(k8s[7]) >= 2, k8s              # one read, skips since
        assert k8s[10].isdigit() and k8s[11] == "default", k8s      # the series' cgroup_id, the rule
        assert dom.ids["profile"].startswith("default: 22"), dom.ids
        assert dom.ids["oom"].startswith("0 in collected cgroups") and "0 removed cgroups kept" in dom.ids["oom"], dom.ids
        assert rows[HOSTILE][0] == HOSTILE, "a hostile name is shown as text"
        assert dom.imgs == 0 and dom.scripts == 1, "and never becomes markup"
        assert dom.ids["cgroup-count"].startswith("10"), dom.ids
        assert "probes" in dom.ids["avoided"], dom.ids
        os.makedirs(args.artifacts, exist_ok=True)
        shot = os.path.join(args.artifacts, "status-page.png")
        r = chromium(f"--screenshot={shot}", "--window-size=1280,900", url=ex.url("/"))
        assert r.returncode == 0 and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n", r.stderr[-2000:]
        print(f"  screenshot: {shot}")

run_tests(globals())
