#!/usr/bin/python3
"""Dynamic-quantization variants of float32 ONNX models, as ONNX Runtime's quantize_dynamic writes them.

    convert(model, recipe) -> model
    /usr/bin/python3 tests/models/variants_dynamic.py in.onnx out.onnx --recipe uint8 [--expose-integers]

What a recipe rewrites (per-tensor quantization, the default of quantize_dynamic):
  MatMul(A, B) with a constant B   -> DynamicQuantizeLinear(A) -> MatMulInteger(Aq, Bq, a_zp, b_zp)
                                      -> Cast(float) -> Mul(a_scale * b_scale)
  Conv(X, W[, bias]) with constant W -> DynamicQuantizeLinear(X) -> ConvInteger(Xq, Wq, x_zp, w_zp)
                                      -> Cast(float) -> Mul(x_scale * w_scale) [-> Add(bias as [M, 1, 1])]
  Gather(table, ids) with a constant table -> Gather(table_q, ids) -> DequantizeLinear(., scale, zp)
Weights: recipe "uint8" quantizes them asymmetrically to uint8 (range including 0, scale = range / 255,
zero point = round(-min / scale)), what quantize_dynamic does for QuantType.QUInt8; "int8_full"
symmetrically to int8 in [-127, 127] (scale = max|w| / 127, zero point 0), QuantType.QInt8; "int8" the same
with reduce_range ([-64, 64], scale = max|w| / 64), which ONNX Runtime advises on x86-64: its uint8 x int8
kernels on AVX2 without VNNI add pairs of products in saturating int16 (VPMADDUBSW), so with full-range int8
weights its MatMulInteger sums can differ from the exact ones (wgi's are exact; docs/integer_ops.md).
Activations are always uint8 (DynamicQuantizeLinear), each tensor quantized once however many products read it
(quantize_dynamic keeps a map of the values it quantized: a layer's q, k and v projections, or a ResNet
block's first conv and its downsample, share one DynamicQuantizeLinear).
A B (or W, table) that is a Transpose of an initializer is folded first, as ORT's optimizer would before
quantizing (torch exports nn.Linear weights so).

--expose-integers also makes the first MatMulInteger / ConvInteger output (int32) a graph output, so a test
can compare the exact integers of two runtimes, not only the rescaled floats.
Run with Debian's python3 (onnx 1.12, numpy).
"""
import argparse
import sys

import numpy as np
import onnx
import onnx.shape_inference
import onnx.version_converter
from onnx import TensorProto, helper, numpy_helper

RECIPES = ("uint8", "int8", "int8_full")


def quantize_weight(w, recipe):
    """(quantized array, scale, zero point) of a float weight, per tensor."""
    w = w.astype(np.float32)
    if recipe in ("int8", "int8_full"):
        qmax = 64 if recipe == "int8" else 127  # reduce_range: [-64, 64]
        absmax = float(np.max(np.abs(w))) if w.size else 0.0
        scale = np.float32(absmax / qmax if absmax > 0 else 1.0)
        q = np.clip(np.rint(w / scale), -qmax, qmax).astype(np.int8)
        return q, scale, np.int8(0)
    lo = min(float(np.min(w)), 0.0) if w.size else 0.0
    hi = max(float(np.max(w)), 0.0) if w.size else 0.0
    scale = np.float32((hi - lo) / 255.0 if hi > lo else 1.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    q = np.clip(np.rint(w / scale) + int(zp), 0, 255).astype(np.uint8)
    return q, scale, zp


class Rewriter:
    def __init__(self, model, recipe):
        self.model = model
        self.recipe = recipe
        self.graph = model.graph
        self.inits = {t.name: t for t in self.graph.initializer}
        self.counter = 0
        self.integer_outputs = []  # names of MatMulInteger / ConvInteger outputs, in graph order
        self.quantized = {}  # float tensor name -> its DynamicQuantizeLinear's (q, scale, zero point)

    def fresh(self, base):
        self.counter += 1
        return f"{base}_q{self.counter}"

    def constant(self, name):
        """The numpy value of an initializer, a Constant node's tensor, or a Transpose of either (folded), else
        None."""
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        for node in self.graph.node:
            if name not in node.output:
                continue
            if node.op_type == "Constant":
                value = next((a.t for a in node.attribute if a.name == "value"), None)
                return None if value is None else numpy_helper.to_array(value)
            if node.op_type == "Transpose":
                source = self.constant(node.input[0])
                perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
                return None if source is None else np.transpose(source, perm)
        return None

    def add_init(self, base, array):
        name = self.fresh(base)
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def dynamic_quantize(self, x, nodes):
        if x in self.quantized:
            return self.quantized[x]
        q, s, z = self.fresh(x + "_quantized"), self.fresh(x + "_scale"), self.fresh(x + "_zero_point")
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [q, s, z], name=self.fresh("DynamicQuantizeLinear")))
        self.quantized[x] = (q, s, z)
        return q, s, z

    def rescale(self, integer, x_scale, w_scale_name, out, nodes):
        scale = self.fresh("scale_product")
        nodes.append(helper.make_node("Mul", [x_scale, w_scale_name], [scale], name=self.fresh("Mul")))
        as_float = self.fresh(integer + "_float")
        nodes.append(helper.make_node("Cast", [integer], [as_float], to=TensorProto.FLOAT, name=self.fresh("Cast")))
        nodes.append(helper.make_node("Mul", [as_float, scale], [out], name=self.fresh("Mul")))

    def matmul(self, node, nodes):
        b = self.constant(node.input[1])
        if b is None or b.dtype != np.float32:
            return False
        bq, bs, bz = quantize_weight(b, self.recipe)
        aq, a_s, az = self.dynamic_quantize(node.input[0], nodes)
        integer = self.fresh(node.output[0] + "_int32")
        nodes.append(helper.make_node("MatMulInteger",
                                      [aq, self.add_init("weight", bq), az, self.add_init("weight_zero_point", bz)],
                                      [integer], name=self.fresh(node.name or "MatMulInteger")))
        self.integer_outputs.append(integer)
        self.rescale(integer, a_s, self.add_init("weight_scale", bs), node.output[0], nodes)
        return True

    def conv(self, node, nodes):
        w = self.constant(node.input[1])
        if w is None or w.dtype != np.float32:
            return False
        wq, ws, wz = quantize_weight(w, self.recipe)
        xq, xs, xz = self.dynamic_quantize(node.input[0], nodes)
        integer = self.fresh(node.output[0] + "_int32")
        conv = helper.make_node("ConvInteger", [xq, self.add_init("weight", wq), xz, self.add_init("weight_zero_point", wz)],
                                [integer], name=self.fresh(node.name or "ConvInteger"))
        conv.attribute.extend(node.attribute)
        nodes.append(conv)
        self.integer_outputs.append(integer)
        has_bias = len(node.input) > 2 and node.input[2]
        scaled = self.fresh(node.output[0] + "_scaled") if has_bias else node.output[0]
        self.rescale(integer, xs, self.add_init("weight_scale", ws), scaled, nodes)
        if has_bias:
            bias = self.constant(node.input[2])
            if bias is None:
                return False
            spatial = len(w.shape) - 2
            bias_name = self.add_init("bias", bias.reshape([-1] + [1] * spatial).astype(np.float32))
            nodes.append(helper.make_node("Add", [scaled, bias_name], [node.output[0]], name=self.fresh("Add")))
        return True

    def gather(self, node, nodes):
        table = self.constant(node.input[0])
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if table is None or table.dtype != np.float32 or axis != 0:
            return False
        tq, ts, tz = quantize_weight(table, "uint8")  # ORT quantizes Gather tables to uint8 as well
        gathered = self.fresh(node.output[0] + "_uint8")
        nodes.append(helper.make_node("Gather", [self.add_init("table", tq), node.input[1]], [gathered],
                                      name=self.fresh(node.name or "Gather"), axis=0))
        nodes.append(helper.make_node("DequantizeLinear",
                                      [gathered, self.add_init("table_scale", ts), self.add_init("table_zero_point", tz)],
                                      [node.output[0]], name=self.fresh("DequantizeLinear")))
        return True

    def run(self, expose_integers):
        rewrites = {"MatMul": self.matmul, "Conv": self.conv, "Gather": self.gather}
        nodes = []
        for node in self.graph.node:
            rewrite = rewrites.get(node.op_type)
            before, quantized = len(nodes), dict(self.quantized)
            if rewrite and rewrite(node, nodes):
                continue
            del nodes[before:]  # a rewrite that gave up: its nodes go, and a quantization it added
            self.quantized = quantized
            nodes.append(node)
        # Nodes nothing reads any more (the folded Transposes of weights) go.
        graph_outputs = {o.name for o in self.graph.output}
        while True:
            read = {i for n in nodes for i in n.input} | graph_outputs
            live = [n for n in nodes if any(o in read for o in n.output)]
            if len(live) == len(nodes):
                break
            nodes = live
        del self.graph.node[:]
        self.graph.node.extend(nodes)
        # Initializers no node reads any more (the float weights, folded Transposes' inputs) go.
        used = {i for n in self.graph.node for i in n.input}
        kept = [t for t in self.graph.initializer if t.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(kept)
        if expose_integers and self.integer_outputs:
            inferred = onnx.shape_inference.infer_shapes(self.model).graph.value_info
            info = next(v for v in inferred if v.name == self.integer_outputs[0])
            self.graph.output.append(info)
        return self.model


def default_opset(model):
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def convert(model, recipe, expose_integers=False):
    if recipe not in RECIPES:
        raise ValueError(f"recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    # DynamicQuantizeLinear needs opset 11: older models are converted first (as quantize_dynamic does), since
    # other ops changed form on the way (Clip's bounds became inputs in 11, Resize's attributes in 10 and 11).
    if default_opset(out) < 11:
        out = onnx.version_converter.convert_version(out, 11)
    # Some exporters' models do not pass onnx's checker themselves (paddle2onnx's Clip); check the result only
    # when the input passes.
    try:
        onnx.checker.check_model(out)
        input_valid = True
    except onnx.checker.ValidationError:
        input_valid = False
    out = Rewriter(out, recipe).run(expose_integers)
    if input_valid:
        onnx.checker.check_model(out)
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--recipe", choices=RECIPES, default="uint8")
    parser.add_argument("--expose-integers", action="store_true",
                        help="make the first MatMulInteger / ConvInteger output a graph output")
    args = parser.parse_args(argv)
    model = convert(onnx.load(args.input), args.recipe, args.expose_integers)
    onnx.save(model, args.output)
    counts = {}
    for n in model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    print(f"{args.output}: {counts}")


if __name__ == "__main__":
    main(sys.argv[1:])
