#!/usr/bin/env python3
"""tests/ci/budget.py as CI uses it: a run within the budget passes, one
past it fails naming the stage that grew the most, a stage missing from the
table counts whole, a malformed times file is an error with file:line; and
every stage .ci/run times has its row in docs/development.md's table."""
import os, re, subprocess, sys, tempfile

SOURCE = sys.argv[1]
BUDGET = os.path.join(SOURCE, "tests/ci/budget.py")
REFERENCE = """# Development
<!-- ci-stages: the table -->
| stage | seconds |
|---|---|
| run-tests | 1,000 |
| run-tests / build | 400 |
| run-fuzz | 150 |

After the table.
| not | 5 |
"""
passed = failed = 0


def run(times, total, reference=REFERENCE):
    d = tempfile.mkdtemp(prefix="memcg-budget-")
    with open(os.path.join(d, "times"), "w") as f:
        f.write(times)
    with open(os.path.join(d, "dev.md"), "w") as f:
        f.write(reference)
    p = subprocess.run([sys.executable, BUDGET, "--times", os.path.join(d, "times"), "--total", str(total),
                        "--reference", os.path.join(d, "dev.md")], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check(name, cond, detail):
    global passed, failed
    if cond:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}\n{detail}")


rc, out = run("run-tests / build\t410\t0\nrun-tests\t1010\t0\nrun-fuzz\t140\t0\n", 1160)
check("within the budget", rc == 0 and "budget: ok, 1540 s to spare" in out and "1000" in out, out)

rc, out = run("run-tests / build\t1900\t0\nrun-tests\t2400\t0\nrun-fuzz\t160\t0\nvm: new\t100\t0\n", 2760)
grown = [l.strip() for l in out.splitlines() if l.startswith("  ") and ": +" in l]
check("past the budget: fails, the stage that grew most first",
      rc == 1 and "60 s over 2700" in out and grown[:2] == ["run-tests / build: +1500 s", "run-tests: +1400 s"], out)
check("a stage not in the table counts whole", "vm: new: +100 s (not in the table)" in out, out)

rc, out = run("run-tests\t1000\t0\nrun-fuzz\tlong\t0\n", 1000)
check("a malformed line is an error with its place", rc != 0 and re.search(r"times:2: expected", out), out)

rc, out = run("run-tests\t100\t2\n", 100)
check("a failed stage is marked", rc == 0 and "FAILED (exit 2)" in out, out)

rc, out = run("run-tests\t100\t0\n", 100, reference="# no table\n")
check("a reference without the table is an error", rc != 0 and "no table" in out, out)

# The real table covers every stage .ci/run and packaging/run-tests time.
sys.path.insert(0, os.path.dirname(BUDGET))
import budget  # noqa: E402
table = budget.read_reference(os.path.join(SOURCE, "docs/development.md"))
with open(os.path.join(SOURCE, ".ci/run")) as f:
    top = re.findall(r'^timed "([^"]+)"', f.read(), re.M)
with open(os.path.join(SOURCE, "packaging/run-tests")) as f:
    inner = [re.sub(r"\(\$kernels\)", "(6.1 6.12)", n) for n in re.findall(r'timed "([^"]+)"', f.read())]
want = top + [f"run-tests / {n}" for n in inner]
missing = [n for n in want if n not in table]
check("docs/development.md's table has a row for every timed stage", top and not missing, f"missing: {missing}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
