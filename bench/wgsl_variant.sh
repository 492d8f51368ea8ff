#!/usr/bin/env bash
# Builds `wgi`, `wgi_bench_ops` and `wgi_bench_quantized` with the WGSL kernels of another directory, or of
# src/kernels with a patch applied, linked from build/release's objects: a kernel experiment for
# `bench/h200_campaign.sh variants` / `variant_files` / `f16_weights` / `gemv_sweep` without touching the
# source tree (nor a rebuild). Usage, from the repo root after `ninja -C build/release wgi_cli wgi_bench_ops`:
#   cp -r src/kernels /tmp/k_try && $EDITOR /tmp/k_try/linear/gemm_fast.wgsl
#   bench/wgsl_variant.sh /tmp/k_try /tmp/wgi_try       # writes /tmp/wgi_try, /tmp/wgi_try_bench, _quantized
#   bench/wgsl_variant.sh bench/variants/NAME.patch /tmp/wgi_NAME   # a kept experiment (`git diff` of
#                                                        # src/kernels; bench/variants/README.md)
#   xz -c /tmp/wgi_try > .device/bin/wgi_try.xz          # a `variants` build (the bench binary: run by hand)
# Only the embedded WGSL differs; defines the C++ sets, uniform layouts and bindings stay the build's, so a
# variant must keep the kernels' interface.
set -euo pipefail
usage="usage: bench/wgsl_variant.sh KERNELS_DIR|VARIANT.patch OUT"
source=${1:?$usage}
out=${2:?$usage}
root=$(git rev-parse --show-toplevel)
build=$root/build/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -f $source && $source == *.patch ]]; then
  kernels=$work/kernels
  cp -r "$root/src/kernels" "$kernels"
  patch --quiet --directory="$kernels" -p3 <"$source" ||
    { echo "bench/wgsl_variant.sh: $source does not apply to src/kernels" >&2; exit 1; }
elif [[ -d $source ]]; then
  kernels=$(cd "$source" && pwd)
else
  echo "bench/wgsl_variant.sh: $source is neither a kernels directory nor a .patch; $usage" >&2
  exit 1
fi
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
