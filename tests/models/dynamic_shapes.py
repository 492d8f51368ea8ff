#!/usr/bin/python3
"""Small models whose shapes depend on the data (docs/dynamic_shapes.md), for tests/gpu/test_dynamic_shapes.cpp:

    /usr/bin/python3 tests/models/dynamic_shapes.py

Writes tests/data/models/dynamic_shapes/:
  - nonzero_gather.onnx: x [batch, n] -> the positive elements' coordinates (NonZero of x > 0), the values
    there doubled (Transpose -> GatherND -> Mul), and their count (Shape): nodes after the data-dependent node
    are planned for the real count;
  - topk_computed_k.onnx: TopK of x [1, n] with K = the number of elements above 0.5 (ReduceSum of a Cast of
    a Greater: computed on the GPU, read back before TopK is planned);
  - nms_gather.onnx: NonMaxSuppression (center_point_box 0, thresholds as initializers) of boxes [1, n, 4]
    and scores [1, classes, n], then the selected boxes gathered (Gather of the box column of the selection):
    checked against onnxruntime's CPU provider.
"""
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models", "dynamic_shapes")


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="dynamic_shapes.py")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def main():
    os.makedirs(OUT, exist_ok=True)
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    save("nonzero_gather",
         [helper.make_node("Greater", ["x", "zero"], ["positive"], name="positive"),
          helper.make_node("NonZero", ["positive"], ["coords"], name="nonzero"),
          helper.make_node("Transpose", ["coords"], ["points"], name="points", perm=[1, 0]),
          helper.make_node("GatherND", ["x", "points"], ["picked"], name="picked"),
          helper.make_node("Mul", ["picked", "two"], ["doubled"], name="doubled"),
          helper.make_node("Shape", ["doubled"], ["count"], name="count")],
         [helper.make_tensor_value_info("x", f, ["batch", "n"])],
         [helper.make_tensor_value_info("coords", i64, [2, "nnz"]),
          helper.make_tensor_value_info("doubled", f, ["nnz"]),
          helper.make_tensor_value_info("count", i64, [1])],
         [zero, two])
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    save("topk_computed_k",
         [helper.make_node("Greater", ["x", "half"], ["above"], name="above"),
          helper.make_node("Cast", ["above"], ["ones"], name="ones", to=i64),
          helper.make_node("ReduceSum", ["ones"], ["k"], name="k", keepdims=0),
          helper.make_node("Reshape", ["k", "one_shape"], ["k1"], name="k1"),
          helper.make_node("TopK", ["x", "k1"], ["values", "indices"], name="topk", axis=1)],
         [helper.make_tensor_value_info("x", f, [1, "n"])],
         [helper.make_tensor_value_info("values", f, [1, "k"]),
          helper.make_tensor_value_info("indices", i64, [1, "k"])],
         [half, numpy_helper.from_array(np.array([1], np.int64), "one_shape")])
    save("nms_gather",
         [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_per_class", "iou", "score_min"],
                           ["selected"], name="nms"),
          helper.make_node("Gather", ["selected", "box_column"], ["box_index"], name="box_index", axis=1),
          helper.make_node("Squeeze", ["boxes", "axis0"], ["all_boxes"], name="all_boxes"),
          helper.make_node("Gather", ["all_boxes", "box_index"], ["kept_boxes"], name="kept_boxes", axis=0)],
         [helper.make_tensor_value_info("boxes", f, [1, "n", 4]),
          helper.make_tensor_value_info("scores", f, [1, "classes", "n"])],
         [helper.make_tensor_value_info("selected", i64, ["k", 3]),
          helper.make_tensor_value_info("kept_boxes", f, ["k", 4])],
         [numpy_helper.from_array(np.array([7], np.int64), "max_per_class"),
          numpy_helper.from_array(np.array([0.45], np.float32), "iou"),
          numpy_helper.from_array(np.array([0.2], np.float32), "score_min"),
          numpy_helper.from_array(np.array(2, np.int64), "box_column"),
          numpy_helper.from_array(np.array([0], np.int64), "axis0")])


if __name__ == "__main__":
    main()
