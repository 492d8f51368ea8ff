#!/usr/bin/python3
"""A tiny GPT-2-style causal LM and a scripted recurrence, exported by torch 1.13 at opset 17: the LM for
tests/gpu/test_loop.cpp (against onnxruntime-node CPU), the recurrence for tests/gpu/test_models.cpp (against
float64 torch).

    /usr/bin/python3 tests/models/gpt2_tiny.py

gpt2_tiny_opset17/: token + learned position embeddings, 2 pre-LayerNorm blocks (4-head causal
self-attention, its mask from torch.triu -> Trilu, GELU MLP), a final LayerNorm and an LM head tied to the
token embedding; batch and sequence dynamic. Seeded weights; input_input_ids.npy (batch 2, 7 tokens). (No
expected_*.npy: the onnxruntime test is its check, and ModelTest would plan it once more in CI.)

scripted_loop_opset17/: a torch.jit.script'ed for-loop over the rows of x (h = tanh(h @ W + x[i] + b)),
which torch exports as an ONNX Loop whose trip count is x.shape[0] (folded when planning) reading x, W and b
from the enclosing graph; input_x.npy, input_h0.npy and the float64 result as expected_h.npy.
"""
import os

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models")
SEED = 20261201
OPSET = 17


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU()
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln_1(x)
        q, k, v = self.qkv(h).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / float(np.sqrt(c // self.heads))
        future = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        y = y.transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(self.gelu(self.fc(self.ln_2(x))))


class TinyGpt2(nn.Module):
    def __init__(self, vocab=67, width=32, heads=4, layers=2, positions=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        positions = torch.arange(t, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()  # the LM head tied to the token embedding


def randomize(module, generator):
    # Not torch's init: LayerNorm weights and biases off 1 and 0, so that a kernel ignoring them fails.
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype) * 0.3)
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(1.0)


def save(folder, name, array):
    np.save(os.path.join(folder, name), array)


def export_gpt2():
    folder = os.path.join(OUT, "gpt2_tiny_opset17")
    os.makedirs(folder, exist_ok=True)
    generator = torch.Generator().manual_seed(SEED)
    model = TinyGpt2()
    randomize(model, generator)
    model.eval()
    input_ids = torch.randint(0, 67, (2, 7), generator=generator, dtype=torch.long)
    torch.onnx.export(model, (input_ids,), os.path.join(folder, "model.onnx"), opset_version=OPSET,
                      input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}})
    save(folder, "input_input_ids.npy", input_ids.numpy())


class ScriptedRecurrence(nn.Module):
    def __init__(self, width=6):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(width, width))
        self.b = nn.Parameter(torch.zeros(width))

    def forward(self, x, h0):
        return recur(x, h0, self.w, self.b)


@torch.jit.script
def recur(x: torch.Tensor, h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    for i in range(x.size(0)):
        h = torch.tanh(h @ w + x[i] + b)
    return h


def export_scripted_loop():
    folder = os.path.join(OUT, "scripted_loop_opset17")
    os.makedirs(folder, exist_ok=True)
    generator = torch.Generator().manual_seed(SEED + 1)
    model = ScriptedRecurrence()
    randomize(model, generator)
    x = torch.randn(5, 3, 6, generator=generator)
    h0 = torch.randn(3, 6, generator=generator)
    torch.onnx.export(model, (x, h0), os.path.join(folder, "model.onnx"), opset_version=OPSET,
                      input_names=["x", "h0"], output_names=["h"],
                      dynamic_axes={"x": {0: "steps", 1: "batch"}, "h0": {0: "batch"}})
    save(folder, "input_x.npy", x.numpy())
    save(folder, "input_h0.npy", h0.numpy())
    with torch.no_grad():
        save(folder, "expected_h.npy", recur(x.double(), h0.double(), model.w.double(), model.b.double()).numpy())


if __name__ == "__main__":
    export_gpt2()
    export_scripted_loop()
