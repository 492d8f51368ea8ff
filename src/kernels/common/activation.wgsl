// The fused activation epilogue of GEMM and conv kernels (src/ops/fused_activation.h).
// {{ACTIVATION}} is an expression over v and the clamp bounds lo / hi, which come from the kernel's uniform.
// The elementwise kernels' helpers: wgi_clamp for Relu and Clip (NaN propagates), wgi_erf and wgi_sigmoid
// for the Gelu forms. ACTIVATION_MATH marks those, which the kernels run in place after the main store.
#include "elementwise/math.wgsl"
fn fused_activation(v: f32, lo: f32, hi: f32) -> f32 {
  return {{ACTIVATION}};
}
