#!/usr/bin/python3
"""Writes the small test models of tests/data/models/ with their inputs and reference outputs.

Each model folder holds model.onnx, input_<name>.npy and expected_<output>.npy (float64 references computed
here: PyTorch in float64 for the torch models, numpy float64 for the hand-built ones). Run with Debian's
python3 (python3-torch 1.13, python3-onnx 1.12):  /usr/bin/python3 tests/models/generate_models.py
The outputs are committed (small); tests/gpu/test_models.cpp checks wgi against them.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models")


def save_case(name, model, inputs, expected, suffix=""):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    if model is not None:
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(d, f"input{suffix}_{k}.npy"), v)
    for k, v in expected.items():
        np.save(os.path.join(d, f"expected{suffix}_{k}.npy"), v)


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, oc, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + out.shape[2], j:j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def conv_bn_relu(rng):
    """Conv -> BatchNormalization -> Relu -> Conv 1x1 -> Sigmoid with a symbolic batch dim: exercises BN
    folding, activation fusion and re-planning when the batch changes."""
    w1 = rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-1, 1, 8).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    shift = rng.uniform(-1, 1, 8).astype(np.float32)
    mean = rng.uniform(-1, 1, 8).astype(np.float32)
    var = rng.uniform(0.5, 2, 8).astype(np.float32)
    w2 = rng.uniform(-1, 1, (4, 8, 1, 1)).astype(np.float32)
    b2 = rng.uniform(-1, 1, 4).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "w1"), (b1, "b1"), (scale, "scale"), (shift, "shift"), (mean, "mean"), (var, "var"),
              (w2, "w2"), (b2, "b2")]]
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "scale", "shift", "mean", "var"], ["bn"], name="bn1",
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"], name="relu1"),
        helper.make_node("Conv", ["r", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Sigmoid", ["c2"], ["probabilities"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes, "conv_bn_relu",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 10, 12])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 4, 10, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="wgi-tests")
    model.ir_version = 8

    def reference(x):
        y = conv2d(x.astype(np.float64), w1.astype(np.float64), b1.astype(np.float64), 1)
        s = (scale / np.sqrt(var.astype(np.float64) + 1e-5)).reshape(1, -1, 1, 1)
        y = (y - mean.reshape(1, -1, 1, 1)) * s + shift.reshape(1, -1, 1, 1)
        y = np.maximum(y, 0)
        y = conv2d(y, w2.astype(np.float64), b2.astype(np.float64), 0)
        return 1 / (1 + np.exp(-y))

    for batch, suffix in [(2, ""), (1, "_batch1")]:
        x = rng.uniform(-1, 1, (batch, 3, 10, 12)).astype(np.float32)
        save_case("conv_bn_relu", model if suffix == "" else None, {"image": x},
                  {"probabilities": reference(x)}, suffix)


def gemm_chain(rng):
    """Gemm (transB, bias) -> Relu -> MatMul with a constant weight -> Gemm with transA and alpha/beta."""
    w1 = rng.uniform(-1, 1, (24, 20)).astype(np.float32)   # [N, K] for transB
    b1 = rng.uniform(-1, 1, 24).astype(np.float32)
    w2 = rng.uniform(-1, 1, (24, 16)).astype(np.float32)   # [K, N]
    w3 = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    c3 = rng.uniform(-1, 1, (1, 8)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (w3, "w3"), (c3, "c3")]]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["g1"], name="fc1", transB=1),
        helper.make_node("Relu", ["g1"], ["r1"], name="relu"),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="fc2"),
        helper.make_node("Gemm", ["m2", "w3", "c3"], ["y"], name="fc3", alpha=0.5, beta=2.0),
    ]
    graph = helper.make_graph(nodes, "gemm_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="wgi-tests")
    model.ir_version = 8
    x = rng.uniform(-1, 1, (5, 20)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ w1.T.astype(np.float64) + b1, 0)
    h = h @ w2.astype(np.float64)
    y = 0.5 * (h @ w3.astype(np.float64)) + 2.0 * c3
    save_case("gemm_chain", model, {"x": x}, {"y": y})


def unsupported(rng):
    """A model with ops wgi does not implement, for the load-time error that lists every one of them."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="ok_relu"),
        # A training loss: out of wgi's scope (docs/new_ops.md), so it stays unsupported as ops are added.
        helper.make_node("NegativeLogLikelihoodLoss", ["r", "target"], ["loss"], name="nll_loss"),
        # Another training loss (Det, here before, is supported since).
        helper.make_node("SoftmaxCrossEntropyLoss", ["sq", "labels"], ["ce"], name="ce_loss"),
    ]
    target = numpy_helper.from_array(np.array([1, 0, 3], dtype=np.int64), "target")
    labels = numpy_helper.from_array(np.array([2, 0, 1], dtype=np.int64), "labels")
    graph = helper.make_graph(nodes, "unsupported",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("sq", TensorProto.FLOAT, [3, 3])],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
                               helper.make_tensor_value_info("ce", TensorProto.FLOAT, [])], [target, labels])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="wgi-tests")
    model.ir_version = 8
    save_case("unsupported", model, {}, {})


def odd_names():
    """Output names with characters that are not safe in file names, for `wgi run --output-dir`."""
    nodes = [helper.make_node("Relu", ["in:0"], ["out/relu:0"], name="relu"),
             helper.make_node("Neg", ["in:0"], ["neg output"], name="neg")]
    graph = helper.make_graph(nodes, "odd_names",
                              [helper.make_tensor_value_info("in:0", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("out/relu:0", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("neg output", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="wgi-tests")
    model.ir_version = 8
    save_case("odd_names", model, {}, {})


def torch_models(rng):
    """Small PyTorch models exported by Debian's torch 1.13 at opsets 13 and 17, with float64 references."""
    import torch
    import torch.nn as nn

    class SmallCnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(16), nn.ReLU6(),
                nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU())
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            y = self.features(x)
            y = torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1)
            return torch.softmax(self.head(y), dim=-1)

    class TinyTransformerBlock(nn.Module):
        def __init__(self, dim=16, heads=2):
            super().__init__()
            self.heads = heads
            self.norm1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            attn = torch.softmax(q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5, dim=-1)
            y = (attn @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.mlp(self.norm2(x))

    torch.manual_seed(0)
    for name, module, shape, dynamic in [("small_cnn", SmallCnn(), (2, 3, 16, 16), {"x": {0: "batch"}}),
                                         ("tiny_transformer", TinyTransformerBlock(), (2, 7, 16),
                                          {"x": {0: "batch", 1: "tokens"}})]:
        module.eval()
        for bn in [m for m in module.modules() if isinstance(m, nn.BatchNorm2d)]:
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
        x = torch.from_numpy(rng.uniform(-1, 1, shape).astype(np.float32))
        with torch.no_grad():
            expected = module.double()(x.double()).numpy()
            module.float()
        for opset in (13, 17):
            folder = f"{name}_opset{opset}"
            path = os.path.join(OUT, folder)
            os.makedirs(path, exist_ok=True)
            torch.onnx.export(module, (x,), os.path.join(path, "model.onnx"), opset_version=opset,
                              input_names=["x"], output_names=["y"], dynamic_axes=dynamic,
                              do_constant_folding=False)
            save_case(folder, None, {"x": x.numpy()}, {"y": expected})


def main():
    rng = np.random.default_rng(20261129)
    conv_bn_relu(rng)
    gemm_chain(rng)
    unsupported(rng)
    if "--no-torch" not in sys.argv:
        torch_models(rng)
        # Florence-2's vision tower, SigLIP, Florence-2's BART decoder step, a ResNet-50-like CNN (own seeds;
        # --large there for the base configs).
        import florence_siglip
        florence_siglip.write_tiny()
        import resnet
        resnet.main([])
    odd_names()


if __name__ == "__main__":
    main()
