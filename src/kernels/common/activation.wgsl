// The fused activation epilogue of GEMM and conv kernels (src/ops/fused_activation.h).
// {{ACTIVATION}} is an expression over v and the clamp bounds lo / hi, which come from the kernel's uniform.
// ACTIVATION_MATH brings in the elementwise kernels' helpers (wgi_erf, wgi_sigmoid) for the Gelu forms.
#if ACTIVATION_MATH
#include "elementwise/math.wgsl"
#endif
fn fused_activation(v: f32, lo: f32, hi: f32) -> f32 {
  return {{ACTIVATION}};
}
