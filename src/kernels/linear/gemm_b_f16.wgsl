// B_F16: the GEMM kernels' B (a constant float16 weight, kept at half size; src/ops/gemm_launch.h) as the
// device stores float16: packed, two halves per u32 word (runtime/device_tensor.h). Core WGSL, no
// shader-f16: halves are unpacked to f32 as they are loaded (in integer arithmetic, common/f16_bits.wgsl),
// and the products accumulate in f32.
// b_elem(i): element i of B; b_quad(q): elements 4q .. 4q + 3 (with B_VEC4, B bound as vec2<u32>s).
#include "common/f16_bits.wgsl"
#if B_VEC4
fn b_quad(q: u32) -> vec4<f32> {
  let w = b[q];
  return vec4<f32>(unpack_f16x2(w.x), unpack_f16x2(w.y));
}

fn b_elem(i: u32) -> f32 {
  let w = b[i >> 2u];
  return unpack_f16(select(w.x, w.y, (i & 2u) != 0u), i & 1u);
}
#else
fn b_elem(i: u32) -> f32 {
  return unpack_f16(b[i >> 1u], i & 1u);
}
#endif
