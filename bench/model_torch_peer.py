#!/usr/bin/env python3
"""PyTorch eager on CUDA (fp32, TF32 off) for the base-size target models: the latency wgi's `wgi bench` of
the same model is compared with (docs/performance.md). The modules are tests/models/florence_siglip.py's and
resnet.py's; the vision inputs are the model folders' own input_*.npy (build/models-large/<name>_opset17, see
those files' --large).
Decoder steps are timed at one new token after 64, with 590 encoder tokens (the shapes the campaign gives
`wgi bench` and ORT). Weights are random in both (wgi's come from fill_weights.py); timing does not depend
on their values.
Prints one JSON object per line: {"model": ..., "batch": ..., "median_ms": ..., "p90_ms": ..., "runs": ...}.
WGI_PEER_BATCH=n runs the vision models on n copies of their image (issue 21's batch-8 table); decoder steps
stay at batch 1. WGI_PEER_LAYERS=1 also times each Conv2d and Linear module alone on the input it saw in the
model ({"model", "layer": "layer2.0.conv2", "kind": "conv" or "linear", "shape": ..., "median_ms"}), to set
beside `wgi bench --trace`'s node of the same name ('/layer2/layer2.0/conv2/Conv'; bench/layer_table.py).
WGI_PEER_PRECISION=tf32 lets cuBLAS and cuDNN use TF32 (issue 21's "PyTorch TF32" column); =fp16 runs under
torch.autocast(float16) (the f16 target's "PyTorch fp16 autocast"); the default fp32 keeps TF32 off.

    python3 bench/model_torch_peer.py build/models-large/*_opset17
"""
import glob
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import florence_siglip  # noqa: E402
import resnet  # noqa: E402

PRECISION = os.environ.get("WGI_PEER_PRECISION", "fp32")
if PRECISION not in ("fp32", "tf32", "fp16"):
    sys.exit(f"model_torch_peer.py: WGI_PEER_PRECISION={PRECISION!r}: expected fp32, tf32 or fp16")
torch.backends.cuda.matmul.allow_tf32 = PRECISION == "tf32"
torch.backends.cudnn.allow_tf32 = PRECISION == "tf32"
torch.backends.cudnn.benchmark = True
# cpu only to try the script on a machine without a GPU
device = os.environ.get("WGI_PEER_DEVICE", "cuda")


def synchronize():
    if device == "cuda":
        torch.cuda.synchronize()


def module_for(name):
    if name.startswith("florence2_vision_base"):
        return florence_siglip.florence2_vision(False)
    if name.startswith("siglip_vision_base"):
        return florence_siglip.siglip_vision(False)
    if name.startswith("bart_decoder_cached_cross_base"):
        return florence_siglip.bart_decoder(False, cross_kv_inputs=True)
    if name.startswith("bart_decoder_base"):
        return florence_siglip.bart_decoder(False)
    if name.startswith("resnet50"):
        return resnet.resnet(False)
    return None


def decoder_step_inputs(module, past_len=64, src_len=590):
    """One new token after `past_len`, Florence-2's 590 encoder tokens: the step bench/h200_campaign.sh times
    with `wgi bench --dim ...` and ORT with the same shapes."""
    rng = np.random.default_rng(1)
    dim = module.embed_tokens.embedding_dim
    heads = module.layers[0].self_attn.heads
    head = dim // heads
    ids = torch.zeros(1, 1, dtype=torch.long)
    if module.cross_kv_inputs:
        lengths = [past_len, past_len, src_len, src_len]
        rest = [rng.uniform(-1, 1, (1, heads, lengths[i % 4], head)) for i in range(4 * module.layers_count)]
    else:
        rest = [rng.uniform(-1, 1, (1, src_len, dim))]
        rest += [rng.uniform(-1, 1, (1, heads, past_len, head)) for _ in range(2 * module.layers_count)]
    return [ids.to(device)] + [torch.from_numpy(r.astype(np.float32)).to(device) for r in rest]


BATCH = int(os.environ.get("WGI_PEER_BATCH", "1"))


def inputs_for(folder, module):
    """Vision models: the folder's image input (input_pixel_values.npy, input_image.npy), BATCH copies of it;
    decoder steps: decoder_step_inputs."""
    if hasattr(module, "io_names"):
        return decoder_step_inputs(module)
    (image,) = glob.glob(os.path.join(folder, "input_*.npy"))
    pixels = np.load(image)
    return [torch.from_numpy(np.ascontiguousarray(np.repeat(pixels, BATCH, axis=0))).to(device)]


RUNS = 50


def median_p90(fn, runs=RUNS, warmup=5):
    for _ in range(warmup):
        fn()
    synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        synchronize()  # host-visible latency, as wgi bench measures a run
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2], times[int(0.9 * len(times))]


def layer_times(module, args):
    """Each Conv2d and Linear of `module` timed alone (cuDNN / cuBLAS, the same flags) on the input it
    received in one forward. A module called inside another's functional code (nn.MultiheadAttention's
    projections) is not seen."""
    seen = {}

    def keep(name):
        def hook(conv, inputs, output):
            seen.setdefault(name, (conv, inputs[0]))  # returns None: the output stays the module's
        return hook

    hooks = [m.register_forward_hook(keep(name)) for name, m in module.named_modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    module(*args)
    for h in hooks:
        h.remove()
    for name, (layer, x) in seen.items():
        median, _ = median_p90(lambda: layer(x))
        yield name, list(x.shape), layer, median


def layer_record(model, name, shape, layer, ms):
    if isinstance(layer, torch.nn.Linear):
        return {"model": model, "layer": name, "kind": "linear", "shape": shape, "out": layer.out_features,
                "median_ms": round(ms, 4)}
    return {"model": model, "layer": name, "kind": "conv", "shape": shape, "oc": layer.out_channels,
            "kernel": list(layer.kernel_size), "stride": list(layer.stride), "median_ms": round(ms, 4)}


def main(folders):
    for folder in folders:
        name = os.path.basename(os.path.normpath(folder))
        module = module_for(name)
        if module is None:
            continue
        try:
            module = module.eval().to(device)
            args = inputs_for(folder, module)
            with torch.no_grad(), torch.autocast(device, torch.float16, enabled=PRECISION == "fp16"):
                median, p90 = median_p90(lambda: module(*args))
        except Exception as e:  # one model's failure must not hide the others' numbers
            print(json.dumps({"model": name, "error": repr(e)}), flush=True)
            continue
        batch = 1 if hasattr(module, "io_names") else BATCH
        print(json.dumps({"model": name, "peer": f"torch_eager_{device}_{PRECISION}", "batch": batch,
                          "median_ms": round(median, 3), "p90_ms": round(p90, 3), "runs": RUNS}), flush=True)
        if os.environ.get("WGI_PEER_LAYERS") == "1":
            with torch.no_grad():
                for layer_name, shape, layer, ms in layer_times(module, args):
                    print(json.dumps(layer_record(name, layer_name, shape, layer, ms)), flush=True)
        del module, args
        if device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(glob.glob("build/models-large/*_opset17")))
