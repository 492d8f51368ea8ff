#!/usr/bin/python3
"""float16 variants of ONNX models, as users export them (the `_fp16` files of model hubs).

`convert(model)` does what onnxconverter-common's
`convert_float_to_float16(model, keep_io_types=True, op_block_list=DEFAULT_OP_BLOCK_LIST)` does, written
here against Debian's onnx 1.12 and numpy (that package is not in Debian):
  - float32 initializers and the float32 tensors of node attributes (Constant's `value`, ConstantOfShape's
    `value`, ...) become float16, values clamped as the converter clamps them: finite magnitudes above 1e4
    become +-1e4, nonzero magnitudes below 1e-7 become +-1e-7 (so -3.4e38 attention masks stay finite);
  - every float32 value type (graph inputs and outputs excepted) becomes float16; Cast nodes to float32 cast
    to float16 instead;
  - graph inputs and outputs keep float32 (keep_io_types): a Cast to float16 after each float input, a Cast
    to float32 before each float output;
  - blocked ops (Resize, TopK, CumSum, Min, Max, Range, ...) stay float32: a Cast to float32 before each
    float16 input, a Cast back to float16 after each float output.
Unlike the original, the Casts are inserted where they are used (the node list stays in topological order)
and subgraphs are not descended into.

Usage: /usr/bin/python3 tests/models/variants_fp16.py IN.onnx OUT.onnx
       /usr/bin/python3 tests/models/variants_fp16.py --committed   (rewrites tests/data/models/*/model_fp16.onnx)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

# onnxconverter-common's DEFAULT_OP_BLOCK_LIST: ops ONNX Runtime lacks float16 kernels for (the ML ops among
# them cannot appear in the models here).
DEFAULT_OP_BLOCK_LIST = [
    'ArrayFeatureExtractor', 'Binarizer', 'CastMap', 'CategoryMapper', 'DictVectorizer', 'FeatureVectorizer',
    'Imputer', 'LabelEncoder', 'LinearClassifier', 'LinearRegressor', 'Normalizer', 'OneHotEncoder',
    'SVMClassifier', 'SVMRegressor', 'Scaler', 'TreeEnsembleClassifier', 'TreeEnsembleRegressor', 'ZipMap',
    'NonMaxSuppression', 'TopK', 'RoiAlign', 'Resize', 'Range', 'CumSum', 'Min', 'Max', 'Upsample'
]
MIN_POSITIVE = 1e-7
MAX_FINITE = 1e4

COMMITTED = ['siglip_vision_tiny_opset17', 'florence2_vision_tiny_opset17', 'small_cnn_opset17',
             'tiny_transformer_opset17', 'resnet_tiny_opset17']


def to_float16(values):
    """float32 -> float16 with the converter's clamping (sign, zero, inf and NaN kept)."""
    v = np.asarray(values, dtype=np.float32).copy()
    tiny = (v != 0) & (np.abs(v) < MIN_POSITIVE)
    v[tiny] = np.sign(v[tiny]) * MIN_POSITIVE
    huge = np.isfinite(v) & (np.abs(v) > MAX_FINITE)
    v[huge] = np.sign(v[huge]) * MAX_FINITE
    return v.astype(np.float16)


def convert_tensor(tensor):
    """A float32 TensorProto rewritten in place as float16."""
    if tensor.data_type != TensorProto.FLOAT:
        return
    halves = to_float16(numpy_helper.to_array(tensor))
    tensor.CopyFrom(numpy_helper.from_array(halves, tensor.name))


def convert(model, op_block_list=None):
    """The float16 variant of `model` (a new ModelProto; see the module docstring)."""
    blocked = set(DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list)
    model = shape_inference.infer_shapes(model)
    g = model.graph
    float_values = set()  # names of values typed float32 in the original (now float16 inside the graph)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            float_values.add(vi.name)
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            float_values.add(t.name)
            convert_tensor(t)
    for vi in g.value_info:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16

    used = {n for node in g.node for n in list(node.input) + list(node.output)}
    used |= {vi.name for vi in list(g.input) + list(g.output)} | {t.name for t in g.initializer}

    def fresh(base):
        name, k = base, 0
        while name in used:
            k += 1
            name = f'{base}_{k}'
        used.add(name)
        return name

    nodes = []
    renamed = {}  # graph float input -> its float16 cast
    for i, vi in enumerate(g.input):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            half = fresh(vi.name + '_fp16')
            renamed[vi.name] = half
            nodes.append(helper.make_node('Cast', [vi.name], [half], to=TensorProto.FLOAT16,
                                          name=fresh(f'graph_input_cast_{i}')))
    float_outputs = {vi.name for vi in g.output if vi.type.tensor_type.elem_type == TensorProto.FLOAT}
    output_half = {name: fresh(name + '_fp16') for name in float_outputs}

    for node in g.node:
        inputs = [renamed.get(n, output_half.get(n, n)) for n in node.input]
        outputs = [output_half.get(n, n) for n in node.output]
        if node.op_type in blocked:
            for k, name in enumerate(node.input):
                if name in float_values:
                    wide = fresh(f'{node.name or node.op_type}_input_cast_{k}')
                    nodes.append(helper.make_node('Cast', [inputs[k]], [wide], to=TensorProto.FLOAT))
                    inputs[k] = wide
            after = []
            for k, name in enumerate(node.output):
                if name in float_values:
                    wide = fresh(f'{node.name or node.op_type}_output_cast_{k}')
                    after.append(helper.make_node('Cast', [wide], [outputs[k]], to=TensorProto.FLOAT16))
                    outputs[k] = wide
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            del copy.input[:]
            copy.input.extend(inputs)
            del copy.output[:]
            copy.output.extend(outputs)
            nodes.append(copy)
            nodes.extend(after)
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(inputs)
        del copy.output[:]
        copy.output.extend(outputs)
        for attr in copy.attribute:
            if node.op_type == 'Cast' and attr.name == 'to' and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16
            if attr.type == onnx.AttributeProto.TENSOR:
                convert_tensor(attr.t)
            for t in attr.tensors:
                convert_tensor(t)
        nodes.append(copy)
    for i, vi in enumerate(g.output):
        if vi.name in output_half:
            nodes.append(helper.make_node('Cast', [output_half[vi.name]], [vi.name], to=TensorProto.FLOAT,
                                          name=fresh(f'graph_output_cast_{i}')))
    del g.node[:]
    g.node.extend(nodes)
    # Types of the renamed values are left to inference; stale float32 entries would contradict the casts.
    del g.value_info[:]
    onnx.checker.check_model(model)
    return model


def convert_file(src, dst):
    onnx.save(convert(onnx.load(src)), dst)


def main(argv):
    if argv == ['--committed']:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'models')
        for name in COMMITTED:
            convert_file(os.path.join(root, name, 'model.onnx'), os.path.join(root, name, 'model_fp16.onnx'))
            print('wrote', os.path.join(name, 'model_fp16.onnx'))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    convert_file(argv[0], argv[1])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
