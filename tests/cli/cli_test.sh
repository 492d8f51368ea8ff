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
check "check unsupported" 1 "NegativeLogLikelihoodLoss.*op missing" -- "$wgi" check "$models/unsupported/model.onnx"
check "check lists every node" 1 "SoftmaxCrossEntropyLoss.*op missing" -- "$wgi" check "$models/unsupported/model.onnx"
check "check symbolic dims" 0 "--dim N=VALUE \(image dim 0\)" -- "$wgi" check "$models/conv_bn_relu/model.onnx"
check "check with --dim" 0 "can run \(3 after optimisation\): 3 on the GPU" -- "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N=2
check "check missing file" 1 "cannot|No such|not" -- "$wgi" check "$work/nothing.onnx"
check "check bad --dim" 1 "NAME=VALUE" -- "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N
check "check q4 variant" 0 "all 262 nodes can run" -- "$wgi" check \
  "$models/variants/bart_decoder_tiny_opset17_q4/model.onnx" --dim batch=1 --dim new_tokens=1 --dim src_len=5 --dim past_len=3
check "check unknown contrib op" 1 "FancyContribOp \(com.microsoft opset 1\): op missing" -- "$wgi" check \
  "$models/variants/unknown_contrib/model.onnx"
# --precision f16: the plan of a float16-compute session on a large GPU (no such adapter here), its attention
# and products on subgroup matrices; refused without --device-limits large.
check "check --precision f16" 0 "attention_matrix_f16" -- "$wgi" check \
  "$models/siglip_vision_tiny_opset17/model.onnx" --dim batch=2 --device-limits large --precision f16 --kernels
check "check --precision f16 default limits" 1 "--precision f16 needs --device-limits large" -- "$wgi" check \
  "$models/gemm_chain/model.onnx" --precision f16

check "run" 0 "y: float32 \[5, 8\], min" -- "$wgi" run "$models/gemm_chain/model.onnx" \
  --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/run"
[[ -s $work/run/y.npy ]] && echo "ok   run wrote y.npy" || { echo "FAIL run wrote no y.npy"; failures=$((failures + 1)); }
check "run --disable-passes: unknown name lists the passes" 1 "--disable-passes names 'fuse_everything', which is not a graph pass; the passes: eliminate_identities, " -- "$wgi" run "$models/gemm_chain/model.onnx" --random-inputs 1 --disable-passes fuse_everything --output-dir "$work/unknown_pass"
WGI_DISABLE_PASSES=fuse_activations check "run with WGI_DISABLE_PASSES" 0 "y: float32 \[5, 8\], min" -- "$wgi" run "$models/gemm_chain/model.onnx" --random-inputs 1 --output-dir "$work/disabled"
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
if "$wgi" info | grep -q "timestamp-query yes"; then
  check "bench --profile --trace" 0 "GPU time by op type" -- "$wgi" bench \
    "$models/conv_bn_relu/model.onnx" --dim N=1 --runs 2 --warmup 0 --profile --trace "$work/trace.json"
  # Each node's time grouped by its kernel (rows "  <ms> ms  x<count>  <kernel>") and the slowest nodes.
  check "bench --profile by kernel" 0 "^ +[0-9.]+ ms  x[0-9]+  [a-z]" -- "$wgi" bench \
    "$models/conv_bn_relu/model.onnx" --dim N=1 --runs 2 --warmup 0 --profile
  json_ok "$work/trace.json" && grep -q '"ph":"X"' "$work/trace.json" && echo "ok   trace written" ||
    { echo "FAIL trace"; failures=$((failures + 1)); }
else  # no timestamps: --profile says so; --trace cannot be honoured and fails (it wrote nothing, exit 0)
  check "bench --profile without timestamps" 0 "profile: .*no timestamp-query" -- "$wgi" bench \
    "$models/conv_bn_relu/model.onnx" --dim N=1 --runs 2 --warmup 0 --profile
  check "bench --trace without timestamps" 1 "--trace needs per-node GPU times, and .*no timestamp-query" -- \
    "$wgi" bench "$models/gemm_chain/model.onnx" --runs 1 --warmup 0 --trace "$work/trace2.json"
fi
check "bench bad --runs" 105 "--runs: must be an integer of at least 1, not '0'" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --runs 0
check "bench bad --warmup-ms" 105 "--warmup-ms: Value -5 not in range" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --warmup-ms -5
check "bench --device-inputs" 0 "run: +median .*inputs already on the device" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --runs 3 --warmup 1 --device-inputs
decoder="$models/bart_decoder_cached_cross_tiny_opset17/model.onnx"
check "bench --decode" 0 "later: +median .* over 3 steps" -- "$wgi" bench "$decoder" --dim batch=1 \
  --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 4 --device-inputs --plan-cache 2
check "bench --decode tokens on the GPU" 0 "tokens chosen on the GPU and fed back on it" -- "$wgi" bench \
  "$decoder" --dim batch=1 --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 3 --device-inputs
check "bench --decode --host-argmax" 0 "tokens chosen on the host from the downloaded logits" -- "$wgi" bench \
  "$decoder" --dim batch=1 --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 3 --device-inputs \
  --host-argmax
check "bench --decode plans ahead" 0 "ahead: +median .* [1-9][0-9]* of [1-9][0-9]* plannings ahead matched" -- \
  "$wgi" bench "$decoder" --dim batch=1 --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 6 \
  --device-inputs
check "bench --decode --no-plan-ahead" 0 "ahead: +median 0.000 ms .* 0 of 0 plannings" -- "$wgi" bench \
  "$decoder" --dim batch=1 --dim new_tokens=1 --dim past_len=4 --dim src_len=5 --decode 6 --no-plan-ahead
check "bench --decode host" 0 "^ +3 +7 " -- "$wgi" bench "$decoder" --dim batch=1 --dim new_tokens=1 \
  --dim past_len=4 --dim src_len=5 --decode 4
check "bench --decode not a decoder" 1 "--decode needs a decoder step model" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --decode 2
check "bench --decode --host-argmax not a decoder" 1 "--decode needs a decoder step model" -- "$wgi" bench \
  "$models/gemm_chain/model.onnx" --decode 2 --host-argmax

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
  -- "$wgi" tune "$models/gemm_chain/model.onnx" --tuning-cache "$work/tuning.json"
check_each "tune --cache: the deprecated alias" 0 "--cache is deprecated; use --tuning-cache" "0 measured, 3 from the cache" \
  -- "$wgi" tune "$models/gemm_chain/model.onnx" --cache "$work/tuning.json"
mkdir -p "$work/readonly" && chmod a-w "$work/readonly"
if [[ ! -w $work/readonly ]]; then  # root writes anywhere: the check only means something for other users
  check "tune: unwritable cache refused before measuring" 1 "tuning cache .*readonly/t.json. cannot be created" -- \
    "$wgi" tune "$models/gemm_chain/model.onnx" --tuning-cache "$work/readonly/t.json"
fi
check "tune: cache under a file refused before measuring" 1 "cannot be created: .* is not a directory" -- \
  "$wgi" tune "$models/gemm_chain/model.onnx" --tuning-cache "$work/tuning.json/sub/t.json"
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
  "$models/gemm_chain/model.onnx" --tuning-cache "$work/future.json"
grep -q '"version": 99' "$work/future.json" && echo "ok   foreign cache kept" ||
  { echo "FAIL foreign cache overwritten"; failures=$((failures + 1)); }
check "tune without a cache location" 1 "no tuning cache location" -- env WGI_TUNING_CACHE= "$wgi" tune \
  "$models/gemm_chain/model.onnx"

# Hostile and unusual inputs (issue 18): every one a clear error or a right answer, never an abort (134) or a
# silently wrong result. The models and .npy files are written by make_models.py.
hm="$work/hostile"
python3 "$(dirname "${BASH_SOURCE[0]}")/make_models.py" "$hm"
gemm="$models/gemm_chain/model.onnx"
check "unknown command" 109 "unknown command 'frob' \(commands: info, check, run, bench, tune" -- "$wgi" frob
check "npy header cut after descr" 1 "x_cut.npy.*malformed .npy header: expected the descr string" -- "$wgi" run \
  "$hm/rankless.onnx" --input "x=$hm/x_cut.npy" --output-dir "$work/h"
check "npy dim past int64" 1 "a dimension larger than 2\^63 - 1" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_huge_dim.npy" --output-dir "$work/h"
check "npy negative dim" 1 "a negative dimension" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_negative.npy" --output-dir "$work/h"
check "npy junk in shape" 1 "expected ',' or '\)' in the shape" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_junk.npy" --output-dir "$work/h"
check "npy bytes overflow" 1 "more bytes than fit in memory" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_overflow.npy" --output-dir "$work/h"
check "npy from /dev/zero" 1 "'/dev/zero': not a .npy file" -- timeout 20 "$wgi" run "$hm/rankless.onnx" \
  --input "x=/dev/zero" --output-dir "$work/h"
check "rank-less input from a file" 0 "y: float32 \[2, 3\], min 0, max 4" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_ok.npy" --output-dir "$work/h"
check "rank-less input not made up" 1 "input 'x' has no declared shape .*give it with --input" -- "$wgi" run \
  "$hm/rankless.onnx" --random-inputs 1 --output-dir "$work/h"
check "--input given twice" 1 "--input x is given twice" -- "$wgi" run "$hm/rankless.onnx" \
  --input "x=$hm/x_ok.npy" --input "x=$hm/x_ok.npy" --output-dir "$work/h"
check "--dim given twice" 1 "--dim N is given twice" -- "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N=1 --dim N=2
check "--dim of no input warned" 0 "warning: --dim NN: no input of the model has a dim named 'NN' \(its dims: N\)" -- \
  "$wgi" check "$models/conv_bn_relu/model.onnx" --dim N=1 --dim NN=2
check "random float16 inputs are not zeros" 0 "y: float32 \[3, 5\], min -0\.[0-9]+, max 0\.[0-9]+" -- "$wgi" run \
  "$hm/f16_input.onnx" --random-inputs 5 --output-dir "$work/h"
check "colliding output names" 0 "a_b: .* -> .*/a_b_2\.npy" -- "$wgi" run "$hm/collide.onnx" --input "x=$hm/x_ok.npy" \
  --output-dir "$work/collide"
node -e '
  const fs = require("fs"), dir = process.argv[1];
  const floats = (f) => { const b = fs.readFileSync(dir + "/" + f); return new Float32Array(b.buffer.slice(b.byteOffset + 128)); };
  const relu = floats("a_b.npy"), neg = floats("a_b_2.npy");
  process.exit(relu[1] === 0 && relu[0] === 0.5 && neg[1] === 1 && neg[0] === -0.5 ? 0 : 1);' "$work/collide" &&
  echo "ok   colliding outputs each in a file of its own" || { echo "FAIL colliding outputs"; failures=$((failures + 1)); }
touch "$work/a_file"
check "--output-dir is a file: refused before running" 1 "--output-dir .*a_file' exists and is not a directory" -- \
  "$wgi" run "$gemm" --input "x=$models/gemm_chain/input_x.npy" --output-dir "$work/a_file"
check "--output-dir under /proc" 1 "--output-dir '/proc/wgi_out': cannot create it" -- "$wgi" run "$gemm" \
  --input "x=$models/gemm_chain/input_x.npy" --output-dir /proc/wgi_out
check "random input past the device limit: no allocation" 1 "input 'image' \[1099511627776, 3, 10, 12\] float32 needs at least .* bytes on the device, more than one GPU buffer may hold" -- \
  "$wgi" run "$models/conv_bn_relu/model.onnx" --random-inputs 1 --dim N=1099511627776 --output-dir "$work/h"
check_each "check: every unsized dim, the unnamed too" 0 "--dim batch=VALUE \(a dim 0, b dim 0\)" \
  "--dim seq=VALUE \(a dim 1\)" "input 'b' dim 1 is unknown and has no name, so no --dim can size it" \
  -- "$wgi" check "$hm/dims.onnx"
check "check: buffer limits as run applies them" 1 "cannot run: node .*'big' \[268435456\] float32 needs 1073741824 bytes, more than one GPU buffer may hold" -- \
  "$wgi" check "$hm/big_constant.onnx"
check "check: a huge --dim hits the buffer limits" 1 "cannot run: node 'Relu_y' .*'y' \[268435456\] float32 needs 1073741824 bytes, more than one GPU buffer may hold" -- \
  "$wgi" check "$hm/relu_n.onnx" --dim n=268435456
check "check: the binding limit as run applies it" 1 "kernel 'unary_Relu_float32_vec4' binds 'x' \(binding 0\) of 160000000 bytes, more than maxStorageBufferBindingSize 134217728" -- \
  "$wgi" check "$hm/relu_n.onnx" --dim n=40000000
# 4 GiB: past maxBufferSize on both CPU adapters (1 GiB SwiftShader, 2 GiB llvmpipe); refused before the
# 4 GiB of host memory are allocated.
check "run: the device limit before allocating the input" 1 "input 'x' \[1073741824\] float32 needs 4294967296 bytes on the device, more than one GPU buffer may hold" -- \
  "$wgi" run "$hm/relu_n.onnx" --dim n=1073741824 --random-inputs 1 --output-dir "$work/h"
check "load cap on fan-in" 1 "node 0 \('wide', Sum\) has 5000 inputs and 1 outputs; wgi takes at most 4096" -- \
  "$wgi" check "$hm/wide_sum.onnx"
out=$("$wgi" check "$hm/escape_names.onnx" 2>&1)
if [[ $out == *$'\x1b'* || $out != *'Frob\x1B[2J'* ]]; then
  echo "FAIL model names escaped"; echo "$out" | cat -v | head -5; failures=$((failures + 1))
else
  echo "ok   model names escaped"
fi
check "info: no empty or made-up lines" 0 "^granted: +[^ ]" -- "$wgi" info
if "$wgi" info | grep -qE '^granted: *$|0x0:0xffffffff'; then
  echo "FAIL info prints an empty granted line or made-up ids"; failures=$((failures + 1))
else
  echo "ok   info prints no empty granted line or made-up ids"
fi
check "--adapter named as the option" 1 "matching the adapter filter 'no-such-adapter'" -- "$wgi" info --adapter no-such-adapter
if command -v script >/dev/null; then  # a pty: a run of over a second (N sized for CPU adapters) shows its time
  check "progress during a long run" 0 "running +[0-9]+\.[0-9] s" -- script -qec "'$wgi' run \
    '$models/conv_bn_relu/model.onnx' --random-inputs 1 --dim N=16384 --output-dir '$work/long'" /dev/null
fi
f2="$models/../pipelines/florence2_tiny"
if "$wgi" florence2 "$f2" "$f2/image.png" --task '<OCR_WITH_REGION>' --max-new-tokens 40 --num-beams 1 --json >"$work/f2.json" &&
  node -e 'const [a, b] = process.argv.slice(1).map((f) => JSON.parse(require("fs").readFileSync(f, "utf8")));
    for (const k of ["input_ids", "generated_ids", "generated_text", "parsed"])
      if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) { console.log(k, "differs"); process.exit(1); }' \
    "$work/f2.json" "$f2/expected_ocr_with_region.json"; then
  echo "ok   florence2 --json equals transformers.js"
else
  echo "FAIL florence2 --json differs from expected_ocr_with_region.json"; failures=$((failures + 1))
fi
# generation_config.json's 3 beams by default: Hugging Face's answer (tests/models/beam_search_reference.py).
if "$wgi" florence2 "$f2" "$f2/image.png" --task '<OCR_WITH_REGION>' --max-new-tokens 40 --json \
  --draw "$work/f2_drawn.png" >"$work/f2_beams.json" &&
  node -e 'const [a, b] = process.argv.slice(1).map((f) => JSON.parse(require("fs").readFileSync(f, "utf8")));
    if (a.num_beams !== 3 || JSON.stringify(a.generated_ids) !== JSON.stringify(b.generated_ids)) process.exit(1);' \
    "$work/f2_beams.json" "$f2/expected_beams_ocr_with_region.json"; then
  echo "ok   florence2 beam search --json equals Hugging Face's"
else
  echo "FAIL florence2 beam search --json differs from expected_beams_ocr_with_region.json"; failures=$((failures + 1))
fi
check "florence2 --draw outlines the quadrilaterals" 0 "pixels outlined" -- \
  node "$(dirname "$0")/florence2_draw_check.js" "$f2/image.png" "$work/f2_drawn.png" "$work/f2_beams.json"
check "florence2 --help" 0 "--num-beams" -- "$wgi" florence2 --help
check "florence2 needs text" 1 "needs a text input" -- "$wgi" florence2 "$f2" "$f2/image.png" --task '<CAPTION_TO_PHRASE_GROUNDING>'
check "florence2 --early-stopping soon" 105 "" -- "$wgi" florence2 "$f2" "$f2/image.png" --task '<OD>' --early-stopping soon
check "florence2 unknown task" 1 "unknown task '<FOO>'" -- "$wgi" florence2 "$f2" "$f2/image.png" --task '<FOO>'
check "florence2 text for a task without input" 1 "task <OD> takes no text input" -- \
  "$wgi" florence2 "$f2" "$f2/image.png" --task '<OD>' --text cat
check "florence2 missing folder" 1 "is not a folder" -- "$wgi" florence2 "$work/none" "$f2/image.png" --task '<OD>'
check "florence2 bad image" 1 "cannot read image" -- "$wgi" florence2 "$f2" "$f2/config.json" --task '<OD>'
check "florence2 --max-new-tokens 0" 105 "at least 1" -- "$wgi" florence2 "$f2" "$f2/image.png" --task '<OD>' --max-new-tokens 0
sg="$models/../pipelines/siglip_tiny"
if "$wgi" siglip "$sg" "$sg/image_c.png" --labels 'night sky,Mountain river!' --template 'a picture of {}' --json \
    >"$work/siglip.json" &&
  node -e 'const [a, b] = process.argv.slice(1).map((f) => JSON.parse(require("fs").readFileSync(f, "utf8")));
    if (JSON.stringify(a.input_ids) !== JSON.stringify(b.input_ids)) { console.log("input_ids differ"); process.exit(1); }
    a.output.forEach((o, i) => { const want = b.output[i];  // tolerance: tests/gpu/test_siglip.cpp
      if (o.label !== want.label || Math.abs(o.score - want.score) > 1e-4) { console.log(o, want); process.exit(1); } });' \
    "$work/siglip.json" "$sg/expected_scores_c.json"; then
  echo "ok   siglip --json equals transformers.js"
else
  echo "FAIL siglip --json differs from expected_scores_c.json"; failures=$((failures + 1))
fi
check "siglip --help" 0 "--template" -- "$wgi" siglip --help
check "siglip scores" 0 "^0\.[0-9]{6}  dog$" -- "$wgi" siglip "$sg" "$sg/image_a.png" --labels cat,dog
check "siglip empty labels" 1 "--labels is empty" -- "$wgi" siglip "$sg" "$sg/image_a.png" --labels ''
check "siglip template without {}" 1 "has no \{\} to put the label in" -- \
  "$wgi" siglip "$sg" "$sg/image_a.png" --labels cat --template 'a photo'
check "siglip bad image" 1 "cannot read image" -- "$wgi" siglip "$sg" "$sg/config.json" --labels cat
check "siglip missing folder" 1 "is not a folder" -- "$wgi" siglip "$work/none" "$sg/image_a.png" --labels cat
selftest="$(dirname "$wgi")/wgi_selftest"
if [[ -x $selftest ]]; then
  check "wgi_selftest --help" 0 "usage: wgi_selftest" -- "$selftest" --help
  check "wgi_selftest unknown flag" 2 "unknown argument '--frob'" -- "$selftest" --frob
fi

echo "$failures failure(s)"
exit $((failures > 0))
