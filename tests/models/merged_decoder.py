#!/usr/bin/python3
"""A merged decoder (one model, an If on use_cache_branch) as optimum's merge_decoders makes the
decoder_model_merged.onnx that Florence-2 and other seq2seq exports ship, for tests/gpu/test_control_flow.cpp.

    /usr/bin/python3 tests/models/merged_decoder.py

The tiny BART decoder of florence_siglip.py (same module, fresh seed) is exported twice with torch 1.13:
without past key/values (input_ids, encoder_hidden_states -> logits, present k/v per layer) and with them
(input_ids, encoder_hidden_states, past k/v per layer -> logits, present k/v). The two are then merged as
optimum.onnx.graph_transformations.merge_decoders does:
  - outer inputs: the union of both models' inputs (by name) and a bool input use_cache_branch [1];
  - initializers of both models go to the outer graph, deduplicated by name and content (a name with two
    contents is renamed in the with-past branch), so both branches read them from the enclosing scope;
  - If(use_cache_branch): then_branch is the with-past graph, else_branch the no-past one, neither with
    inputs or initializers of its own (they read the outer inputs), both with the same outputs, which are the
    If's outputs and the model's: the no-past branch outputs present key/values too.
Writes tests/data/models/merged_decoder_tiny_opset17/: model.onnx (merged), decoder_model.onnx and
decoder_with_past_model.onnx (the split models), and inputs for both branches: no_past_*.npy (past inputs
with past_len 1 and random contents, which the no-past branch must ignore) and with_past_*.npy (past_len 4).

Also writes the small hand-made If models of the same test to tests/data/models/control_flow/ (see
control_flow_models).
"""
import copy
import hashlib
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import florence_siglip as fs  # noqa: E402

SEED = 20261219
FOLDER = os.path.join(fs.OUT, "merged_decoder_tiny_opset17")
OPSET = 17


class NoPastDecoder(fs.BartDecoderStep):
    """BartDecoderStep's first step without past inputs: past_len 0, every layer's self-attention over the new
    tokens only (BartAttention with past=None). Made from a BartDecoderStep by `of`, so that its parameters
    are the same tensors under the same names (the exports' initializers then match by name and content)."""

    @classmethod
    def of(cls, step):
        module = copy.deepcopy(step)
        module.__class__ = cls
        return module

    def forward(self, input_ids, encoder_hidden_states):
        b, t = input_ids.shape
        x = self.embed_tokens(input_ids) * self.embed_scale
        positions = torch.arange(t, dtype=torch.long, device=input_ids.device).expand(b, -1)
        x = self.layernorm_embedding(x + self.embed_positions(positions + self.POSITION_OFFSET))
        row = torch.arange(t, device=x.device).unsqueeze(1)
        col = torch.arange(t, device=x.device).unsqueeze(0)
        mask = torch.zeros(t, t, dtype=x.dtype, device=x.device).masked_fill(col > row, torch.finfo(x.dtype).min)
        mask = mask[None, None, :, :]
        presents = []
        for layer in self.layers:
            x, present = layer(x, encoder_hidden_states, None, mask)
            presents += list(present)
        return (self.lm_head(x) + self.final_logits_bias, *presents)


def export(module, inputs, names, path, past_names, present_names):
    dynamic = {"input_ids": {0: "batch", 1: "new_tokens"}, "encoder_hidden_states": {0: "batch", 1: "src_len"},
               "logits": {0: "batch", 1: "new_tokens"}}
    dynamic.update({n: {0: "batch", 2: "past_len"} for n in past_names})
    dynamic.update({n: {0: "batch", 2: "total_len"} for n in present_names})
    fs.export(module, inputs, path, OPSET, names, ["logits"] + present_names, dynamic)
    fs.shorten_value_names(path)


def content_key(t):
    return hashlib.sha256(t.SerializeToString()).hexdigest()


def merge(no_past, with_past):
    """optimum's merge_decoders on two loaded ModelProtos: the merged ModelProto."""
    outer_inits, by_name = [], {}  # name -> content key of the outer initializer

    def take_initializers(graph, rename):
        for init in graph.initializer:
            t = onnx.TensorProto()
            t.CopyFrom(init)
            t.name = ""  # the name is part of the bytes: compare the contents without it
            key = content_key(t)
            name = init.name
            if name in by_name and by_name[name] != key:
                new = name + "_merged"
                rename[name] = new
                name = new
            if name not in by_name:
                t.name = name
                by_name[name] = key
                outer_inits.append(t)

    rename_with_past = {}
    take_initializers(no_past.graph, {})
    take_initializers(with_past.graph, rename_with_past)
    for node in with_past.graph.node:
        for i, n in enumerate(node.input):
            node.input[i] = rename_with_past.get(n, n)

    def branch(graph, name):
        outputs = [helper.make_value_info(o.name, o.type) for o in graph.output]
        return helper.make_graph(list(graph.node), name, [], outputs)

    assert [o.name for o in no_past.graph.output] == [o.name for o in with_past.graph.output]
    inputs, seen = [], set()
    for g in (no_past.graph, with_past.graph):
        for i in g.input:
            if i.name not in seen and i.name not in by_name:
                seen.add(i.name)
                inputs.append(i)
    inputs.append(helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]))
    if_node = helper.make_node("If", ["use_cache_branch"], [o.name for o in with_past.graph.output],
                               name="optimum::if", then_branch=branch(with_past.graph, "decoder_with_past"),
                               else_branch=branch(no_past.graph, "decoder"))
    graph = helper.make_graph([if_node], "merged_decoder", inputs, list(with_past.graph.output), outer_inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="wgi tests/models/merged_decoder.py")
    model.ir_version = with_past.ir_version
    onnx.checker.check_model(model)
    return model


def control_flow_models():
    """name -> ModelProto: small If models built by hand (opset 16), and broken ones for the load errors."""
    f, b = TensorProto.FLOAT, TensorProto.BOOL
    w = numpy_helper.from_array(np.array([0.5, -1.5, 2.0, 0.25, -0.75], np.float32), "w")
    x = helper.make_tensor_value_info("x", f, ["batch", 5])
    y = helper.make_tensor_value_info("y", f, ["batch", 5])
    z = helper.make_tensor_value_info("z", f, ["batch", 5])

    def graph(nodes, name, outputs, inits=()):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, f, None) for o in outputs],
                                 list(inits))

    def model(nodes, inputs, outputs, inits=(), check=True):
        m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", 16)], producer_name="merged_decoder.py")
        m.ir_version = 8
        if check:
            onnx.checker.check_model(m, full_check=True)
        return m

    models = {}
    # z = If(c1, If(c2, relu(x + w), x * w), x - w) + x: both conditions graph inputs (given by value).
    inner = helper.make_node("If", ["c2"], ["t"], name="inner",
                             then_branch=graph([helper.make_node("Add", ["x", "w"], ["s"], name="add_w"),
                                                helper.make_node("Relu", ["s"], ["r"], name="relu")], "tt", ["r"]),
                             else_branch=graph([helper.make_node("Mul", ["x", "w"], ["p"], name="mul_w")], "te",
                                               ["p"]))
    outer = helper.make_node("If", ["c1"], ["y"], name="outer", then_branch=graph([inner], "then", ["t"]),
                             else_branch=graph([helper.make_node("Sub", ["x", "w"], ["d"], name="sub_w")], "else",
                                               ["d"]))
    cond_inputs = [helper.make_tensor_value_info("c1", b, [1]), helper.make_tensor_value_info("c2", b, [])]
    models["nested_if"] = model([outer, helper.make_node("Add", ["y", "x"], ["z"], name="after")],
                                cond_inputs + [x], [z], [w])
    # y = If(shape(x)[1] > 4, x * 2, x + 1), the condition folded from the shape when planning; each branch
    # has a Constant node of its own.
    two = helper.make_tensor("two", f, [], [2.0])
    one = helper.make_tensor("one", f, [], [1.0])
    xs = helper.make_tensor_value_info("x", f, ["batch", "n"])
    ys = helper.make_tensor_value_info("y", f, ["batch", "n"])
    models["if_shape_condition"] = model(
        [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
         helper.make_node("Gather", ["shape", "index"], ["n"], name="n", axis=0),
         helper.make_node("Greater", ["n", "four"], ["wide"], name="wide"),
         helper.make_node("If", ["wide"], ["y"], name="if_wide",
                          then_branch=graph([helper.make_node("Constant", [], ["c2"], value=two),
                                             helper.make_node("Mul", ["x", "c2"], ["m"], name="times_two")],
                                            "wide", ["m"]),
                          else_branch=graph([helper.make_node("Constant", [], ["c1"], value=one),
                                             helper.make_node("Add", ["x", "c1"], ["a"], name="plus_one")],
                                            "narrow", ["a"]))],
        [xs], [ys], [numpy_helper.from_array(np.array(1, np.int64), "index"),
                     numpy_helper.from_array(np.array(4, np.int64), "four")])
    # The condition computed on the GPU (a sum over x): refused when planning.
    models["if_gpu_condition"] = model(
        [helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=0),
         helper.make_node("Greater", ["total", "zero"], ["positive"], name="positive"),
         helper.make_node("If", ["positive"], ["y"], name="if_positive",
                          then_branch=graph([helper.make_node("Relu", ["x"], ["r"], name="relu")], "then", ["r"]),
                          else_branch=graph([helper.make_node("Neg", ["x"], ["n"], name="neg")], "else", ["n"]))],
        [x], [y], [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    # t = If(c, x, -x), y = t * 3: then_branch's output is the outer input itself (an Identity, removed by the
    # passes), and the If's output is a graph output too.
    three = numpy_helper.from_array(np.array(3, np.float32), "three")
    models["if_passes_input_through"] = model(
        [helper.make_node("If", ["c"], ["t"], name="if_0",
                          then_branch=graph([helper.make_node("Identity", ["x"], ["same"], name="same")], "then",
                                            ["same"]),
                          else_branch=graph([helper.make_node("Neg", ["x"], ["n"], name="neg")], "else", ["n"])),
         helper.make_node("Mul", ["t", "three"], ["y"], name="times_three")],
        [helper.make_tensor_value_info("c", b, []), x], [y, helper.make_tensor_value_info("t", f, ["batch", 5])],
        [three])
    c = [helper.make_tensor_value_info("c", b, [])]
    relu = graph([helper.make_node("Relu", ["x"], ["r"], name="relu")], "relu", ["r"])
    # Broken: branches with different output counts; a branch reading a value no scope has; an op wgi lacks
    # inside a branch; a Loop.
    models["if_output_counts_differ"] = model(
        [helper.make_node("If", ["c"], ["y"], name="if_0", then_branch=relu,
                          else_branch=graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                                             helper.make_node("Neg", ["x"], ["n"], name="neg")], "two", ["r", "n"]))],
        c + [x], [y], check=False)
    models["if_unknown_value"] = model(
        [helper.make_node("If", ["c"], ["y"], name="if_0", then_branch=relu,
                          else_branch=graph([helper.make_node("Add", ["x", "nowhere"], ["s"], name="add")], "bad",
                                            ["s"]))],
        c + [x], [y], check=False)
    models["if_unsupported_inside"] = model(
        [helper.make_node("If", ["c"], ["y"], name="if_0", then_branch=relu,
                          else_branch=graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                                             helper.make_node("Foo", ["r"], ["f"], name="x")], "foo", ["f"]))],
        c + [x], [y], check=False)
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
                              helper.make_node("Relu", ["v_in"], ["v_out"], name="relu")], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", b, []),
                              helper.make_tensor_value_info("v_in", f, None)],
                             [helper.make_tensor_value_info("cond_out", b, []),
                              helper.make_tensor_value_info("v_out", f, None)])
    models["loop"] = model([helper.make_node("Loop", ["trips", "c", "x"], ["y"], name="loop_0", body=body)],
                           c + [x], [y], [numpy_helper.from_array(np.array(3, np.int64), "trips")])
    return models


def main():
    rng = np.random.default_rng(SEED)
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    bart = fs.bart_decoder(True).eval()
    fs.randomize_norms(bart, gen)
    past_names, present_names = bart.io_names()
    os.makedirs(FOLDER, exist_ok=True)

    batch, new_tokens, src_len = 2, 3, 5
    with_past_inputs = fs.bart_inputs(bart, rng, batch=batch, new_tokens=new_tokens, past_len=4, src_len=src_len)
    no_past_inputs = fs.bart_inputs(bart, rng, batch=batch, new_tokens=new_tokens, past_len=1, src_len=src_len)
    no_past_path = os.path.join(FOLDER, "decoder_model.onnx")
    with_past_path = os.path.join(FOLDER, "decoder_with_past_model.onnx")
    export(NoPastDecoder.of(bart).eval(), no_past_inputs[:2], ["input_ids", "encoder_hidden_states"], no_past_path,
           [], present_names)
    export(bart, with_past_inputs, ["input_ids", "encoder_hidden_states"] + past_names, with_past_path,
           past_names, present_names)
    merged = merge(onnx.load(no_past_path), onnx.load(with_past_path))
    onnx.save(merged, os.path.join(FOLDER, "model.onnx"))

    names = ["input_ids", "encoder_hidden_states"] + past_names
    for prefix, values in (("no_past", no_past_inputs), ("with_past", with_past_inputs)):
        for name, value in zip(names, values):
            np.save(os.path.join(FOLDER, f"{prefix}_{name}.npy"), value)
    for f in sorted(os.listdir(FOLDER)):
        if f.endswith(".onnx"):
            print(f"{FOLDER}/{f}: {os.path.getsize(os.path.join(FOLDER, f))} bytes")
    folder = os.path.join(fs.OUT, "control_flow")
    os.makedirs(folder, exist_ok=True)
    for name, m in control_flow_models().items():
        onnx.save(m, os.path.join(folder, name + ".onnx"))
    print(f"{folder}: {len(os.listdir(folder))} models")


if __name__ == "__main__":
    main()
