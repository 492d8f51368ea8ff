// The fused activation epilogue of GEMM and conv kernels (src/ops/fused_activation.h).
// {{ACTIVATION}} is an expression over v and the clamp bounds lo / hi, which come from the kernel's uniform.
fn fused_activation(v: f32, lo: f32, hi: f32) -> f32 {
  return {{ACTIVATION}};
}
