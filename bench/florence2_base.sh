# Sourced by bench/h200_campaign.sh and bench/node_campaign.sh on the lent GPU machine (they define $root and
# stamp): the pipelines' setup.
# The pipelines' setup: transformers.js unpacked, the Florence-2 base folder and its q4 files made there, an
# image at the model's size (PNG for wgi, raw RGB for transformers.js without sharp).
unpack_transformers_js() {
  stamp unpack transformers.js
  mkdir -p .device/pipelines && tar -C .device/pipelines -xJf .device/pipelines.tar.xz
  ln -sfn "$root/.device/peers/ort/node_modules/onnxruntime-node" .device/pipelines/node_modules/onnxruntime-node
  export WGI_NODE_MODULES=$root/.device/pipelines/node_modules
  # transformers.js imports sharp at load; the images here go in as raw RGB, so a stub stands in for it.
  mkdir -p "$WGI_NODE_MODULES/sharp"
  echo '{"name":"sharp","version":"0.0.0-stub","main":"index.js"}' >"$WGI_NODE_MODULES/sharp/package.json"
  echo 'module.exports = () => { throw new Error("sharp is a stub here"); };' >"$WGI_NODE_MODULES/sharp/index.js"
}
prepare_florence2_base() {
  folder=.device/florence2/Florence-2-base
  local tokenizer=()
  if [[ -d .device/florence2_tokenizer ]]; then  # made where node is (bench/h200_pack.sh tokens)
    tokenizer=(--tokenizer-dir .device/florence2_tokenizer)
  else
    unpack_transformers_js
    tokenizer=(--node-modules "$WGI_NODE_MODULES")
  fi
  stamp make the base folder
  timeout 300 python3 tests/models/florence2_folder.py --base "$folder" --no-expected "${tokenizer[@]}" 2>&1 |
    tail -5
  for s in encoder_model decoder_model_merged; do
    timeout 120 python3 tests/models/variants_weight_only.py "$folder/onnx/$s.onnx" "$folder/onnx/${s}_q4.onnx" \
      --recipe q4 2>&1 | tail -1
  done
  ls -la "$folder/onnx"
  image=.device/florence2/image_768.png
  python3 - "$image" <<'PY'
import struct, sys, zlib
import numpy as np
rng = np.random.default_rng(20261201)
y, x = np.mgrid[0:768, 0:768]
img = np.stack([(x * 255 // 767), (y * 255 // 767), ((x + y) * 255 // 1534)], -1).astype(np.uint8)
img[200:400, 300:600] = rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)
raw = b"".join(b"\0" + img[r].tobytes() for r in range(768))
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1][:-4] + ".rgb", "wb").write(img.tobytes())
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 768, 768, 8, 2, 0, 0, 0))
                            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY
}
