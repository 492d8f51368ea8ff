// The bindings of the GEMM kernels that read A and B as vec4s where A_VEC4 / B_VEC4 say so (gemm_fast.wgsl,
// gemv.wgsl), and write the output and read the residual as vec4s where OUT_VEC4 does (gemm_fast.wgsl): the
// layout make_gemm_launch binds (src/ops/gemm_launch.cpp).
#if A_VEC4
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
#else
@group(0) @binding(0) var<storage, read> a: array<f32>;
#endif
#if B_QUANT
// A weight-only quantized B: its packed codes, and the scales and zero points after the other bindings.
@group(0) @binding(1) var<storage, read> b: array<u32>;
#if SCALES_F16
@group(0) @binding({{SCALES_BINDING}}) var<storage, read> scales: array<u32>;
#else
@group(0) @binding({{SCALES_BINDING}}) var<storage, read> scales: array<f32>;
#endif
#if ZP_F16
@group(0) @binding({{ZERO_POINTS_BINDING}}) var<storage, read> zero_points: array<u32>;
#else
#if ZP_FLOAT
@group(0) @binding({{ZERO_POINTS_BINDING}}) var<storage, read> zero_points: array<f32>;
#else
@group(0) @binding({{ZERO_POINTS_BINDING}}) var<storage, read> zero_points: array<u32>;
#endif
#endif
#include "linear/quantized_dequant.wgsl"
#else
#if B_F16
#include "linear/gemm_b_f16.wgsl"
#else
#if B_VEC4
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read> b: array<f32>;
#endif
#endif
#endif
@group(0) @binding(2) var<storage, read> bias: array<f32>;
#if OUT_VEC4
@group(0) @binding(3) var<storage, read_write> output: array<vec4<f32>>;
#else
@group(0) @binding(3) var<storage, read_write> output: array<f32>;
#endif
@group(0) @binding(4) var<uniform> params: GemmParams;
#if RESIDUAL
#if OUT_VEC4
@group(0) @binding(5) var<storage, read> residual: array<vec4<f32>>;
#else
@group(0) @binding(5) var<storage, read> residual: array<f32>;
#endif
#endif
