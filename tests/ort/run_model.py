#!/usr/bin/env python3
"""The same reference runner as run_model.js, through onnxruntime's Python package (CPU execution provider):
for machines that have Python's onnxruntime but no node, such as the lent GPU machine. tests/gpu/test_ocr.cpp
uses it when WGI_ORT_COMMAND="python3 tests/ort/run_model.py" is set.
Usage: run_model.py MODEL.onnx OUT_DIR NAME=IN.npy [NAME=IN.npy ...]
Writes OUT_DIR/<output name>.npy (characters outside [A-Za-z0-9._-] replaced by '_')."""
import os
import re
import sys

import numpy as np
import onnxruntime


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: run_model.py MODEL.onnx OUT_DIR NAME=IN.npy ...")
    model, out_dir, inputs = argv[0], argv[1], argv[2:]
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = {arg.split("=", 1)[0]: np.load(arg.split("=", 1)[1]) for arg in inputs}
    names = [o.name for o in session.get_outputs()]
    os.makedirs(out_dir, exist_ok=True)
    for name, value in zip(names, session.run(names, feeds)):
        np.save(os.path.join(out_dir, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"), value)


if __name__ == "__main__":
    main(sys.argv[1:])
