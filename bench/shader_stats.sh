#!/usr/bin/env bash
# What the GPU driver compiled wgi's kernels into (issue 7: registers, workgroup memory, binary size), on a
# Vulkan adapter. For each benchmark filter: runs wgi_bench_ops on it with Dawn's shader dumps
# (WGI_DAWN_TOGGLES=dump_shaders, WGI_DAWN_LOG), assembles the SPIR-V that Dawn generated for each kernel
# (spirv-as) and has the driver compile it once more and describe it (wgi_probe_pipeline_stats, through
# VK_KHR_pipeline_executable_properties; SwiftShader and lavapipe lack it, the NVIDIA driver has it).
#
# Usage: bench/shader_stats.sh OUT_DIR FILTER...
#   e.g. WGI_BENCH_SIZE=large bench/shader_stats.sh /tmp/stats 'BM_LinearConfig/fast128_k16s1/4096/4096/4096'
# A FILTER of the form model:FILE[:BATCH] runs `wgi bench FILE` once instead (every kernel of a model, e.g.
# attention_tiled on DaViT's windows); WGI_SHADER_STATS_WGI names another wgi (a bench/wgsl_variant.sh build).
# Programs come from PATH (the device's .device/bin) or build/release; WGI_SHADER_STATS_BENCH names another
# benchmark program (a kernel variant from bench/wgsl_variant.sh). Per filter, OUT_DIR/<n>/ keeps the
# Dawn log, each kernel's WGSL (shader_<i>.wgsl) and SPIR-V (.spvasm, .spv), and the statistics (stats.txt).
# The WGSL and the SPIR-V are numbered by separate counters, in the order Dawn logged them: where pipelines
# are compiled in another order than their modules were made (a model's many kernels), shader_<i>.wgsl and
# shader_<i>.spv need not be one kernel; tell kernels apart by their statistics (workgroup memory) there.
set -euo pipefail
out=${1:?usage: bench/shader_stats.sh OUT_DIR FILTER...}
shift
[[ $# -gt 0 ]] || { echo "bench/shader_stats.sh: give at least one wgi_bench_ops filter" >&2; exit 1; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
find_program() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"
  elif [[ -x $root/build/release/$1 ]]; then echo "$root/build/release/$1"
  else echo "bench/shader_stats.sh: $1 not found (PATH, build/release)" >&2; exit 1; fi
}
probe=$(find_program wgi_probe_pipeline_stats)
assembler=$(find_program spirv-as)
mkdir -p "$out"
n=0
for filter in "$@"; do
  n=$((n + 1))
  dir="$out/$n"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "== $filter"
  if [[ $filter == model:* ]]; then
    IFS=: read -r _ model batch <<<"$filter"
    WGI_DAWN_TOGGLES=dump_shaders WGI_DAWN_LOG="$dir/dawn.log" "$(find_program "${WGI_SHADER_STATS_WGI:-wgi}")" \
      bench "$model" --random-inputs 1 --dim batch="${batch:-1}" --runs 1 --warmup-ms 0 >"$dir/bench.txt" 2>&1 ||
      { echo "wgi bench failed:"; tail -5 "$dir/bench.txt"; continue; }
  else
    WGI_DAWN_TOGGLES=dump_shaders WGI_DAWN_LOG="$dir/dawn.log" "$(find_program "${WGI_SHADER_STATS_BENCH:-wgi_bench_ops}")" \
      --benchmark_filter="$filter" --benchmark_min_time=0.05 >"$dir/bench.txt" 2>&1 ||
      { echo "wgi_bench_ops failed:"; tail -5 "$dir/bench.txt"; continue; }
  fi
  grep -E "manual_time" "$dir/bench.txt" | sed 's/^/   /' || true
  # The log holds, per kernel, "// Dumped WGSL:" and then "/* Dumped generated SPIRV disassembly */"
  # messages, each after a "[dawn <kind>]" line.
  awk -v dir="$dir" '
    /^\[dawn / { file = ""; next }
    $0 == "// Dumped WGSL:" { wgsl++; file = dir "/shader_" wgsl ".wgsl"; next }
    $0 == "/* Dumped generated SPIRV disassembly */" { spv++; file = dir "/shader_" spv ".spvasm"; next }
    file != "" { print > file }
  ' "$dir/dawn.log"
  shopt -s nullglob
  spvs=()
  for asm in "$dir"/shader_*.spvasm; do
    "$assembler" --target-env vulkan1.1 "$asm" -o "${asm%.spvasm}.spv"
    spvs+=("${asm%.spvasm}.spv")
  done
  shopt -u nullglob
  if [[ ${#spvs[@]} -eq 0 ]]; then
    echo "   no SPIR-V in the Dawn log (not a Vulkan adapter?)"
    continue
  fi
  "$probe" --ir "$dir" "${spvs[@]}" >"$dir/stats.txt" 2>&1 || true
  sed 's/^/   /' "$dir/stats.txt"
done
