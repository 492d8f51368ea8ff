#!/usr/bin/env bash
# Builds `wgi`, `wgi_bench_ops` and `wgi_bench_quantized` with the WGSL kernels of another directory, linked from build/release's
# objects: a kernel experiment for `bench/h200_campaign.sh variants` / `variant_files` without touching the source tree (nor a
# rebuild). Usage, from the repo root after `ninja -C build/release wgi_cli wgi_bench_ops`:
#   cp -r src/kernels /tmp/k_try && $EDITOR /tmp/k_try/linear/gemm_fast.wgsl
#   bench/wgsl_variant.sh /tmp/k_try /tmp/wgi_try       # writes /tmp/wgi_try, /tmp/wgi_try_bench, _quantized
#   xz -c /tmp/wgi_try > .device/bin/wgi_try.xz          # a `variants` build (the bench binary: run by hand)
# Only the embedded WGSL differs; defines the C++ sets, uniform layouts and bindings stay the build's, so a
# variant must keep the kernels' interface.
set -euo pipefail
kernels=$(cd "${1:?usage: bench/wgsl_variant.sh KERNELS_DIR OUT}" && pwd)
out=${2:?usage: bench/wgsl_variant.sh KERNELS_DIR OUT}
root=$(git rev-parse --show-toplevel)
build=$root/build/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=$(find "$kernels" -name '*.wgsl' | sort | paste -sd';')
cmake "-DSOURCE_ROOT=$kernels" "-DOUTPUT=$work/embedded_wgsl.cpp" "-DFILES=$files" -P "$root/cmake/embed_wgsl.cmake"
c++ -I"$root/include" -I"$root/src" -O3 -DNDEBUG -std=c++20 -c "$work/embedded_wgsl.cpp" -o "$work/embedded.o"
cp "$build/src/libwgi.a" "$work/libwgi.a"
ar d "$work/libwgi.a" embedded_wgsl.cpp.o
ar q "$work/libwgi.a" "$work/embedded.o"
dawn=(-L"$root/third_party/dawn/lib" -Wl,-rpath,"$root/third_party/dawn/lib")
spm=(/usr/lib/x86_64-linux-gnu/libsentencepiece.so)  # the SigLIP tokenizer tests and pipelines
c++ -O3 "$build"/tools/wgi/CMakeFiles/wgi_cli.dir/*.o -o "$out" "${dawn[@]}" "$work/libwgi.a" -lwebgpu_wrapper "${spm[@]}"
c++ -O3 "$build"/bench/CMakeFiles/wgi_bench_ops.dir/*.o -o "${out}_bench" "${dawn[@]}" \
  "$build/tests/libwgi_test_support.a" -lbenchmark "$work/libwgi.a" -lwebgpu_wrapper "${spm[@]}" \
  /usr/lib/x86_64-linux-gnu/libgtest.a
c++ -O3 "$build"/bench/CMakeFiles/wgi_bench_quantized.dir/*.o -o "${out}_quantized" "${dawn[@]}" \
  "$build/tests/libwgi_test_support.a" -lbenchmark "$work/libwgi.a" -lwebgpu_wrapper "${spm[@]}" \
  /usr/lib/x86_64-linux-gnu/libgtest.a
echo "built $out, ${out}_bench and ${out}_quantized"
