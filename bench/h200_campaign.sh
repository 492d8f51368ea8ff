#!/usr/bin/env bash
# The GPU campaign on the lent H200, in two device calls (what travels is limited to 64 MiB; see
# bench/h200_pack.sh, which prepares each). Run from the repo root there:
#   source .device/env.sh; bash bench/h200_campaign.sh main    # carry [".device", "third_party/ocr-models"]
#   source .device/env.sh; bash bench/h200_campaign.sh models  # carry [".device"]
#   source .device/env.sh; bash bench/h200_campaign.sh sweep   # carry [".device"] (packed as `main`)
#   source .device/env.sh; bash bench/h200_campaign.sh conv    # carry [".device"] (packed as `conv`)
#   source .device/env.sh; bash bench/h200_campaign.sh tuned   # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh defaults  # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh profile   # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh splits    # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh variants  # carry [".device"] (packed as `models`,
#                                                                # plus .device/bin/wgi_<variant>.xz builds;
#                                                                # VARIANTS_QUICK=1: the rounds only)
#   source .device/env.sh; bash bench/h200_campaign.sh shaders   # carry [".device"] (packed as `shaders`)
#   source .device/env.sh; bash bench/h200_campaign.sh quantized # carry [".device"] (packed as `quantized`)
#   source .device/env.sh; bash bench/h200_campaign.sh files_tests   # carry [".device"] (packed as `files_tests`)
#   source .device/env.sh; bash bench/h200_campaign.sh files_models  # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh decode_rnn    # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh decode        # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh decode_q4     # carry [".device"] (the decoder, as `decode`)
#   source .device/env.sh; bash bench/h200_campaign.sh uint8         # carry [".device"] (packed as `models`)
#   source .device/env.sh; bash bench/h200_campaign.sh pipelines_equal  # carry [".device"] (packed as `pipelines`)
#   source .device/env.sh; bash bench/h200_campaign.sh tokens_decode     # carry [".device"] (packed as `tokens`)
#   source .device/env.sh; bash bench/h200_campaign.sh tokens_pipelines  # carry [".device"] (packed as `tokens`)
#   source .device/env.sh; bash bench/h200_campaign.sh tokens            # carry [".device"] (packed as `tokens`)
# main:   adapter info; the whole GPU test suite (heavy tests and the PP-OCRv4 test included, onnxruntime's
#         Python package as the OCR reference), ONNX's node tests, the OCR example; the op benchmarks at large
#         sizes and PyTorch (cuBLAS / cuDNN, TF32 off) on the same shapes joined into a ratio table.
# models: the base-size target models checked against their float64 references, timed by `wgi bench`, by
#         PyTorch eager (CUDA, fp32, TF32 off) and by ONNX Runtime's WebGPU EP (onnxruntime-node) on the same
#         files; cold start in fresh processes; decoder loops with key/values on the device (--device-inputs,
#         --decode); the planner's products against cuBLAS; per-node GPU times (`wgi bench --profile`).
# sweep:  the kernel tuning round: the GEMM/GEMV/conv tests; PyTorch on the benchmark shapes; the op
#         benchmarks (the planner's GEMMs and convs, every GEMM kernel and GEMV configuration forced), then the
#         planner's GEMMs and the fast tiles again with Dawn's robustness off
#         (WGI_DAWN_TOGGLES=disable_robustness); a ratio table for each.
# conv:   the conv kernel round: the conv tests (heavy ones included); cuDNN on the conv shapes; every conv
#         kernel and configuration forced on them; a ratio table. CONV_FILTER (a benchmark regex) narrows the
#         shapes, e.g. 'BM_Conv.*/n:8/ic:2048/oc:512/'.
# tuned:  the vision models and the decoder step without and with GEMM tuning (`wgi tune`, docs/tuning.md):
#         cold start in three fresh processes; wgi bench on the rules; wgi tune; wgi bench
#         and the float64 checks on the tuned configurations; PyTorch eager and ORT WebGPU on the same files;
#         per-node GPU times of DaViT tuned; the planner's products and convs against cuBLAS / cuDNN. Fits
#         one device call (600 s).
# defaults: the session-level defaults (vision models: DaViT, SigLIP, ResNet-50 from tests/models/resnet.py
#         --large): cold start in three fresh processes per vision model with planning's
#         phases; the float64 checks; the vision models with Dawn's shader robustness (WGI_SHADER_ROBUSTNESS=1),
#         without (the default), and with skip_validation too (ORT's WebGPU EP's native toggles); then tuned
#         (`wgi tune`); PyTorch eager and ORT WebGPU on the same files; DaViT's per-node profile and trace;
#         the planner's products with and without robustness against cuBLAS.
# splits: the target models' GEMM products on the planner's choice and on each fast tile with K split into
#         1..8 chunks (bench/split_table.py makes the table); ~2 min. Packed as `models`. SPLITS_FILTER (a
#         benchmark regex) narrows the products, e.g. 'BM_Linear(Model|Split)/.*/1576/'.
# layers: a model at batch LAYERS_BATCH (8) layer by layer: wgi's per-node GPU times (`wgi bench --trace`) of
#         its Conv / MatMul / Gemm nodes beside each Conv2d / Linear alone in PyTorch (cuDNN, cuBLAS;
#         WGI_PEER_LAYERS=1), joined by bench/layer_table.py; LAYERS_MODEL is the folder (resnet50_opset17;
#         siglip_vision_base_opset17, florence2_vision_base_opset17); ~1 min. Packed as `models`.
# profile: per-node GPU times and traces of the three vision models (rules, default device), then DaViT's
#         downsampling convs against cuDNN with every implicit-GEMM split forced; ~2 min.
# variants: A/B of builds: `wgi` and each carried `wgi_<variant>` (another commit, a change reverted) in
#         alternating rounds on the three vision models, DaViT with shader robustness on, then DaViT's per-op
#         GPU times and trace per build. VARIANTS_QUICK=1: the rounds only; VARIANT_BATCH (1) and
#         VARIANT_BENCH_ARGS (--runs 30) are the rounds' batch and `wgi bench` options, VARIANT_MODELS their
#         folders' names; VARIANT_TORCH=1 adds PyTorch eager on the same models and batch.
# shaders: the GEMM kernel round: registers and workgroup memory of the hot kernels as the driver compiled
#         them (bench/shader_stats.sh; SHADER_FILTERS overrides the benchmarks, "none" skips them), the fast
#         GEMM configurations and the planner's products (GEMM_FILTER) for wgi_bench_ops and each carried
#         wgi_<variant>_bench, cuBLAS.
# quantized: the weight-only quantized kernels: their GPU tests, the products for wgi_bench_quantized and each
#         carried wgi_<variant>_quantized in alternating rounds, the driver's statistics of the q4 LM-head GEMV.
# files_tests: the round of the files users ship (fp16, q4, q8 variants, If, new ops): the whole GPU test suite
#         and ONNX's node tests on the H200, then the quantized products (wgi_bench_quantized) next to the float32
#         Gemm of the same shapes.
# decode_rnn: decoder loops (32 steps) with and without growing dims and respecialized plans; the recurrent
#         layers against cuDNN; the data-dependent ops (NMS, TopK) against torch / torchvision on CUDA.
# decode_q4: the cached-cross decoder's step and loop in fp32 and q4 (made there), each carried build;
#         DECODE_Q4_FILES names the files (model, model_q4, model_q4_acc0, model_uint8).
# decode: A/B of builds (`wgi` and each carried .device/bin/wgi_<variant>) on the decoder loops, with and
#         without planning ahead, and the steady step; plan_nodes per step (wgi_bench_planning if carried).
# variant_files: A/B of builds (wgi and each .device/bin/wgi_<variant>, bench/wgsl_variant.sh) on DaViT fp32/fp16,
#         SigLIP fp16/q4, the q4 decoder step and the quantized products. Packed as `models` plus the variants.
#         VARIANT_FILES=davit: DaViT's fp32 and fp16 files only; VARIANT_ROUNDS (2), VARIANT_BENCH_ARGS (--runs 30);
#         VARIANT_TRACES=1: each build's trace of each file (trace_<build>_<file>.json, for bench/trace_diff.py).
# throughput: issue 21's batch table: DaViT-base, SigLIP-B and ResNet-50 at batch 1 and 8 (wgi bench, inputs on
#         the device, two alternating rounds) beside PyTorch eager fp32 at the same batches (WGI_PEER_BATCH),
#         then wgi's per-op-type GPU times at batch 8, the planner's products with a float32 and a float16
#         weight (WGI_BENCH_WEIGHT_DTYPE), and DaViT's fp32 and fp16 files traced node by node at batch 1
#         (their per-node times side by side: bench/trace_diff.py). Packed as `models` (the three
#         vision folders suffice).
# throughput_ab: issue 21's batch-8 models as an A/B of builds in one call (~5 min): `wgi` and each carried
#         .device/bin/wgi_<variant> (e.g. the last session's build) on SigLIP-B and ResNet-50 at batch 8 and 1
#         with PyTorch eager beside them (variants mode), the 1576-row products on the planner's choice, as one
#         launch (no wave tail) and on the 128 tile split 1..4 (splits mode), then ResNet-50 and SigLIP-B at
#         batch 8 layer by layer (layers mode); traces and JSON are deleted once their tables are written (at
#         most 8 files come back).
#         Packed as `models` (the SigLIP and ResNet-50 folders suffice).
# gemv_sweep: the quantized LM head (q4, q4 with zero points, q8; 1 and 4 rows) with its weights out of the L2
#         cache (WGI_BENCH_WEIGHT_COPIES=4) for wgi_bench_quantized and each carried
#         .device/bin/wgi_<variant>_quantized in three alternating rounds, then the q4 GEMV's lanes per column
#         and columns per thread swept (the planner's rule was measured with the weights in L2). Packed as
#         `quantized` or `models`.
# f16_weights: the GEMM with a float16 weight against a float32 one (issue 19's fp16 files without shader-f16):
#         the planner's products and the 128 tile's slab configurations with each weight dtype
#         (WGI_BENCH_WEIGHT_DTYPE) for wgi_bench_ops and each carried .device/bin/wgi_<variant>_bench, two
#         rounds, then what the driver compiled the 4096 x 1024 x 1024 product into for each (registers:
#         bench/shader_stats.sh). Packed as `shaders` plus variants; ~2 min. F16_EPILOGUES="plain residual
#         gelu" also times the model's residual and Gelu forms (WGI_BENCH_EPILOGUE), each with its statistics.
# fp16_profile: DaViT-base fp32 and its fp16 variant, per-node GPU times of each (`wgi bench --profile`, and
#         traces for bench/trace_diff.py).
# files_models: the base models' variants made there by the recipe tools (tests/models/variants_*.py): the BART
#         decoder step in fp32, q4 and uint8 (wgi, and ORT's WebGPU EP on the same fp32 and q4 files), DaViT and
#         SigLIP in fp32, fp16, q4 and uint8, each checked against onnxruntime CPU once.
# uint8:  the dynamically quantized (uint8) decoder step, DaViT-base and SigLIP-B made there against their fp32
#         files, for each carried build, two rounds (UINT8_ROUNDS), inputs on the device; the uint8 files
#         against ORT CPU.
#         Packed as `models` (WGI_PACK_PEERS=0 WGI_PACK_MODELS="bart_decoder_cached_cross_base_opset17
#         florence2_vision_base_opset17 siglip_vision_base_opset17"); ~5 min.
# pipelines: Florence-2 end to end (issue 20's speed table): the base-size folder made there by
#         tests/models/florence2_folder.py --base (seeded random weights) and its q4 encoder/decoder files,
#         `wgi florence2 --runs` for <CAPTION> and <OD> at beams 1 and 3, 64 new tokens, beside transformers.js on
#         onnxruntime-node's WebGPU EP (bench/florence2_peer_bench.mjs) on the same folder and image.
# tokens_decode: tokens chosen on the GPU (SessionOptions::token_candidates): the BART-base decoder loops (cached
#         cross in fp32 and q4, the self-contained step in fp32) with the greedy token fed back on the device,
#         against the host argmax (--host-argmax) and the steady step, for `wgi` and each carried build (one
#         of the session's start: host argmax only), two alternating rounds; PyTorch eager's steps; TopK
#         (selection and sort) against torch.topk. First the GPU tests of TopK, decoder loops, token candidates,
#         device tensors and the Florence-2 pipeline.
# tokens_pipelines: Florence-2 end to end (the base folder made there, fp32 and q4, <CAPTION> and <OD>, beams 1
#         and 3, 64 new tokens) for `wgi` and each carried build (transformers.js, `pipelines`, does not fit
#         in the same pack).
# tokens: tokens_decode's first round, its PyTorch and TopK peers, tokens_pipelines, then the second round,
#         in one call, each step skipped once the call's time is spent.
# table:  issue 21's table in one call: the vision models (those packed of DaViT-base, SigLIP-B, ResNet-50) at
#         batch 1 and 8 and the BART-base decoder steps (cached cross and self-contained, --decode 32), all
#         with inputs on the device, two rounds; PyTorch eager on the same models: fp32 at batch 1 and 8, TF32
#         at batch 1, fp16 autocast at batch 8. Packed by `bench/node_campaign.sh pack` with
#         WGI_PACK_DECODERS=1 (the Node f16 tests can run in the same call); ~5 min.
# table_ort: ORT's WebGPU EP on the same models (batch 1), in a second call carrying [".device_ort"] right
#         after the first, the machine still warm (.device/ with node and the prepared models stays there).
# Results go to $OUT (at most 8 files come back); each step has its own time limit so that one slow step
# cannot take the rest with it. Record them in docs/performance.md and docs/devices.md.
set -uo pipefail
modes="conv decode decode_q4 decode_rnn defaults f16_weights files_models files_tests fp16_profile gemv_sweep main
  layers models pipelines pipelines_equal profile quantized shaders splits sweep throughput throughput_ab tokens
  table table_ort tokens_decode tokens_pipelines tuned uint8 variant_files variants"
modes=$(echo $modes)  # one line, single spaces
mode=${1:?usage: bench/h200_campaign.sh MODE (one of: $modes; each described above)}
[[ " $modes " == *" $mode "* ]] || { echo "bench/h200_campaign.sh: unknown mode '$mode' (one of: $modes)" >&2; exit 2; }
out=${OUT:-/tmp/wgi-campaign}
mkdir -p "$out"
root=$PWD
start=$SECONDS
stamp() { echo "## [$((SECONDS - start)) s] $*"; }
stamp_machine() {
  echo "# date: $(date -u +%F' '%T) UTC"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
}
write_info() { stamp_machine; wgi info; }
# `wgi` and every carried build of it (.device/bin/wgi_<variant>: bench/wgsl_variant.sh, or another tree's
# wgi), one a line; the benchmark, test and probe programs beside them are not builds.
carried_builds() {
  local b
  echo wgi
  for b in .device/bin/wgi_*; do
    [[ -x $b && $b != *_bench* && $b != *_quantized && $b != */wgi_probe_* && $b != *_tests ]] && basename "$b"
  done
}
# The tree's benchmark program $1 and every carried variant of it (.device/bin/wgi_<variant>_$2 from
# bench/wgsl_variant.sh: `bench` for wgi_bench_ops, `quantized` for wgi_bench_quantized), one a line.
carried_benches() {
  local b
  echo "$1"
  for b in .device/bin/wgi_*_"$2"; do
    [[ -x $b && $b != */$1 ]] && basename "$b"
  done
  return 0
}
# Three alternating rounds of each program in `benches` on the benchmarks matching $1, once per setting in
# the other arguments ("A=1,B=2": assignments split at commas; "" for none).
bench_rounds() {
  local filter=$1 round bench setting
  shift
  for round in 1 2 3; do
    for bench in "${benches[@]}"; do
      for setting in "$@"; do
        stamp "round $round $bench $setting"
        # shellcheck disable=SC2086
        env ${setting//,/ } PATH=".device/bin:$PATH" timeout 90 "$bench" --benchmark_min_time=0.1 \
          --benchmark_filter="$filter" 2>&1 | grep -E '^BM_'
      done
    done
  done
}
# DaViT-base's fp32 file and its fp16 variant (made here) at batch 1, each with its per-node GPU times:
# $out/profile_<file>.txt and the trace $out/trace_<file>.json (bench/trace_diff.py sets them side by side).
profile_davit_fp16() {
  local d=$models/florence2_vision_base_opset17 f
  timeout 120 python3 tests/models/variants_fp16.py "$d/model.onnx" "$d/model_fp16.onnx" | tail -1
  for f in model model_fp16; do
    stamp "profile DaViT $f"
    timeout 90 wgi bench "$d/$f.onnx" --random-inputs 1 --dim batch=1 --runs 10 --profile \
      --trace "$out/trace_$f.json" >"$out/profile_$f.txt" 2>&1
    grep -E '^(run|graph)' "$out/profile_$f.txt"
  done
}

# The test programs hold their data paths as built here (/work/main/...).
[[ -e /work/main ]] || { mkdir -p /work && ln -s "$root" /work/main; }
models=.device/models
# Weights from their recipes; the vision inputs are numpy's first two draws from the generator's seed.
prepare_models() {
  [[ -f $models/.prepared ]] && return 0  # an earlier mode of the same call did it
  timeout 120 python3 tests/models/fill_weights.py "$models" | tail -4
  python3 - "$models" <<'EOF'
import os, sys
import numpy as np
rng = np.random.default_rng(20261201)  # florence_siglip.SEED; build_cases draws florence's then siglip's input
for name, size in (("florence2_vision_base_opset17", 768), ("siglip_vision_base_opset17", 224)):
    x = rng.uniform(-1, 1, (1, 3, size, size)).astype(np.float32)  # drawn either way: SigLIP's is the second
    if os.path.isdir(os.path.join(sys.argv[1], name)):  # a pack may carry only some of the folders
        np.save(os.path.join(sys.argv[1], name, "input_pixel_values.npy"), x)
EOF
  touch "$models/.prepared"
}
# Realistic decoder steps for timing: one new token after 64, with Florence-2's 590 encoder tokens.
declare -A bench_dims=(
  [bart_decoder_base_opset17]="batch=1 new_tokens=1 past_len=64 src_len=590"
  [bart_decoder_cached_cross_base_opset17]="batch=1 new_tokens=1 past_len=64 src_len=590"
)
# The `wgi bench` options of a model folder's decoder step dims (none for other models), in the array `dims`.
set_step_dims() {
  local d
  dims=()
  for d in ${bench_dims[$1]:-}; do dims+=(--dim "$d"); done
}
# Each .onnx file of folder $1 (the variants made here) run by `wgi run` and by onnxruntime CPU on the same
# random inputs (decoder dims: one new token after 8, 16 encoder tokens): the first output's relative L2.
variants_against_ort() {
  timeout "${VARIANTS_ORT_TIMEOUT:-150}" python3 - "$1" <<'PY'
import glob, os, sys
import numpy as np, onnxruntime as ort, subprocess, tempfile
v = sys.argv[1]
rng = np.random.default_rng(7)
for f in sorted(glob.glob(os.path.join(v, "*.onnx"))):
    s = ort.InferenceSession(f, providers=["CPUExecutionProvider"])
    dims = {"batch": 1, "new_tokens": 1, "past_len": 8, "src_len": 16}
    feeds, args, tmp = {}, [], tempfile.mkdtemp()
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
        x = rng.integers(0, 100, shape).astype(np.int64) if "int64" in i.type else \
            rng.uniform(-1, 1, shape).astype(np.float32)
        feeds[i.name] = x
        np.save(os.path.join(tmp, i.name + ".npy"), x)
        args += ["--input", i.name + "=" + os.path.join(tmp, i.name + ".npy")]
    ref = dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    r = subprocess.run(["wgi", "run", f, "--output-dir", tmp + "/out"] + args, capture_output=True, text=True)
    if r.returncode:
        print(os.path.basename(f), "wgi failed:", r.stderr[-300:]); continue
    for name, want in ref.items():
        got = np.load(os.path.join(tmp, "out", name.replace("/", "_") + ".npy")).astype(np.float64)
        err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        print(f"{os.path.basename(f)} {name}: relative L2 vs ORT CPU {err:.2e} (|ORT| {np.linalg.norm(want):.3e})")
        break
PY
}
wgi_bench_models() {
  for dir in "$models"/*; do
    name=$(basename "$dir")
    set_step_dims "$name"
    inputs=()
    [[ -z ${bench_dims[$name]:-} ]] && for f in "$dir"/input_*.npy; do
      n=$(basename "$f" .npy); inputs+=(--input "${n#input_}=$f")
    done
    echo "### wgi bench $name ${bench_dims[$name]:-}"
    timeout 120 wgi bench "$dir/model.onnx" --random-inputs 1 "${dims[@]}" "${inputs[@]}" --runs 30 2>&1 | tail -12
  done
}

# Cold start (load -> first result) in three fresh processes per model directory: the first may compile
# pipelines that the driver's shader cache then holds for the next. $1: extra `wgi bench` arguments.
cold_start() {
  local extra=$1 dir attempt
  shift
  for dir in "$@"; do
    for attempt in 1 2 3; do
      stamp cold start "$(basename "$dir")" process $attempt
      TIMEFORMAT='process wall %R s'
      # shellcheck disable=SC2086
      time (timeout 60 wgi bench "$dir/model.onnx" --random-inputs 1 --dim batch=1 --runs 1 --warmup 0 $extra \
        2>&1 | grep -E '^(load|first run|planning)')
    done
  done
}
# ORT's WebGPU EP (onnxruntime-node, ort_bench.js) from .device/peers, or from .device_ort/peers where a
# second call carried it (bench/node_campaign.sh pack): the node binary stays in .device/peers.
ort_peers=.device/peers
[[ -d .device_ort/peers/ort ]] && ort_peers=.device_ort/peers
ort_lib=$ort_peers/ort/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
[[ -f $ort_lib.xz ]] && xz -d "$ort_lib.xz"
# ORT on a vision model directory.
ort_vision() {
  local shape=pixel_values=1x3x224x224
  [[ $1 == *florence2* ]] && shape=pixel_values=1x3x768x768
  [[ $1 == *resnet* ]] && shape=image=1x3x224x224
  stamp ORT WebGPU "$(basename "$1")"
  timeout 90 node "$ort_peers/ort_bench.js" "$1/model.onnx" webgpu 30 "$shape" 2>&1 | tail -3
}
# ORT on a model directory: the vision models' images, the decoders' step (ort_bench.js fills every input
# with seeded random values).
ort_model() {
  [[ $1 != *bart_decoder* ]] && { ort_vision "$1"; return; }
  stamp ORT WebGPU "$(basename "$1")"
  # shellcheck disable=SC2046
  timeout 150 node "$ort_peers/ort_bench.js" "$1/model.onnx" webgpu 30 $(ort_shapes "$1/model.onnx") 2>&1 | tail -3
}
# A model's input shapes for ort_bench.js (NAME=d0xd1x...), symbolic dims at the decoder step's bench_dims.
ort_shapes() {
  python3 - "$1" <<'PY'
import sys, onnx
dims = {"batch": 1, "new_tokens": 1, "past_len": 64, "src_len": 590}
m = onnx.load(sys.argv[1], load_external_data=False)
print(" ".join(i.name + "=" + "x".join(str(d.dim_value or dims.get(d.dim_param, 1))
                                        for d in i.type.tensor_type.shape.dim) for i in m.graph.input))
PY
}

# The pipelines' setup (unpack_transformers_js, prepare_florence2_base): bench/florence2_base.sh.
source "$root/bench/florence2_base.sh"
for f in .device/bin/*.xz; do xz -d "$f" && chmod +x "${f%.xz}"; done
if [[ $mode == sweep ]]; then
  write_info >"$out/info.txt" 2>&1
  export WGI_BACKEND=vulkan
  stamp kernel tests
  timeout 150 wgi_gpu_tests --gtest_brief=1 \
    --gtest_filter='FastGemm*:Gemv*:GemmPlanner*:Linear*:MatMul*:Gemm*:Conv*' >"$out/tests.txt" 2>&1
  tail -3 "$out/tests.txt"
  stamp torch peer
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  # Robustness off only for the planner's GEMMs and the fast tiles: the question is whether it matters.
  for variant in robust no_robustness; do
    stamp op benchmarks $variant
    toggles="" filter='BM_Linear/|BM_LinearKernel|BM_LinearConfig/gemv|BM_MatMulRuntimeB|BM_Conv/'
    [[ $variant == no_robustness ]] && toggles=disable_robustness filter='BM_Linear/|BM_LinearKernel/fast'
    WGI_DAWN_TOGGLES=$toggles WGI_BENCH_SIZE=large timeout 230 wgi_bench_ops --benchmark_format=json \
      --benchmark_out="$out/wgi_bench_$variant.json" --benchmark_min_time=0.1 \
      --benchmark_filter="$filter" >/dev/null 2>"$out/wgi_bench_$variant.err"
    python3 bench/compare.py "$out/wgi_bench_$variant.json" "$out/torch.jsonl" >"$out/table_$variant.md" 2>&1
  done
  stamp done
elif [[ $mode == conv ]]; then
  write_info >"$out/info.txt" 2>&1
  export WGI_BACKEND=vulkan
  stamp conv tests
  timeout 150 wgi_gpu_tests --gtest_brief=1 --gtest_filter='Conv*' >"$out/tests.txt" 2>&1
  tail -3 "$out/tests.txt"
  stamp torch peer
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  stamp op benchmarks
  WGI_BENCH_SIZE=large timeout 300 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_bench.json" \
    --benchmark_min_time=0.1 --benchmark_filter="${CONV_FILTER:-BM_Conv}" >/dev/null 2>"$out/wgi_bench.err"
  python3 bench/compare.py "$out/wgi_bench.json" "$out/torch.jsonl" >"$out/table.md" 2>&1
  stamp done
elif [[ $mode == tuned ]]; then
  export WGI_BACKEND=vulkan
  export WGI_TUNING_CACHE=$out/tuning.json  # comes back with the results
  rm -f "$WGI_TUNING_CACHE"
  vision=("$models"/florence2_vision_base_opset17 "$models"/siglip_vision_base_opset17)
  {
    stamp_machine
    stamp prepare; prepare_models
    cold_start --no-tuning-cache "${vision[@]}"
    stamp rules: wgi bench
    WGI_TUNING_CACHE="" wgi_bench_models
    for name in florence2_vision_base_opset17 siglip_vision_base_opset17 bart_decoder_base_opset17; do
      dims=(--dim batch=1)
      [[ $name == bart* ]] && dims=(--dim batch=1 --dim new_tokens=1 --dim past_len=64 --dim src_len=590)
      stamp wgi tune $name
      timeout 120 wgi tune "$models/$name/model.onnx" "${dims[@]}" --runs 10 2>&1 | tail -40
    done
    stamp tuned: wgi bench; wgi_bench_models
    stamp tuned: correctness
    timeout 150 python3 tests/models/check_with_wgi.py --wgi "$(command -v wgi)" --backend vulkan \
      "${vision[@]}" "$models"/bart_decoder_base_opset17
    stamp torch eager; timeout 100 python3 bench/model_torch_peer.py "${vision[@]}" "$models"/bart_decoder_base_opset17
    for dir in "${vision[@]}"; do ort_vision "$dir"; done
    stamp profile DaViT tuned
    timeout 40 wgi bench "$models/florence2_vision_base_opset17/model.onnx" --random-inputs 1 --dim batch=1 \
      --runs 5 --profile 2>&1 | head -45
    stamp done
  } >"$out/tuned.txt" 2>&1
  # The planner's products and convs (rules, no tuning cache: wgi_bench_ops plans nodes directly) against
  # cuBLAS / cuDNN in the same call.
  stamp products
  WGI_BENCH_SIZE=large timeout 120 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_ops.json" \
    --benchmark_min_time=0.1 --benchmark_filter='BM_Linear/|BM_Conv/' >/dev/null 2>&1
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  python3 bench/compare.py "$out/wgi_ops.json" "$out/torch.jsonl" >"$out/ops_table.md" 2>&1
elif [[ $mode == profile ]]; then
  # Per-node GPU times of the vision models on the default device and the rules (no tuning cache), with
  # a Chrome/Perfetto trace of each.
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  {
    stamp_machine
    stamp prepare; prepare_models
    for dir in "$models"/florence2_vision_base_opset17 "$models"/siglip_vision_base_opset17 \
      "$models"/resnet50_opset17; do
      stamp profile "$(basename "$dir")"
      timeout 60 wgi bench "$dir/model.onnx" --random-inputs 1 --dim batch=1 --runs 10 --profile \
        --trace "$out/$(basename "$dir")_trace.json" 2>&1 | head -60
    done
    stamp done
  } >"$out/profile.txt" 2>&1
  # DaViT's downsampling convs: the planner's choice, every implicit-GEMM split forced, cuDNN.
  stamp davit convs
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  WGI_BENCH_SIZE=large timeout 120 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_convs.json" \
    --benchmark_min_time=0.1 --benchmark_filter='BM_Conv(Split/[0-9]+|Kernel/implicit_gemm[0-9x]+)?/n:1/ic:(128|256|512)/oc:(256|512|1024)/' \
    >/dev/null 2>&1
  python3 bench/compare.py "$out/wgi_convs.json" "$out/torch.jsonl" >"$out/convs_table.md" 2>&1
elif [[ $mode == splits ]]; then
  # The target models' products on the planner's choice and on each fast tile with K split 1..8 chunks.
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  stamp_machine >"$out/splits.txt"
  WGI_BENCH_SIZE=large timeout 400 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/splits.json" \
    --benchmark_min_time=0.05 --benchmark_filter="${SPLITS_FILTER:-BM_Linear(Model|Split)/}" >/dev/null \
    2>"$out/splits.err"
  python3 bench/split_table.py "$out/splits.json" >>"$out/splits.txt" 2>&1
  stamp done
elif [[ $mode == variants ]]; then
  # A/B of builds in one call: every `wgi_<variant>` carried in .device/bin beside `wgi` (a build of another
  # commit or with a change reverted), alternating over two rounds on the vision models (rules, no tuning
  # cache), then a DaViT trace per variant (<variant>_davit_trace.json).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  read -ra names <<<"${VARIANT_MODELS:-florence2_vision_base_opset17 siglip_vision_base_opset17 resnet50_opset17}"
  vision=("${names[@]/#/$models/}")
  mapfile -t builds < <(carried_builds)
  # VARIANT_ENV="A=1 A=2": each assignment is a variant of every build too (e.g. WGI_DISPATCHES_PER_SUBMIT).
  read -ra settings <<<"${VARIANT_ENV:-}"
  [[ ${#settings[@]} -eq 0 ]] && settings=("")
  {
    stamp_machine
    stamp prepare; prepare_models
    for round in 1 2; do
      for build in "${builds[@]}"; do
        for setting in "${settings[@]}"; do
          for dir in "${vision[@]}"; do
            stamp "round $round $build $setting $(basename "$dir")"
            # shellcheck disable=SC2086
            env $setting timeout 60 "$build" bench "$dir/model.onnx" --random-inputs 1 \
              --dim batch="${VARIANT_BATCH:-1}" ${VARIANT_BENCH_ARGS:---runs 30} \
              2>&1 | grep -E '^(run|graph)'
          done
        done
      done
    done
    if [[ -n ${VARIANT_TORCH:-} ]]; then  # PyTorch eager on the same models and batch, in the same call
      stamp "torch eager batch ${VARIANT_BATCH:-1}"
      WGI_PEER_BATCH=${VARIANT_BATCH:-1} timeout 150 python3 bench/model_torch_peer.py "${vision[@]}" 2>&1
    fi
    if [[ -n ${VARIANTS_QUICK:-} ]]; then stamp done; exit 0; fi  # the rounds only
    for build in "${builds[@]}"; do  # with Dawn's shader robustness, as browsers run it
      stamp "robust $build florence2_vision_base_opset17"
      WGI_SHADER_ROBUSTNESS=1 timeout 60 "$build" bench "$models/florence2_vision_base_opset17/model.onnx" \
        --random-inputs 1 --dim batch=1 --runs 30 2>&1 | grep -E '^run'
    done
    for build in "${builds[@]}"; do
      stamp "profile DaViT $build"
      timeout 40 "$build" bench "$models/florence2_vision_base_opset17/model.onnx" --random-inputs 1 \
        --dim batch=1 --runs 5 --profile --trace "$out/${build}_davit_trace.json" 2>&1 | sed -n '/GPU time/,/^slowest/p'
    done
    stamp done
  } >"$out/variants.txt" 2>&1
elif [[ $mode == variant_files ]]; then
  # A/B of builds on the files users ship: every `wgi_<variant>` carried in .device/bin beside `wgi`
  # (bench/wgsl_variant.sh makes both from one set of objects), alternating over two rounds on DaViT fp32 and
  # fp16, SigLIP fp16 and q4, and the q4 decoder step; then each build's quantized products
  # (`wgi_<variant>_quantized`, `wgi_bench_quantized` for `wgi`).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  mapfile -t builds < <(carried_builds)
  {
    stamp_machine
    stamp prepare; prepare_models
    v=$models/variants
    mkdir -p "$v"
    timeout 120 python3 tests/models/variants_fp16.py "$models/florence2_vision_base_opset17/model.onnx" \
      "$v/florence2_fp16.onnx" | tail -1
    files=("$models/florence2_vision_base_opset17/model.onnx" "$v/florence2_fp16.onnx")
    # VARIANT_FILES=davit: DaViT's two files only (a float16 weight kernel A/B; pack only its folder).
    if [[ ${VARIANT_FILES:-} != davit ]]; then
      timeout 120 python3 tests/models/variants_fp16.py "$models/siglip_vision_base_opset17/model.onnx" \
        "$v/siglip_fp16.onnx" | tail -1
      timeout 120 python3 tests/models/variants_weight_only.py "$models/siglip_vision_base_opset17/model.onnx" \
        "$v/siglip_q4.onnx" --recipe q4 | tail -1
      timeout 120 python3 tests/models/variants_weight_only.py \
        "$models/bart_decoder_cached_cross_base_opset17/model.onnx" "$v/decoder_q4.onnx" --recipe q4 | tail -1
      files+=("$models/siglip_vision_base_opset17/model.onnx" "$v/siglip_fp16.onnx" "$v/siglip_q4.onnx")
    fi
    decoder_dims=(--dim batch=1 --dim new_tokens=1 --dim past_len=64 --dim src_len=590)
    read -ra bench_args <<<"${VARIANT_BENCH_ARGS:---runs 30}"
    for round in $(seq "${VARIANT_ROUNDS:-2}"); do
      for build in "${builds[@]}"; do
        for f in "${files[@]}"; do
          stamp "round $round $build $(basename "$f")"
          timeout 60 "$build" bench "$f" --random-inputs 1 --dim batch=1 "${bench_args[@]}" 2>&1 | grep -E '^(run|graph)'
        done
        [[ -f $v/decoder_q4.onnx ]] || continue
        stamp "round $round $build decoder_q4.onnx step, inputs on the device"
        timeout 60 "$build" bench "$v/decoder_q4.onnx" --random-inputs 1 "${decoder_dims[@]}" --runs 30 \
          --device-inputs 2>&1 | grep -E '^run'
      done
    done
    if [[ -n ${VARIANT_TRACES:-} ]]; then  # each build's per-node GPU times of each file (bench/trace_diff.py)
      for build in "${builds[@]}"; do
        for f in "${files[@]}"; do
          stamp "trace $build $(basename "$f")"
          timeout 60 "$build" bench "$f" --random-inputs 1 --dim batch=1 --runs 10 --profile \
            --trace "$out/trace_${build}_$(basename "$f" .onnx).json" 2>&1 | grep -E '^run'
        done
      done
    fi
    for build in "${builds[@]}"; do
      bench=.device/bin/${build}_quantized
      [[ $build == wgi ]] && bench=$(command -v wgi_bench_quantized)
      [[ -x $bench ]] || continue
      stamp "quantized products $build"
      WGI_BENCH_SIZE=large timeout 90 "$bench" --benchmark_min_time=0.1 \
        --benchmark_filter='BM_QuantizedLinear/(f32|q4|nf4)/' 2>&1 | grep -E '^BM_'
    done
    stamp done
  } >"$out/variant_files.txt" 2>&1
elif [[ $mode == quantized ]]; then
  # The weight-only quantized kernel round (issue 19's GEMV gap): the quantized GPU tests, then
  # wgi_bench_quantized and each carried variant (.device/bin/wgi_<variant>_quantized from
  # bench/wgsl_variant.sh) in three alternating rounds (QUANT_FILTER overrides the products), then what the
  # driver compiled the q4 LM-head GEMV into for each (bench/shader_stats.sh).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE="" WGI_BENCH_SIZE=large
  mapfile -t benches < <(carried_benches wgi_bench_quantized quantized)
  {
    stamp_machine
    if command -v wgi_gpu_tests >/dev/null; then
      stamp "quantized GPU tests"
      WGI_ORT_COMMAND="python3 $root/tests/ort/run_model.py" timeout 120 wgi_gpu_tests --gtest_brief=1 \
        --gtest_filter='*Quantized*:*MatMulNBits*:*Bnb4*' 2>&1 | grep -E '^\[ +(FAILED|PASSED|SKIPPED) +\]|tests ran'
    fi
    # QUANT_ENV="A=1 A=2,B=4": each word a variant of every build too, its assignments split at commas.
    read -ra settings <<<"${QUANT_ENV:-}"
    bench_rounds "${QUANT_FILTER:-BM_QuantizedLinear/(f32|q4|q4_zp|q8|nf4)/}" "" "${settings[@]}"
    for bench in "${benches[@]}"; do
      stamp "shader statistics $bench"
      PATH=".device/bin:$PATH" WGI_SHADER_STATS_BENCH=$bench timeout 60 bash bench/shader_stats.sh \
        "$out/stats_$bench" 'BM_QuantizedLinear/q4/1/51289/768'
    done
    stamp done
  } >"$out/quantized.txt" 2>&1
  tar -C "$out" -czf "$out/stats.tgz" $(cd "$out" && ls -d stats_* 2>/dev/null) && rm -rf "$out"/stats_*
elif [[ $mode == shaders ]]; then
  # The GEMM kernel round: what the driver compiled the hot kernels into (registers, workgroup memory, through
  # bench/shader_stats.sh), then the fast GEMM's configurations and the planner's products for
  # wgi_bench_ops and each carried kernel variant (.device/bin/wgi_<variant>_bench from bench/wgsl_variant.sh)
  # in two alternating rounds, and cuBLAS on the same products.
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE="" WGI_BENCH_SIZE=large
  mapfile -t benches < <(carried_benches wgi_bench_ops bench)
  {
    stamp_machine
    [[ ${SHADER_FILTERS:-} == none ]] || for bench in "${benches[@]}"; do
      stamp "shader statistics $bench"
      # shellcheck disable=SC2086
      PATH=".device/bin:$PATH" WGI_SHADER_STATS_BENCH=$bench timeout 120 bash bench/shader_stats.sh \
        "$out/stats_$bench" ${SHADER_FILTERS:-'BM_LinearConfig/fast128_k16s1/4096/' 'BM_LinearConfig/fast128_k8s1/4096/' \
        'BM_LinearConfig/fast128_k8s2/4096/' 'BM_LinearConfig/fast64_k16s2/1024/' 'BM_ConvConfig/igemm128_k16s1/'}
    done
    for round in 1 2; do
      for bench in "${benches[@]}"; do
        stamp "round $round $bench"
        timeout 120 "$bench" --benchmark_min_time=0.2 \
          --benchmark_filter="${GEMM_FILTER:-BM_LinearConfig/fast|BM_Linear/}" 2>&1 | grep manual_time
      done
    done
    if [[ ${SHADERS_TORCH:-1} == 1 ]]; then  # SHADERS_TORCH=0: builds against each other only
      stamp torch peer
      timeout 90 python3 bench/torch_peer.py 2>&1 | grep '"BM_Linear/'
    fi
    stamp done
  } >"$out/shaders.txt" 2>&1
  tar -C "$out" -czf "$out/stats.tgz" $(cd "$out" && ls -d stats_* 2>/dev/null) && rm -rf "$out"/stats_*
elif [[ $mode == defaults ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  vision=("$models"/florence2_vision_base_opset17 "$models"/siglip_vision_base_opset17 "$models"/resnet50_opset17)
  # wgi's default on native devices is robustness and workgroup zeroing off (docs/robustness_audit.md);
  # "robust" keeps them, "+skip_validation" adds the third toggle ORT's WebGPU EP sets.
  variants=(robust default +skip_validation)
  {
    stamp_machine
    stamp prepare; prepare_models
    cold_start "" "${vision[@]}"
    stamp correctness
    timeout 150 python3 tests/models/check_with_wgi.py --wgi "$(command -v wgi)" --backend vulkan \
      "${vision[@]}" "$models"/bart_decoder_base_opset17
    # Two rounds over the variants, so that drift during the call shows as a difference between rounds.
    for round in 1 2; do
      for variant in "${variants[@]}"; do
        robust=0 toggles=""
        [[ $variant == robust ]] && robust=1
        [[ $variant == +skip_validation ]] && toggles=skip_validation
        for dir in "${vision[@]}"; do
          stamp "round $round $variant $(basename "$dir")"
          WGI_SHADER_ROBUSTNESS=$robust WGI_DAWN_TOGGLES=$toggles timeout 60 wgi bench "$dir/model.onnx" \
            --random-inputs 1 --dim batch=1 --runs 30 2>&1 | grep -E '^(run|graph)'
        done
      done
    done
    for dir in "${vision[@]}"; do
      stamp "wgi tune $(basename "$dir")"
      WGI_TUNING_CACHE=$out/tuning.json timeout 120 wgi tune "$dir/model.onnx" --dim batch=1 --runs 10 2>&1 |
        tail -3
      stamp "tuned $(basename "$dir")"
      WGI_TUNING_CACHE=$out/tuning.json timeout 60 wgi bench "$dir/model.onnx" --random-inputs 1 --dim batch=1 \
        --runs 30 2>&1 | grep -E '^(run|graph|tuning)'
    done
    stamp torch eager; timeout 100 python3 bench/model_torch_peer.py "${vision[@]}"
    for dir in "${vision[@]}"; do ort_vision "$dir"; done
    stamp profile DaViT
    timeout 40 wgi bench "$models/florence2_vision_base_opset17/model.onnx" --random-inputs 1 --dim batch=1 \
      --runs 5 --profile --trace "$out/davit_trace.json" 2>&1 | head -60
    stamp done
  } >"$out/defaults.txt" 2>&1
  for variant in robust no_robustness; do
    stamp products $variant
    robust=1
    [[ $variant == no_robustness ]] && robust=0
    WGI_SHADER_ROBUSTNESS=$robust WGI_BENCH_SIZE=large timeout 100 wgi_bench_ops --benchmark_format=json \
      --benchmark_out="$out/wgi_ops_$variant.json" --benchmark_min_time=0.1 \
      --benchmark_filter='BM_Linear/|BM_Conv/' >/dev/null 2>&1
  done
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  for variant in robust no_robustness; do
    python3 bench/compare.py "$out/wgi_ops_$variant.json" "$out/torch.jsonl" >"$out/ops_$variant.md" 2>&1
  done
  stamp done
elif [[ $mode == files_tests ]]; then
  tar -C / -xJf .device/debian_files.tar.xz
  write_info >"$out/info.txt" 2>&1
  export WGI_BACKEND=vulkan
  {
    stamp gpu tests
    WGI_ORT_COMMAND="python3 $root/tests/ort/run_model.py" timeout 300 wgi_gpu_tests --gtest_brief=1 2>&1 |
      grep -vE '^\[ (model|step|variant) ' | tail -80
    stamp conformance; timeout 90 wgi_conformance 2>&1 | tail -3
  } >"$out/tests.txt" 2>&1
  stamp quantized products
  WGI_BENCH_SIZE=large timeout 150 wgi_bench_quantized --benchmark_min_time=0.1 >"$out/quantized.txt" 2>&1
  stamp done
elif [[ $mode == files_models ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  # ORT's shape arguments for a model's inputs, from the symbolic dims of a decoder step.
  {
    stamp_machine
    stamp prepare; prepare_models
    v=$models/variants
    mkdir -p "$v"
    stamp variants
    for b in bart_decoder_base_opset17 bart_decoder_cached_cross_base_opset17; do
      timeout 120 python3 tests/models/variants_weight_only.py "$models/$b/model.onnx" "$v/${b}_q4.onnx" --recipe q4
      timeout 120 python3 tests/models/variants_dynamic.py "$models/$b/model.onnx" "$v/${b}_uint8.onnx" --recipe uint8
    done
    for b in florence2_vision_base_opset17 siglip_vision_base_opset17; do
      timeout 120 python3 tests/models/variants_fp16.py "$models/$b/model.onnx" "$v/${b}_fp16.onnx"
      timeout 120 python3 tests/models/variants_weight_only.py "$models/$b/model.onnx" "$v/${b}_q4.onnx" --recipe q4
      timeout 120 python3 tests/models/variants_dynamic.py "$models/$b/model.onnx" "$v/${b}_uint8.onnx" --recipe uint8
    done
    ls -la "$v"
    for round in 1 2; do
      for b in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
        set_step_dims "$b"
        for f in "$models/$b/model.onnx" "$v/${b}_q4.onnx" "$v/${b}_uint8.onnx"; do
          stamp "round $round wgi bench $(basename "$f") step, inputs on the device"
          timeout 60 wgi bench "$f" --random-inputs 1 "${dims[@]}" --runs 30 --device-inputs 2>&1 |
            grep -E '^(run|graph|weights|memory|plans)'
        done
      done
      for b in florence2_vision_base_opset17 siglip_vision_base_opset17; do
        for f in "$models/$b/model.onnx" "$v/${b}_fp16.onnx" "$v/${b}_q4.onnx" "$v/${b}_uint8.onnx"; do
          stamp "round $round wgi bench $(basename "$f")"
          timeout 60 wgi bench "$f" --random-inputs 1 --dim batch=1 --runs 30 2>&1 | grep -E '^(run|graph|weights|memory)'
        done
      done
    done
    # The fp16 files with the pass that keeps their compute in float32 (docs/float16.md) turned off: A/B.
    for b in florence2_vision_base_opset17 siglip_vision_base_opset17; do
      stamp "wgi bench ${b}_fp16.onnx without compute_float16_in_float32"
      WGI_DISABLE_PASSES=compute_float16_in_float32 timeout 60 wgi bench "$v/${b}_fp16.onnx" --random-inputs 1 \
        --dim batch=1 --runs 30 2>&1 | grep -E '^(run|graph|weights|memory)'
    done
    for f in "$models/bart_decoder_cached_cross_base_opset17/model.onnx" \
      "$v/bart_decoder_cached_cross_base_opset17_q4.onnx" "$models/bart_decoder_base_opset17/model.onnx" \
      "$v/bart_decoder_base_opset17_q4.onnx"; do
      stamp "ORT WebGPU $(basename "$f")"
      # shellcheck disable=SC2046
      timeout 90 node "$ort_peers/ort_bench.js" "$f" webgpu 30 $(ort_shapes "$f") 2>&1 | tail -2
    done
    stamp correctness of the variants against onnxruntime CPU
    variants_against_ort "$v"
    stamp done
  } >"$out/files_models.txt" 2>&1
elif [[ $mode == uint8 ]]; then
  # Issue 19's q8 target (the dynamically quantized Florence-2-structure models on the GPU, time against
  # fp32): the uint8 variants of the cached-cross decoder step, DaViT-base and SigLIP-B made here
  # (tests/models/variants_dynamic.py), each folder's fp32 and uint8 file for `wgi` and each carried
  # .device/bin/wgi_<variant>, two alternating rounds, inputs on the device; then the uint8 files against
  # onnxruntime CPU. Packed as `models` (WGI_PACK_PEERS=0; the three folders suffice).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  mapfile -t builds < <(carried_builds)
  names=(bart_decoder_cached_cross_base_opset17 florence2_vision_base_opset17 siglip_vision_base_opset17)
  {
    stamp_machine
    stamp prepare; prepare_models
    v=$models/variants_uint8
    mkdir -p "$v"
    for name in "${names[@]}"; do
      [[ -d $models/$name ]] || continue
      timeout 180 python3 tests/models/variants_dynamic.py "$models/$name/model.onnx" "$v/${name}_uint8.onnx" \
        --recipe uint8 | tail -1
    done
    for ((round = 1; round <= ${UINT8_ROUNDS:-2}; round++)); do
      for build in "${builds[@]}"; do
        for name in "${names[@]}"; do
          [[ -d $models/$name ]] || continue
          set_step_dims "$name"
          [[ ${#dims[@]} -eq 0 ]] && dims=(--dim batch=1)
          for f in "$models/$name/model.onnx" "$v/${name}_uint8.onnx"; do
            stamp "round $round $build $name $(basename "$f")"
            timeout 90 "$build" bench "$f" --random-inputs 1 "${dims[@]}" --runs 30 --device-inputs 2>&1 |
              grep -E '^(run|graph|weights|plans|wgi: error)'
          done
        done
      done
    done
    stamp "the uint8 files against onnxruntime CPU"
    VARIANTS_ORT_TIMEOUT=240 variants_against_ort "$v"
    stamp done
  } >"$out/uint8.txt" 2>&1
elif [[ $mode == throughput ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  names=(florence2_vision_base_opset17 siglip_vision_base_opset17 resnet50_opset17)
  {
    stamp_machine
    stamp prepare; prepare_models
    for round in 1 2; do
      for name in "${names[@]}"; do
        for batch in 1 8; do
          stamp "round $round wgi $name batch $batch"
          timeout 90 wgi bench "$models/$name/model.onnx" --random-inputs 1 --dim batch=$batch --runs 30 \
            --device-inputs 2>&1 | grep -E '^(run|graph)'
        done
      done
      for batch in 1 8; do
        stamp "round $round torch eager batch $batch"
        WGI_PEER_BATCH=$batch timeout 150 python3 bench/model_torch_peer.py "${names[@]/#/$models/}" 2>&1
      done
    done
    for name in "${names[@]}"; do
      stamp "profile $name batch 8"
      timeout 90 wgi bench "$models/$name/model.onnx" --random-inputs 1 --dim batch=8 --runs 5 --profile 2>&1 |
        head -40
    done
    for dtype in float32 float16; do
      stamp "products, weight $dtype"
      WGI_BENCH_SIZE=large WGI_BENCH_WEIGHT_DTYPE=$dtype timeout 90 wgi_bench_ops --benchmark_min_time=0.1 \
        --benchmark_filter='BM_Linear/' 2>&1 | grep -E '^BM_'
    done
    profile_davit_fp16
    stamp done
  } >"$out/throughput.txt" 2>&1
elif [[ $mode == throughput_ab ]]; then
  # Each part is this script's own mode, run again with its settings; their tables stay, their raw files go.
  self=${BASH_SOURCE[0]}
  models2="siglip_vision_base_opset17 resnet50_opset17"
  VARIANT_MODELS=$models2 VARIANTS_QUICK=1 VARIANT_TORCH=1 VARIANT_BATCH=8 \
    VARIANT_BENCH_ARGS="--runs 20 --device-inputs" OUT=$out/b8 timeout 200 bash "$self" variants
  SPLITS_FILTER='BM_Linear(Model/(planner|one_launch)|Split/fast128_s[1-4]|Split/fast64_s1)/.*1576/' \
    timeout 100 bash "$self" splits
  for name in resnet50_opset17 siglip_vision_base_opset17; do
    LAYERS_MODEL=$name timeout 100 bash "$self" layers
  done
  VARIANT_MODELS=$models2 VARIANTS_QUICK=1 VARIANT_TORCH=1 VARIANT_BENCH_ARGS="--runs 20 --device-inputs" \
    OUT=$out/b1 timeout 120 bash "$self" variants
  rm -f "$out"/*.json "$out"/*.jsonl
elif [[ $mode == layers ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  batch=${LAYERS_BATCH:-8} name=${LAYERS_MODEL:-resnet50_opset17}
  dir=$models/$name trace=$out/${name}_b${batch}_trace.json layers=$out/${name}_b${batch}_torch_layers.jsonl
  {
    stamp_machine
    stamp prepare; prepare_models
    stamp "wgi $name batch $batch"
    timeout 120 wgi bench "$dir/model.onnx" --random-inputs 1 --dim batch="$batch" --runs 10 --device-inputs \
      --profile --trace "$trace" 2>&1 | grep -E '^(run|graph)'
    stamp "torch eager $name batch $batch, layer by layer"
    WGI_PEER_BATCH=$batch WGI_PEER_LAYERS=1 timeout 200 python3 bench/model_torch_peer.py "$dir" >"$layers" 2>&1
    grep -v '"layer"' "$layers"
    python3 bench/layer_table.py "$trace" "$layers"
    stamp done
  } >"$out/layers_${name}_b$batch.txt" 2>&1
elif [[ $mode == gemv_sweep ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE="" WGI_BENCH_SIZE=large
  {
    stamp_machine
    mapfile -t benches < <(carried_benches wgi_bench_quantized quantized)
    bench_rounds 'BM_DispatchFloor|BM_QuantizedLinear/(q4|q4_zp|q8)/(1|4)/51289/' WGI_BENCH_WEIGHT_COPIES=4
    for lanes in 4 8 16 32; do
      for columns in 1 2 4; do
        stamp "lanes $lanes, columns $columns"
        WGI_BENCH_WEIGHT_COPIES=4 WGI_BENCH_KERNEL=gemv WGI_BENCH_GEMV_LANES=$lanes \
          WGI_BENCH_GEMV_THREAD_COLUMNS=$columns timeout 60 wgi_bench_quantized --benchmark_min_time=0.1 \
          --benchmark_filter='BM_QuantizedLinear/q4/(1|4)/51289/' 2>&1 | grep -E '^BM_'
      done
    done
    stamp done
  } >"$out/gemv_sweep.txt" 2>&1
elif [[ $mode == f16_weights ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE="" WGI_BENCH_SIZE=large
  mapfile -t benches < <(carried_benches wgi_bench_ops bench)
  filter=${F16_FILTER:-'BM_Linear/(2048|4096|9216)/|BM_LinearConfig/fast128_k(8s2|16s1|16s2)/(2048|4096)/'}
  {
    stamp_machine
    read -ra epilogues <<<"${F16_EPILOGUES:-plain}"
    for round in 1 2; do
      for bench in "${benches[@]}"; do
        for epilogue in "${epilogues[@]}"; do
          for dtype in float32 float16; do
            [[ $dtype == float32 && $bench != wgi_bench_ops ]] && continue  # variants change float16 only
            stamp "round $round $bench weight $dtype epilogue $epilogue"
            PATH=".device/bin:$PATH" WGI_BENCH_WEIGHT_DTYPE=$dtype WGI_BENCH_EPILOGUE=$epilogue timeout 90 \
              "$bench" --benchmark_min_time=0.1 --benchmark_filter="$filter" 2>&1 | grep manual_time
          done
        done
      done
    done
    for bench in "${benches[@]}"; do
      for epilogue in "${epilogues[@]}"; do
        for dtype in float32 float16; do
          [[ $dtype == float32 && $bench != wgi_bench_ops ]] && continue
          stamp "shader statistics $bench weight $dtype epilogue $epilogue"
          PATH=".device/bin:$PATH" WGI_BENCH_WEIGHT_DTYPE=$dtype WGI_BENCH_EPILOGUE=$epilogue \
            WGI_SHADER_STATS_BENCH=$bench timeout 60 \
            bash bench/shader_stats.sh "$out/stats_${bench}_${dtype}_$epilogue" 'BM_Linear/4096/1024/1024'
        done
      done
    done
    stamp done
  } >"$out/f16_weights.txt" 2>&1
  tar -C "$out" -czf "$out/stats.tgz" $(cd "$out" && ls -d stats_* 2>/dev/null) && rm -rf "$out"/stats_*
elif [[ $mode == fp16_profile ]]; then
  # Where DaViT-base's fp16 file spends the time its fp32 file does not: per-node GPU times of both, side by
  # side (needs .device/models/florence2_vision_base_opset17, as `models` packs it).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  timeout 120 python3 tests/models/fill_weights.py "$models" | tail -1
  profile_davit_fp16
elif [[ $mode == decode || $mode == decode_rnn ]]; then
  # Decoder loops (issue 21 item 4): the first step planned with room for the last step's past (the default),
  # without it (--no-growing-dims: plans grow by doubling), and every step planned in full; with decode_rnn
  # also the recurrent layers against PyTorch's cuDNN RNNs and the data-dependent ops (issue 17).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  {
    stamp_machine
    stamp prepare; prepare_models
    if [[ $mode == decode_rnn ]]; then
      for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
        set_step_dims "$name"
        for m in "--decode 32 --device-inputs" "--decode 32 --device-inputs --no-growing-dims" \
          "--decode 32 --device-inputs --no-respecialize"; do
          stamp "wgi bench $name $m"
          # shellcheck disable=SC2086
          timeout 120 wgi bench "$models/$name/model.onnx" --random-inputs 1 "${dims[@]}" $m 2>&1 |
            grep -E '^(run|first step|later|ahead|decode|plans|memory)'
        done
      done
    else
      # decode: `wgi` and every carried `wgi_<variant>` (e.g. a build of the session's start) in two
      # alternating rounds: the loop, the loop with --no-plan-ahead, and the steady step (same sizes every
      # run: GPU work and encoding, no planning, no download), for `wgi` also the loop with --ids-by-value;
      # then plan_nodes alone (wgi_bench_planning).
      mapfile -t builds < <(carried_builds)
      for round in 1 2; do
        for build in "${builds[@]}"; do
          for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
            set_step_dims "$name"
            modes=("--decode 32 --device-inputs" "--decode 32 --device-inputs --no-plan-ahead" \
              "--device-inputs --runs 30")
            # --ids-by-value: the token planned by value, as before RunOptions::inputs_as_data (this tree only).
            [[ $build == wgi ]] && modes+=("--decode 32 --device-inputs --ids-by-value")
            for m in "${modes[@]}"; do
              stamp "round $round $build $name $m"
              # shellcheck disable=SC2086
              timeout 120 "$build" bench "$models/$name/model.onnx" --random-inputs 1 "${dims[@]}" $m 2>&1 |
                grep -E '^(run|later|ahead|plans|wgi: error)'
            done
          done
        done
      done
      if command -v wgi_bench_planning >/dev/null; then
        stamp plan_nodes per step
        WGI_BENCH_DECODER=$models/bart_decoder_base_opset17/model.onnx timeout 60 wgi_bench_planning \
          --benchmark_min_time=0.5 2>&1 | grep BM_
      fi
      stamp done
      exit 0
    fi
    stamp recurrent: wgi
    WGI_BENCH_SIZE=large timeout 200 wgi_bench_recurrent --benchmark_format=json \
      --benchmark_out="$out/wgi_recurrent.json" --benchmark_min_time=0.1 >/dev/null 2>"$out/recurrent.err"
    stamp recurrent: torch
    timeout 120 python3 bench/recurrent_torch_peer.py >"$out/torch_recurrent.jsonl" 2>&1
    python3 bench/compare.py "$out/wgi_recurrent.json" "$out/torch_recurrent.jsonl" 2>&1
    # Data-dependent output sizes (issue 17): NMS over 10k boxes, TopK over 50k rows, read-back included.
    stamp data-dependent ops
    mkdir -p tests/data/models/dynamic_shapes  # the staged benchmark's model, carried when tests/data is not
    [[ -f .device/nms_gather.onnx ]] && cp -n .device/nms_gather.onnx tests/data/models/dynamic_shapes/
    WGI_BENCH_SIZE=large timeout 120 wgi_bench_data_dependent --benchmark_min_time=0.1 2>&1 | tail -20
    stamp data-dependent ops: torch; timeout 60 python3 bench/data_dependent_torch_peer.py 2>&1
    stamp done
  } >"$out/decode_rnn.txt" 2>&1
elif [[ $mode == decode_q4 ]]; then
  # Issue 19's decoder target (the q4 step no slower than the fp32 one): the cached-cross BART-base decoder
  # and its q4 variants at accuracy_level 4 and 0 (made here by tests/models/variants_weight_only.py), the
  # steady step and the 32-step loop with inputs on the device, for `wgi` and each carried
  # .device/bin/wgi_<variant>, two alternating rounds. Packed as for `decode`.
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  mapfile -t builds < <(carried_builds)
  {
    stamp_machine
    stamp prepare; prepare_models
    name=bart_decoder_cached_cross_base_opset17
    timeout 120 python3 tests/models/variants_weight_only.py "$models/$name/model.onnx" \
      "$models/$name/model_q4.onnx" --recipe q4 | tail -1
    # DECODE_Q4_FILES (default "model model_q4 model_q4_acc0"): model_q4_acc0 is the same codes at
    # accuracy_level 0 (A stays float32 in the GEMV; level 4 takes int8 products), model_uint8 the dynamic
    # uint8 file (tests/models/variants_dynamic.py), each made only when named.
    files=${DECODE_Q4_FILES:-model model_q4 model_q4_acc0}
    [[ " $files " == *" model_q4_acc0 "* ]] &&
      timeout 120 python3 tests/models/variants_weight_only.py "$models/$name/model.onnx" \
        "$models/$name/model_q4_acc0.onnx" --recipe q4 --accuracy-level 0 | tail -1
    [[ " $files " == *" model_uint8 "* ]] &&
      timeout 180 python3 tests/models/variants_dynamic.py "$models/$name/model.onnx" \
        "$models/$name/model_uint8.onnx" --recipe uint8 | tail -1
    set_step_dims "$name"
    for round in 1 2; do
      for build in "${builds[@]}"; do
        for f in $files; do
          for m in "--device-inputs --runs 30" "--decode 32 --device-inputs"; do
            stamp "round $round $build $f $m"
            # shellcheck disable=SC2086
            timeout 120 "$build" bench "$models/$name/$f.onnx" --random-inputs 1 "${dims[@]}" $m 2>&1 |
              grep -E '^(run|later|plans|wgi: error)'
          done
        done
      done
    done
    stamp done
  } >"$out/decode_q4.txt" 2>&1
elif [[ $mode == tokens_decode || $mode == tokens_pipelines || $mode == tokens ]]; then
  # tokens: both in one call (600 s): one decoder round, the pipelines, then a second decoder round and the
  # peers while time is left (each step skipped, not cut off, past its budget).
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  mapfile -t builds < <(carried_builds)
  in_budget() { (( SECONDS - start < $1 )) || { echo "## skipped $2: time budget spent"; return 1; }; }
  tokens_decoder_round() {  # $1: the round's number
    local f m build dims modes
    for build in "${builds[@]}"; do
      for f in "$cc/model" "$cc/model_q4" bart_decoder_base_opset17/model; do
        set_step_dims "${f%/*}"
        modes=("--decode 32 --device-inputs" "--device-inputs --runs 30")
        # The session's start has no token candidates: its loop is the host argmax's.
        [[ $build == wgi ]] && modes+=("--decode 32 --device-inputs --host-argmax")
        for m in "${modes[@]}"; do
          in_budget 560 "round $1 $build $f $m" || continue
          stamp "round $1 $build $f $m"
          # shellcheck disable=SC2086
          timeout 60 "$build" bench "$models/$f.onnx" --random-inputs 1 "${dims[@]}" $m 2>&1 |
            grep -E '^(run|later|decode|plans|wgi: error)'
        done
      done
    done
  }
  tokens_pipelines() {
    local task beams dtype build q4=embed_tokens=fp32,vision_encoder=fp32,encoder_model=q4,decoder_model_merged=q4
    prepare_florence2_base
    for task in '<CAPTION>' '<OD>'; do
      for beams in 1 3; do
        for dtype in fp32 "$q4"; do
          for build in "${builds[@]}"; do
            in_budget 560 "$build $task $beams $dtype" || continue
            stamp "$build florence2 $task beams $beams dtype $dtype"
            timeout 60 "$build" florence2 "$folder" "$image" --task "$task" --num-beams $beams --max-new-tokens 64 \
              --dtype "$dtype" --runs 5 2>&1 | tail -3
          done
        done
      done
    done
  }
  cc=bart_decoder_cached_cross_base_opset17
  {
    stamp_machine
    if [[ $mode != tokens_pipelines ]]; then
      stamp GPU tests of the change
      timeout 200 wgi_gpu_tests \
        --gtest_filter='TopK*:*DecoderLoop*:TokenCandidates*:Environment*:DeviceTensor*:Florence2Pipeline.*:SplitColumns*:MatMulNBits.*:MergedSibling*:Gemv*:DataMovementConcat.*:*Respecial*:*PlanNode*:*Attention*' 2>&1 |
        grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure' | head -20
      stamp prepare; prepare_models
      timeout 120 python3 tests/models/variants_weight_only.py "$models/$cc/model.onnx" "$models/$cc/model_q4.onnx" \
        --recipe q4 | tail -1
      tokens_decoder_round 1
      in_budget 500 "PyTorch" && { stamp PyTorch eager decoder steps
        timeout 60 python3 bench/model_torch_peer.py "$models/$cc" "$models/bart_decoder_base_opset17" 2>&1 | tail -3; }
      in_budget 520 TopK && { stamp TopK
        WGI_BENCH_SIZE=large timeout 60 wgi_bench_data_dependent --benchmark_filter=TopK --benchmark_min_time=0.1 \
          2>&1 | grep -E 'BM_|error'
        timeout 40 python3 bench/data_dependent_torch_peer.py 2>&1 | grep -E 'TopK|device'; }
    fi
    [[ $mode == tokens_decode ]] || tokens_pipelines
    [[ $mode == tokens_pipelines ]] || tokens_decoder_round 2
    stamp done
  } >"$out/$mode.txt" 2>&1
elif [[ $mode == table || $mode == table_ort ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  vision=() decoders=()
  for name in florence2_vision_base_opset17 siglip_vision_base_opset17 resnet50_opset17; do
    [[ -d $models/$name ]] && vision+=("$models/$name")
  done
  for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
    [[ -d $models/$name ]] && decoders+=("$models/$name")
  done
  if [[ $mode == table_ort ]]; then
    { stamp_machine; for dir in "${vision[@]}" "${decoders[@]}"; do ort_model "$dir"; done; stamp done; } \
      >"$out/table_ort.txt" 2>&1
    cat "$out/table_ort.txt"
    exit 0
  fi
  {
    stamp_machine
    stamp prepare; prepare_models
    for round in 1 2; do
      for batch in 1 8; do
        for dir in "${vision[@]}"; do
          stamp "round $round batch $batch $(basename "$dir")"
          timeout 60 wgi bench "$dir/model.onnx" --random-inputs 1 --dim batch=$batch --runs 30 --device-inputs \
            2>&1 | grep -E '^(run|graph|wgi: error)'
        done
      done
      for dir in "${decoders[@]}"; do
        set_step_dims "$(basename "$dir")"
        stamp "round $round decode $(basename "$dir")"
        timeout 60 wgi bench "$dir/model.onnx" --random-inputs 1 "${dims[@]}" --decode 32 --device-inputs 2>&1 |
          grep -E '^(run|later|decode|plans|wgi: error)'
      done
    done
    for precision in fp32 tf32; do
      stamp "torch eager $precision batch 1"
      WGI_PEER_PRECISION=$precision WGI_PEER_BATCH=1 timeout 150 python3 bench/model_torch_peer.py "${vision[@]}" \
        $([[ $precision == fp32 ]] && echo "${decoders[@]}") 2>&1
    done
    for precision in fp32 fp16; do
      stamp "torch eager $precision batch 8"
      WGI_PEER_PRECISION=$precision WGI_PEER_BATCH=8 timeout 150 python3 bench/model_torch_peer.py "${vision[@]}" 2>&1
    done
    stamp done
  } >"$out/table.txt" 2>&1
  cat "$out/table.txt"
elif [[ $mode == pipelines ]]; then
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  {
    stamp_machine
    prepare_florence2_base
    q4=embed_tokens=fp32,vision_encoder=fp32,encoder_model=q4,decoder_model_merged=q4
    # One round (a device call has 600 s); later steps are skipped rather than cut off.
    for round in 1; do
      for task in '<CAPTION>' '<OD>'; do
        for beams in 1 3; do
          for dtype in fp32 "$q4"; do
            if ((SECONDS - start > 540)); then echo "## skipped $task $beams $dtype: time budget spent"; continue; fi
            stamp "round $round wgi florence2 $task beams $beams dtype $dtype"
            timeout 120 wgi florence2 "$folder" "$image" --task "$task" --num-beams $beams --max-new-tokens 64 \
              --dtype "$dtype" --runs 5 2>&1 | tail -6
            stamp "round $round transformers.js webgpu $task beams $beams dtype $dtype"
            timeout 180 node bench/florence2_peer_bench.mjs "$folder" "${image%.png}.rgb" "$task" webgpu --runs 3 \
              --rgb-size 768x768 \
              --num-beams $beams --max-new-tokens 64 --dtype "$dtype" 2>&1 | grep -v '^\[' | tail -2 | cut -c1-400
          done
        done
      done
    done
    stamp done
  } >"$out/pipelines.txt" 2>&1
elif [[ $mode == pipelines_equal ]]; then
  # Issue 20 on the base folder: wgi's greedy answers against transformers.js (onnxruntime-node's CPU EP) on
  # the same files, token for token (`--json`'s generated_ids against the peer's), fp32 and q4.
  export WGI_BACKEND=vulkan WGI_TUNING_CACHE=""
  {
    stamp_machine
    # PIPELINES_EQUAL=siglip: only the SigLIP part (transformers.js unpacked, no Florence-2 folder).
    if [[ ${PIPELINES_EQUAL:-all} == siglip ]]; then
      unpack_transformers_js
    else
      prepare_florence2_base
    fi
    q4=embed_tokens=fp32,vision_encoder=fp32,encoder_model=q4,decoder_model_merged=q4
    [[ ${PIPELINES_EQUAL:-all} == siglip ]] || for task in '<CAPTION>' '<OD>' '<OCR>'; do
      for dtype in fp32 "$q4"; do
        stamp "wgi florence2 $task greedy dtype $dtype"
        timeout 120 wgi florence2 "$folder" "$image" --task "$task" --num-beams 1 --max-new-tokens 64 \
          --dtype "$dtype" --json >"$out/wgi.json" 2>"$out/wgi.err" || tail -3 "$out/wgi.err"
        stamp "transformers.js cpu $task greedy dtype $dtype"
        timeout 240 node bench/florence2_peer_bench.mjs "$folder" "${image%.png}.rgb" "$task" cpu --runs 1 \
          --rgb-size 768x768 --num-beams 1 --max-new-tokens 64 --dtype "$dtype" 2>/dev/null | tail -1 >"$out/peer.json"
        python3 - "$out/wgi.json" "$out/peer.json" <<'PY'
import json, sys
try:
    w = json.load(open(sys.argv[1]))["generated_ids"]
    p = json.loads(open(sys.argv[2]).read())["generated_ids"]
except Exception as e:
    print("no comparison:", e); sys.exit(0)
w = [int(t) for t in (w[0] if w and isinstance(w[0], list) else w)]
p = [int(t) for t in (p[0] if p and isinstance(p[0], list) else p)]
same = next((i for i, (a, b) in enumerate(zip(w, p)) if a != b), min(len(w), len(p)))
print(f"wgi {len(w)} ids, transformers.js {len(p)} ids, equal prefix {same}",
      "EQUAL" if w == p else f"DIFFER at {same}: wgi {w[same:same + 4]} peer {p[same:same + 4]}")
PY
      done
    done
    # SigLIP: the base towers' folder (tests/models/siglip_folder.py --base), scores of wgi siglip against
    # transformers.js's zero-shot pipeline (CPU) on the same folder and image, labels and template.
    sfolder=.device/siglip/siglip-base
    stamp make the SigLIP base folder
    # spm_train is not on the GPU machine: the tokenizer files travel (bench/h200_pack.sh pipelines).
    timeout 300 python3 tests/models/siglip_folder.py --base "$sfolder" --tokenizer-from .device/siglip_tokenizer \
      2>&1 | tail -2
    template='This is a photo of {}.'
    for img in image_a.png image_b.png image_c.png; do
      stamp "wgi siglip $img"
      timeout 60 wgi siglip "$sfolder" "$sfolder/$img" --labels "cat,dog,a red car,two birds,Zoë's café,東京" \
        --template "$template" --json >"$out/wgi_siglip.json" 2>"$out/wgi.err" || tail -3 "$out/wgi.err"
      timeout 120 node tests/pipelines/siglip_transformersjs.mjs "$sfolder" "$sfolder/$img" \
        '["cat","dog","a red car","two birds","Zoë'"'"'s café","東京"]' "$template" >"$out/peer_siglip.json" 2>/dev/null
      python3 - "$out/wgi_siglip.json" "$out/peer_siglip.json" <<'PY'
import json, sys
try:
    w, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
except Exception as e:
    print("no comparison:", e); sys.exit(0)
ids_equal = w["input_ids"] == p["input_ids"]
diff = max(abs(a - b) for a, b in zip(w["scores"], p["scores"]))
print(f"input_ids equal: {ids_equal}; scores max |wgi - transformers.js| {diff:.2e} (limit 1e-4);",
      "wgi", [round(x, 5) for x in w["scores"]], "peer", [round(x, 5) for x in p["scores"]])
PY
    done
    stamp done
  } >"$out/pipelines_equal.txt" 2>&1
elif [[ $mode == main ]]; then
  tar -C / -xJf .device/debian_files.tar.xz
  write_info >"$out/info.txt" 2>&1
  export WGI_BACKEND=vulkan
  {
    stamp unit tests; timeout 60 wgi_unit_tests 2>&1 | grep -vE '^\[ +(RUN|OK) +\]' | tail -30
    stamp gpu tests
    WGI_ORT_COMMAND="python3 $root/tests/ort/run_model.py" timeout 240 wgi_gpu_tests 2>&1 |
      grep -vE '^\[ +(RUN|OK) +\]|^\[ (model|step) ' | tail -150
    stamp conformance; timeout 60 wgi_conformance 2>&1 | tail -3
    stamp selftest; timeout 60 wgi_selftest 2>&1 | tail -15
    stamp ocr example; timeout 60 ocr examples/ocr/sample.png 2>&1 | tail -15
  } >"$out/tests.txt" 2>&1
  stamp op benchmarks
  # The planner's choices (BM_Linear, BM_Conv), every GEMM kernel forced on its shapes (BM_LinearKernel),
  # workgroup-memory configurations and GEMV lane counts (BM_LinearConfig), runtime-B products.
  WGI_BENCH_SIZE=large timeout 240 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_bench.json" \
    --benchmark_min_time=0.1 >/dev/null 2>"$out/wgi_bench.err"
  stamp torch peer
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  python3 bench/compare.py "$out/wgi_bench.json" "$out/torch.jsonl" >"$out/table.md" 2>&1
  stamp done
else  # models
  export WGI_BACKEND=vulkan
  {
    prepare_models
    cold_start "" "$models"/florence2_vision_base_opset17 "$models"/siglip_vision_base_opset17
    stamp models: correctness
    timeout 180 python3 tests/models/check_with_wgi.py --wgi "$(command -v wgi)" --backend vulkan \
      "$models"/florence2_vision_base_opset17 "$models"/siglip_vision_base_opset17 \
      "$models"/bart_decoder_base_opset17
    stamp models: wgi bench; wgi_bench_models
    # Decoder loops: the step with every input already on the device (outputs kept there), and 32 greedy
    # steps from past_len 64 with the key/values through the host and kept on the device (docs/decoding.md);
    # the last mode plans every step in full (no respecialized plans), for the before/after of planning.
    for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
      set_step_dims "$name"
      for mode in "--runs 30 --device-inputs" "--decode 32" "--decode 32 --device-inputs" \
        "--decode 32 --device-inputs --no-respecialize"; do
        echo "### wgi bench $name $mode"
        # shellcheck disable=SC2086
        timeout 120 wgi bench "$models/$name/model.onnx" --random-inputs 1 "${dims[@]}" $mode 2>&1 |
          grep -E '^(run|first step|later|decode|plans|memory)'
      done
    done
    stamp models: torch eager; timeout 120 python3 bench/model_torch_peer.py "$models"/*
  } >"$out/models.txt" 2>&1
  # The planner's products (BM_Linear) against cuBLAS in the same call, as in `main`.
  stamp products
  WGI_BENCH_SIZE=large timeout 90 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_linear.json" \
    --benchmark_min_time=0.1 --benchmark_filter='BM_Linear/' >/dev/null 2>&1
  timeout 90 python3 bench/torch_peer.py >"$out/torch.jsonl" 2>&1
  python3 bench/compare.py "$out/wgi_linear.json" "$out/torch.jsonl" >"$out/linear_table.md" 2>&1
  {
    for dir in "$models"/*; do
      name=$(basename "$dir")
      ort_model "$dir"
    done
  } >"$out/peers.txt" 2>&1
  {
    for name in florence2_vision_base_opset17 siglip_vision_base_opset17 bart_decoder_cached_cross_base_opset17; do
      dims=(--dim batch=1)
      [[ $name == bart* ]] && dims=(--dim batch=1 --dim new_tokens=1 --dim past_len=64 --dim src_len=590)
      stamp profile $name
      timeout 60 wgi bench "$models/$name/model.onnx" --random-inputs 1 "${dims[@]}" --runs 5 --profile 2>&1 |
        head -45
    done
  } >"$out/profile.txt" 2>&1
fi
