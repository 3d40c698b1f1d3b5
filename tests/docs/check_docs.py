#!/usr/bin/env python3
"""The documentation holds together: every relative link and #anchor in
README.md, CHANGELOG.md and docs/ resolves; every metric name they mention is
served (the generated reference in docs/metrics.md, itself checked against
the code's metric table by a unit test), a recording rule, or an old name the
upgrade notes replace; the README stays a front page (at most 200 lines);
every option of --help is in the man page and in docs/configuration.md."""
import argparse, glob, os, re, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--source", required=True)
ap.add_argument("--exporter", required=True)
args = ap.parse_args()
SRC = os.path.abspath(args.source)
PAGES = [os.path.join(SRC, p) for p in ("README.md", "CHANGELOG.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
errors = []

def prose(text):
    """The text outside fenced code blocks, with inline code kept."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)

def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens
    and underscores kept), spaces to hyphens."""
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    return re.sub(r"[^\w\- ]", "", s).replace(" ", "-")

def anchors(path):
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6} (.*)$", prose(open(path).read()), re.M):
        a = slug(h)
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out

def check_links(page):
    text = prose(open(page).read())
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = f"{os.path.relpath(page, SRC)}: link {target}"
        if not os.path.exists(dest):
            errors.append(f"{where}: no such file")
        elif frag and (not dest.endswith(".md") or frag not in anchors(dest)):
            errors.append(f"{where}: no such anchor")

def served_names():
    ref = open(os.path.join(SRC, "docs", "metrics.md")).read()
    names = set(re.findall(r"^\| `([a-z_:0-9]+)` \|", ref, re.M))
    for n in list(names):  # a histogram's series
        names |= {n + s for s in ("_bucket", "_sum", "_count")}
    for f in glob.glob(os.path.join(SRC, "packaging", "prometheus", "*.rules.yml")):
        names |= set(re.findall(r"record: (\S+)", open(f).read()))
    return names

def old_names():
    notes = open(os.path.join(SRC, "docs", "upgrading.md")).read()
    old = set()
    for row in re.findall(r"^\| (.*?) \| .* \|$", notes, re.M):
        old |= set(re.findall(r"(?:memcg|process)_[a-z0-9_]+", row))
    return old

def check_metric_names(page, served, old):
    text = open(page).read()
    for code in re.findall(r"`([^`\n]+)`", text) + re.findall(r"^```promql\n(.*?)^```", text, re.M | re.S):
        # A series (memcg_..., process_...) or a recording rule's (memcg:...,
        # level:memcg_...:operation).
        for name in re.findall(r"(?<![\w/.-])((?:[a-z_]+:)?(?:memcg|process)_[a-z0-9_]*[a-z0-9](?::[a-z0-9_]+)*|memcg:[a-z0-9_:]+)(?![\w(*-])", code):
            if name not in served and name not in old:
                errors.append(f"{os.path.relpath(page, SRC)}: metric {name} is neither served nor an upgrade note's old name")

def check_options():
    help_text = subprocess.run([args.exporter, "--help"], capture_output=True, text=True).stdout
    options = set(re.findall(r"(--[a-z][a-z.-]+)", help_text))
    man = open(os.path.join(SRC, "packaging", "memcg-exporter.1")).read().replace("\\-", "-")
    conf = open(os.path.join(SRC, "docs", "configuration.md")).read()
    if len(options) < 5:
        errors.append(f"--help lists only {sorted(options)}")
    for o in sorted(options):
        if o not in man:
            errors.append(f"man page: {o} (in --help) is missing")
        if f"`{o}" not in conf:
            errors.append(f"docs/configuration.md: {o} (in --help) is missing")

served, old = served_names(), old_names()
for page in PAGES:
    check_links(page)
    check_metric_names(page, served, old)
lines = open(os.path.join(SRC, "README.md")).read().count("\n")
if lines > 200:
    errors.append(f"README.md has {lines} lines; at most 200 (the rest belongs in docs/)")
check_options()
print(f"{len(PAGES)} pages, {len(served)} served names, {len(old)} old names checked")
if errors:
    print("\n".join(errors))
    sys.exit(1)
