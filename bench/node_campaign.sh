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
# Results: $OUT/node_campaign.txt, $OUT/table.md and $OUT/sgm_gemm_probe.txt.
set -uo pipefail
mode=${1:?usage: bench/node_campaign.sh pack|run|tiny}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
toggles=${WGI_NODE_TOGGLES:-allow_unsafe_apis,vulkan_enable_f16_on_nvidia}

if [[ $mode == pack ]]; then
  set -e
  for f in build/web/wgi.js build/web/wgi.wasm third_party/dawn-node/dist/linux-x64/dawn.node build/release/wgi; do
    [[ -f $f ]] || { echo "node_campaign: $f missing (scripts/build release, scripts/build-web, scripts/setup)" >&2; exit 1; }
  done
  bash bench/h200_pack.sh models  # wgi, the base-size models without their weights, node (+ ORT)
  # Only what this campaign uses travels (64 MiB in all): not ORT, wgi_bench_ops or the decoder models.
  rm -rf .device/peers/ort .device/bin/wgi_bench_ops* .device/models/bart_decoder_*
  mkdir -p .device/node/dawn-node/dist/linux-x64 .device/node/web
  cp third_party/dawn-node/index.js third_party/dawn-node/package.json third_party/dawn-node/LICENSE.md \
    .device/node/dawn-node/
  xz -T2 -6 -c third_party/dawn-node/dist/linux-x64/dawn.node >.device/node/dawn-node/dist/linux-x64/dawn.node.xz
  cp build/web/wgi.js .device/node/web/
  xz -T2 -6 -c build/web/wgi.wasm >.device/node/web/wgi.wasm.xz
  du -sh .device | awk '{print "travels: " $2 " " $1}'
  exit 0
fi

out=${OUT:-/tmp/wgi-node-campaign}
mkdir -p "$out"
start=$SECONDS
stamp() { echo "## [$((SECONDS - start)) s] $*"; }
runs=30 warmup=3
if [[ $mode == run || $mode == f16 ]]; then
  for f in .device/bin/*.xz; do [[ -f $f ]] && xz -d "$f" && chmod +x "${f%.xz}"; done
  x=.device/node/dawn-node/dist/linux-x64/dawn.node
  [[ -f $x.xz ]] && xz -d "$x.xz"
  mkdir -p build/web
  cp .device/node/web/wgi.js build/web/
  [[ -f .device/node/web/wgi.wasm.xz ]] && xz -dc .device/node/web/wgi.wasm.xz >build/web/wgi.wasm
  export WGI_DAWN_NODE=$root/.device/node/dawn-node WGI_BACKEND=vulkan
  wgi=wgi
  models=.device/models
  names=(siglip_vision_base_opset17 florence2_vision_base_opset17 resnet50_opset17)
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

median() { sed -n 's/^run: *median \([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
if [[ $mode == f16 ]]; then
  export WGI_PYTHON=python3
  {
    stamp weights; timeout 120 python3 tests/models/fill_weights.py "$models" | tail -3
    stamp tests/web/node_f16.mjs, NVIDIA toggles
    timeout 200 node tests/web/node_f16.mjs --backend vulkan --toggles "$toggles" --bench 2>&1 | grep -v "deprecated\|^ *\^\|subgroupMatrix\|^$\|^warning:\|Compilation log\|warning(s) generated"
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
              --toggles "$tg" --precision $precision 2>&1 | grep -v "deprecated\|^ *\^\|subgroupMatrix\|^$\|^warning:\|Compilation log\|warning(s) generated"
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
  for variant in "${variants[@]}"; do
    log=$out/$name.$variant.txt
    # One device call has 600 s: later steps are skipped rather than cut off mid-way.
    if ((SECONDS - start > ${WGI_NODE_BUDGET_S:-480})); then
      echo "## $variant bench $name: skipped (time budget spent)" >>"$out/node_campaign.txt"
      continue
    fi
    {
      stamp "$variant bench $name"
      case $variant in
        native) timeout 90 "$wgi" bench "$model" "${common[@]}" ;;
        node) timeout 150 node web/cli.mjs bench "$model" "${common[@]}" --toggles "$toggles" ;;
        node_as_native) timeout 120 node web/cli.mjs bench "$model" "${common[@]}" \
                          --toggles "$toggles,disable_robustness,disable_workgroup_init" ;;
        node_no_toggles) timeout 120 node web/cli.mjs bench "$model" "${common[@]}" ;;
      esac
      echo "exit $?"
    } >"$log" 2>&1
    grep -v '^\s*$' "$log" | tail -12 >>"$out/node_campaign.txt"
    result[$name.$variant]="$(median "$log") $(first "$log")"
  done
done
{
  echo "| model | native wgi median ms | node (toggles) median ms | node / native | node, native's toggles too | node, no toggles | first run native / node ms |"
  echo "|---|---|---|---|---|---|---|"
  for name in "${names[@]}"; do
    read -r n nf <<<"${result[$name.native]:-}"
    read -r w wf <<<"${result[$name.node]:-}"
    read -r wn _ <<<"${result[$name.node_as_native]:-}"
    read -r w0 _ <<<"${result[$name.node_no_toggles]:-}"
    ratio=$(awk -v a="${n:-0}" -v b="${w:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "-" }')
    echo "| $name | ${n:--} | ${w:--} | $ratio | ${wn:--} | ${w0:--} | ${nf:--} / ${wf:--} |"
  done
} >"$out/table.md"
# Subgroup-matrix GEMM probes on the same dawn.node (issue 21 item 3; bench/sgm_gemm_probe.mjs).
if [[ $mode == run ]]; then
  {
    stamp subgroup-matrix GEMM probes
    timeout 150 node bench/sgm_gemm_probe.mjs "$WGI_DAWN_NODE" 2>&1 | head -80
    echo "exit $?"
  } >"$out/sgm_gemm_probe.txt" 2>&1
fi
cat "$out/node_campaign.txt" "$out/table.md" "$out/sgm_gemm_probe.txt" 2>/dev/null
