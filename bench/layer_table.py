#!/usr/bin/env python3
"""A model's convs one by one: wgi's GPU time per Conv node (a `wgi bench --trace` file) beside PyTorch's
time for the same conv alone (bench/model_torch_peer.py with WGI_PEER_LAYERS=1, its JSON lines), joined by
name (wgi's '/layer2/layer2.0/downsample/downsample.0/Conv' is torch's 'layer2.0.downsample.0'), slowest
ratio first, with the kernel wgi chose and the GFLOP of each.

    python3 bench/layer_table.py trace.json torch_layers.jsonl [model]
"""
import json
import sys


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


def main(trace_path, layers_path, model=None):
    with open(trace_path) as f:
        convs = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["name"].endswith("/Conv")]
    wgi_ms = {}
    for e in convs:  # a node that runs as several dispatches (split K + reduction) sums them
        key = torch_name(e["name"])
        ms, kernel = wgi_ms.get(key, (0.0, ""))
        wgi_ms[key] = (ms + e["dur"] / 1e3, "+".join(filter(None, (kernel, e["args"].get("kernel", "")))))
    rows = []
    with open(layers_path) as f:
        for line in f:
            r = json.loads(line)
            if "layer" not in r or (model and r["model"] != model):
                continue
            n, c, h, w = r["shape"]
            s, k = r["stride"], r["kernel"]
            oh, ow = (h + s[0] - 1) // s[0], (w + s[1] - 1) // s[1]
            gflop = 2 * n * r["oc"] * oh * ow * c * k[0] * k[1] / 1e9
            ms, kernel = wgi_ms.pop(r["layer"], (None, ""))
            rows.append((r["layer"], r["shape"], r["oc"], k, s, gflop, ms, r["median_ms"], kernel))
    if not rows:
        sys.exit(f"no conv layers in {layers_path} (WGI_PEER_LAYERS=1 writes them)")
    missing = [name for name, _, _, _, _, _, ms, _, _ in rows if ms is None]
    if missing:  # a table that compared nothing for a layer must say so, not show a blank
        sys.exit(f"layers without a Conv node in {trace_path}: {', '.join(missing)}")
    total_wgi = sum(r[6] for r in rows)
    total_torch = sum(r[7] for r in rows)
    print(f"convs: wgi {total_wgi:.3f} ms, torch (each alone) {total_torch:.3f} ms, "
          f"ratio {total_wgi / total_torch:.2f}")
    print("| layer | input | oc | k / s | GFLOP | wgi ms | torch ms | wgi / torch | wgi TFLOP/s | wgi kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, shape, oc, k, s, gflop, ms, tms, kernel in sorted(rows, key=lambda r: -(r[6] - r[7])):
        print(f"| {name} | {'x'.join(map(str, shape))} | {oc} | {k[0]}x{k[1]} / {s[0]} | {gflop:.2f} | {ms:.4f} | "
              f"{tms:.4f} | {ms / tms:.2f} | {gflop / ms:.1f} | {kernel} |")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
