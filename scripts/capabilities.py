#!/usr/bin/env python3
"""The store x capability table of README.md, made from the contract tests' registry.

tests/contract/tests.cmake has one reign_contract() line per capability, naming the stores
that claim it; each claim is a contract test that runs on that store in every CI run, and each
store that does not claim it gets an entry that checks the refusal and shows as Skipped.  This
script turns those lines into README.md's table, so that the table says exactly what the suite
proves.

    scripts/capabilities.py            print the table
    scripts/capabilities.py --write    put it in README.md, between the markers
    scripts/capabilities.py --check    exit 1 (saying why) if README.md's table is not it
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = "tests/contract/tests.cmake"
BEGIN = "<!-- capabilities: made by scripts/capabilities.py from tests/contract/tests.cmake -->"
END = "<!-- end of capabilities -->"

# The stores in the registry's order (REIGN_CONTRACT_STORES), as people name them.
STORE_NAMES = {"zk": "ZooKeeper", "sqlite": "SQLite", "postgres": "PostgreSQL",
               "mariadb": "MariaDB", "etcd": "etcd"}


def parse_registry(text):
    """(stores, [(capability, title, claims, gap)]) from tests.cmake's text."""
    m = re.search(r"^set\(REIGN_CONTRACT_STORES ([^)]*)\)", text, re.M)
    if not m:
        raise ValueError(f"{REGISTRY}: no set(REIGN_CONTRACT_STORES ...)")
    stores = m.group(1).split()
    rows = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.startswith("reign_contract("):
            continue
        m = re.fullmatch(r'reign_contract\((\w+)((?:\s+\w+|\s+"[^"]*")*)\s*\)', line.strip())
        if not m:
            raise ValueError(f"{REGISTRY}:{no}: a reign_contract() line must be whole on one "
                             f"line: {line.strip()}")
        words = re.findall(r'"[^"]*"|\S+', m.group(2))
        args, key = {"STORES": [], "TITLE": [], "GAP": [], "TIMEOUT": []}, None
        for w in words:
            if w in args:
                key = w
            elif key is None:
                raise ValueError(f"{REGISTRY}:{no}: {w!r} before any keyword")
            else:
                args[key].append(w.strip('"'))
        if not args["TITLE"]:
            raise ValueError(f"{REGISTRY}:{no}: reign_contract({m.group(1)}) has no TITLE")
        unknown = [s for s in args["STORES"] if s not in stores]
        if unknown:
            raise ValueError(f"{REGISTRY}:{no}: unknown store(s) {unknown}")
        rows.append((m.group(1), args["TITLE"][0], args["STORES"],
                     args["GAP"][0] if args["GAP"] else None))
    if not rows:
        raise ValueError(f"{REGISTRY}: no reign_contract() line")
    return stores, rows


def table(stores, rows):
    head = ["What", *[STORE_NAMES.get(s, s) for s in stores], "Contract test"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    gaps = []
    for cap, title, claims, gap in rows:
        cells = ["yes" if s in claims else "no" for s in stores]
        out.append(f"| {title} | " + " | ".join(cells) + f" | `contract_{cap}_<store>` |")
        if gap and len(claims) < len(stores):
            gaps.append(f"* {title}: not on "
                        + ", ".join(STORE_NAMES.get(s, s) for s in stores if s not in claims)
                        + f" ({gap}).")
    return "\n".join(out + ([""] + gaps if gaps else [])) + "\n"


def block(stores, rows):
    return f"{BEGIN}\n{table(stores, rows)}{END}"


def main(argv):
    with open(os.path.join(ROOT, REGISTRY)) as f:
        stores, rows = parse_registry(f.read())
    want = block(stores, rows)
    if len(argv) < 2:
        sys.stdout.write(table(stores, rows))
        return 0
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        readme = f.read()
    m = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), readme, re.S)
    if not m:
        print(f"README.md: no capability table (the line {BEGIN!r} ... {END!r})",
              file=sys.stderr)
        return 1
    if argv[1] == "--check":
        if m.group(0) != want:
            print(f"README.md's capability table differs from {REGISTRY}: "
                  f"run scripts/capabilities.py --write", file=sys.stderr)
            return 1
        return 0
    if argv[1] == "--write":
        with open(path, "w") as f:
            f.write(readme[:m.start()] + want + readme[m.end():])
        return 0
    print(f"usage: {argv[0]} [--write | --check]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
