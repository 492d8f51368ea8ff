#!/usr/bin/python3
"""Small hand-built Loop and Scan models (opset 16) for tests/gpu/test_loop.cpp, which computes their float64
references itself. Writes tests/data/models/loop/*.onnx.

    /usr/bin/python3 tests/models/loop_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models", "loop")
F, B, I = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def info(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name + "_value"))


def model(nodes, inputs, outputs, inits=(), check=True, opset=16):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)], producer_name="loop_models.py")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m, full_check=True)
    return m


W = numpy_helper.from_array(np.array([0.5, -1.25, 0.75, 1.5, -0.5], np.float32), "w")


def loop_body(extra_nodes=(), scan=True, cond_node=None, name="body"):
    """Body (i, cond, y): t = y * w + x (x, w from the enclosing graph), y_out = t + float(i); scan output
    relu(t); cond_out = i < 6, folded on the host from the iteration number."""
    nodes = [helper.make_node("Mul", ["y_in", "w"], ["yw"], name="mul_w"),
             helper.make_node("Add", ["yw", "x"], ["t"], name="add_x"),
             helper.make_node("Cast", ["i"], ["i_float"], name="cast_i", to=F),
             helper.make_node("Add", ["t", "i_float"], ["y_out"], name="add_i"),
             helper.make_node("Relu", ["t"], ["scan_out"], name="relu"),
             const("stop", np.array(6, np.int64))]
    nodes += list(extra_nodes)
    nodes.append(cond_node or helper.make_node("Less", ["i", "stop"], ["cond_out"], name="before_stop"))
    outputs = [info("cond_out", B, []), info("y_out", F, [13, 5])] + ([info("scan_out", F, [13, 5])] if scan else [])
    return helper.make_graph(nodes, name, [info("i", I, []), info("cond_in", B, []), info("y_in", F, [13, 5])],
                             outputs)


def models():
    out = {}
    x, y0 = info("x", F, [13, 5]), info("y0", F, [13, 5])
    m_in, c_in = info("M", I, []), info("c", B, [])
    y, ys = info("y", F, [13, 5]), info("ys", F, ["n", 13, 5])
    # y, ys = Loop(M, c, y0): at most 7 iterations (the body's condition), M and c graph inputs.
    out["loop_scan"] = model([helper.make_node("Loop", ["M", "c", "y0"], ["y", "ys"], name="loop", body=loop_body())],
                             [m_in, c_in, y0, x], [y, ys], [W])
    # If inside Loop: even iterations y_out = y + w, odd y_out = y * w, the branch chosen per iteration from
    # the iteration number (Mod and Equal folded on the host); trip count only.
    branch = helper.make_node(
        "If", ["even"], ["y_out"], name="if_even",
        then_branch=helper.make_graph([helper.make_node("Add", ["y_in", "w"], ["p"], name="plus_w")], "even", [],
                                      [info("p", F, None)]),
        else_branch=helper.make_graph([helper.make_node("Mul", ["y_in", "w"], ["q"], name="times_w")], "odd", [],
                                      [info("q", F, None)]))
    body = helper.make_graph(
        [const("two", np.array(2, np.int64)), const("zero", np.array(0, np.int64)),
         helper.make_node("Mod", ["i", "two"], ["parity"], name="parity"),
         helper.make_node("Equal", ["parity", "zero"], ["even"], name="is_even"), branch,
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")],
        "body", [info("i", I, []), info("cond_in", B, []), info("y_in", F, [13, 5])],
        [info("cond_out", B, []), info("y_out", F, [13, 5])])
    out["if_in_loop"] = model([helper.make_node("Loop", ["M", "", "y0"], ["y"], name="loop", body=body)],
                              [m_in, y0], [y], [W])
    # Loop inside If: y = If(c, Loop(M, "", y0) with the loop_scan body, y0 - w).
    inner = helper.make_node("Loop", ["M", "", "y0"], ["looped", "scanned"], name="inner_loop", body=loop_body())
    out["loop_in_if"] = model(
        [helper.make_node("If", ["c"], ["y"], name="if_c",
                          then_branch=helper.make_graph([inner], "then", [], [info("looped", F, None)]),
                          else_branch=helper.make_graph([helper.make_node("Sub", ["y0", "w"], ["d"], name="sub_w")],
                                                        "else", [], [info("d", F, None)]))],
        [c_in, m_in, y0, x], [y], [W])
    # Loop inside Loop: the inner loop runs i + 1 times (outer iteration i), y = y * w + x each time.
    inner_body = helper.make_graph(
        [helper.make_node("Mul", ["z_in", "w"], ["zw"], name="inner_mul"),
         helper.make_node("Add", ["zw", "x"], ["z_out"], name="inner_add"),
         helper.make_node("Identity", ["inner_cond"], ["inner_cond_out"], name="inner_keep")],
        "inner_body", [info("j", I, []), info("inner_cond", B, []), info("z_in", F, [13, 5])],
        [info("inner_cond_out", B, []), info("z_out", F, [13, 5])])
    outer_body = helper.make_graph(
        [const("one", np.array(1, np.int64)),
         helper.make_node("Add", ["i", "one"], ["count"], name="count"),
         helper.make_node("Loop", ["count", "", "y_in"], ["y_out"], name="inner_loop", body=inner_body),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")],
        "outer_body", [info("i", I, []), info("cond_in", B, []), info("y_in", F, [13, 5])],
        [info("cond_out", B, []), info("y_out", F, [13, 5])])
    out["nested_loop"] = model([helper.make_node("Loop", ["M", "", "y0"], ["y"], name="outer_loop", body=outer_body)],
                               [m_in, y0, x], [y], [W])
    # The body's condition computed on the GPU (a sum over y): refused when planning.
    gpu_cond = [helper.make_node("ReduceSum", ["y_out"], ["total"], name="total", keepdims=0),
                const("limit", np.array(100.0, np.float32)),
                helper.make_node("Less", ["total", "limit"], ["cond_out"], name="below_limit")]
    out["loop_gpu_condition"] = model(
        [helper.make_node("Loop", ["M", "c", "y0"], ["y", "ys"], name="loop_on_gpu_sum",
                          body=loop_body(extra_nodes=gpu_cond[:2], cond_node=gpu_cond[2]))],
        [m_in, c_in, y0, x], [y, ys], [W])
    # A trip count of a billion, no condition: refused when planning (the unrolling cap).
    out["loop_huge"] = model(
        [const("billion", np.array(10**9, np.int64)),
         helper.make_node("Loop", ["billion", "", "y0"], ["y", "ys"], name="huge_loop", body=loop_body())],
        [y0, x], [y, ys], [W])
    # No trip count and a condition that stays true (a body of no nodes passing it through): refused when
    # planning, at the iteration that passes the unrolling cap.
    out["loop_forever"] = model(
        [helper.make_node("Loop", ["", "c", "y0"], ["y"], name="endless", body=helper.make_graph(
            [], "body", [info("i", I, []), info("cond_in", B, []), info("y_in", F, [13, 5])],
            [info("cond_in", B, []), info("y_in", F, [13, 5])]))],
        [c_in, y0], [y])
    # An op wgi lacks inside the body: reported with its path.
    out["loop_unsupported_body"] = model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y"], name="loop", body=helper.make_graph(
            [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
             helper.make_node("NoSuchOp", ["y_in"], ["y_out"], name="mystery", domain="wgi.test")],
            "body", [info("i", I, []), info("cond_in", B, []), info("y_in", F, [13, 5])],
            [info("cond_out", B, []), info("y_out", F, [13, 5])]))],
        [m_in, y0], [y], check=False)
    out["loop_unsupported_body"].opset_import.append(helper.make_opsetid("wgi.test", 1))
    # Scan (opset 16) over two inputs: a [13, 5] along axis 1 reversed, b [5, 14] along axis 0 (5 steps
    # forward); state s [13, 14] (s = s * 0.5 + outer(a_t, b_t)); scan outputs: s + 1 along the last axis, in
    # reverse order, and relu(a_t) along axis 0. Every input has more than 64 elements (not folded on the host).
    scan_body = helper.make_graph(
        [const("half", np.array(0.5, np.float32)),
         const("one_axis", np.array([1], np.int64)), const("zero_axis", np.array([0], np.int64)),
         helper.make_node("Unsqueeze", ["a_t", "one_axis"], ["a_col"], name="a_col"),
         helper.make_node("Unsqueeze", ["b_t", "zero_axis"], ["b_row"], name="b_row"),
         helper.make_node("Mul", ["a_col", "b_row"], ["outer"], name="outer"),
         helper.make_node("Mul", ["s_in", "half"], ["decayed"], name="decay"),
         helper.make_node("Add", ["decayed", "outer"], ["s_out"], name="accumulate"),
         const("one", np.array(1.0, np.float32)),
         helper.make_node("Add", ["s_out", "one"], ["shifted"], name="shift"),
         helper.make_node("Relu", ["a_t"], ["a_relu"], name="relu_a")],
        "scan_body", [info("s_in", F, [13, 14]), info("a_t", F, [13]), info("b_t", F, [14])],
        [info("s_out", F, [13, 14]), info("shifted", F, [13, 14]), info("a_relu", F, [13])])
    out["scan_axes"] = model(
        [helper.make_node("Scan", ["s0", "a", "b"], ["s", "shifted_all", "a_all"], name="scan", body=scan_body,
                          num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[1, 0],
                          scan_output_axes=[-1, 0], scan_output_directions=[1, 0])],
        [info("s0", F, [13, 14]), info("a", F, [13, 5]), info("b", F, [5, 14])],
        [info("s", F, [13, 14]), info("shifted_all", F, [13, 14, 5]), info("a_all", F, [5, 13])])
    # Scan at opset 8 (a batch axis first, no sequence_lens): batch 3, 4 steps, state [23]:
    # s = s * v + x_t, scan output s - x_t, x reversed.
    v = numpy_helper.from_array(np.linspace(-1.2, 1.1, 23).astype(np.float32), "v")
    scan8_body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "v"], ["sv"], name="mul_v"),
         helper.make_node("Add", ["sv", "x_t"], ["s_out"], name="add_x"),
         helper.make_node("Sub", ["s_out", "x_t"], ["diff"], name="sub_x")],
        "scan8_body", [info("s_in", F, [23]), info("x_t", F, [23])], [info("s_out", F, [23]), info("diff", F, [23])])
    out["scan8_batch"] = model(
        [helper.make_node("Scan", ["", "s0", "x"], ["s", "diffs"], name="scan8", body=scan8_body, num_scan_inputs=1,
                          directions=[1])],
        [info("s0", F, [3, 23]), info("x", F, [3, 4, 23])], [info("s", F, [3, 23]), info("diffs", F, [3, 4, 23])],
        [v], opset=8)
    return out


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, m in models().items():
        onnx.save(m, os.path.join(OUT, name + ".onnx"))
