#!/usr/bin/python3
"""Writes the small ONNX models the importer tests and the fuzzer's seed corpus use.

Run with Debian's Python and python3-onnx (onnx 1.12):  /usr/bin/python3 tests/data/onnx/generate.py
Outputs (committed; rerunning rewrites them byte for byte):
  tests/data/onnx/external_data/model.onnx + weights.bin   initializers saved by onnx's external-data writer
  tests/data/onnx/external_escape/model.onnx               an initializer whose location climbs out with '..'
  tests/fuzz/corpus/*.onnx                                 tiny valid models covering the importer's paths
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def model(nodes, inputs, outputs, initializers=(), opsets=(("", 13),), ir_version=8, value_info=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers),
                              value_info=list(value_info))
    m = helper.make_model(graph, producer_name="wgi-tests",
                          opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir_version
    return m


def write(m, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def external_data():
    # y = x * w + b with w and b in weights.bin, written by onnx's own external-data code.
    folder = os.path.join(HERE, "external_data")
    os.makedirs(folder, exist_ok=True)
    # onnx appends to an existing weights file: start from none.
    for name in ("model.onnx", "weights.bin"):
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    b = numpy_helper.from_array(np.array([10, 20, 30], dtype=np.int64), "b")
    m = model([helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
               helper.make_node("Cast", ["b"], ["bf"], name="cast", to=TensorProto.FLOAT),
               helper.make_node("Add", ["xw", "bf"], ["y"], name="add")],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w, b])
    onnx.save_model(m, os.path.join(folder, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


def external_escape():
    folder = os.path.join(HERE, "external_escape")
    os.makedirs(folder, exist_ok=True)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../external_data/weights.bin"), ("offset", "0"), ("length", "8")):
        e = w.external_data.add()
        e.key, e.value = k, v
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])
    write(m, os.path.join(folder, "model.onnx"))


def corpus():
    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, ["batch", 3, None, 4])
    y = helper.make_tensor_value_info("y", f, None)
    seeds = {}
    seeds["relu"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])
    # Initializers in raw_data and in each typed field; an initializer also listed as an input (IR 3 style).
    w_raw = numpy_helper.from_array(np.ones((2, 3, 1, 1), dtype=np.float32), "w")
    b_typed = helper.make_tensor("b", f, [2], [0.5, -0.5])
    seeds["conv_initializers"] = model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[1, 1], pads=[0, 0, 0, 0],
                          strides=[1, 1], auto_pad="NOTSET", group=1)],
        [x, helper.make_tensor_value_info("w", f, [2, 3, 1, 1])], [y], [w_raw, b_typed], opsets=(("", 7),),
        ir_version=3)
    typed = [helper.make_tensor("i64", TensorProto.INT64, [2], [1, -2]),
             helper.make_tensor("i32", TensorProto.INT32, [1], [7]),
             helper.make_tensor("i8", TensorProto.INT8, [2], [-3, 4]),
             helper.make_tensor("u8", TensorProto.UINT8, [2], [200, 1]),
             helper.make_tensor("bo", TensorProto.BOOL, [2], [True, False]),
             helper.make_tensor("h", TensorProto.FLOAT16, [1], [np.float16(1.5).view(np.uint16)], raw=False)]
    seeds["typed_initializers"] = model(
        [helper.make_node("Reshape", ["x", "i64"], ["y"], name="reshape")], [x], [y], typed,
        opsets=(("", 14),))
    consts = [helper.make_node("Constant", [], ["c0"], value=helper.make_tensor("t", f, [1], [2.0])),
              helper.make_node("Constant", [], ["c1"], value_float=3.0),
              helper.make_node("Constant", [], ["c2"], value_floats=[1.0, 2.0]),
              helper.make_node("Constant", [], ["c3"], value_int=4),
              helper.make_node("Constant", [], ["c4"], value_ints=[1, 2]),
              helper.make_node("Mul", ["x", "c0"], ["t0"], name="mul"),
              helper.make_node("Add", ["t0", "c1"], ["y"], name="add")]
    seeds["constants"] = model(consts, [x], [y], opsets=(("", 17),))
    # Out-of-order nodes, attributes of every kind, an unknown op in a custom domain, a value_info entry.
    seeds["attributes_unordered"] = model(
        [helper.make_node("Softmax", ["t"], ["y"], name="softmax", axis=-1),
         helper.make_node("Custom", ["x"], ["t"], name="custom", domain="com.example", i=1, f=0.5, s="text",
                          ints=[1, 2], floats=[0.25], strings=["a", "b"],
                          t=helper.make_tensor("t", TensorProto.INT32, [1], [9]))],
        [x], [y], opsets=(("", 21), ("com.example", 1)), ir_version=10,
        value_info=[helper.make_tensor_value_info("t", f, ["batch", 3, None, 4])])
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "branch", [],
                               [helper.make_tensor_value_info("z", f, None)])
    seeds["if_subgraph"] = model(
        [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=branch, else_branch=branch)],
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), x], [y], opsets=(("", 16),))
    ext = helper.make_tensor("w", f, [2], [0.0, 0.0])
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "8")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    seeds["external_reference"] = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                        [x], [y], [ext])
    for name, m in seeds.items():
        write(m, os.path.join(CORPUS, name + ".onnx"))


def main():
    np.random.seed(0)
    external_data()
    external_escape()
    corpus()
    return 0


if __name__ == "__main__":
    sys.exit(main())
