#!/usr/bin/env bash
# Fills .device/ (git-ignored) for bench/h200_campaign.sh on the lent GPU machine, within the device tool's
# 64 MiB for everything that travels. Usage, from the repo root after `scripts/build release` and
# `/usr/bin/python3 tests/models/florence_siglip.py --large` and `tests/models/resnet.py --large`:
#   bench/h200_pack.sh main    the test and benchmark programs (xz), ONNX's test data and the font the OCR
#                              test renders with; carry [".device", "third_party/ocr-models"]
#   bench/h200_pack.sh conv    wgi, wgi_bench_ops and the GPU tests (the conv round); carry [".device"]
#   bench/h200_pack.sh shaders wgi_bench_ops, wgi_probe_pipeline_stats and spirv-as (the GEMM kernel round;
#                              add variants as .device/bin/wgi_<variant>_bench.xz); carry [".device"]
#   bench/h200_pack.sh quantized  wgi_bench_quantized, the GPU tests, wgi_probe_pipeline_stats and spirv-as (the
#                              quantized kernel round; add variants as .device/bin/wgi_<variant>_quantized.xz)
#   bench/h200_pack.sh files_tests  the GPU tests, the node conformance runner, wgi_bench_quantized and ONNX's
#                              test data (the round of the files users ship); carry [".device"]
#   bench/h200_pack.sh pipelines  wgi, node + onnxruntime-node and transformers.js (its node_modules without
#                              onnxruntime-web): the Florence-2 base folder is made there; carry [".device"]
#   bench/h200_pack.sh models  wgi and wgi_bench_ops, the base-size models without their weights
#                              (fill_weights.py rebuilds them there), node + onnxruntime-node (ORT's WebGPU
#                              EP); carry [".device"]
#   bench/h200_pack.sh tokens  wgi, wgi_bench_data_dependent, the GPU tests, the BART-base decoders without their
#                              weights and the Florence-2 base folder's tokenizer files (made here: no node
#                              there, and no room for it with these); tokens_decode, tokens_pipelines; add
#                              builds as .device/bin/wgi_<name>.xz; carry [".device"]
# The two do not fit in one call: node and ORT are 40 MB, the OCR models 16 MB.
# models, trimmed: WGI_PACK_MODELS="siglip_vision_base_opset17 resnet50_opset17 ..." packs only those folders
# (without the fp16 file made there), and WGI_PACK_PEERS=0 leaves node and ORT out: the batch-8 A/B of
# builds beside PyTorch (`h200_campaign.sh variants` / `throughput_ab`) then travels in ~20 MB with two builds.
# WGI_PACK_SHADER_TOOLS=1 adds wgi_probe_pipeline_stats and spirv-as, for `f16_weights` in the same call.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
mode=${1:?usage: bench/h200_pack.sh main|models|conv|shaders|quantized|files_tests|pipelines|tokens}
rm -rf .device
args=()
[[ ($mode == models && ${WGI_PACK_PEERS:-1} != 0) || $mode == pipelines ]] && args+=(--peers)
bins=(build/release/wgi build/release/wgi_bench_ops)
[[ $mode == models ]] && bins+=(build/release/wgi_bench_recurrent build/release/wgi_bench_data_dependent
                              build/release/wgi_bench_quantized)
[[ $mode == models && ${WGI_PACK_SHADER_TOOLS:-0} == 1 ]] &&
  bins+=(build/release/wgi_probe_pipeline_stats "$(command -v spirv-as)")
[[ $mode == pipelines ]] && bins=(build/release/wgi)
[[ $mode == tokens ]] && bins=(build/release/wgi build/release/wgi_bench_data_dependent build/release/tests/wgi_gpu_tests)
[[ $mode == main ]] && bins+=(build/release/wgi_bench_ops build/release/tests/wgi_gpu_tests build/release/tests/wgi_unit_tests
                              build/release/wgi_conformance build/release/wgi_selftest build/release/ocr)
[[ $mode == conv ]] && bins+=(build/release/tests/wgi_gpu_tests)
[[ $mode == files_tests ]] && bins+=(build/release/tests/wgi_gpu_tests build/release/wgi_conformance
                                     build/release/wgi_bench_quantized)
[[ $mode == quantized ]] && bins=(build/release/wgi_bench_quantized build/release/tests/wgi_gpu_tests
                                   build/release/wgi_probe_pipeline_stats "$(command -v spirv-as)")
[[ $mode == shaders ]] && bins=(build/release/wgi_bench_ops build/release/wgi_probe_pipeline_stats "$(command -v spirv-as)")
bash "${WGI_DEVICE_PACK:-$root/../shared/device/pack.sh}" "${args[@]}" "${bins[@]}"
for b in .device/bin/*; do xz -T2 -6 "$b"; done  # bench/h200_campaign.sh unpacks them
# Models: graph + small tensors + inputs + float64 references; the 360 MB weight files are rebuilt there.
# The vision models' pixel inputs are numpy's first and second draws from the generator's seed
# (florence_siglip.py's build_cases), regenerated there instead of carried (7 MB).
[[ $mode == models ]] && mkdir -p .device/models && cp tests/data/models/dynamic_shapes/nms_gather.onnx .device/
skip_fp16=()  # a trimmed pack leaves the fp16 files out (the campaign makes them there)
[[ -n ${WGI_PACK_MODELS:-} ]] && skip_fp16=(! -name model_fp16.onnx)
[[ $mode == models ]] && for dir in build/models-large/*_opset17; do
  name=$(basename "$dir")
  [[ -n ${WGI_PACK_MODELS:-} && " $WGI_PACK_MODELS " != *" $name "* ]] && continue
  mkdir -p ".device/models/$name"
  if [[ $name == bart_decoder_cached_cross_* ]]; then  # timed with random inputs only
    cp "$dir/model.onnx" "$dir/weights.json" ".device/models/$name/"
    continue
  fi
  find "$dir" -maxdepth 1 -type f ! -name model.onnx.data ! -path '*vision*input_pixel_values.npy' \
    "${skip_fp16[@]}" -exec cp {} ".device/models/$name/" \;
done
# transformers.js and its dependencies; onnxruntime-node is the peers' one (the same 1.30.0), linked there;
# sharp (libvips, 19 MB) stays here: the campaign gives transformers.js raw RGB and a stub of sharp.
[[ $mode == tokens ]] && for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
  mkdir -p ".device/models/$name"
  cp "build/models-large/$name/model.onnx" "build/models-large/$name/weights.json" ".device/models/$name/"
done
if [[ $mode == tokens ]]; then
  mkdir -p .device/florence2_tokenizer
  WGI_PIPELINES_DIR=third_party/pipelines node tests/pipelines/make_tokenizer.mjs .device/florence2_tokenizer
fi
[[ $mode == pipelines ]] && tar -C third_party/pipelines -cJf .device/pipelines.tar.xz \
  --exclude=node_modules/onnxruntime-web --exclude=node_modules/onnxruntime-node --exclude=node_modules/@types \
  --exclude=node_modules/@img --exclude=node_modules/sharp \
  node_modules
# The SigLIP base folder's tokenizer (spm_train, which the GPU machine lacks), from the tiny folder's corpus.
if [[ $mode == pipelines ]]; then
  mkdir -p .device/siglip_tokenizer
  /usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/models'); import numpy as np, siglip_folder as s
s.train_spiece(sys.argv[1], np.random.default_rng(s.SEED)); s.write_tokenizer(sys.argv[1])" .device/siglip_tokenizer
fi
# Files the tests read from Debian packages: ONNX's test data (conformance, the decoder's unit tests) and the
# font the OCR test renders its lines with.
if [[ $mode == main || $mode == files_tests ]]; then
  tar -C / -cJf .device/debian_files.tar.xz usr/share/libonnx-testdata/data \
    usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
fi
du -sh .device $([[ $mode == main ]] && echo third_party/ocr-models) | awk '{print "travels: " $2 " " $1}'
