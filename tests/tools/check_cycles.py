#!/usr/bin/env python3
"""check_cycles.py - no circles between the library's source files.

    check_cycles.py SRC_DIR LIBRARY.a

Two kinds of circle are refused (STYLE.md: "files in one folder do not include each other in
a circle: what two of them share moves to a third, below both"):

  - between headers: a.h includes b.h, which includes a.h (read from SRC_DIR: every
    `#include "..."` of every .h and .c under it), and any `#include "x.c"`;
  - between source files: a.c calls (or reads) a symbol of b.c, which calls one of a.c
    (read from the archive's objects with `nm`: who defines, who uses).

Each circle is printed as one line, its files in order; the exit status is 1 if any circle is
found that the allow list below does not name.  Needs nothing but python3 and binutils.
"""
import os
import re
import subprocess
import sys

# Circles known and to be broken elsewhere (a circle is allowed when all its files are here).
# None is left: the last one, the election's front and its two backends, went with
# election_base.c.
ALLOWED = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sccs(graph):
    """Tarjan's strongly connected components with more than one node (or a self-edge)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def header_graph(src):
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if n.endswith((".h", ".c")):
                files[os.path.relpath(os.path.join(root, n), src)] = os.path.join(root, n)
    graph, bad = {}, []
    for rel, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if inc.endswith(".c"):
                bad.append(f"{rel} includes a source file, {inc}")
            # Resolve as the compiler would: beside the file, then from SRC_DIR and its core/
            # and sql/ (the include directories of src/CMakeLists.txt).
            for base in (os.path.dirname(rel), "", "core", "sql"):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in files:
                    if rel.endswith(".h"):
                        graph.setdefault(rel, set()).add(cand)
                    break
    return graph, bad


def object_graph(archive):
    out = subprocess.run(["nm", "-A", archive], check=True, capture_output=True,
                         text=True).stdout
    defs, uses = {}, {}
    for line in out.splitlines():
        # "archive:member.c.o:0000000000000000 T name" or "archive:member.c.o:  U name"
        head, _, rest = line.rpartition(":")
        member = head.rsplit(":", 1)[-1]
        parts = rest.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        obj = member[:-2] if member.endswith(".o") else member
        if kind == "U":
            uses.setdefault(obj, set()).add(name)
        elif kind in "TDBRCGSV":
            if name in defs and defs[name] != obj:
                print(f"check_cycles: {name} is defined in {defs[name]} and {obj}",
                      file=sys.stderr)
            defs[name] = obj
    graph = {}
    for obj, names in uses.items():
        for n in names:
            d = defs.get(n)
            if d and d != obj:
                graph.setdefault(obj, set()).add(d)
    return graph


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, archive = sys.argv[1], sys.argv[2]
    failed = False
    hgraph, bad = header_graph(src)
    for b in bad:
        print(f"refused: {b}")
        failed = True
    for comp in sccs(hgraph):
        print(f"refused: headers include each other: {' '.join(comp)}")
        failed = True
    for comp in sccs(object_graph(archive)):
        names = [os.path.basename(c) for c in comp]
        if set(names) <= ALLOWED:
            print(f"known (to be broken): source files call each other: {' '.join(names)}")
            continue
        print(f"refused: source files call each other: {' '.join(names)}")
        failed = True
    if not failed:
        print("no circle between headers or source files")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
