#!/usr/bin/env python3
"""CI's time budget as a check.

Reads the stage times .ci/run recorded (tests/ci/timing.sh: NAME, seconds,
exit status per line; an inner stage is "OUTER / INNER"), prints them as a
table with the reference times docs/development.md keeps for this 2-core
machine, and fails when the run's wall time passed the budget (2,700 s:
half of CI's hard limit), naming the stages that grew the most against the
table. A stage not in the table counts as grown by all of its time.
"""
import argparse
import re
import sys

BUDGET_S = 2700


def read_times(path):
    stages = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not parts[1].isdigit():
                raise SystemExit(f"{path}:{n}: expected NAME<TAB>seconds<TAB>status, got {line!r}")
            stages.append((parts[0], int(parts[1]), int(parts[2])))
    return stages


def read_reference(path):
    """The rows of the table that follows the 'ci-stages' marker."""
    ref, in_table = {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "<!-- ci-stages" in line:
                in_table = True
                continue
            if not in_table:
                continue
            if not line.startswith("|"):
                if ref:
                    break
                continue
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            m = re.fullmatch(r"~?([0-9,]+)", cells[1]) if len(cells) > 1 else None
            if m:
                ref[cells[0]] = int(m.group(1).replace(",", ""))
    if not ref:
        raise SystemExit(f"{path}: no table after a '<!-- ci-stages' marker")
    return ref


def growth(stages, ref):
    """(stage, grown seconds) of the top-level and inner stages, largest first."""
    grown = [(name, secs - ref.get(name, 0)) for name, secs, _ in stages]
    return sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])


def report(stages, ref, total, budget):
    print(f"{'stage':<58} {'s':>6} {'table':>6}")
    for name, secs, rc in stages:
        depth = name.count(" / ")
        label = "  " * depth + name.split(" / ")[-1]
        table = str(ref[name]) if name in ref else "-"
        status = "" if rc == 0 else f"  FAILED (exit {rc})"
        print(f"{label:<58} {secs:>6} {table:>6}{status}")
    top = sum(s for n, s, _ in stages if " / " not in n)
    print(f"{'total (wall)':<58} {total:>6} {sum(v for k, v in ref.items() if ' / ' not in k):>6}"
          f"   budget {budget} s, stages {top} s")
    if total <= budget:
        print(f"budget: ok, {budget - total} s to spare")
        return 0
    print(f"budget: FAILED, {total} s is {total - budget} s over {budget} s; grown against "
          "docs/development.md's table:")
    for name, secs in growth(stages, ref)[:5]:
        print(f"  {name}: +{secs} s" + ("" if name in ref else " (not in the table)"))
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--times", required=True)
    ap.add_argument("--total", type=int, required=True, help="the run's wall time, seconds")
    ap.add_argument("--reference", required=True, help="docs/development.md")
    ap.add_argument("--budget", type=int, default=BUDGET_S)
    a = ap.parse_args()
    return report(read_times(a.times), read_reference(a.reference), a.total, a.budget)


if __name__ == "__main__":
    sys.exit(main())
