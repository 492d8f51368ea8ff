#!/usr/bin/python3
"""Small models with reads-back inside control flow (docs/dynamic_shapes.md, docs/control_flow.md), for
tests/gpu/test_staged_control_flow.cpp:

    /usr/bin/python3 tests/models/staged_control_flow.py

Writes tests/data/models/dynamic_shapes/:
  - if_branch_data_dependent.onnx: x [batch, n]; an If on sum(x) > 0 (computed on the GPU). then_branch: the
    positive elements doubled (NonZero -> Transpose -> GatherND -> Mul); else_branch: the k largest of -x where
    k is the count of negative elements (TopK with K computed on the GPU). After the If, a ReduceSum of its
    output: the graph runs on once the branch's stages ran.
  - loop_gpu_condition_carried.onnx: a while loop (M = 50, cond true) whose body adds x to y and counts the
    iterations; its condition sum(y) < limit is computed on the GPU (read back after each iteration).
  - loop_gpu_condition_rotating.onnx: a while loop (M = 40) over three carried values rotated each
    iteration, (a, b, c) -> (b, c, a + b + c), until sum(a + b + c) reaches the limit (computed on the GPU):
    a value is read two iterations after the one that computed it.
  - loop_body_nonzero.onnx: a Loop whose trip count is computed on the GPU (how many elements of x exceed
    0.5), no condition; its body adds x to y and counts y's elements above 2 with a NonZero (a data-dependent
    node inside the body).
  - loop_gpu_condition_endless.onnx: no trip count, a GPU-computed condition that stays true (sum(y) below
    3e38); the body also holds an If on its condition input whose else_branch (never taken) has 3000 Floor
    nodes, so that its ~3000 nodes per iteration pass the 65536-node cap at iteration 21 in a few
    milliseconds a step.
"""
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models", "dynamic_shapes")
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_const",
                            value=numpy_helper.from_array(value, name))


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="staged_control_flow.py")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def main():
    os.makedirs(OUT, exist_ok=True)
    info = helper.make_tensor_value_info
    then_branch = helper.make_graph(
        [const("zero_t", np.array(0, np.float32)), const("two_t", np.array(2, np.float32)),
         helper.make_node("Greater", ["x", "zero_t"], ["positive"], name="positive"),
         helper.make_node("NonZero", ["positive"], ["coords"], name="nonzero"),
         helper.make_node("Transpose", ["coords"], ["points"], name="points", perm=[1, 0]),
         helper.make_node("GatherND", ["x", "points"], ["picked"], name="picked"),
         helper.make_node("Mul", ["picked", "two_t"], ["then_out"], name="doubled")],
        "then_branch", [], [info("then_out", F, ["p"])])
    else_branch = helper.make_graph(
        [const("zero_e", np.array(0, np.float32)), const("flat_shape", np.array([-1], np.int64)),
         helper.make_node("Reshape", ["x", "flat_shape"], ["flat"], name="flat"),
         helper.make_node("Less", ["flat", "zero_e"], ["negative"], name="negative"),
         helper.make_node("Cast", ["negative"], ["ones"], name="ones", to=I64),
         helper.make_node("ReduceSum", ["ones"], ["k"], name="k", keepdims=1),
         helper.make_node("Neg", ["flat"], ["negated"], name="negated"),
         helper.make_node("TopK", ["negated", "k"], ["else_out", "where"], name="topk", axis=0)],
        "else_branch", [], [info("else_out", F, ["q"])])
    save("if_branch_data_dependent",
         [helper.make_node("ReduceSum", ["x"], ["sum"], name="sum", keepdims=0),
          const("zero", np.array(0, np.float32)),
          helper.make_node("Greater", ["sum", "zero"], ["c"], name="sum_positive"),
          helper.make_node("If", ["c"], ["out"], name="pick", then_branch=then_branch, else_branch=else_branch),
          helper.make_node("ReduceSum", ["out"], ["total"], name="total", keepdims=0)],
         [info("x", F, ["batch", "n"])],
         [info("out", F, ["m"]), info("total", F, [])])

    loop_body = helper.make_graph(
        [helper.make_node("Add", ["y_in", "x"], ["y_out"], name="accumulate"),
         const("one", np.array(1, np.int64)),
         helper.make_node("Add", ["n_in", "one"], ["n_out"], name="count"),
         helper.make_node("ReduceSum", ["y_out"], ["y_sum"], name="y_sum", keepdims=0),
         helper.make_node("Less", ["y_sum", "limit"], ["cond_out"], name="below_limit")],
        "body", [info("i", I64, []), info("cond_in", B, []), info("y_in", F, ["r", "c"]),
                 info("n_in", I64, [])],
        [info("cond_out", B, []), info("y_out", F, ["r", "c"]), info("n_out", I64, [])])
    save("loop_gpu_condition_carried",
         [const("M", np.array(50, np.int64)), const("go", np.array(True)), const("n0", np.array(0, np.int64)),
          helper.make_node("Loop", ["M", "go", "y0", "n0"], ["y", "steps"], name="while_below_limit",
                           body=loop_body)],
         [info("y0", F, ["r", "c"]), info("x", F, ["r", "c"]), info("limit", F, [])],
         [info("y", F, ["r", "c"]), info("steps", I64, [])])

    rotating_body = helper.make_graph(
        [helper.make_node("Add", ["a_in", "b_in"], ["ab"], name="ab"),
         helper.make_node("Add", ["ab", "c_in"], ["abc"], name="abc"),
         helper.make_node("ReduceSum", ["abc"], ["abc_sum"], name="abc_sum", keepdims=0),
         helper.make_node("Less", ["abc_sum", "limit"], ["cond_out"], name="below_limit")],
        "body", [info("i", I64, []), info("cond_in", B, []), info("a_in", F, ["r", "c"]),
                 info("b_in", F, ["r", "c"]), info("c_in", F, ["r", "c"])],
        [info("cond_out", B, []), info("b_in", F, ["r", "c"]), info("c_in", F, ["r", "c"]),
         info("abc", F, ["r", "c"])])
    save("loop_gpu_condition_rotating",
         [const("M40", np.array(40, np.int64)), const("go", np.array(True)),
          helper.make_node("Loop", ["M40", "go", "a0", "b0", "c0"], ["a", "b", "c"], name="rotate",
                           body=rotating_body)],
         [info("a0", F, ["r", "c"]), info("b0", F, ["r", "c"]), info("c0", F, ["r", "c"]),
          info("limit", F, [])],
         [info("a", F, ["r", "c"]), info("b", F, ["r", "c"]), info("c", F, ["r", "c"])])

    nonzero_body = helper.make_graph(
        [helper.make_node("Add", ["y_in", "x"], ["y_out"], name="accumulate"),
         const("two", np.array(2, np.float32)),
         helper.make_node("Greater", ["y_out", "two"], ["big"], name="big"),
         helper.make_node("NonZero", ["big"], ["where"], name="where"),
         helper.make_node("Shape", ["where"], ["where_shape"], name="where_shape"),
         const("one_index", np.array(1, np.int64)),
         helper.make_node("Gather", ["where_shape", "one_index"], ["count_out"], name="count", axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")],
        "body", [info("i", I64, []), info("cond_in", B, []), info("y_in", F, ["r", "c"]),
                 info("count_in", I64, [])],
        [info("cond_out", B, []), info("y_out", F, ["r", "c"]), info("count_out", I64, [])])
    save("loop_body_nonzero",
         [const("half", np.array(0.5, np.float32)),
          helper.make_node("Greater", ["x", "half"], ["above"], name="above"),
          helper.make_node("Cast", ["above"], ["above_ones"], name="above_ones", to=I64),
          helper.make_node("ReduceSum", ["above_ones"], ["trips"], name="trips", keepdims=0),
          const("count0", np.array(0, np.int64)),
          helper.make_node("Loop", ["trips", "", "y0", "count0"], ["y", "count"], name="loop_with_nonzero",
                           body=nonzero_body)],
         [info("y0", F, ["r", "c"]), info("x", F, ["r", "c"])],
         [info("y", F, ["r", "c"]), info("count", I64, [])])

    floors = [helper.make_node("Floor", ["y_out" if k == 0 else "f%d" % (k - 1)], ["f%d" % k], name="floor%d" % k)
              for k in range(3000)]
    endless_body = helper.make_graph(
        [helper.make_node("Add", ["y_in", "x"], ["y_out"], name="accumulate"),
         helper.make_node("If", ["cond_in"], ["z_out"], name="never_else",
                          then_branch=helper.make_graph(
                              [helper.make_node("Identity", ["y_out"], ["z_then"], name="pass")], "then", [],
                              [info("z_then", F, ["r", "c"])]),
                          else_branch=helper.make_graph(floors, "else", [], [info("f2999", F, ["r", "c"])])),
         helper.make_node("ReduceSum", ["z_out"], ["z_sum"], name="z_sum", keepdims=0),
         const("huge", np.array(3e38, np.float32)),
         helper.make_node("Less", ["z_sum", "huge"], ["cond_out"], name="below_huge")],
        "body", [info("i", I64, []), info("cond_in", B, []), info("y_in", F, ["r", "c"])],
        [info("cond_out", B, []), info("z_out", F, ["r", "c"])])
    save("loop_gpu_condition_endless",
         [const("go", np.array(True)),
          helper.make_node("Loop", ["", "go", "y0"], ["y"], name="endless_on_gpu", body=endless_body)],
         [info("y0", F, ["r", "c"]), info("x", F, ["r", "c"])],
         [info("y", F, ["r", "c"])])


if __name__ == "__main__":
    main()
