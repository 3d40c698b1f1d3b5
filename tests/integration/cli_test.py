#!/usr/bin/env python3
"""End-to-end tests of the memcg-exporter binary: options, exit codes, config
errors with positions, and --once JSON on a fixture tree against a golden file.
Regenerate the golden file with MEMCG_UPDATE_GOLDEN=1."""
import argparse, json, os, subprocess, sys, tempfile, traceback
import harness  # noqa: F401  (its temporary directory: removed at exit)

p = argparse.ArgumentParser()
p.add_argument("--exporter", required=True)
p.add_argument("--fixture", required=True)
p.add_argument("--golden", required=True)
args = p.parse_args()

def run(*argv, check=None):
    r = subprocess.run([args.exporter, *argv], capture_output=True, text=True, timeout=60)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}, want {check}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    return r

def fixture(name):
    d = tempfile.mkdtemp(prefix="memcg-cli-")
    subprocess.run([args.fixture, name, d], check=True)
    return d

def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    f.write(text); f.close()
    return f.name

VOLATILE = {"inode", "read_seconds", "read_cpu_seconds", "pass_duration_seconds", "age_seconds", "root"}
def mask(o):
    if isinstance(o, dict):
        return {k: ("<volatile>" if k in VOLATILE else mask(v)) for k, v in o.items()}
    if isinstance(o, list):
        return [mask(v) for v in o]
    return o

def test_version_and_help():
    r = run("--version", check=0)
    assert r.stdout.startswith("memcg-exporter "), r.stdout
    r = run("--help", check=0)
    for opt in ("--config", "--root", "--once", "--check-config", "--web.listen-address", "--log-level"):
        assert opt in r.stdout, opt

def test_usage_errors():
    r = run("--bogus", check=64)
    assert "unknown argument" in r.stderr
    r = run("--config", check=64)
    assert "needs a value" in r.stderr
    run("--log-level", "loud", check=64)

def test_config_error_has_position_and_exit_78():
    cfg = write('[collector]\nmax_depth = 3\nprobe_interval = "1 sec"\n')
    r = run("--config", cfg, "--check-config", check=78)
    assert f"{cfg}:3:18: collector.probe_interval: invalid duration" in r.stderr, r.stderr
    r = run("--config", "/nonexistent.toml", "--once", check=78)
    assert "cannot open" in r.stderr

def test_check_config_prints_rules():
    cfg = write('[defaults]\nthreshold = "2MiB"\n[[rule]]\nmatch = "system.slice/**"\nmax_age = "30s"\n')
    r = run("--config", cfg, "--check-config", check=0)
    assert "defaults: name=default threshold=2MiB max_age=10s" in r.stdout, r.stdout
    assert "rule 1 (system.slice/**): name=system.slice/** threshold=2MiB max_age=30s" in r.stdout, r.stdout
    # The series budget of each rule, as the metric table counts it.
    assert "series per cgroup (defaults, profile default): 22 with no limit set and only max_age reads, at most 30" in r.stdout, r.stdout
    r = run("--config", write('[metrics]\nprofile = "lean"\n'), "--check-config", check=0)
    assert "series per cgroup (defaults, profile lean): 12 " in r.stdout, r.stdout

def test_no_memory_controller_is_one_clear_line():
    r = run("--root", fixture("nomem"), "--once", check=69)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no cgroup v2 memory controller" in lines[0], r.stderr

def test_once_json_matches_golden():
    root = fixture("basic")
    cfg = write('[[rule]]\nmatch = "system.slice/*.service"\nthreshold = "1MiB"\nmax_age = "30s"\n')
    r = run("--root", root, "--config", cfg, "--once", check=0)
    doc = json.loads(r.stdout)
    assert doc["root"] == root
    assert doc["cgroups_count"] == 4 and doc["cgroups_without_memory"] == 1
    by = {c["path"]: c for c in doc["cgroups"]}
    assert by["system.slice/batch.service"]["events"]["oom_kill"] == 1
    assert by["system.slice/batch.service"]["limits"]["max"] == 16777216
    assert by["system.slice/web.service"]["freshness"]["threshold_bytes"] == 1 << 20
    assert all(c["cost"]["read_seconds"] > 0 for c in doc["cgroups"]), "real reads take time"
    got = json.dumps(mask(doc), indent=2, sort_keys=True) + "\n"
    path = os.path.join(args.golden, "once.json")
    if os.environ.get("MEMCG_UPDATE_GOLDEN"):
        open(path, "w").write(got)
        return
    want = open(path).read()
    assert got == want, "--once output differs from tests/golden/once.json (MEMCG_UPDATE_GOLDEN=1 to regenerate)\n" + got

def test_documented_config_reference_matches_the_example_and_the_loader():
    import re, tomllib
    readme = open(os.path.join(args.golden, "..", "..", "docs", "configuration.md")).read()
    section = readme.split("## Configuration reference", 1)[1].split("\n## ", 1)[0]
    documented = set()
    for k in re.findall(r"^\| `([a-z_\[\]]+\.[a-z_]+)`", section, re.M):
        documented.add(k)
    for extra in re.findall(r"`(rule\[\]\.[a-z_]+)`", section):
        documented.add(extra)
    example = tomllib.load(open(os.path.join(args.golden, "..", "..", "packaging", "config.example.toml"), "rb"))
    shipped = {f"{t}.{k}" for t, v in example.items() for k in v} | {"collector.root", "defaults.stats"}  # commented out
    rule_keys = {"rule[].match", "rule[].name", "rule[].threshold", "rule[].max_age", "rule[].stats"}
    assert documented == shipped | rule_keys, (documented ^ (shipped | rule_keys))
    # Every documented key is accepted by the loader, every made-up one refused.
    for key in sorted(shipped):
        table, name = key.split(".")
        probe = write(f"[{table}]\n{name} = \"x\"\n")
        r = run("--config", probe, "--check-config")
        assert "unknown key" not in r.stderr, (key, r.stderr)
    r = run("--config", write("[collector]\nnot_a_key = 1\n"), "--check-config", check=78)
    assert "unknown key" in r.stderr

tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
passed = failed = 0
for t in tests:
    try:
        t(); passed += 1; print(f"PASS {t.__name__}")
    except Exception:
        failed += 1; print(f"FAIL {t.__name__}"); traceback.print_exc()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
