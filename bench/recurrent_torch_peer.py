#!/usr/bin/env python3
"""The peer of bench/bench_recurrent.cpp at WGI_BENCH_SIZE=large: PyTorch's cuDNN RNNs (fp32, TF32 off), one
layer, one direction, input size = hidden, biases, sequence-first input, zero initial state: nn.LSTM, nn.GRU
(cuDNN's GRU is ONNX's linear_before_reset = 1) and nn.RNN (tanh), each timed as one module call over the
whole sequence. Prints one JSON object per line, names as Google Benchmark's (BM_Recurrent/<cell>/batch/seq/
hidden) so that bench/compare.py joins them with wgi_bench_recurrent --benchmark_format=json.
Run on the GPU machine: python3 bench/recurrent_torch_peer.py"""
import json

import torch

from torch_peer import time_ms

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"

CELLS = {"lstm": (torch.nn.LSTM, 4), "gru": (torch.nn.GRU, 3), "rnn": (torch.nn.RNN, 1)}


def recurrent(cell, batch, seq, hidden):
    module_type, gates = CELLS[cell]
    torch.manual_seed(0)
    module = module_type(hidden, hidden).to(dev).eval()
    x = torch.rand(seq, batch, hidden, device=dev) * 2 - 1
    with torch.no_grad():
        ms = time_ms(lambda: module(x))
    flop = 2.0 * seq * batch * gates * hidden * 2 * hidden
    return {"name": f"BM_Recurrent/{cell}/{batch}/{seq}/{hidden}", "ms": ms, "tflops": flop / ms * 1e-9}


if __name__ == "__main__":
    print(json.dumps({"name": "device", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    for cell in CELLS:
        for batch in (1, 16):
            print(json.dumps(recurrent(cell, batch, 256, 512)), flush=True)
