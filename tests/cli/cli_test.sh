#!/usr/bin/env bash
# End-to-end checks of the `wgi` command line on small models (ctest runs it once per CPU backend):
# exit codes, the messages a user sees, and the files `wgi run` writes.
# Usage: cli_test.sh WGI_BINARY MODELS_DIR
set -uo pipefail
wgi=$1
models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every command below reads (and `wgi tune` writes) this tuning cache, never the user's ~/.cache/wgi.
export WGI_TUNING_CACHE="$work/tuning.json"
failures=0
check() {  # check NAME EXPECTED_EXIT PATTERN -- COMMAND...
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; failures=$((failures + 1)); return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/"; echo "$out" | head -20; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}
json_ok() { node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$1"; }

check "info" 0 "^backend: " -- "$wgi" info
"$wgi" info --json >"$work/info.json" && json_ok "$work/info.json" && echo "ok   info --json parses" ||
  { echo "FAIL info --json"; failures=$((failures + 1)); }
check "info bad backend" 1 "unknown backend 'metal'" -- "$wgi" info --backend metal
check "no command" 106 "" -- "$wgi"
check "help" 0 "run.*Run a model once" -- "$wgi" --help

check "check supported" 0 "all 4 nodes can run \(3 after optimisation\): 3 on the GPU" -- "$wgi" check "$models/gemm_chain/model.onnx"
check "check unsupported" 1 "TopK.*op missing" -- "$wgi" check "$models/unsupported/model.onnx"
check "check lists every node" 1 "Det.*op missing" -- "$wgi" check "$models/unsupported/model.onnx"
check "check symbolic dims" 0 "give --dim for image \(N\)" -- "$wgi" check "$models/conv_bn_relu/model.onnx"
check "check with --dim" 0 "can run \(3 after optimisation\): 3 on the GPU" -- "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N=2
check "check missing file" 1 "cannot|No such|not" -- "$wgi" check "$work/nothing.onnx"
check "check bad --dim" 1 "NAME=VALUE" -- "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N
check "check q4 variant" 0 "all 262 nodes can run" -- "$wgi" check \
  "$models/variants/bart_decoder_tiny_opset17_q4/model.onnx" --dim batch=1 --dim new_tokens=1 --dim src_len=5 --dim past_len=3
check "check unknown contrib op" 1 "FancyContribOp \(com.microsoft opset 1\): op missing" -- "$wgi" check \
  "$models/variants/unknown_contrib/model.onnx"

check "run" 0 "y: float32 \[5, 8\], min" -- "$wgi" run "$models/gemm_chain/model.onnx" \
  --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/run"
[[ -s $work/run/y.npy ]] && echo "ok   run wrote y.npy" || { echo "FAIL run wrote no y.npy"; failures=$((failures + 1)); }
check "run missing input" 1 "no value for input\(s\) x" -- "$wgi" run "$models/gemm_chain/model.onnx" --output-dir "$work/x"
check "run unknown input" 1 "has no input 'z'" -- "$wgi" run "$models/gemm_chain/model.onnx" \
  --input "z=$models/gemm_chain/input_x.npy" --output-dir "$work/x"
check "run wrong shape" 1 "has shape \[5, 20\] \(rank 2\); the model expects rank 4" -- "$wgi" run "$models/conv_bn_relu/model.onnx" \
  --input "image=$models/gemm_chain/input_x.npy" --output-dir "$work/x"
check "run random needs --dim" 1 "--dim N=VALUE" -- "$wgi" run "$models/conv_bn_relu/model.onnx" \
  --random-inputs 3 --output-dir "$work/x"
check "run random" 0 "probabilities: float32 \[2, 4, 10, 12\]" -- "$wgi" run "$models/conv_bn_relu/model.onnx" \
  --random-inputs 3 --dim N=2 --output-dir "$work/random"
check "run odd output names" 0 "out/relu:0: .* -> .*out_relu_0.npy" -- "$wgi" run "$models/odd_names/model.onnx" \
  --random-inputs 1 --output-dir "$work/odd"
[[ -s $work/odd/out_relu_0.npy && -s $work/odd/neg_output.npy ]] && echo "ok   odd names sanitised" ||
  { echo "FAIL odd names"; ls "$work/odd"; failures=$((failures + 1)); }

check "bench" 0 "run: +median .* ms, p90" -- "$wgi" bench "$models/gemm_chain/model.onnx" --runs 3 --warmup 1
check "bench --profile --trace" 0 "(GPU time by op type|no timestamp-query)" -- "$wgi" bench \
  "$models/conv_bn_relu/model.onnx" --dim N=1 --runs 2 --warmup 0 --profile --trace "$work/trace.json"
if "$wgi" info | grep -q "timestamp-query yes"; then
  json_ok "$work/trace.json" && grep -q '"ph":"X"' "$work/trace.json" && echo "ok   trace written" ||
    { echo "FAIL trace"; failures=$((failures + 1)); }
fi
check "bench bad --runs" 105 "" -- "$wgi" bench "$models/gemm_chain/model.onnx" --runs 0
check "bench --device-inputs" 0 "run: +median .*inputs already on the device" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --runs 3 --warmup 1 --device-inputs
decoder="$models/bart_decoder_cached_cross_tiny_opset17/model.onnx"
check "bench --decode" 0 "later: +median .* over 3 steps" -- "$wgi" bench "$decoder" --dim batch=1 \
  --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 4 --device-inputs --plan-cache 2
check "bench --decode host" 0 "^ +3 +7 " -- "$wgi" bench "$decoder" --dim batch=1 --dim new_tokens=1 \
  --dim past_len=4 --dim src_len=5 --decode 4
check "bench --decode not a decoder" 1 "--decode needs a decoder step model" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --decode 2

# GEMM tuning (docs/tuning.md): measure, skip what the cache has, the cache in use said on stderr. One
# measuring run only: SwiftShader compiles each candidate's pipeline in about a second (--force is covered by
# tests/gpu/test_tuning.cpp through Session::tune).
check_each() {  # check_each NAME EXPECTED_EXIT PATTERN... -- COMMAND...: every pattern must match
  local name=$1 want=$2 patterns=() out rc p
  shift 2
  while [[ $1 != -- ]]; do patterns+=("$1"); shift; done
  shift
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; failures=$((failures + 1)); return
  fi
  for p in "${patterns[@]}"; do
    if ! grep -qE -- "$p" <<<"$out"; then
      echo "FAIL $name: output lacks /$p/"; echo "$out" | head -20; failures=$((failures + 1)); return
    fi
  done
  echo "ok   $name"
}
check "help lists tune" 0 "tune.*Measure GEMM configurations" -- "$wgi" --help
check_each "tune" 0 "3 GEMM problems: 3 measured" "cache: +$work/tuning.json \(written\)" \
  "^5x24x20 B=weight +fc1 +[a-z0-9 ]+ +[0-9.]+ +[a-z0-9 ]+ +[0-9.]+ +[0-9.]+x +[0-9]+ candidates" \
  -- "$wgi" tune "$models/gemm_chain/model.onnx" --runs 1
json_ok "$work/tuning.json" && grep -q '"m": 5, "n": 24, "k": 20' "$work/tuning.json" && echo "ok   tune wrote the cache" ||
  { echo "FAIL tune wrote no cache"; failures=$((failures + 1)); }
check_each "tune again: cached" 0 "3 GEMM problems: 0 measured, 3 from the cache" "\(unchanged\)" "cached$" \
  -- "$wgi" tune "$models/gemm_chain/model.onnx" --cache "$work/tuning.json"
check "tune needs dims" 1 "--dim N=VALUE" -- "$wgi" tune "$models/conv_bn_relu/model.onnx"
check_each "bench with the cache" 0 "wgi: tuning cache $work/tuning.json: 3 entries for this adapter" \
  "tuning: +3 of the last plan's 3 GEMMs" -- "$wgi" bench "$models/gemm_chain/model.onnx" --runs 1 --warmup 0
check "run says which cache" 0 "wgi: tuning cache .*tuning.json" -- "$wgi" run "$models/gemm_chain/model.onnx" \
  --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/tuned"
if "$wgi" run "$models/gemm_chain/model.onnx" --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/x" \
  --no-tuning-cache 2>&1 | grep -q "tuning cache"; then
  echo "FAIL run --no-tuning-cache still read a cache"; failures=$((failures + 1))
else
  echo "ok   run --no-tuning-cache"
fi
printf '{"format": "wgi-tuning", "version": 1, "entries": [' >"$work/broken.json"
check "run ignores a malformed cache" 0 "ignoring the tuning cache .*broken.json: line 1" -- env \
  WGI_TUNING_CACHE="$work/broken.json" "$wgi" run "$models/gemm_chain/model.onnx" \
  --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/x"
echo '{"format": "wgi-tuning", "version": 99, "entries": []}' >"$work/future.json"
check "tune never overwrites a foreign cache" 1 "version 99 .*not overwriting it" -- "$wgi" tune \
  "$models/gemm_chain/model.onnx" --cache "$work/future.json"
grep -q '"version": 99' "$work/future.json" && echo "ok   foreign cache kept" ||
  { echo "FAIL foreign cache overwritten"; failures=$((failures + 1)); }
check "tune without a cache location" 1 "no tuning cache location" -- env WGI_TUNING_CACHE= "$wgi" tune \
  "$models/gemm_chain/model.onnx"

echo "$failures failure(s)"
exit $((failures > 0))
