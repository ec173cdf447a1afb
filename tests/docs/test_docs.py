#!/usr/bin/env python3
"""test_docs.py SOURCE_DIR [BUILD_DIR [CTEST]] - the user-facing docs do not drift from the tree.

  - README.md's Layout section names every folder of the source tree down to two levels
    (src/reignd, tests/e2e, bench/ref, ...), either as an entry of its own ("src/reignd/") or
    inside its parent's entry ("ref/:" under "bench/"); corpora of test data excepted;
  - docs/design.md's map of the layers names every folder under src/ (as a path of its own or
    as the folder of a file it names), and every path it names exists;
  - the man pages, docs/, README.md, the public headers, the examples and contrib/ cite no
    "issue N" or "seed N" (the project's own bookkeeping): they name the systems instead
    (Tera, HDFS's ZKFC, ...);
  - README.md's store x capability table is what tests/contract/tests.cmake registers
    (scripts/capabilities.py makes it);
  - docs/design.md's table of promises names, in its last column, only tests that exist: each
    `name` is a ctest entry of BUILD_DIR (`ctest -N`, run with CTEST, default "ctest"; "{a,b}"
    in a name stands for one entry per word), each `path` a file or folder of the tree.  A row
    must name a test, say **open** (no test yet), or hold TBD alone (a test being written).
    Without BUILD_DIR only the paths are checked.
"""

import os
import re
import subprocess
import sys

from docslib import report

failures = []


def tree_dirs(src, depth=2):
    """The folders holding tracked files (git), else every folder but build trees."""
    try:
        files = subprocess.run(["git", "-C", src, "ls-files"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(src):
            subdirs[:] = [s for s in subdirs if not s.startswith(("build", ".git", "obj-"))]
            files += [os.path.relpath(os.path.join(d, n), src) for n in names]
    dirs = set()
    for f in files:
        parts = f.split("/")[:-1]
        for i in range(1, min(len(parts), depth) + 1):
            dirs.add("/".join(parts[:i]))
    return sorted(d for d in dirs if "/corpus" not in d and not d.startswith(".git"))


def layout_entries(readme):
    m = re.search(r"^## Layout\n+```\n(.*?)^```", readme, re.M | re.S)
    if not m:
        failures.append("README.md has no ## Layout section with a code block")
        return {}
    entries, key = {}, None
    for line in m.group(1).splitlines():
        if line and not line[0].isspace():
            key = line.split()[0]
            entries[key] = line
        elif key:
            entries[key] += "\n" + line
    return entries


def check_layout(src):
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        entries = layout_entries(f.read())
    for d in tree_dirs(src):
        parent, _, name = d.rpartition("/")
        if any(k.startswith(d + "/") for k in entries):
            continue
        if parent and parent + "/" in entries and re.search(
                rf"(^|[\s(,]){re.escape(name)}/", entries[parent + "/"]):
            continue
        failures.append(f"README.md's Layout does not name {d}/")


def design_map(src):
    with open(os.path.join(src, "docs", "design.md"), encoding="utf-8") as f:
        m = re.search(r"^## Layers\n+```\n(.*?)^```", f.read(), re.M | re.S)
    if not m:
        failures.append("docs/design.md has no ## Layers section with a code block")
        return []
    return re.findall(r"\bsrc/[\w./\[\]*+-]*", m.group(1))


def check_design_map(src):
    named_dirs = set()
    for path in design_map(src):
        path = path.rstrip(".,")
        if path.endswith("/"):
            d = path.rstrip("/")
            if not os.path.isdir(os.path.join(src, d)):
                failures.append(f"docs/design.md's map names {path}, which is not in the tree")
            named_dirs.add(d)
            continue
        # "x.[ch]" is x.c and x.h; "x*.c" any file of that shape.
        pats = [path.replace("[ch]", c) for c in "ch"] if "[ch]" in path else [path]
        found = False
        for pat in pats:
            rx = re.compile(re.escape(pat).replace(r"\*", "[^/]*") + "$")
            d = os.path.dirname(pat)
            if os.path.isdir(os.path.join(src, d)) and any(
                    rx.match(os.path.join(d, n)) for n in os.listdir(os.path.join(src, d))):
                found = True
        if not found:
            failures.append(f"docs/design.md's map names {path}, which is not in the tree")
        named_dirs.add(os.path.dirname(path))
    for d in tree_dirs(src, depth=9):
        if d.startswith("src/") and d not in named_dirs:
            failures.append(f"docs/design.md's map of the layers does not name {d}/")


def check_citations(src):
    pat = re.compile(r"\b(issue|seed)s?\s*#?\d+|\bseeds?/", re.I)
    roots = ["man", "docs", "README.md", "CONTRIBUTING.md", "include", "examples", "contrib",
             "bench/README.md", "tests/e2e/README.md", "tests/e2e_sql/README.md"]
    for root in roots:
        path = os.path.join(src, root)
        paths = [path] if os.path.isfile(path) else [
            os.path.join(d, n) for d, _, names in os.walk(path) for n in names]
        for p in sorted(paths):
            with open(p, encoding="utf-8", errors="replace") as f:
                for no, line in enumerate(f, 1):
                    m = pat.search(line)
                    if m:
                        failures.append(f"{os.path.relpath(p, src)}:{no}: cites "
                                        f"{m.group(0)!r}; name the system instead")


PROMISES = "## Promises, the faults that could break them, and the tests that show they hold"


def expand(name):
    """The names a cited name stands for: a_{x,y}_{1,2} is a_x_1, a_x_2, a_y_1 and a_y_2."""
    m = re.search(r"\{([^{}]*)\}", name)
    if not m:
        return [name]
    return [n for word in m.group(1).split(",")
            for n in expand(name[:m.start()] + word + name[m.end():])]


def ctest_names(build, ctest):
    out = subprocess.run([ctest, "-N"], cwd=build, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False).stdout
    names = set(re.findall(r"^\s*Test\s+#\d+: (\S+)", out, re.M))
    if not names:
        failures.append(f"`{ctest} -N` in {build} lists no test: {out.strip()[:200]!r}")
    return names


def promise_rows(src):
    """(line number, last cell) of every row of the tables in design.md's promises section."""
    with open(os.path.join(src, "docs", "design.md"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = lines.index(PROMISES)
    except ValueError:
        failures.append(f"docs/design.md has no section {PROMISES!r}")
        return []
    rows = []
    for no, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("|") or set(line) <= set("|- ") or cells[0] == "promise":
            continue
        if len(cells) != 4:
            failures.append(f"docs/design.md:{no}: a promise's row has {len(cells)} cells, not 4")
            continue
        rows.append((no, cells[3]))
    if not rows:
        failures.append("docs/design.md's promises section has no table rows")
    return rows


def check_promises(src, build, ctest):
    names = ctest_names(build, ctest) if build else None
    for no, cell in promise_rows(src):
        if cell == "TBD":
            continue
        cited = re.findall(r"`([^`]+)`", cell)
        if not cited and not cell.startswith("**open**"):
            failures.append(f"docs/design.md:{no}: a promise names no test (say **open**, "
                            f"or TBD while one is written)")
        for item in cited:
            if "/" in item:
                if not os.path.exists(os.path.join(src, item)):
                    failures.append(f"docs/design.md:{no}: {item} is not in the tree")
            elif names is not None:
                for name in expand(item):
                    if name not in names:
                        failures.append(f"docs/design.md:{no}: no ctest entry {name!r}")


def check_capabilities(src):
    """README's store x capability table is the one tests/contract/tests.cmake makes."""
    sys.path.insert(0, os.path.join(src, "scripts"))
    import capabilities
    with open(os.path.join(src, capabilities.REGISTRY)) as f:
        try:
            want = capabilities.block(*capabilities.parse_registry(f.read()))
        except ValueError as e:
            failures.append(str(e))
            return
    with open(os.path.join(src, "README.md")) as f:
        if want not in f.read():
            failures.append("README.md's capability table is not what tests/contract/tests.cmake "
                            "says: run scripts/capabilities.py --write")


def main():
    src = sys.argv[1]
    build = sys.argv[2] if len(sys.argv) > 2 else None
    ctest = sys.argv[3] if len(sys.argv) > 3 else "ctest"
    check_layout(src)
    check_design_map(src)
    check_citations(src)
    check_promises(src, build, ctest)
    check_capabilities(src)
    return report(failures, "README's Layout names every folder; README's capability table is "
                  "the contract tests'; design.md's map matches the "
                  "tree; no issue or seed numbers in user-facing pages; every test design.md's "
                  "promises cite exists" + ("" if build else " (as a file; no BUILD_DIR given)"))


if __name__ == "__main__":
    sys.exit(main())
