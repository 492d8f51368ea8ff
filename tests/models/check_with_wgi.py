#!/usr/bin/python3
"""Runs model folders (model.onnx, input_<name>.npy, expected_<output>.npy) through `wgi run` and prints each
output's relative L2 error against its float64 reference, as tests/gpu/test_models.cpp checks the committed
ones. For the base-size models of build/models-large/ (run fill_weights.py there first), e.g. on a real GPU:

    python3 tests/models/check_with_wgi.py --wgi build/release/wgi --backend vulkan build/models-large/*_opset17

Exit status 1 if any output is above --tolerance (default 1e-4) or a run fails. Needs numpy only.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np


def check(folder, wgi, backend, tolerance):
    inputs = sorted(glob.glob(os.path.join(folder, "input_*.npy")))
    args = [wgi, "run", os.path.join(folder, "model.onnx"), "--backend", backend]
    for path in inputs:
        args += ["--input", os.path.basename(path)[len("input_"):-len(".npy")] + "=" + path]
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run(args + ["--output-dir", out], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{folder}: wgi run failed ({run.returncode}):\n{run.stdout}{run.stderr}")
            return False
        timing = [line for line in run.stdout.splitlines() if line.startswith("load ")]
        ok = True
        for path in sorted(glob.glob(os.path.join(folder, "expected_*.npy"))):
            name = os.path.basename(path)[len("expected_"):-len(".npy")]
            want = np.load(path).astype(np.float64)
            got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
            if got.shape != want.shape:
                print(f"{folder} / {name}: shape {got.shape}, expected {want.shape}")
                ok = False
                continue
            rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
            good = bool(np.isfinite(rel) and rel <= tolerance)
            ok &= good
            print(f"{folder} / {name}: relative L2 {rel:.3g}, max abs {np.abs(got - want).max():.3g}"
                  f" {'ok' if good else 'FAIL'}")
        print(f"{folder}: {timing[0] if timing else ''}")
        return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--wgi", default="build/release/wgi")
    parser.add_argument("--backend", default="vulkan")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    a = parser.parse_args()
    results = [check(f, a.wgi, a.backend, a.tolerance) for f in a.folders]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
