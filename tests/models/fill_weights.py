#!/usr/bin/python3
"""Writes the external weight files of the benchmark models (build/models-large/*/model.onnx.data).

The base-size models written by `florence_siglip.py --large` keep their large weights out of model.onnx: each
such tensor is drawn from SplitMix64 on (seed, index), scaled to the statistics of PyTorch's default init, and
weights.json records how (seed, scale, offset, count) plus the data file's SHA-256. This script rebuilds the
data file from weights.json with nothing but numpy, bit for bit on any numpy version, so a model folder travels
as a few MB (graph, small tensors, inputs, float64 references) and is completed where it runs:

    python3 tests/models/fill_weights.py build/models-large          # every folder below with a weights.json
    python3 tests/models/fill_weights.py --check build/models-large  # verify the data files, write nothing
    python3 tests/models/fill_weights.py --strip build/models-large  # delete them (before carrying the folders)
"""
import hashlib
import json
import os
import sys

import numpy as np

_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def uniform_pm1(seed, count, chunk=1 << 22):
    """`count` float32 values in [-1, 1): SplitMix64 of (seed, index), top 24 bits, exact in float32."""
    out = np.empty(count, dtype=np.float32)
    base = np.uint64((seed * _GOLDEN) & _MASK)
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        z = (np.arange(start + 1, start + n + 1, dtype=np.uint64) * np.uint64(_GOLDEN)) + base
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        out[start:start + n] = (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)
    return out


def tensor_values(seed, count, scale):
    return uniform_pm1(seed, count) * np.float32(scale)


def fill_folder(folder, check_only=False):
    with open(os.path.join(folder, "weights.json")) as f:
        recipe = json.load(f)
    path = os.path.join(folder, recipe["file"])
    digest = hashlib.sha256()
    with open(path + ".partial", "wb") as out:
        for t in sorted(recipe["tensors"], key=lambda t: t["offset"]):
            if out.tell() < t["offset"]:
                out.write(b"\0" * (t["offset"] - out.tell()))
            data = tensor_values(t["seed"], t["count"], t["scale"]).tobytes()
            out.write(data)
        out.flush()
    with open(path + ".partial", "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    if digest.hexdigest() != recipe["sha256"]:
        os.remove(path + ".partial")
        raise RuntimeError(f"{path}: SHA-256 {digest.hexdigest()} differs from weights.json's {recipe['sha256']}")
    if check_only:
        os.remove(path + ".partial")
    else:
        os.replace(path + ".partial", path)
    print(f"{path}: {os.path.getsize(path) if not check_only else recipe['bytes']} bytes, SHA-256 ok")


def main(argv):
    check_only = "--check" in argv
    strip = "--strip" in argv
    roots = [a for a in argv if not a.startswith("--")] or [
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "models-large")]
    found = 0
    for root in roots:
        for folder, _, files in sorted(os.walk(root)):
            if "weights.json" in files:
                found += 1
                if strip:
                    data = os.path.join(folder, "model.onnx.data")
                    if os.path.exists(data):
                        os.remove(data)
                    continue
                fill_folder(folder, check_only)
    if not found:
        sys.exit(f"no weights.json below {', '.join(roots)}")


if __name__ == "__main__":
    main(sys.argv[1:])
