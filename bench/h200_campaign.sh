#!/usr/bin/env bash
# The whole GPU campaign in one device call (see docs/performance.md for how results are recorded):
# adapter info, the full test suite on the real GPU (heavy tests included), the selftest, the op benchmarks
# at large sizes and PyTorch (cuBLAS / cuDNN, TF32 off) on the same shapes, joined into a ratio table.
# Run on the GPU machine from the repo root after `source .device/env.sh`; writes results under $OUT.
set -uo pipefail
out=${OUT:-/tmp/wgi-campaign}
mkdir -p "$out"
{
  echo "# date: $(date -u +%F' '%T) UTC"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# gpu: /'
  wgi info
} 2>&1 | tee "$out/info.txt"
wgi info --json >"$out/info.json" 2>&1
(WGI_BACKEND=gles timeout 60 wgi info 2>&1 | head -4) | sed "s/^/# gles: /" | tee -a "$out/info.txt"
export WGI_BACKEND=vulkan
wgi_unit_tests 2>&1 | tail -3
timeout 300 wgi_gpu_tests 2>&1 | tee "$out/gpu_tests.txt" | grep -E '^\[  (PASSED|FAILED)|FAILED|tests ran'
wgi_selftest 2>&1 | tee -a "$out/info.txt"
WGI_BENCH_SIZE=large timeout 240 wgi_bench_ops --benchmark_format=json --benchmark_out="$out/wgi_bench.json" \
  --benchmark_min_time=0.2 2>&1 | grep -E '^BM_' | tee "$out/wgi_bench.txt"
WGI_BENCH_SIZE=large WGI_BENCH_KERNEL=tiled timeout 60 wgi_bench_ops --benchmark_filter='BM_Linear/4096' \
  --benchmark_min_time=0.2 2>&1 | grep -E '^BM_' | tee -a "$out/wgi_bench.txt"
timeout 120 python3 bench/torch_peer.py | tee "$out/torch.jsonl"
python3 bench/compare.py "$out/wgi_bench.json" "$out/torch.jsonl" | tee "$out/table.md"
