#!/usr/bin/env python3
# Usage: /usr/bin/python3 tests/conformance/float64_node_tests_as_float32.py PATTERN DEST, then
# wgi_conformance --data DEST. Some ONNX node tests (Einsum, CumSum) use float64 only, which wgi does not
# import; this copies the matching tests with float64 tensors and graph types converted to float32 so that
# the ops' float32 kernels still meet ONNX's expected values (docs/new_ops.md).
import onnx, glob, os, sys, numpy as np
from onnx import numpy_helper, TensorProto
pattern, dest = sys.argv[1], sys.argv[2]
for d in sorted(glob.glob('/usr/share/libonnx-testdata/data/node/' + pattern)):
    out = os.path.join(dest, os.path.basename(d))
    m = onnx.load(d + '/model.onnx')
    for v in list(m.graph.input) + list(m.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.DOUBLE: v.type.tensor_type.elem_type = TensorProto.FLOAT
    os.makedirs(out, exist_ok=True); onnx.save(m, out + '/model.onnx')
    for s in glob.glob(d + '/test_data_set_*'):
        so = os.path.join(out, os.path.basename(s)); os.makedirs(so, exist_ok=True)
        for f in glob.glob(s + '/*.pb'):
            t = onnx.TensorProto(); t.ParseFromString(open(f, 'rb').read())
            a = numpy_helper.to_array(t)
            if a.dtype == np.float64: a = a.astype(np.float32)
            open(os.path.join(so, os.path.basename(f)), 'wb').write(numpy_helper.from_array(a, t.name).SerializeToString())
