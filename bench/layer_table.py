#!/usr/bin/env python3
"""A model layer by layer: wgi's GPU time per Conv / MatMul / Gemm node (a `wgi bench --trace` file) beside
PyTorch's time for the same Conv2d or Linear alone (bench/model_torch_peer.py with WGI_PEER_LAYERS=1, its
JSON lines), joined by name (wgi's '/layer2/layer2.0/downsample/downsample.0/Conv' is torch's
'layer2.0.downsample.0', '/layers.0/self_attn/out_proj/MatMul' is 'layers.0.self_attn.out_proj'), the
largest excess of wgi's time first, with the kernel wgi chose and the GFLOP of each. A wgi node that merged
several products ('.../q_proj/MatMul+.../k_proj/MatMul+...') is set against the sum of their torch times.
Torch layers without a wgi node of that name (run inside another op, or named otherwise) are listed after
the table; a table that matched nothing is an error.

    python3 bench/layer_table.py trace.json torch_layers.jsonl [model]
"""
import json
import sys

NODE_OPS = ("/Conv", "/MatMul", "/Gemm")


def torch_name(node):
    """The exporter's scope path of a node as torch's dotted module name: each scope component is a child's
    name, qualified by its parents' only where they are Sequentials' indices (layer2.0, downsample.0)."""
    parts = node.strip("/").split("/")[:-1]  # the last part is the op ('Conv')
    if not parts:
        return None
    name = parts[-1]
    for part in reversed(parts[:-1]):
        if not name.startswith(part + "."):
            name = part + "." + name
    return name


def gflop_of(r):
    if r.get("kind", "conv") == "linear":
        rows = 1
        for d in r["shape"][:-1]:
            rows *= d
        return 2 * rows * r["shape"][-1] * r["out"] / 1e9
    n, c, h, w = r["shape"]
    s, k = r["stride"], r["kernel"]
    oh, ow = (h + s[0] - 1) // s[0], (w + s[1] - 1) // s[1]
    return 2 * n * r["oc"] * oh * ow * c * k[0] * k[1] / 1e9


def describe(r):
    if r.get("kind", "conv") == "linear":
        return f"{'x'.join(map(str, r['shape']))} -> {r['out']}"
    k, s = r["kernel"], r["stride"]
    return f"{'x'.join(map(str, r['shape']))} -> {r['oc']}, {k[0]}x{k[1]} / {s[0]}"


def main(trace_path, layers_path, model=None):
    with open(trace_path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and any(part.endswith(NODE_OPS) for part in e["name"].split("+"))]
    nodes = {}  # members (torch names) -> [ms, kernel]; a node of several dispatches sums them
    for e in events:
        members = tuple(torch_name(part) for part in e["name"].split("+") if part.endswith(NODE_OPS))
        ms, kernel = nodes.get(members, (0.0, ""))
        nodes[members] = (ms + e["dur"] / 1e3, "+".join(filter(None, (kernel, e["args"].get("kernel", "")))))
    layers = {}
    with open(layers_path) as f:
        for line in f:
            r = json.loads(line)
            if "layer" in r and (not model or r["model"] == model):
                layers[r["layer"]] = r
    rows, matched = [], set()
    for members, (ms, kernel) in nodes.items():
        if not all(m in layers for m in members):
            continue
        matched.update(members)
        torch_ms = sum(layers[m]["median_ms"] for m in members)
        gflop = sum(gflop_of(layers[m]) for m in members)
        what = describe(layers[members[0]])
        if len(members) > 1 and all(layers[m].get("kind") == "linear" for m in members):
            what = what.rsplit(" -> ", 1)[0] + " -> " + " + ".join(str(layers[m]["out"]) for m in members)
        rows.append((" + ".join(members), what, gflop, ms, torch_ms, kernel))
    if not rows:
        sys.exit(f"no layer of {layers_path} has a node of that name in {trace_path} "
                 "(WGI_PEER_LAYERS=1 writes the layers)")
    total_wgi = sum(r[3] for r in rows)
    total_torch = sum(r[4] for r in rows)
    print(f"{len(rows)} nodes: wgi {total_wgi:.3f} ms, torch (each layer alone) {total_torch:.3f} ms, "
          f"ratio {total_wgi / total_torch:.2f}")
    print("| layer | input -> output | GFLOP | wgi ms | torch ms | wgi / torch | wgi TFLOP/s | wgi kernel |")
    print("|---|---|---|---|---|---|---|---|")
    for name, what, gflop, ms, tms, kernel in sorted(rows, key=lambda r: -(r[3] - r[4])):
        print(f"| {name} | {what} | {gflop:.2f} | {ms:.4f} | {tms:.4f} | {ms / tms:.2f} | {gflop / ms:.1f} | "
              f"{kernel} |")
    unmatched = [name for name in layers if name not in matched]
    if unmatched:
        print(f"torch layers without a wgi node of their name ({len(unmatched)}): {', '.join(unmatched)}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
