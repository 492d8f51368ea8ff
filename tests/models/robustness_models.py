#!/usr/bin/python3
"""Writes the tiny models of tests/data/robustness/: tests/gpu/test_nan_semantics.cpp runs each op model on
wgi and on onnxruntime with NaN and +-inf inputs; tests/gpu/test_run_status.cpp runs the Gather model with
indices out of range. Run with Debian's python3 (python3-onnx 1.12):
/usr/bin/python3 tests/models/robustness_models.py
Only the model files are written; the tests make their inputs and ask onnxruntime for the references."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "robustness")
X = [2, 3, 5, 7]  # batch 2, unaligned spatial sizes


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(18)
    x = [vi("x", X)]
    same = [vi("y", X)]
    save("relu", [helper.make_node("Relu", ["x"], ["y"])], x, same)
    save("leaky_relu", [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], x, same)
    save("hard_sigmoid", [helper.make_node("HardSigmoid", ["x"], ["y"])], x, same)
    save("clip", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], x, same,
         [const("lo", -0.5), const("hi", 0.75)])
    # Max / Min with a broadcast second input that holds a NaN and infinities of its own.
    for op in ("Max", "Min"):
        save(op.lower(), [helper.make_node(op, ["x", "b"], ["y"])], x + [vi("b", [7])], same)
    save("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], x, same)
    save("log_softmax", [helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], x, same)
    save("reduce_max", [helper.make_node("ReduceMax", ["x"], ["y"], axes=[3], keepdims=0)], x,
         [vi("y", [2, 3, 5])], opset=13)
    save("reduce_min", [helper.make_node("ReduceMin", ["x"], ["y"], axes=[1, 2], keepdims=0)], x,
         [vi("y", [2, 7])], opset=13)
    save("arg_max", [helper.make_node("ArgMax", ["x"], ["y"], axis=3, keepdims=0)], x,
         [vi("y", [2, 3, 5], TensorProto.INT64)], opset=13)
    save("arg_min", [helper.make_node("ArgMin", ["x"], ["y"], axis=2, keepdims=0)], x,
         [vi("y", [2, 3, 7], TensorProto.INT64)], opset=13)
    save("max_pool", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                       pads=[1, 1, 1, 1])], x, [vi("y", [2, 3, 3, 4])])
    save("global_max_pool", [helper.make_node("GlobalMaxPool", ["x"], ["y"])], x, [vi("y", [2, 3, 1, 1])])
    # The fusions wgi's passes make: Conv + Relu / Clip into the conv epilogue, MatMul + Relu into the GEMM's.
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    save("conv_relu", [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                       helper.make_node("Relu", ["c"], ["y"])], x, [vi("y", [2, 4, 5, 7])],
         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    save("conv_clip", [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                       helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], x, [vi("y", [2, 4, 5, 7])],
         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), const("lo", 0.0), const("hi", 6.0)])
    m = rng.uniform(-1, 1, (7, 6)).astype(np.float32)
    save("matmul_relu", [helper.make_node("MatMul", ["x", "m"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
         x, [vi("y", [2, 3, 5, 6])], [numpy_helper.from_array(m, "m")])
    # Gather of rows by indices computed at run time (a graph input of more than 64 elements, so that wgi does
    # not plan with its values): then Relu, so that the Gather's output is not a graph output itself.
    save("gather_rows", [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed", axis=0),
                         helper.make_node("Relu", ["rows"], ["y"], name="act")],
         [vi("table", [64, 3]), vi("ids", [70], TensorProto.INT64)], [vi("y", [70, 3])], opset=13)


if __name__ == "__main__":
    main()
