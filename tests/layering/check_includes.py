#!/usr/bin/env python3
"""Every project include points down the layers (or stays in its own).

  base/            parsers, system-call conventions, the version  (0)
  config/          TOML, globs, rules                             (1)
  plugin/          discovery, files, cache, collector, runtimes   (2)
  exporter/exposition/  metric table, status page                 (3)
  exporter/http/   the web server and its routes                  (4)
  exporter/, oci_hook/  the daemon and the hook binaries          (5)

Usage: check_includes.py SOURCE_DIR [--expect-up N]. Prints each include
that points up, with file:line, and exits 1 unless there are N (default 0;
tests/layering/upward/ holds two on purpose, so the check is seen to catch).
"""
import pathlib
import re
import sys

LAYERS = [  # longest prefix first
    ("exporter/exposition/", 3),
    ("exporter/http/", 4),
    ("exporter/", 5),
    ("oci_hook/", 5),
    ("plugin/", 2),
    ("config/", 1),
    ("base/", 0),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer(path):
    for prefix, rank in LAYERS:
        if path.startswith(prefix):
            return prefix, rank
    return None, None


def main():
    root = pathlib.Path(sys.argv[1])
    expect = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--expect-up" else 0
    bad, checked = [], 0
    for top in ("base", "config", "plugin", "exporter", "oci_hook"):
        for f in sorted((root / top).rglob("*")):
            if f.suffix not in (".h", ".cpp", ".in") or "/gen/" in str(f):
                continue
            rel = f.relative_to(root).as_posix()
            own, own_rank = layer(rel)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target, rank = layer(m.group(1))
                if rank is None:
                    continue  # a library's or generated header
                checked += 1
                if rank > own_rank:
                    bad.append(f"{rel}:{n}: includes {m.group(1)} ({target} is above {own})")
    for b in bad:
        print(b)
    print(f"check_includes: {checked} project includes, {len(bad)} pointing up")
    return 0 if len(bad) == expect else 1


if __name__ == "__main__":
    sys.exit(main())
