#!/usr/bin/env python3
"""The split sweep of wgi_bench_ops (BM_LinearModel/planner and BM_LinearSplit/<tile>_s<chunks> on the target
models' products, and BM_LinearModel/one_launch: the planner's choice without its wave tail) as one Markdown
row per product: the planner's kernel and time, then each forced tile and split, the fastest in bold. Usage: split_table.py wgi_bench.json"""
import json
import re
import sys
from collections import defaultdict


def main(path):
    rows = defaultdict(dict)  # "M/N/K" -> {column: (ms, label)}
    columns = []
    for b in json.load(open(path))["benchmarks"]:
        m = re.match(r"BM_Linear(Model/planner|(?:Model|Split)/(\w+))/(\d+/\d+/\d+)/", b["name"])
        if not m or b.get("error_occurred"):
            continue
        column = "planner" if m.group(2) is None else m.group(2)
        if column not in columns:
            columns.append(column)
        ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1000.0
        rows[m.group(3)][column] = (ms, b.get("label", ""))
    forced = [c for c in columns if c != "planner"]
    print("| M/N/K | planner | " + " | ".join(forced) + " | best / planner |")
    print("|---" * (len(forced) + 3) + "|")
    for shape, cells in rows.items():
        best = min((cells[c][0] for c in forced if c in cells), default=None)
        planner = cells.get("planner")
        out = [shape, "%.3f %s" % (planner[0], planner[1]) if planner else "-"]
        for c in forced:
            if c not in cells:
                out.append("-")
            else:
                text = "%.3f" % cells[c][0]
                out.append("**%s**" % text if cells[c][0] == best else text)
        out.append("%.2f" % (best / planner[0]) if planner and best else "-")
        print("| " + " | ".join(out) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
