#!/usr/bin/python3
"""Weight-only quantized variants of an fp32 ONNX model, laid out the way ONNX Runtime's quantizers write them
(the _q4 / _bnb4 files of onnx-community's exports), for wgi's tests.

convert(model, recipe) replaces every MatMul whose B is a constant 2-D float32 [K, N] matrix (an initializer,
a Constant, or a Transpose of one: what torch.onnx exports for nn.Linear) by
  recipe q4 / q4_zp / q8 / q2_zp: com.microsoft MatMulNBits, bits 4 / 4 / 8 / 2, block 32 (--block-size),
      symmetric (no zero_points input: the default 2^(bits-1)) or with packed uint8 zero points
      ("_zp": asymmetric, min / max of each block with 0 included);
  recipe nf4 / fp4: com.microsoft MatMulBnb4, quant_type 1 / 0, block 64 (--block-size), absmax scales.
Layouts (ORT docs/ContribOperators.md): MatMulNBits B uint8 [N, ceil(K / bs), bs * bits / 8] with codes along
K, lowest bits first, the partial last block padded with the zero point; scales float32 [N, ceil(K / bs)];
zero points uint8 [N, ceil(ceil(K / bs) * bits / 8)] packed like B. MatMulBnb4: B uint8 [(N * K + 1) / 2] of
W^T [N, K] flattened, first code of a byte in its high nibble; absmax float32 [ceil(N * K / bs)].
Nodes made dead by the replacement (the Transposes) and unused initializers are dropped.

CLI: /usr/bin/python3 variants_weight_only.py in.onnx out.onnx --recipe q4 [--block-size N]
     /usr/bin/python3 variants_weight_only.py --write-test-variants   (tests/data/models/variants/)
Needs Debian's python3-onnx (1.12) and numpy only.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

RECIPES = {
    "q4": ("nbits", 4, False, 32),
    "q4_zp": ("nbits", 4, True, 32),
    "q8": ("nbits", 8, False, 32),
    "q2_zp": ("nbits", 2, True, 32),
    "nf4": ("bnb4", 1, None, 64),
    "fp4": ("bnb4", 0, None, 64),
}

# NF4: QLoRA's quantiles (arXiv 2305.14314); FP4: bitsandbytes' sign + 3-bit magnitude over 12.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0])
_FP4_MAGNITUDE = np.array([0, 0.0625, 8, 12, 4, 6, 2, 3]) / 12.0
FP4 = np.concatenate([_FP4_MAGNITUDE, -_FP4_MAGNITUDE])


def pack_codes(codes, bits):
    """uint8 codes [..., count] (count * bits a multiple of 8) -> bytes, lowest bits first."""
    per_byte = 8 // bits
    c = codes.reshape(codes.shape[:-1] + (-1, per_byte)).astype(np.uint16)
    out = np.zeros(c.shape[:-1], dtype=np.uint16)
    for i in range(per_byte):
        out |= c[..., i] << (i * bits)
    return out.astype(np.uint8)


def quantize_nbits(w_kn, bits, with_zero_points, block_size):
    """W [K, N] float32 -> (B [N, blocks, blob] uint8, scales [N, blocks] float32, zero points or None)."""
    k, n = w_kn.shape
    blocks = -(-k // block_size)
    w = np.zeros((n, blocks * block_size), dtype=np.float64)
    w[:, :k] = w_kn.T
    w = w.reshape(n, blocks, block_size)
    top = (1 << bits) - 1
    if with_zero_points:
        lo = np.minimum(w.min(axis=2), 0.0)
        hi = np.maximum(w.max(axis=2), 0.0)
        scale = (hi - lo) / top
        scale[scale == 0] = 1.0
        zero = np.clip(np.round(-lo / scale), 0, top)
    else:
        # The value of largest magnitude maps to code 0 (-2^(bits-1) steps), as ORT's symmetric RTN does.
        idx = np.abs(w).argmax(axis=2)
        extreme = np.take_along_axis(w, idx[..., None], axis=2)[..., 0]
        scale = extreme / -(1 << (bits - 1))
        scale[scale == 0] = 1.0
        zero = np.full(scale.shape, 1 << (bits - 1), dtype=np.float64)
    scale = scale.astype(np.float32)
    codes = np.clip(np.round(w / scale.astype(np.float64)[..., None]) + zero[..., None], 0, top)
    # The padding of a partial last block: the zero point (a weight of 0).
    codes = codes.reshape(n, blocks * block_size)
    codes[:, k:] = zero[:, -1:]
    codes = codes.reshape(n, blocks, block_size).astype(np.uint8)
    b = pack_codes(codes, bits)
    zp = None
    if with_zero_points:
        z = zero.astype(np.uint8)
        per_byte = 8 // bits
        padded = np.zeros((n, -(-blocks // per_byte) * per_byte), dtype=np.uint8)
        padded[:, :blocks] = z
        zp = pack_codes(padded, bits)
    return b, scale, zp


def quantize_bnb4(w_kn, quant_type, block_size):
    """W [K, N] -> (B [(N * K + 1) / 2] uint8, absmax [ceil(N * K / bs)] float32)."""
    table = NF4 if quant_type == 1 else FP4
    flat = w_kn.T.astype(np.float64).reshape(-1)
    count = flat.size
    blocks = -(-count // block_size)
    padded = np.zeros(blocks * block_size)
    padded[:count] = flat
    padded = padded.reshape(blocks, block_size)
    absmax = np.abs(padded).max(axis=1).astype(np.float32)
    safe = np.where(absmax == 0, 1.0, absmax.astype(np.float64))
    normalised = padded / safe[:, None]
    codes = np.abs(normalised[..., None] - table).argmin(axis=-1).astype(np.uint8).reshape(-1)[:count]
    if count % 2:
        codes = np.append(codes, np.uint8(0))
    b = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    return b, absmax


def _subgraphs(node):
    """The graphs a node's attributes hold (If's branches, Loop's and Scan's bodies)."""
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _all_nodes(graph):
    """Every node of `graph` and of its subgraphs, outer nodes first."""
    for node in graph.node:
        yield node
        for g in _subgraphs(node):
            yield from _all_nodes(g)


def _constant_values(graph, outer):
    """name -> numpy array for the values of `graph` known when converting: `outer` (the enclosing scopes),
    the graph's initializers, Constant outputs and Transposes of those. Scoped per graph: the branches of a
    merged decoder come from separate exports and reuse value names for different constants."""
    values = dict(outer)
    values.update({i.name: numpy_helper.to_array(i) for i in graph.initializer})
    changed = True
    while changed:
        changed = False
        for node in graph.node:
            if not node.output or node.output[0] in values:
                continue
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value":
                        values[node.output[0]] = numpy_helper.to_array(a.t)
                        changed = True
            elif node.op_type == "Transpose" and node.input[0] in values:
                perm = [list(a.ints) for a in node.attribute if a.name == "perm"]
                values[node.output[0]] = np.transpose(values[node.input[0]], perm[0] if perm else None)
                changed = True
    return values


def _reads(node):
    """The names a node reads: its inputs and, for a node with subgraphs, everything its subgraphs read
    (outer-scope reads are implicit in ONNX; over-approximated by every input named inside them)."""
    names = {i for i in node.input if i}
    for g in _subgraphs(node):
        for inner in _all_nodes(g):
            names.update(i for i in inner.input if i)
    return names


def _drop_dead(model):
    graph = model.graph
    live = {o.name for o in graph.output}
    kept = []
    for node in reversed(list(graph.node)):
        if any(o in live for o in node.output):
            kept.append(node)
            live.update(_reads(node))
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    inits = [i for i in graph.initializer if i.name in live]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def convert(model, recipe, block_size=None, accuracy_level=4):
    """A copy of `model` with every constant-B float32 MatMul replaced as `recipe` says. accuracy_level
    (MatMulNBits only): 4 lets ORT quantise A to int8 per block (what its quantizer writes for CPU), 0 keeps
    A in float32."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}: one of {', '.join(RECIPES)}")
    kind, param, with_zp, default_block = RECIPES[recipe]
    block_size = block_size or default_block
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    made = {}  # B name -> names of its quantized initializers (a weight shared by several MatMuls once)
    replaced = 0

    def rewrite(g, outer):
        """Replaces g's constant-B MatMuls (recursing into subgraphs); new initializers go to the main
        graph, which every subgraph sees as outer scope."""
        nonlocal replaced
        values = _constant_values(g, outer)
        new_nodes = []
        for node in g.node:
            for sub in _subgraphs(node):
                rewrite(sub, values)
            b = values.get(node.input[1]) if node.op_type == "MatMul" and node.domain in ("", "ai.onnx") else None
            if b is None or b.dtype != np.float32 or b.ndim != 2:
                new_nodes.append(node)
                continue
            k, n = b.shape
            # Keyed by the weight's bytes too: two branches may give different constants the same name.
            key = (node.input[1], b.tobytes())
            stem = node.input[1].strip("/").replace("/", "_") or "weight"
            if key not in made:
                if kind == "nbits":
                    q, scales, zp = quantize_nbits(b, param, with_zp, block_size)
                    names = [f"{stem}_Q{param}", f"{stem}_scales"] + ([f"{stem}_zero_points"] if zp is not None else [])
                    arrays = [q, scales] + ([zp] if zp is not None else [])
                else:
                    q, absmax = quantize_bnb4(b, param, block_size)
                    names, arrays = [f"{stem}_Bnb4", f"{stem}_absmax"], [q, absmax]
                taken = {i.name for i in graph.initializer}
                if any(name in taken for name in names):
                    names = [f"{name}_{len(made)}" for name in names]
                for name, array in zip(names, arrays):
                    graph.initializer.append(numpy_helper.from_array(array, name))
                made[key] = names
            names = made[key]
            if kind == "nbits":
                q_node = helper.make_node("MatMulNBits", [node.input[0]] + names, list(node.output),
                                          name=node.name + "_Q" + str(param), domain="com.microsoft", K=k, N=n,
                                          bits=param, block_size=block_size, accuracy_level=accuracy_level)
            else:
                q_node = helper.make_node("MatMulBnb4", [node.input[0]] + names, list(node.output),
                                          name=node.name + "_Bnb4", domain="com.microsoft", K=k, N=n,
                                          block_size=block_size, quant_type=param)
            new_nodes.append(q_node)
            replaced += 1
        del g.node[:]
        g.node.extend(new_nodes)

    rewrite(graph, {})
    if replaced == 0:
        raise ValueError("the model has no MatMul with a constant 2-D float32 B")
    _drop_dead(model)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


# The committed test variants: (source model folder, recipe, accuracy_level), inputs copied from the source
# folder. Level 0 (ORT computes in float32, so wgi must agree closely) except two level-4 files, the
# attribute as user models have it (ORT then quantises A to int8, and so does wgi's GEMV: a looser
# comparison, suffix _acc4; the decoder's 6 rows take the GEMV, the transformer's the fast GEMM).
TEST_VARIANTS = [("tiny_transformer_opset17", r, 0) for r in RECIPES] + [
    ("tiny_transformer_opset17", "q4", 4), ("bart_decoder_tiny_opset17", "q4", 0),
    ("bart_decoder_tiny_opset17", "q4", 4),
    ("bart_decoder_tiny_opset17", "q4_zp", 0), ("bart_decoder_tiny_opset17", "nf4", 0),
    ("florence2_vision_tiny_opset17", "q4", 0), ("siglip_vision_tiny_opset17", "q4_zp", 0)]
# q4f16 as onnx-community makes it: q4, then the float16 conversion (variants_fp16.py; float16 scales and
# activations, float32 graph inputs and outputs).
TEST_Q4F16_VARIANTS = ["tiny_transformer_opset17", "bart_decoder_tiny_opset17"]


def copy_inputs(src, dst):
    for f in sorted(os.listdir(src)):
        if f.startswith("input_") and f.endswith(".npy"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))


def write_test_variants(models_dir):
    out_root = os.path.join(models_dir, "variants")
    os.makedirs(out_root, exist_ok=True)
    for source, recipe, level in TEST_VARIANTS:
        src = os.path.join(models_dir, source)
        dst = os.path.join(out_root, f"{source}_{recipe}" + ("_acc4" if level == 4 else ""))
        os.makedirs(dst, exist_ok=True)
        model = convert(onnx.load(os.path.join(src, "model.onnx")), recipe, accuracy_level=level)
        onnx.save(model, os.path.join(dst, "model.onnx"))
        copy_inputs(src, dst)
    import variants_fp16
    for source in TEST_Q4F16_VARIANTS:
        src = os.path.join(models_dir, source)
        dst = os.path.join(out_root, f"{source}_q4f16")
        os.makedirs(dst, exist_ok=True)
        model = variants_fp16.convert(convert(onnx.load(os.path.join(src, "model.onnx")), "q4", accuracy_level=0))
        onnx.save(model, os.path.join(dst, "model.onnx"))
        copy_inputs(src, dst)
    # A model with an unknown com.microsoft op beside a supported one: it must fail at load, by name.
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 32])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16])
    w = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    q, scales, _ = quantize_nbits(w, 4, False, 32)
    graph = helper.make_graph(
        [helper.make_node("MatMulNBits", ["x", "wq", "ws"], ["h"], name="linear", domain="com.microsoft", K=32,
                          N=16, bits=4, block_size=32),
         helper.make_node("FancyContribOp", ["h"], ["y"], name="fancy", domain="com.microsoft")],
        "unknown_contrib", [x], [y], [numpy_helper.from_array(q, "wq"), numpy_helper.from_array(scales, "ws")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    os.makedirs(os.path.join(out_root, "unknown_contrib"), exist_ok=True)
    onnx.save(model, os.path.join(out_root, "unknown_contrib", "model.onnx"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?")
    parser.add_argument("output", nargs="?")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="q4")
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--accuracy-level", type=int, default=4, choices=[0, 1, 2, 3, 4])
    parser.add_argument("--write-test-variants", action="store_true",
                        help="write tests/data/models/variants/ from the committed test models")
    args = parser.parse_args(argv)
    if args.write_test_variants:
        here = os.path.dirname(os.path.abspath(__file__))
        write_test_variants(os.path.join(here, "..", "data", "models"))
        return 0
    if not args.input or not args.output:
        parser.error("give in.onnx and out.onnx (or --write-test-variants)")
    onnx.save(convert(onnx.load(args.input), args.recipe, args.block_size, args.accuracy_level), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
