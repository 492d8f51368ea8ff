#!/usr/bin/env python3
"""Joins wgi's Google Benchmark JSON with bench/torch_peer.py's lines into a markdown table of ratios, with
wgi's roofline position: % of the fp32 FMA peak and % of the memory bandwidth (the least traffic the product
or conv needs: every operand read once and the output written once, as the benchmark's "bytes" counter or,
for products, 4 * (M*K + K*N + M*N) bytes).
Usage: python3 bench/compare.py WGI_BENCH.json TORCH.jsonl [PEAK_TFLOPS [PEAK_TB_PER_S]]
The defaults are the H200's: about 67 TFLOP/s of fp32 FMA (132 SMs x 128 lanes x 2 x ~1.98 GHz) and
4.3 TB/s, what a device-to-device copy reaches there (docs/performance.md)."""
import json
import sys

PEAK_TFLOPS = float(sys.argv[3]) if len(sys.argv) > 3 else 67.0
PEAK_TBS = float(sys.argv[4]) if len(sys.argv) > 4 else 4.3


def least_bytes(name, b):
    """The least bytes the benchmark must move, or None when unknown."""
    if "bytes" in b:  # a rate counter: bytes per second
        return b["bytes"] * (b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6) * 1e-3
    dims = [int(x) for x in name.split("/")[-3:] if x.isdigit()]
    if len(dims) == 3:
        m, n, k = dims
        return 4.0 * (m * k + k * n + m * n)
    return None

wgi = json.load(open(sys.argv[1]))
peer = {}
for line in open(sys.argv[2]):
    line = line.strip()
    if line.startswith("{"):
        row = json.loads(line)
        peer[row["name"]] = row
print(f"machine: {peer.get('device', {})}")
print(f"roofline: fp32 FMA peak {PEAK_TFLOPS} TFLOP/s, bandwidth {PEAK_TBS} TB/s")
print("| benchmark | wgi kernel | wgi ms | wgi TFLOP/s | % FMA peak | % bandwidth | PyTorch ms | PyTorch TFLOP/s "
      "| wgi / PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for b in wgi["benchmarks"]:
    name = b["name"].replace("/manual_time", "")
    if b.get("error_occurred"):
        print(f"| {name} | skipped: {b.get('error_message', '')} | - | - | - | - | - | - | - |")
        continue
    ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
    tflops = b.get("FLOP", 0) * 1e-12
    moved = least_bytes(name, b)
    roof = f"{100 * tflops / PEAK_TFLOPS:.0f}% | " + (
        f"{100 * moved / (ms * 1e-3) / (PEAK_TBS * 1e12):.0f}%" if moved else "-")
    # Forced-kernel and configuration variants (BM_LinearKernel/<kernel>/M/N/K, BM_LinearConfig/<config>/...,
    # BM_MatMulRuntimeB/<kernel>/...) compare with the same product's PyTorch time.
    parts = name.split("/")
    p = peer.get(name) or (peer.get("/".join(["BM_Linear"] + parts[2:])) if len(parts) == 5 else None)
    # BM_ConvKernel/<kernel>/n:../..., BM_ConvConfig/<config>/n:../...: the same conv's BM_Conv peer.
    if not p and parts[0] in ("BM_ConvKernel", "BM_ConvConfig"):
        p = peer.get("/".join(["BM_Conv"] + parts[2:]))
    if p:
        print(f"| {name} | {b.get('label', '')} | {ms:.3f} | {tflops:.2f} | {roof} | {p['ms']:.3f} | "
              f"{p['tflops']:.2f} | {p['ms'] / ms:.3f} |")
    else:
        print(f"| {name} | {b.get('label', '')} | {ms:.3f} | {tflops:.2f} | {roof} | - | - | - |")
