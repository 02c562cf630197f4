#!/usr/bin/env python3
"""Compare two reports of bench/headline.sh (markdown, as committed in bench/results/headline.md):
cell by cell, the new value against the old one and against the noise of both runs.

    bench/headline_compare.py OLD.md NEW.md

Per cell: the ratio new/old and whether the difference is within twice the combined standard
deviation of the two cells' repetitions (sqrt(sd_old^2 + sd_new^2)). Per test column: the median
ratio, its range and how many cells are within that noise. Each report's measured memory
bandwidth is printed too: on shared machines it moves between runs, and generation with it.
Exit status 0; 2 when a report has no table or the tables have no cell in common."""
import re
import statistics
import sys

CELL = re.compile(r"^\s*([0-9.]+)\s*±\s*([0-9.]+)\s*$")


def read(path):
    header, cells, bandwidth = None, {}, ""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("- memory read bandwidth"):
            bandwidth = line.split(":", 1)[1].strip()
        if not line.startswith("|"):
            continue
        parts = [p.strip() for p in line.strip("|").split("|")]
        if parts[0] == "model":
            header = parts
            continue
        if header is None or set(parts[0]) <= set("-: "):
            continue
        key = tuple(parts[:3])
        for name, text in zip(header[3:], parts[3:]):
            m = CELL.match(text)
            if m:
                cells[(key, name)] = (float(m.group(1)), float(m.group(2)))
    if not cells:
        print(f"{path}: no headline table (| model | mla | fmoe | ... | rows of 'mean ± sd')",
              file=sys.stderr)
        sys.exit(2)
    return cells, bandwidth


def main():
    if len(sys.argv) != 3:
        print("usage: headline_compare.py OLD.md NEW.md", file=sys.stderr)
        sys.exit(2)
    old, bw_old = read(sys.argv[1])
    new, bw_new = read(sys.argv[2])
    common = [k for k in old if k in new]
    if not common:
        print("the two tables have no cell in common", file=sys.stderr)
        sys.exit(2)
    print(f"memory bandwidth: old {bw_old or 'not given'}; new {bw_new or 'not given'}")
    print("| model | mla | fmoe | test | old t/s | new t/s | new/old | within 2 sd |")
    print("|---|--:|--:|---|--:|--:|--:|:-:|")
    columns = {}
    for key, test in common:
        (a, sa), (b, sb) = old[(key, test)], new[(key, test)]
        ratio = b / a if a > 0 else float("inf")
        within = abs(b - a) <= 2 * (sa * sa + sb * sb) ** 0.5
        columns.setdefault(test, []).append((ratio, within))
        print(f"| {' | '.join(key)} | {test} | {a:.2f} ± {sa:.2f} | {b:.2f} ± {sb:.2f} | "
              f"{ratio:.3f} | {'yes' if within else 'no'} |")
    print()
    for test, values in columns.items():
        ratios = [r for r, _ in values]
        inside = sum(1 for _, w in values if w)
        print(f"{test}: median new/old {statistics.median(ratios):.3f} "
              f"(range {min(ratios):.3f} to {max(ratios):.3f}), "
              f"{inside} of {len(values)} cells within 2 sd")


if __name__ == "__main__":
    main()
