#!/usr/bin/env bash
# wgi on Node.js (the WebAssembly build on dawn.node, docs/node.md) beside the native `wgi` on the same model
# files, in one device call on the lent H200; what a Chrome user gets is closest to the Node numbers (the same
# Dawn generation and the same WGSL, through the wasm build's host code and Asyncify).
#   bench/node_campaign.sh pack          # here, after scripts/build release, scripts/build-web and the large
#                                        # models (florence_siglip.py --large, resnet.py --large): fills .device/
#   source .device/env.sh; bash bench/node_campaign.sh run      # there; carry [".device"]
#   bench/node_campaign.sh tiny          # here: a dry run on SwiftShader with the tiny test models
#   source .device/env.sh; bash bench/node_campaign.sh f16      # there (packed as for `run`): precision f16
#       (docs/float16.md): tests/web/node_f16.mjs with its GEMM bench, then the three vision models at batch 1
#       and 8 in f32 and f16, with the NVIDIA toggles (robustness on, as Chrome) and with native wgi's toggles
#       too (robustness and workgroup zeroing off). Results: $OUT/node_f16.txt, $OUT/f16_table.md
# `run` prints dawn.node's adapter without and with the NVIDIA toggles (expect shader-f16 and
# chromium-experimental-subgroup-matrix with them), then for SigLIP-B, DaViT-base (Florence-2's vision
# encoder) and ResNet-50: `wgi bench` and `node web/cli.mjs bench` with the toggles (Dawn's shader robustness
# on, as in Chrome), on SigLIP also with native wgi's toggles (robustness and workgroup zeroing off) and with
# no toggles, and a table of the medians; then the subgroup-matrix GEMM probes (bench/sgm_gemm_probe.mjs).
# With ORT packed (`pack` puts it in .device_ort/: carry [".device_ort"] in a second call right after one that
# carried .device/, while the machine is warm) each model also runs on ORT's WebGPU EP, a column of the table.
# Results: $OUT/node_campaign.txt, $OUT/table.md and $OUT/sgm_gemm_probe.txt.
#   bench/node_campaign.sh pack_probe    # here: only node, dawn.node and the WebAssembly build (~35 MiB)
#   source .device/env.sh; bash bench/node_campaign.sh probe   # there: the subgroup-matrix GEMM round:
#       bench/sgm_gemm_probe.mjs's variants (WGI_PROBE_VARIANTS, space-separated, or its default list) with
#       Dawn's robustness on (as Chrome) and off (native wgi's toggles; WGI_PROBE_TOGGLE_SETS="robust native"),
#       wgi's own kernels (tests/web/node_f16.mjs --bench; WGI_PROBE_WGI=0 leaves it out; again with each
#       build in .device/node/web_*/, e.g. web_base: a kernel change A/B, logs $OUT/node_f16_<name>.txt),
#       PyTorch's fp16 /
#       fp32 4096^3 and 3x3 conv in the same call, and the GPU's clocks, power and throttle reasons sampled
#       every 200 ms throughout. Results: $OUT/probe.txt, $OUT/smi.csv
#   source .device/env.sh; bash bench/node_campaign.sh f16ab   # there, packed as for `run` plus builds of
#       other commits as .device/node/web_<name>/wgi.{js,wasm.xz}: the three vision models in f16 (and once in
#       f32) at batch 1 and 8 with native wgi's toggles, each build in two alternating rounds (A/B of kernels
#       in one call; the clocks move between calls). Results: $OUT/f16ab.txt, $OUT/f16ab_table.md
#   source .device/env.sh; bash bench/node_campaign.sh f16check   # there, packed as for f16ab: node_f16.mjs
#       --bench, then f16ab with profiles (a kernel change's first call; described at the mode)
#   bench/node_campaign.sh pack_florence2    # here: as pack_probe, plus the Florence-2 base folder's tokenizer
#                                            # files (made with node here: tests/pipelines/make_tokenizer.mjs)
#   source .device/env.sh; bash bench/node_campaign.sh florence2   # there: the Florence-2 base folder made
#       (bench/florence2_base.sh), then `node web/cli.mjs florence2` on it, greedy, 64 new tokens, 5 runs, for
#       <CAPTION> and <OD>, fp32 and q4 (encoder and decoder) files, precision f32 and f16 (native wgi's
#       toggles): each run's time and stages, and whether f16's ids equal f32's. Results: $OUT/florence2.txt
# `pack` with WGI_PACK_DECODERS=1 also carries the BART-base decoders for bench/h200_campaign.sh's `table` (issue
# 21's table: native wgi against PyTorch), which runs in the same call; `table_ort` in the second one.
# WGI_NODE_MODELS (space-separated names under .device/models) narrows run, f16 and f16ab to those models;
# WGI_AB_PROFILE=1 adds --profile to f16ab's benches (GPU time per op type and node in each log);
# WGI_AB_BATCHES (default "1 8") the batch sizes they run.
set -uo pipefail
mode=${1:?usage: bench/node_campaign.sh pack|run|tiny}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
toggles=${WGI_NODE_TOGGLES:-allow_unsafe_apis,vulkan_enable_f16_on_nvidia}

if [[ $mode == pack_probe ]]; then
  set -e
  for f in build/web/wgi.js build/web/wgi.wasm third_party/dawn-node/dist/linux-x64/dawn.node; do
    [[ -f $f ]] || { echo "node_campaign: $f missing (scripts/build-web, scripts/setup)" >&2; exit 1; }
  done
  rm -rf .device
  ../shared/device/pack.sh >/dev/null
  mkdir -p .device/peers .device/node/dawn-node/dist/linux-x64 .device/node/web
  xz -T2 -6 -c "$(readlink -f "$(command -v node)")" >.device/peers/node.xz
  cp third_party/dawn-node/index.js third_party/dawn-node/package.json .device/node/dawn-node/
  xz -T2 -6 -c third_party/dawn-node/dist/linux-x64/dawn.node >.device/node/dawn-node/dist/linux-x64/dawn.node.xz
  cp build/web/wgi.js .device/node/web/
  xz -T2 -6 -c build/web/wgi.wasm >.device/node/web/wgi.wasm.xz
  du -sh .device | awk '{print "travels: " $2 " " $1}'
  exit 0
fi

if [[ $mode == pack_florence2 ]]; then
  set -e
  bash "$0" pack_probe
  mkdir -p .device/florence2_tokenizer
  WGI_PIPELINES_DIR=third_party/pipelines node tests/pipelines/make_tokenizer.mjs .device/florence2_tokenizer
  du -sh .device | awk '{print "travels: " $2 " " $1}'
  exit 0
fi

if [[ $mode == pack ]]; then
  set -e
  for f in build/web/wgi.js build/web/wgi.wasm third_party/dawn-node/dist/linux-x64/dawn.node build/release/wgi; do
    [[ -f $f ]] || { echo "node_campaign: $f missing (scripts/build release, scripts/build-web, scripts/setup)" >&2; exit 1; }
  done
  bash bench/h200_pack.sh models  # wgi, the base-size models without their weights, node (+ ORT)
  # Only what this campaign uses travels (64 MiB in all): not wgi_bench_ops or the decoder models, and ORT
  # goes into .device_ort/ (with .device/ it does not fit one call): carried by a second call right after
  # one that carried .device/, on the machine still warm (.device/ stays there), `run` adds ORT's column.
  rm -rf .device_ort .device/bin/wgi_bench_ops* .device/models/bart_decoder_*
  # WGI_PACK_DECODERS=1: the BART-base decoders too (graphs and weight recipes, ~1.2 MB), for
  # `bench/h200_campaign.sh table` in the same call.
  if [[ ${WGI_PACK_DECODERS:-0} == 1 ]]; then
    for name in bart_decoder_cached_cross_base_opset17 bart_decoder_base_opset17; do
      mkdir -p ".device/models/$name"
      cp "build/models-large/$name/model.onnx" "build/models-large/$name/weights.json" ".device/models/$name/"
    done
  fi
  if [[ -d .device/peers/ort ]]; then
    mkdir -p .device_ort/peers
    mv .device/peers/ort .device_ort/peers/
    cp .device/peers/ort_bench.js .device_ort/peers/
  fi
  mkdir -p .device/node/dawn-node/dist/linux-x64 .device/node/web
  cp third_party/dawn-node/index.js third_party/dawn-node/package.json third_party/dawn-node/LICENSE.md \
    .device/node/dawn-node/
  xz -T2 -6 -c third_party/dawn-node/dist/linux-x64/dawn.node >.device/node/dawn-node/dist/linux-x64/dawn.node.xz
  cp build/web/wgi.js .device/node/web/
  xz -T2 -6 -c build/web/wgi.wasm >.device/node/web/wgi.wasm.xz
  du -sh .device | awk '{print "travels: " $2 " " $1}'
  [[ -d .device_ort ]] && du -sh .device_ort | awk '{print "travels in a second call: " $2 " " $1}'
  exit 0
fi

out=${OUT:-/tmp/wgi-node-campaign}
mkdir -p "$out"
start=$SECONDS
stamp() { echo "## [$((SECONDS - start)) s] $*"; }
median() { sed -n 's/^run: *median \([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
# with_build DIR COMMAND...: runs COMMAND with the build in DIR (.device/node/web_<name>: another commit's, or
# the tree's before a kernel change) in build/web, then puts the change's back.
with_build() {
  local d=$1
  shift
  cp build/web/wgi.js build/web/wgi.wasm /tmp/
  cp "$d/wgi.js" build/web/
  xz -dc "$d/wgi.wasm.xz" >build/web/wgi.wasm
  "$@"
  cp /tmp/wgi.js /tmp/wgi.wasm build/web/
}
# node_f16's bench alone with each build in .device/node/web_*/ (web_base: the tree's before a kernel change;
# A/B in one call): the raw log as $out/node_f16_<name>.txt, the table on standard output.
bench_other_builds() {
  local d flag=--bench-only
  [[ ${WGI_CHECK_ALL_BUILDS:-0} == 1 ]] && flag=--bench
  for d in .device/node/web_*/; do
    d=${d%/}
    [[ -f $d/wgi.js ]] || continue
    WGI_PYTHON=python3 with_build "$d" timeout 150 node tests/web/node_f16.mjs --backend vulkan \
      --toggles "$toggles,disable_robustness,disable_workgroup_init" $flag ${WGI_F16_ONLY:+--only "$WGI_F16_ONLY"} \
      >"$out/node_f16_${d##*/}.txt" 2>&1
    echo "the bench with ${d##*/}'s build:"
    grep -E '^(PASS|FAIL|\||node_f16)' "$out/node_f16_${d##*/}.txt" | cut -c1-260
  done
}
# Standard input without Tint's warnings (the deprecated subgroupMatrix spellings, their source lines).
without_tint_warnings() { grep -v "deprecated\|^ *\^\|subgroupMatrix\|^$\|^warning:\|Compilation log\|warning(s) generated"; }
runs=30 warmup=3
if [[ $mode == run || $mode == f16 || $mode == probe || $mode == f16ab || $mode == florence2 || $mode == f16check ]]; then
  for f in .device/bin/*.xz; do [[ -f $f ]] && xz -d "$f" && chmod +x "${f%.xz}"; done
  x=.device/node/dawn-node/dist/linux-x64/dawn.node
  [[ -f $x.xz ]] && xz -d "$x.xz"
  mkdir -p build/web
  cp .device/node/web/wgi.js build/web/
  [[ -f .device/node/web/wgi.wasm.xz ]] && xz -dc .device/node/web/wgi.wasm.xz >build/web/wgi.wasm
  export WGI_DAWN_NODE=$root/.device/node/dawn-node WGI_BACKEND=vulkan
  wgi=wgi
  models=.device/models
  read -r -a names <<<"${WGI_NODE_MODELS:-siglip_vision_base_opset17 florence2_vision_base_opset17 resnet50_opset17}"
elif [[ $mode == tiny ]]; then
  export WGI_BACKEND=swiftshader
  wgi=build/release/wgi
  models=tests/data/models
  names=(siglip_vision_tiny_opset17 florence2_vision_tiny_opset17 resnet_tiny_opset17)
  runs=2 warmup=0
else
  echo "node_campaign: unknown mode '$mode' (pack, run, f16 or tiny)" >&2
  exit 2
fi

# f16check: a change's first device call in one command (packed as for `run`, the change's build in
# .device/node/web/ and the tree's before it in .device/node/web_base/): tests/web/node_f16.mjs --bench with
# native wgi's toggles (correctness first: the f16 kernels compile nowhere else; its bench again with each
# other build in .device/node/web_*/), then `f16ab` on
# WGI_NODE_MODELS (default SigLIP-B and DaViT-base) with profiles. Results: $OUT/node_f16.txt,
# $OUT/f16ab.txt, $OUT/f16ab_table.md and the per-run logs as $OUT/ab_logs.tgz (at most 8 files come back).
# WGI_F16_ONLY=REGEX: node_f16's checks and bench shapes narrowed to those names (its --only), and no f16ab
# (a kernel family's A/B in a call of a few minutes, no models carried).
# WGI_CHECK_ALL_BUILDS=1: the other builds run node_f16's checks too, not only its bench (kernel variants that
# change what a check covers)
if [[ $mode == f16check ]]; then
  WGI_PYTHON=python3 timeout 240 node tests/web/node_f16.mjs --backend vulkan \
    --toggles "$toggles,disable_robustness,disable_workgroup_init" --bench ${WGI_F16_ONLY:+--only "$WGI_F16_ONLY"} \
    >"$out/node_f16.txt" 2>&1
  grep -E '^(PASS|FAIL|\||node_f16)' "$out/node_f16.txt" | cut -c1-260
  bench_other_builds
  [[ -n ${WGI_F16_ONLY:-} ]] && exit 0
  ab=/tmp/wgi-node-f16check
  OUT=$ab WGI_NODE_MODELS=${WGI_NODE_MODELS:-siglip_vision_base_opset17 florence2_vision_base_opset17} \
    WGI_NODE_BUDGET_S=${WGI_NODE_BUDGET_S:-250} WGI_AB_PROFILE=1 bash "$0" f16ab >/dev/null 2>&1
  cp "$ab/f16ab.txt" "$ab/f16ab_table.md" "$out/"
  tar czf "$out/ab_logs.tgz" -C "$ab" .
  cat "$out/f16ab_table.md"
  exit 0
fi

if [[ $mode == florence2 ]]; then
  source "$root/bench/florence2_base.sh"
  tg=$toggles,disable_robustness,disable_workgroup_init
  {
    echo "# date: $(date -u +%F' '%T) UTC"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
    prepare_florence2_base  # sets $folder and $image
    q4=embed_tokens=fp32,vision_encoder=fp32,encoder_model=q4,decoder_model_merged=q4
    for task in '<CAPTION>' '<OD>'; do
      for dtype in fp32 "$q4"; do
        rm -f "$out/florence2.f32.json" "$out/florence2.f16.json"
        for precision in f32 f16; do
          if ((SECONDS - start > ${WGI_NODE_BUDGET_S:-480})); then continue; fi
          stamp "node web/cli.mjs florence2 $task dtype $dtype precision $precision"
          timeout 150 node web/cli.mjs florence2 "$folder" "$image" --task "$task" --num-beams 1 \
            --max-new-tokens 64 --dtype "$dtype" --precision $precision --runs 5 --toggles "$tg" --json \
            >"$out/florence2.$precision.json" 2>"$out/florence2.err"
          without_tint_warnings <"$out/florence2.err" | tail -8
        done
        python3 - "$out/florence2.f32.json" "$out/florence2.f16.json" <<'PY'
import json, sys
try:
    a, b = (json.load(open(f))["generated_ids"] for f in sys.argv[1:3])
except Exception as e:
    print("no comparison:", e); sys.exit(0)
same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print(f"f32 {len(a)} ids, f16 {len(b)} ids, equal prefix {same}:", "EQUAL" if a == b else "DIFFER")
PY
      done
    done
    stamp done
  } >"$out/florence2.txt" 2>&1
  cat "$out/florence2.txt"
  exit 0
fi
if [[ $mode == f16ab ]]; then
  builds=()
  for d in .device/node/web*/; do
    d=${d%/}
    [[ -f $d/wgi.wasm.xz ]] && xz -dc "$d/wgi.wasm.xz" >"$d/wgi.wasm"
    builds+=("$d")
  done
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks_throttle_reasons.active --format=csv -lms 500 >"$out/smi.csv" 2>&1 &
  smi=$!
  tg=$toggles,disable_robustness,disable_workgroup_init
  declare -A ab
  {
    echo "# date: $(date -u +%F' '%T) UTC"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
    stamp weights; timeout 120 python3 tests/models/fill_weights.py "$models" | tail -3
    for name in "${names[@]}"; do
      model=$models/$name/model.onnx
      [[ -f $model ]] || { echo "## $name missing"; continue; }
      for batch in ${WGI_AB_BATCHES:-1 8}; do
        for round in 1 2 f32; do
          for d in "${builds[@]}"; do
            b=$(basename "$d")
            precision=f16
            if [[ $round == f32 ]]; then
              [[ $d == "${builds[0]}" ]] || continue
              precision=f32
            fi
            if ((SECONDS - start > ${WGI_NODE_BUDGET_S:-520})); then continue; fi
            cp "$d/wgi.js" "$d/wgi.wasm" build/web/
            log=$out/ab.$name.$batch.$b.$round.txt
            timeout 120 node web/cli.mjs bench "$model" --random-inputs 1 --dim batch=$batch --runs 20 \
              --warmup 3 --toggles "$tg" --precision $precision ${WGI_AB_PROFILE:+--profile} >"$log" 2>&1
            ab[$name.$batch.$b.$round]=$(median "$log")
            echo "$name b$batch $b $precision round $round: $(grep '^run:' "$log" | head -1)"
          done
        done
      done
    done
    stamp done
  } >"$out/f16ab.txt" 2>&1
  kill $smi 2>/dev/null
  {
    printf '| model | batch | f32 (%s) |' "$(basename "${builds[0]}")"
    for d in "${builds[@]}"; do printf ' f16 %s, rounds 1 / 2 |' "$(basename "$d")"; done
    echo
    printf '|---|---|---|'; for d in "${builds[@]}"; do printf -- '---|'; done; echo
    for name in "${names[@]}"; do
      for batch in ${WGI_AB_BATCHES:-1 8}; do
        printf '| %s | %s | %s |' "$name" "$batch" "${ab[$name.$batch.$(basename "${builds[0]}").f32]:--}"
        for d in "${builds[@]}"; do
          b=$(basename "$d")
          printf ' %s / %s |' "${ab[$name.$batch.$b.1]:--}" "${ab[$name.$batch.$b.2]:--}"
        done
        echo
      done
    done
  } >"$out/f16ab_table.md"
  cat "$out/f16ab.txt" "$out/f16ab_table.md"
  exit 0
fi
if [[ $mode == probe ]]; then
  nvidia-smi --query-gpu=timestamp,name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 >"$out/smi.csv" 2>&1 &
  smi=$!
  default_variants="tile:ks=64,db=0,sgr=2 tile:ks=64,db=0,sgr=2,nostage=1 tile:ks=64,db=0,sgr=2,nostage=1,pad=0
    tile:ks=64,db=0,sgr=2,nomma=1 tile:ks=64,db=0,sgr=2,halves=1 tile:ks=32,db=1,sgr=2 tile:ks=32,db=0,sgr=2
    tile:ks=32,db=1 tile:sg=4,sgr=2,tm=128,tn=64,ks=64,db=0 tile:sg=4,sgr=2,tm=128,tn=64,ks=32,db=1
    tile:sg=8,sgr=4,tm=128,tn=64,ks=64,db=0,nostage=1 tile:sg=4,sgr=2,tm=128,tn=128,ks=32,db=0,nostage=1
    tile:sg=16,sgr=4,tm=256,tn=128,ks=32,db=0 tile:ks=64,db=0,sgr=2,edge=1,eguard=0,estore=1"
  read -r -a variants <<<"$(echo ${WGI_PROBE_VARIANTS:-$default_variants})"
  {
    echo "# date: $(date -u +%F' '%T) UTC"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
    stamp PyTorch 4096^3
    timeout 60 python3 - <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
for dt in (torch.float16, torch.float32):
    a = torch.randn(4096, 4096, device='cuda', dtype=dt); b = torch.randn(4096, 4096, device='cuda', dtype=dt)
    for _ in range(5): a @ b
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        s.record()
        for _ in range(10): a @ b
        e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 10)
    ms = sorted(times)[2]
    print(f"torch {dt} 4096^3: {ms:.3f} ms, {2 * 4096**3 / ms / 1e9:.1f} TFLOP/s")
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
for dt in (torch.float16, torch.float32):
    x = torch.randn(8, 256, 56, 56, device='cuda', dtype=dt); w = torch.randn(256, 256, 3, 3, device='cuda', dtype=dt)
    for _ in range(10): torch.nn.functional.conv2d(x, w, padding=1)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        s.record()
        for _ in range(20): torch.nn.functional.conv2d(x, w, padding=1)
        e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 20)
    ms = sorted(times)[2]
    print(f"torch {dt} conv 3x3 8x256x56x56 -> 256: {ms:.4f} ms, {2 * 8 * 56 * 56 * 256 * 2304 / ms / 1e9:.1f} TFLOP/s")
PY
    for t in ${WGI_PROBE_TOGGLE_SETS:-robust native}; do
      tg=$toggles
      [[ $t == native ]] && tg=$toggles,disable_robustness,disable_workgroup_init
      stamp "probe variants, $t: $tg"
      SGM_TOGGLES=$tg timeout 200 node bench/sgm_gemm_probe.mjs "$WGI_DAWN_NODE" "${variants[@]}" 2>&1 |
        without_tint_warnings
    done
    if [[ ${WGI_PROBE_WGI:-1} == 1 ]]; then
      stamp "wgi's kernel (tests/web/node_f16.mjs --bench), native toggles"
      WGI_PYTHON=python3 timeout 150 node tests/web/node_f16.mjs --backend vulkan \
        --toggles "$toggles,disable_robustness,disable_workgroup_init" --bench 2>&1 | grep "^|\|node_f16\|^PASS\|^FAIL"
      # A kernel change against the build before it, in the same call: .device/node/web_base/ (as for f16ab).
      stamp "the same with each build in .device/node/web_*/"
      bench_other_builds
    fi
    stamp done
  } >"$out/probe.txt" 2>&1
  kill $smi 2>/dev/null
  awk -F', ' 'NR > 1 { print $3, $8 }' "$out/smi.csv" | sort | uniq -c | sort -rn | head -12 >>"$out/probe.txt"
  cat "$out/probe.txt"
  exit 0
fi
if [[ $mode == f16 ]]; then
  export WGI_PYTHON=python3
  {
    stamp weights; timeout 120 python3 tests/models/fill_weights.py "$models" | tail -3
    stamp tests/web/node_f16.mjs, NVIDIA toggles
    timeout 200 node tests/web/node_f16.mjs --backend vulkan --toggles "$toggles" --bench 2>&1 | without_tint_warnings
    stamp tests/web/node_f16.mjs, native wgi\'s toggles too
    timeout 120 node tests/web/node_f16.mjs --backend vulkan --toggles "$toggles,disable_robustness,disable_workgroup_init" --bench 2>&1 | grep "^|\|node_f16"
  } >"$out/node_f16.txt" 2>&1
  declare -A f16
  for name in "${names[@]}"; do
    model=$models/$name/model.onnx
    [[ -f $model ]] || continue
    for batch in 1 8; do
      for t in robust native; do
        tg=$toggles
        [[ $t == native ]] && tg=$toggles,disable_robustness,disable_workgroup_init
        for precision in f32 f16; do
          if ((SECONDS - start > ${WGI_NODE_BUDGET_S:-480})); then continue; fi
          log=$out/$name.b$batch.$t.$precision.txt
          { stamp "$name batch $batch $t $precision"
            timeout 150 node web/cli.mjs bench "$model" --random-inputs 1 --dim batch=$batch --runs 20 --warmup 3 \
              --toggles "$tg" --precision $precision 2>&1 | without_tint_warnings
          } >"$log" 2>&1
          tail -4 "$log" >>"$out/node_f16.txt"
          f16[$name.$batch.$t.$precision]=$(median "$log")
        done
      done
    done
  done
  {
    echo "| model | batch | f32 ms (robustness on) | f16 ms | f32 / f16 | f32 ms (native toggles) | f16 ms | f32 / f16 |"
    echo "|---|---|---|---|---|---|---|---|"
    ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
    for name in "${names[@]}"; do
      for batch in 1 8; do
        a=${f16[$name.$batch.robust.f32]:-} b=${f16[$name.$batch.robust.f16]:-}
        c=${f16[$name.$batch.native.f32]:-} d=${f16[$name.$batch.native.f16]:-}
        echo "| $name | $batch | ${a:--} | ${b:--} | $(ratio "$a" "$b") | ${c:--} | ${d:--} | $(ratio "$c" "$d") |"
      done
    done
  } >"$out/f16_table.md"
  cat "$out/node_f16.txt" "$out/f16_table.md"
  exit 0
fi
first() { sed -n 's/^first run: *\([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
# ORT's WebGPU EP (onnxruntime-node, ../shared/device/ort_bench.js) where packed: in .device/peers or, carried
# by a second call, .device_ort/peers. It prints one JSON line; its median and first run are read from there.
ort_bench=
for d in .device/peers .device_ort/peers; do
  [[ -f $d/ort_bench.js && -d $d/ort ]] && ort_bench=$d/ort_bench.js
done
if [[ -n $ort_bench ]]; then
  x=$(dirname "$ort_bench")/ort/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
  [[ -f $x.xz ]] && xz -d "$x.xz"
fi
ort_shape() {
  case $1 in
    florence2*) echo pixel_values=1x3x768x768 ;;
    resnet*) echo image=1x3x224x224 ;;
    *) echo pixel_values=1x3x224x224 ;;
  esac
}
json_ms() { sed -n "s/.*\"$2\": *\([0-9.]*\).*/\1/p" "$1" | head -1; }
{
  echo "# date: $(date -u +%F' '%T) UTC"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
  echo "# node $(node --version)"
  if [[ $mode == run ]]; then
    stamp weights; timeout 120 python3 tests/models/fill_weights.py "$models" | tail -3
  fi
  stamp native adapter; timeout 60 "$wgi" info 2>&1 | head -20
  stamp dawn.node adapter, no toggles; timeout 60 node web/cli.mjs info 2>&1 | grep -v '^  max\|^  min\|^limits'
  stamp dawn.node adapter, --toggles "$toggles"; timeout 60 node web/cli.mjs info --toggles "$toggles" 2>&1
} >"$out/node_campaign.txt" 2>&1
declare -A result
logs=()
for name in "${names[@]}"; do
  model=$models/$name/model.onnx
  if [[ ! -f $model ]]; then
    echo "## $name: $model missing (build it: tests/models/resnet.py --large / florence_siglip.py --large)" \
      >>"$out/node_campaign.txt"
    continue
  fi
  common=(--random-inputs 1 --dim batch=1 --runs "$runs" --warmup "$warmup")
  variants=(native node)
  # On one model: the shaders native wgi runs (Dawn's robustness and workgroup zeroing off, which no browser
  # allows), and no toggles at all.
  [[ $name == "${names[0]}" ]] && variants+=(node_as_native node_no_toggles)
  [[ -n $ort_bench ]] && variants+=(ort)
  for variant in "${variants[@]}"; do
    log=$out/$name.$variant.txt
    # One device call has 600 s: later steps are skipped rather than cut off mid-way.
    if ((SECONDS - start > ${WGI_NODE_BUDGET_S:-480})); then
      echo "## $variant bench $name: skipped (time budget spent)" >>"$out/node_campaign.txt"
      continue
    fi
    logs+=("$(basename "$log")")
    {
      stamp "$variant bench $name"
      case $variant in
        native) timeout 90 "$wgi" bench "$model" "${common[@]}" ;;
        node) timeout 150 node web/cli.mjs bench "$model" "${common[@]}" --toggles "$toggles" ;;
        node_as_native) timeout 120 node web/cli.mjs bench "$model" "${common[@]}" \
                          --toggles "$toggles,disable_robustness,disable_workgroup_init" ;;
        node_no_toggles) timeout 120 node web/cli.mjs bench "$model" "${common[@]}" ;;
        ort) timeout 120 node "$ort_bench" "$model" webgpu "$runs" "$(ort_shape "$name")" ;;
      esac
      echo "exit $?"
    } >"$log" 2>&1
    grep -v '^\s*$' "$log" | tail -12 >>"$out/node_campaign.txt"
    if [[ $variant == ort ]]; then
      result[$name.$variant]="$(json_ms "$log" median_ms) $(json_ms "$log" first_ms)"
    else
      result[$name.$variant]="$(median "$log") $(first "$log")"
    fi
  done
done
times_of() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "-" }'; }
{
  echo "| model | native wgi median ms | node (toggles) median ms | node / native | node, native's toggles too | node, no toggles | ORT WebGPU EP median ms | ORT / native | first run native / node / ORT ms |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for name in "${names[@]}"; do
    read -r n nf <<<"${result[$name.native]:-}"
    read -r w wf <<<"${result[$name.node]:-}"
    read -r wn _ <<<"${result[$name.node_as_native]:-}"
    read -r w0 _ <<<"${result[$name.node_no_toggles]:-}"
    read -r o of <<<"${result[$name.ort]:-}"
    echo "| $name | ${n:--} | ${w:--} | $(times_of "$n" "$w") | ${wn:--} | ${w0:--} | ${o:--} | $(times_of "$n" "$o") | ${nf:--} / ${wf:--} / ${of:--} |"
  done
} >"$out/table.md"
# At most 8 files come back from a device call: the per-run logs (their tails are in node_campaign.txt) as one.
tar -C "$out" -czf "$out/run_logs.tgz" "${logs[@]}" 2>/dev/null && (cd "$out" && rm -f "${logs[@]}")
# Subgroup-matrix GEMM probes on the same dawn.node (issue 21 item 3; bench/sgm_gemm_probe.mjs).
if [[ $mode == run ]]; then
  {
    stamp subgroup-matrix GEMM probes
    timeout 150 node bench/sgm_gemm_probe.mjs "$WGI_DAWN_NODE" 2>&1 | head -80
    echo "exit $?"
  } >"$out/sgm_gemm_probe.txt" 2>&1
fi
cat "$out/node_campaign.txt" "$out/table.md" "$out/sgm_gemm_probe.txt" 2>/dev/null || true  # no probes in `tiny`
