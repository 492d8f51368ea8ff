#!/usr/bin/env python3
"""Joins wgi's Google Benchmark JSON with bench/torch_peer.py's lines into a markdown table of ratios.
Usage: python3 bench/compare.py WGI_BENCH.json TORCH.jsonl"""
import json
import sys

wgi = json.load(open(sys.argv[1]))
peer = {}
for line in open(sys.argv[2]):
    line = line.strip()
    if line.startswith("{"):
        row = json.loads(line)
        peer[row["name"]] = row
print(f"machine: {peer.get('device', {})}")
print("| benchmark | wgi kernel | wgi ms | wgi TFLOP/s | PyTorch ms | PyTorch TFLOP/s | wgi / PyTorch |")
print("|---|---|---|---|---|---|---|")
for b in wgi["benchmarks"]:
    name = b["name"].replace("/manual_time", "")
    if b.get("error_occurred"):
        print(f"| {name} | skipped: {b.get('error_message', '')} | - | - | - | - | - |")
        continue
    ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
    tflops = b.get("FLOP", 0) * 1e-12
    # Forced-kernel and configuration variants (BM_LinearKernel/<kernel>/M/N/K, BM_LinearConfig/<config>/...,
    # BM_MatMulRuntimeB/<kernel>/...) compare with the same product's PyTorch time.
    parts = name.split("/")
    p = peer.get(name) or (peer.get("/".join(["BM_Linear"] + parts[2:])) if len(parts) == 5 else None)
    # BM_ConvKernel/<kernel>/n:../..., BM_ConvConfig/<config>/n:../...: the same conv's BM_Conv peer.
    if not p and parts[0] in ("BM_ConvKernel", "BM_ConvConfig"):
        p = peer.get("/".join(["BM_Conv"] + parts[2:]))
    if p:
        print(f"| {name} | {b.get('label', '')} | {ms:.3f} | {tflops:.2f} | {p['ms']:.3f} | {p['tflops']:.2f} | "
              f"{p['ms'] / ms:.3f} |")
    else:
        print(f"| {name} | {b.get('label', '')} | {ms:.3f} | {tflops:.2f} | - | - | - |")
