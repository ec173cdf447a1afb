#!/usr/bin/env python3
"""check_cycles.py - no circles between the library's source files, no call up its layers.

    check_cycles.py SRC_DIR LIBRARY.a

Two kinds of circle are refused ("files in one folder do not include each other in a circle:
what two of them share moves to a third, below both"):

  - between headers: a.h includes b.h, which includes a.h (read from SRC_DIR: every
    `#include "..."` of every .h and .c under it), and any `#include "x.c"`;
  - between source files: a.c calls (or reads) a symbol of b.c, which calls one of a.c
    (read from the archive's objects with `nm`: who defines, who uses).

And the layers are kept (LAYERS below, bottom to top: core, the backends, the client, the
recipes), which no circle check sees when the call goes one way only:

  - an `#include "..."` from a file of one layer that resolves to a file of a higher one;
  - a call (or read) from an object of one layer into an object of a higher one;
  - the tools' files (cli/, reignd/, guardian/main.c) included by the library or by another
    tool, and src/common/ (what the tools share) included by anything but a tool.

The public headers (`#include <reign/...>`) may be included everywhere: they are not read.
Each circle or violation is printed as one line; the exit status is 1 if any is found that the
allow list below does not name.  Needs nothing but python3 and binutils.
"""
import os
import re
import subprocess
import sys

# Circles known and to be broken elsewhere (a circle is allowed when all its files are here).
# None is left: the last one, the election's front and its two backends, went with
# election_base.c.
ALLOWED = set()

# The library's layers, bottom to top: a file (path relative to SRC_DIR) is in the layer of the
# longest prefix that names it.  A layer may include and call its own and lower ones only.
LAYERS = [
    ("core/", 0, "core"),
    ("zk/", 1, "backends"),
    ("sql/", 1, "backends"),
    ("guardian/", 1, "backends"),
    ("client/", 2, "client"),
    ("recipes/", 3, "recipes"),
]
# The tools: each may include the library's private headers and src/common/, never another's.
TOOLS = [("cli/", "cli"), ("reignd/", "reignd"), ("guardian/main.c", "guardian main")]
COMMON = "common/"

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


def tool_of(rel):
    for prefix, name in TOOLS:
        if rel == prefix or rel.startswith(prefix):
            return name
    return None


def layer_of(rel):
    """(rank, name) of a library file, or None for a tool's, src/common's or an unknown one."""
    if tool_of(rel) or rel.startswith(COMMON):
        return None
    best = None
    for prefix, rank, name in LAYERS:
        if (rel == prefix or rel.startswith(prefix)) and (not best or len(prefix) > best[0]):
            best = (len(prefix), rank, name)
    return best[1:] if best else None


def include_violation(rel, cand):
    """Why `rel` may not include `cand`, or None."""
    tool, lay, cand_lay = tool_of(rel), layer_of(rel), layer_of(cand)
    cand_tool = tool_of(cand)
    if cand_tool and cand_tool != tool:
        return f"{rel} includes {cand}, a file of the {cand_tool} tool"
    if cand.startswith(COMMON):
        if not tool and not rel.startswith(COMMON):
            return f"{rel} includes {cand}: src/common is for the tools only"
        return None
    if lay and cand_lay and cand_lay[0] > lay[0]:
        return f"{rel} ({lay[1]}) includes {cand} ({cand_lay[1]}), a higher layer"
    return None


def source_files(src):
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if n.endswith((".h", ".c")):
                files[os.path.relpath(os.path.join(root, n), src)] = os.path.join(root, n)
    return files


def header_graph(src):
    files = source_files(src)
    graph, bad = {}, []
    for rel, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if inc.endswith(".c"):
                bad.append(f"{rel} includes a source file, {inc}")
            # Resolve as the compiler would: beside the file, then from SRC_DIR and its core/
            # and sql/ (the include directories of src/CMakeLists.txt), and common/ (the tools').
            for base in (os.path.dirname(rel), "", "core", "sql", "common"):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in files:
                    if rel.endswith(".h"):
                        graph.setdefault(rel, set()).add(cand)
                    why = include_violation(rel, cand)
                    if why:
                        bad.append(why)
                    break
    return graph, bad


def library_objects(src):
    """An archive member's name ("election.c") -> its path under SRC_DIR; the library's files only
    (a tool may have a file of the same name)."""
    paths = {}
    for rel in source_files(src):
        if rel.endswith(".c") and layer_of(rel):
            paths.setdefault(os.path.basename(rel), []).append(rel)
    return {name: rels[0] for name, rels in paths.items() if len(rels) == 1}


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
    graph, symbols = {}, {}
    for obj, names in uses.items():
        for n in names:
            d = defs.get(n)
            if d and d != obj:
                graph.setdefault(obj, set()).add(d)
                symbols.setdefault((obj, d), set()).add(n)
    return graph, symbols


def call_violations(src, graph, symbols):
    """One line per pair of objects where a lower layer's calls into a higher one's."""
    paths, out = library_objects(src), []
    for obj in sorted(graph):
        for d in sorted(graph[obj]):
            a, b = paths.get(os.path.basename(obj)), paths.get(os.path.basename(d))
            la, lb = (layer_of(a) if a else None), (layer_of(b) if b else None)
            if la and lb and lb[0] > la[0]:
                names = ", ".join(sorted(symbols[(obj, d)]))
                out.append(f"{a} ({la[1]}) calls {b} ({lb[1]}), a higher layer: {names}")
    return out


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
    ograph, symbols = object_graph(archive)
    for v in call_violations(src, ograph, symbols):
        print(f"refused: {v}")
        failed = True
    for comp in sccs(ograph):
        names = [os.path.basename(c) for c in comp]
        if set(names) <= ALLOWED:
            print(f"known (to be broken): source files call each other: {' '.join(names)}")
            continue
        print(f"refused: source files call each other: {' '.join(names)}")
        failed = True
    if not failed:
        print("no circle between headers or source files, no include or call up a layer")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
