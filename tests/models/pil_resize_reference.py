#!/usr/bin/python3
"""PIL's Image.resize outputs for tests/unit/test_image_resize.cpp (wgi's pipelines::resize_image) and the
non-square image of tests/gpu/test_florence2.cpp.

Run once with Debian's python3-pil (9.4) and numpy: `/usr/bin/python3 tests/models/pil_resize_reference.py`.
It writes tests/data/pipelines/resize/: for each case `in_<name>.npy` (seeded random RGB, uint8 HWC, with
smooth gradients added so that neighbouring pixels correlate as in photographs), `out_<name>.npy` (what
Image.fromarray(in).resize((w, h), resample) gives) and cases.json naming them; plus
tests/data/pipelines/florence2_tiny/image_97x50.png and its 64x64 bicubic resize `image_97x50_resized.npy`.
"""
import json
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "pipelines")
OUT = os.path.join(DATA, "resize")

# (name, input width, input height, output width, output height, PIL resample code)
CASES = [
    ("up_bicubic_37x23_to_64x64", 37, 23, 64, 64, 3),   # upscale, non-square
    ("down_bicubic_101x77_to_64x64", 101, 77, 64, 64, 3),  # downscale (antialiased support)
    ("mixed_bicubic_50x90_to_33x17", 50, 90, 33, 17, 3),  # odd sizes, both directions shrink unequally
    ("wide_bicubic_7x5_to_64x48", 7, 5, 64, 48, 3),     # large upscale (clipping of overshoot)
    ("rows_bicubic_64x40_to_64x64", 64, 40, 64, 64, 3),  # vertical pass only
    ("cols_bicubic_90x64_to_64x64", 90, 64, 64, 64, 3),  # horizontal pass only
    ("down_bilinear_80x61_to_31x45", 80, 61, 31, 45, 2),
    ("down_lanczos_80x61_to_31x45", 80, 61, 31, 45, 1),
    ("up_box_13x11_to_40x29", 13, 11, 40, 29, 4),
    ("down_hamming_80x61_to_31x45", 80, 61, 31, 45, 5),
]


def image(width, height, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    smooth = np.stack([128 + 100 * np.sin(x / 5.0 + c) * np.cos(y / 7.0 - c) for c in range(3)], axis=-1)
    noise = rng.integers(-60, 61, size=(height, width, 3))
    pixels = np.clip(smooth + noise, 0, 255).astype(np.uint8)
    pixels[rng.random((height, width)) < 0.05] = 255  # saturated spots: overshoot must clip
    pixels[rng.random((height, width)) < 0.05] = 0
    return pixels


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for seed, (name, iw, ih, ow, oh, resample) in enumerate(CASES):
        pixels = image(iw, ih, 1000 + seed)
        out = np.asarray(Image.fromarray(pixels, "RGB").resize((ow, oh), resample=resample))
        assert out.shape == (oh, ow, 3) and out.dtype == np.uint8
        np.save(os.path.join(OUT, f"in_{name}.npy"), pixels)
        np.save(os.path.join(OUT, f"out_{name}.npy"), out)
        cases.append(dict(name=name, width=ow, height=oh, resample=resample))
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(dict(pil=Image.__version__, cases=cases), f, indent=1)
        f.write("\n")
    pixels = image(97, 50, 7)
    Image.fromarray(pixels, "RGB").save(os.path.join(DATA, "florence2_tiny", "image_97x50.png"))
    resized = np.asarray(Image.fromarray(pixels, "RGB").resize((64, 64), resample=Image.BICUBIC))
    np.save(os.path.join(DATA, "florence2_tiny", "image_97x50_resized.npy"), resized)


if __name__ == "__main__":
    main()
