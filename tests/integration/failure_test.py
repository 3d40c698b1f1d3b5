#!/usr/bin/env python3
"""Failure behaviour: the root vanishing and coming back, running without
privileges on a tree with unreadable parts, the config file deleted before a
reload, a full disk under the OCI hook's records, SIGTERM while a pass runs.
Each case: a clear log line, and the exporter keeps serving what it has.
(Clock jumps are tested where the wall clock may be moved: the stage-1 VM.)"""
import argparse, os, shutil, signal, subprocess, tempfile, time
from harness import Tree, Exporter, write_config, series, rule_setting, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--hook", required=True)
args = ap.parse_args()

FAST = '[collector]\nprobe_interval = "100ms"\nrescan_interval = "200ms"\n'
CG = "system.slice/web.service"

def test_root_vanishes_and_comes_back():
    tree = Tree(args.fixture)
    with Exporter(args.exporter, tree.root, write_config(FAST)) as ex:
        moved = tree.root + ".away"
        os.rename(tree.root, moved)
        ex.wait_for(lambda: "the cgroup root cannot be read; serving the last data collected" in ex.logs(), "root error")
        assert f"{tree.root}: No such file or directory" in ex.logs(), ex.logs()[-1500:]
        ex.wait_passes(3)
        m = ex.metrics()
        assert series(m, "memcg_memory_current_bytes", cgroup=CG) == 50331648, "the last data is still served"
        assert ex.get("/-/healthy")[0] == 200
        # What an alert sees: the root unreadable, passes still completing,
        # the last good rescan falling behind.
        assert m[("memcg_exporter_root_readable", ())] == 0
        assert time.time() - m[("memcg_exporter_last_pass_timestamp_seconds", ())] < 5
        stale_rescan = m[("memcg_exporter_last_rescan_timestamp_seconds", ())]
        # Kept-open files still read: a change under the moved tree shows.
        with open(os.path.join(moved, CG, "memory.current"), "r+") as f:
            f.truncate(0)
            f.write("60000000\n")
        ex.wait_for(lambda: series(ex.metrics(), "memcg_memory_current_bytes", cgroup=CG) == 60000000, "kept fds read")
        os.rename(moved, tree.root)
        ex.wait_for(lambda: "the cgroup root is readable again" in ex.logs(), "recovery")
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_root_readable", ())] == 1, "root readable again")
        assert ex.metrics()[("memcg_exporter_last_rescan_timestamp_seconds", ())] > stale_rescan
        assert ex.proc.poll() is None

def as_nobody(argv):
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *argv]

def test_unprivileged_with_unreadable_files_and_root():
    tree = Tree(args.fixture)
    os.chmod(os.path.dirname(tree.root), 0o755)
    for d, _, files in os.walk(tree.root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    os.chmod(os.path.join(tree.root, "system.slice/batch.service/memory.stat"), 0)
    os.chmod(os.path.join(tree.root, "system.slice/web.service/memory.pressure"), 0)
    cfg = write_config(FAST)
    os.chmod(cfg, 0o644)
    # A TMPDIR of nobody's own under the test's directory (which it may
    # traverse, not list): the exporter's private socket directory goes there
    # and away with the test's files, not into /tmp, when the test kills it.
    os.chmod(tempfile.gettempdir(), 0o711)
    own_tmp = tempfile.mkdtemp(prefix="memcg-nobody-tmp-")
    os.chown(own_tmp, 65534, 65534)
    env = {"MEMCG_TEST": "1", "TMPDIR": own_tmp}
    # Exporter() starts argv[0]; run it through setpriv as user nobody.
    wrapper = tempfile.mktemp(prefix="memcg-nobody-")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups -- {args.exporter} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    with Exporter(wrapper, tree.root, cfg, env=env) as ex:
        logs = ex.logs()
        assert f"open {tree.root}/system.slice/batch.service/memory.stat: Permission denied" in logs, logs[-2000:]
        assert f"open {tree.root}/system.slice/web.service/memory.pressure: Permission denied" in logs, logs[-2000:]
        m = ex.metrics()
        assert series(m, "memcg_memory_current_bytes", cgroup="system.slice") > 0, "readable cgroups are served"
        assert series(m, "memcg_exporter_read_errors_total", file="memory.stat") >= 1
        # The root becomes unreadable for this user: served data stays.
        os.chmod(tree.root, 0o700)
        ex.wait_for(lambda: f"{tree.root}: Permission denied" in ex.logs(), "root permission error")
        ex.wait_passes(2)
        assert series(ex.metrics(), "memcg_memory_current_bytes", cgroup="system.slice") > 0
        os.chmod(tree.root, 0o755)
        ex.wait_for(lambda: "the cgroup root is readable again" in ex.logs(), "recovery")

def test_config_deleted_before_reload_keeps_the_old_one():
    tree = Tree(args.fixture)
    cfg = write_config(FAST + '[defaults]\nmax_age = "42s"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        os.unlink(cfg)
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: "configuration reload failed, keeping the previous configuration" in ex.logs(), "reload error")
        assert f"{cfg}" in ex.logs().split("configuration reload failed")[1].splitlines()[0]
        m = ex.metrics()
        assert m[("memcg_exporter_config_last_reload_successful", ())] == 0
        assert rule_setting(m, "memcg_rule_max_age_seconds", CG) == 42
        assert ex.get("/-/healthy")[0] == 200

def test_disk_full_under_hook_records():
    """A 16 KiB tmpfs in a private mount namespace, filled up: the hook says
    why, leaves no temporary file, and exits 0 so the container still starts."""
    work = tempfile.mkdtemp(prefix="memcg-full-")
    records = os.path.join(work, "records")
    os.mkdir(records)
    bundle = os.path.join(work, "bundle")
    os.mkdir(bundle)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        f.write('{"ociVersion":"1.0.2","annotations":{"io.kubernetes.container.name":"web"}}')
    cid = "c" * 64
    state = f'{{"ociVersion":"1.0.2","id":"{cid}","status":"creating","pid":1,"bundle":"{bundle}"}}'
    script = f"""set -e
mount -t tmpfs -o size=16k tmpfs {records}
dd if=/dev/zero of={records}/filler bs=4k count=64 2>/dev/null || true
echo '{state}' | {args.hook} createRuntime {records}; echo "hook-exit=$?"
ls -A {records}
"""
    r = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
    assert "hook-exit=0" in r.stdout, r
    assert "No space left on device" in r.stderr, r.stderr
    assert r.stdout.split("hook-exit=0")[1].split() == ["filler"], "no record, no temporary file left: " + r.stdout

def pods_tree(n):
    """The fixture tree with kubepods.slice and n pods in it, each a copy of CG."""
    tree = Tree(args.fixture)
    template = os.path.join(tree.root, CG)
    for i in range(n):
        shutil.copytree(template, os.path.join(tree.root, "kubepods.slice", f"pod{i:03}"))
    for f in ("memory.stat", "memory.current", "memory.events", "cgroup.procs"):
        if os.path.exists(os.path.join(template, f)):
            shutil.copy(os.path.join(template, f), os.path.join(tree.root, "kubepods.slice"))
    return tree

def cgroup_paths(m):
    """The collected cgroups: removed ones keep their info a while, marked."""
    removed = {dict(l)["cgroup_id"] for (n, l), v in m.items() if n == "memcg_cgroup_removed_timestamp_seconds"}
    return sorted(dict(l)["cgroup"] for (n, l), v in m.items()
                  if n == "memcg_cgroup_info" and dict(l)["cgroup_id"] not in removed)

def test_fd_budget_holds_a_stable_set_under_prlimit():
    # 300 pods under a limit that fits ~80 of them. 0.1 collected ~60 % and
    # dropped and re-added the rest at every rescan (their rates restarting);
    # now the collected set stays put, the rest are counted and said once.
    tree = pods_tree(300)
    cfg = FAST + '[metrics]\nprofile = "full"\n'
    with Exporter(args.exporter, tree.root, write_config(cfg), prefix=("prlimit", "--nofile=600:600")) as ex:
        ex.wait_passes(2)
        m = ex.metrics()
        collected = cgroup_paths(m)
        left = m[("memcg_exporter_cgroups_left_out", (("reason", "fd_budget"),))]
        budget = m[("memcg_exporter_cgroup_max_fds", ())]
        assert 0 < budget < 600 and m[("memcg_exporter_cgroup_open_fds", ())] <= budget, (budget, m)
        assert 30 < len(collected) < 100 and left > 200, (len(collected), left)
        assert m[("memcg_exporter_cgroups_left_out", (("reason", "fds_exhausted"),))] == 0
        assert m[("process_open_fds", ())] < 600
        initial = m[("memcg_exporter_stat_reads_total", (("reason", "initial"),))]
        # Ten rescans later: the same cgroups, no re-reads from the start.
        for _ in range(10):
            ex.wait_for(lambda: ex.metrics()[("memcg_exporter_last_rescan_timestamp_seconds", ())] >
                        m[("memcg_exporter_last_rescan_timestamp_seconds", ())], "a rescan")
            m = ex.metrics()
            assert cgroup_paths(m) == collected, "the collected set flapped"
        assert m[("memcg_exporter_stat_reads_total", (("reason", "initial"),))] == initial
        assert m[("memcg_exporter_cgroups_left_out", (("reason", "fd_budget"),))] == left
        assert ex.logs().count("do not fit in the fd budget") == 1, ex.logs()[-2000:]
        assert "Too many open files" not in ex.logs()
        # Room frees up (ten collected pods go away): ten waiting ones come in.
        gone = [c for c in collected if c.startswith("kubepods.slice/pod")][-10:]
        for c in gone:
            shutil.rmtree(os.path.join(tree.root, c))
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_cgroups_left_out", (("reason", "fd_budget"),))] == left - 10,
                    "waiting cgroups take the freed room")
        after = cgroup_paths(ex.metrics())
        assert len(after) == len(collected) and not set(gone) & set(after)
        assert ex.proc.poll() is None

def test_memory_budget_from_config_leaves_out_what_would_not_fit():
    # collector.memory_budget as a size (what "auto" takes from the daemon's
    # own cgroup, checked on a real kernel in the systemd guest): 32 MiB is
    # 24 for the daemon and 1,024 descriptors of 8 KiB, well short of 300 pods.
    tree = pods_tree(300)
    cfg = FAST + 'memory_budget = "32MiB"\n'  # FAST's [collector] table
    with Exporter(args.exporter, tree.root, write_config(cfg)) as ex:
        ex.wait_passes(2)
        m = ex.metrics()
        assert m[("memcg_exporter_memory_budget_bytes", ())] == 32 << 20, m
        assert m[("memcg_exporter_cgroup_max_fds", ())] == 1024
        assert m[("memcg_exporter_cgroup_open_fds", ())] <= 1024
        left = m[("memcg_exporter_cgroups_left_out", (("reason", "memory_budget"),))]
        collected = cgroup_paths(m)
        assert 50 < len(collected) < 300 and left > 0 and len(collected) + left >= 300, (len(collected), left)
        assert m[("memcg_exporter_cgroups_left_out", (("reason", "fd_budget"),))] == 0
        assert "memory limit 32 MiB (collector.memory_budget): room for 1024 cgroup descriptors" in ex.logs(), ex.logs()[-2000:]
        ex.wait_for(lambda: ex.metrics()[("memcg_exporter_last_rescan_timestamp_seconds", ())] >
                    m[("memcg_exporter_last_rescan_timestamp_seconds", ())], "a rescan")
        assert cgroup_paths(ex.metrics()) == collected, "the collected set flapped"
        assert ex.logs().count("do not fit in the daemon's memory limit") == 1, ex.logs()[-2000:]
        assert ex.proc.poll() is None

def test_sigterm_during_a_pass():
    """A cgroup whose memory.stat is a FIFO holds the first pass in open(2)
    until the test writes to it: SIGTERM arrives while the pass runs for sure,
    and takes effect as soon as the pass ends (exit 0, nothing half-done)."""
    tree = Tree(args.fixture)
    stuck = os.path.join(tree.root, "system.slice/stuck.service")
    shutil.copytree(os.path.join(tree.root, CG), stuck)
    os.unlink(os.path.join(stuck, "memory.stat"))
    os.mkfifo(os.path.join(stuck, "memory.stat"))
    log = tempfile.mktemp(prefix="memcg-it-log-")
    with open(log, "w") as out:
        p = subprocess.Popen([args.exporter, "--root", tree.root, "--web.listen-address", "127.0.0.1:0"], stdout=out, stderr=out)
    try:
        deadline = time.time() + 10
        while time.time() < deadline and "listening on" not in open(log).read():
            time.sleep(0.01)
        time.sleep(0.3)
        assert "ready:" not in open(log).read() and p.poll() is None, "the first pass is held in open(2)"
        p.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert p.poll() is None, "still inside the pass"
        with open(os.path.join(stuck, "memory.stat"), "w") as fifo:  # lets open(2) return
            fifo.write("anon 1\n")
        rc = p.wait(timeout=10)
        text = open(log).read()
        assert rc == 0 and "shutting down" in text, (rc, text[-1500:])
    finally:
        if p.poll() is None:
            p.kill()

run_tests(globals())
