// The bindings of the fast GEMM and the GEMV (gemm_interface in src/ops/gemm_launch.cpp declares them: A, B,
// bias, output, GemmParams, the residual, a quantized B's scales and zero points), and the helpers that read
// a float16 or quantized B.
#interface
// A quantized B (B_QUANT) or a float16 one (B_F16), never both.
#if B_QUANT
#include "linear/quantized_dequant.wgsl"
#endif
#if B_F16
#include "linear/gemm_b_f16.wgsl"
#endif
