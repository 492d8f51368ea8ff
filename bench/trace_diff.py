#!/usr/bin/env python3
"""Two `wgi bench --trace` files of plans with the same nodes (a model's fp32 file and its fp16 variant),
side by side: GPU milliseconds per kernel (labels with their float16 weight suffixes _bf16 / _wf16 folded, so
that the same kernel pairs up), then the nodes whose time grew most. Per-dispatch timestamps carry a fixed
cost each, the same in both files, so differences are what to read.

    python3 bench/trace_diff.py trace_model.json trace_model_fp16.json
"""
import collections
import json
import re
import sys


def events(path):
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def kernel_class(event):
    return re.sub(r"_(bf16|wf16)(?=[_+]|$)", "", event["args"].get("kernel", event["cat"]))


def main(a_path, b_path):
    a, b = events(a_path), events(b_path)
    print(f"{a_path}: {len(a)} dispatches, {sum(e['dur'] for e in a) / 1e3:.3f} ms; "
          f"{b_path}: {len(b)} dispatches, {sum(e['dur'] for e in b) / 1e3:.3f} ms")
    per_kernel = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for i, trace in enumerate((a, b)):
        for e in trace:
            row = per_kernel[kernel_class(e)]
            row[i] += e["dur"] / 1e3
            row[2 + i] += 1
    print(f"{'kernel':60s} {'ms A':>9s} {'ms B':>9s} {'B - A':>8s}  count A / B")
    for name, (ta, tb, na, nb) in sorted(per_kernel.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0])):
        print(f"{name[:60]:60s} {ta:9.3f} {tb:9.3f} {tb - ta:+8.3f}  {na} / {nb}")
    if len(a) == len(b):
        print("nodes whose time grew most (B - A, ms):")
        pairs = sorted(zip(a, b), key=lambda p: -(p[1]["dur"] - p[0]["dur"]))
        for ea, eb in pairs[:15]:
            print(f"  {(eb['dur'] - ea['dur']) / 1e3:+8.3f}  {ea['dur'] / 1e3:8.3f} -> {eb['dur'] / 1e3:8.3f}  "
                  f"{ea['name']} ({ea['args'].get('kernel')} / {eb['args'].get('kernel')})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
