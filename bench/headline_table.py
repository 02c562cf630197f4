#!/usr/bin/env python3
"""Pivot `switchyard bench -o jsonl` results into the headline table (bench/results/headline.md):
one row per model, attention mode and fused-MoE setting; one column per test (t/s, mean ± sd)."""
import json
import os
import sys

rows, tests = {}, []
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        key = (os.path.basename(r["model_filename"]), r["model_type"], r["mla_attn"], r["fused_moe"])
        if r["test"] not in tests:
            tests.append(r["test"])
        rows.setdefault(key, {})[r["test"]] = f'{r["avg_ts"]:.2f} ± {r["stddev_ts"]:.2f}'
        warnings = rows[key].setdefault("warnings", set())
        warnings.update(r["warnings"])

print("| model | mla | fmoe | " + " | ".join(f"{t} t/s" for t in tests) + " |")
print("|---|--:|--:|" + "--:|" * len(tests))
for (name, kind, mla, fmoe), cells in rows.items():
    print(f"| {kind} | {mla} | {int(fmoe)} | " + " | ".join(cells.get(t, "") for t in tests) + " |")
notes = sorted({w for cells in rows.values() for w in cells["warnings"]})
if notes:
    print("\nwarnings:")
    for w in notes:
        print(f"- {w}")
