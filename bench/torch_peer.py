#!/usr/bin/env python3
"""The hardware's practical ceiling for the shapes of bench/bench_ops.cpp: PyTorch on CUDA (cuBLAS / cuDNN),
fp32 with TF32 off. Prints one JSON object per line: {"name": ..., "ms": ..., "tflops": ...}.
Names match Google Benchmark's (BM_Linear/M/N/K, BM_Conv/n:../ic:../...) so bench/compare.py can join them.
Run on the GPU machine: python3 bench/torch_peer.py"""
import json
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"


def time_ms(fn, target_ms=200.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 1
    while True:
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
        if ms > target_ms or reps >= 10000:
            return ms / reps
        reps = min(10000, max(reps * 2, int(reps * target_ms / max(ms, 1e-3))))


def linear(m, n, k):
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand(m, k, device=dev, generator=g) * 2 - 1
    w = torch.rand(n, k, device=dev, generator=g) * 2 - 1
    b = torch.rand(n, device=dev, generator=g) * 2 - 1
    ms = time_ms(lambda: torch.nn.functional.linear(x, w, b))
    return {"name": f"BM_Linear/{m}/{n}/{k}", "ms": ms, "tflops": 2 * m * n * k / ms * 1e-9}


def conv(n, ic, oc, hw, k, s, g):
    x = torch.rand(n, ic, hw, hw, device=dev) * 2 - 1
    w = torch.rand(oc, ic // g, k, k, device=dev) * 2 - 1
    b = torch.rand(oc, device=dev) * 2 - 1
    y = torch.nn.functional.conv2d(x, w, b, stride=s, padding=k // 2, groups=g)
    ms = time_ms(lambda: torch.nn.functional.conv2d(x, w, b, stride=s, padding=k // 2, groups=g))
    flops = 2 * y.numel() * (ic // g) * k * k
    return {"name": f"BM_Conv/n:{n}/ic:{ic}/oc:{oc}/hw:{hw}/k:{k}/s:{s}/g:{g}", "ms": ms, "tflops": flops / ms * 1e-9}


LINEAR = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (196, 768, 768), (196, 3072, 768), (196, 768, 3072),
          (4096, 1024, 1024), (9216, 256, 256), (1, 768, 768), (8, 3072, 768), (1, 51289, 768),
          # the other decoder-step (GEMV) shapes of bench_ops.cpp
          (1, 3072, 768), (1, 768, 3072), (4, 3072, 768), (8, 768, 3072), (8, 51289, 768)]
# The target models' products (bench_ops.cpp's BM_LinearModel: DaViT-base at 768^2, SigLIP-B/16 at 224 at
# batch 8; its batch-1 products are in LINEAR)
MODEL_LINEAR = [(36864, 384, 128), (36864, 512, 128), (36864, 128, 512), (9216, 768, 256), (9216, 1024, 256),
                (9216, 256, 1024), (2304, 1536, 512), (2304, 512, 512), (2304, 2048, 512), (2304, 512, 2048),
                (576, 3072, 1024), (576, 1024, 1024), (576, 4096, 1024), (576, 1024, 4096), (577, 768, 1024),
                (1576, 2304, 768), (1576, 768, 768), (1576, 3072, 768), (1576, 768, 3072)]
CONV = [(8, 256, 256, 56, 3, 1, 1), (8, 256, 64, 56, 1, 1, 1), (8, 128, 256, 56, 3, 2, 1),
        (8, 256, 256, 56, 3, 1, 256), (8, 3, 64, 224, 7, 2, 1),
        # depthwise: DaViT-base's position encoding at 768^2 (stage 1), a MobileNet-like stride-2 one
        (1, 128, 128, 192, 3, 1, 128), (8, 128, 128, 112, 3, 2, 128),
        # DaViT-base's downsampling convs at 768^2
        (1, 128, 256, 192, 3, 2, 1), (1, 256, 512, 96, 3, 2, 1), (1, 512, 1024, 48, 3, 2, 1),
        # ResNet-50's batch-8 convs that lost most to cuDNN (bench_ops.cpp's conv_shapes says which)
        (8, 128, 128, 28, 3, 1, 1), (8, 128, 128, 56, 3, 2, 1), (8, 512, 1024, 28, 1, 2, 1),
        (8, 1024, 2048, 14, 1, 2, 1), (8, 1024, 256, 14, 1, 1, 1), (8, 2048, 512, 7, 1, 1, 1),
        (1, 2048, 512, 7, 1, 1, 1)]

if __name__ == "__main__":
    print(json.dumps({"name": "device", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    for shape in LINEAR + MODEL_LINEAR:
        print(json.dumps(linear(*shape)), flush=True)
    for shape in CONV:
        print(json.dumps(conv(*shape)), flush=True)
