#!/usr/bin/env python3
"""The peer of bench/bench_data_dependent.cpp at WGI_BENCH_SIZE=large, on CUDA: torch.topk (largest, sorted) on
8 rows of 50000, k = 100 and 1000; torchvision's NMS over 10000 random corner boxes with 1 and 4 classes (IoU
0.5, score threshold 0.05 applied first, at most 200 kept per class, as wgi's benchmark), when torchvision is
installed. One JSON object per line, names as Google Benchmark's. Run on the GPU machine:
python3 bench/data_dependent_torch_peer.py"""
import json

import torch

from torch_peer import time_ms

dev = "cuda"


def topk(rows, width, k):
    x = torch.rand(rows, width, device=dev)
    ms = time_ms(lambda: torch.topk(x, k, dim=-1, largest=True, sorted=True))
    return {"name": f"BM_TopK/{rows}/{width}/{k}", "ms": ms}


def nms(boxes, classes):
    import torchvision
    g = torch.Generator(device="cpu").manual_seed(0)
    xy = torch.rand(boxes, 2, generator=g) * 1000
    wh = torch.rand(boxes, 2, generator=g) * 100 + 1
    b = torch.cat([xy, xy + wh], 1).to(dev)
    scores = torch.rand(classes, boxes, generator=g).to(dev)

    def run():
        kept = []
        for c in range(classes):
            s = scores[c]
            keep = s > 0.05
            idx = torchvision.ops.nms(b[keep], s[keep], 0.5)[:200]
            kept.append(idx)
        return kept
    return {"name": f"BM_NonMaxSuppression/{boxes}/{classes}", "ms": time_ms(run)}


if __name__ == "__main__":
    print(json.dumps({"name": "device", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}),
          flush=True)
    for rows, width, k in ((8, 50000, 100), (8, 50000, 1000), (8, 50000, 16), (1, 51289, 1), (3, 51289, 16)):
        print(json.dumps(topk(rows, width, k)), flush=True)
    try:
        for classes in (1, 4):
            print(json.dumps(nms(10000, classes)), flush=True)
    except ImportError as e:
        print(json.dumps({"name": "BM_NonMaxSuppression", "skipped": f"torchvision missing: {e}"}), flush=True)
