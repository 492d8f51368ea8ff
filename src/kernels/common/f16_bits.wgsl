// float16 -> float32 in integer arithmetic, for the float16 weights the kernels read packed two per u32 (no
// shader-f16; runtime/device_tensor.h), in place of unpack2x16float: on some GPUs (NVIDIA) that conversion
// runs at a fraction of the rate of integer and float adds, and GEMM / conv inner loops convert every
// weight they load. Bit-exact for every one of the 65536 halves (tests/gpu/test_f16_bits.cpp):
//   normal:    the exponent rebiased (15 -> 127) by one integer add on the shifted exponent-and-mantissa;
//   0 and subnormal (exponent 0): m * 2^-24 = (2^-14 + m * 2^-24) - 2^-14, the left term built from the
//              mantissa's bits under the exponent of 2^-14; both terms and the result are normal f32 (no
//              denormal arithmetic, so flush-to-zero cannot touch it), the subtraction exact; +-0 keep
//              their sign;
//   inf / NaN: exponent 31 -> 255, the mantissa (NaN payload) kept, so NaN stays NaN.

// One half: `magnitude` its exponent and mantissa shifted to float32's positions (bits 13..27), `sign` its
// sign at bit 31.
fn f16_bits_to_f32(magnitude: u32, sign: u32) -> f32 {
  let normal = magnitude + 0x38000000u;  // (127 - 15) << 23
  let rebiased = select(normal, normal + 0x38000000u, magnitude >= 0x0F800000u);  // exponent 31: inf, NaN
  let subnormal = bitcast<u32>(bitcast<f32>(magnitude | 0x38800000u) - 6.103515625e-05);  // 2^-14
  return bitcast<f32>(select(rebiased, subnormal, magnitude < 0x00800000u) | sign);
}

// The two halves of a packed word, low half first (as unpack2x16float).
fn unpack_f16x2(w: u32) -> vec2<f32> {
  return vec2<f32>(f16_bits_to_f32((w << 13u) & 0x0FFFE000u, (w << 16u) & 0x80000000u),
                   f16_bits_to_f32((w >> 3u) & 0x0FFFE000u, w & 0x80000000u));
}

// Half i (0 or 1) of a packed word.
fn unpack_f16(w: u32, i: u32) -> f32 {
  let h = select(w & 0xFFFFu, w >> 16u, i != 0u);
  return f16_bits_to_f32((h << 13u) & 0x0FFFE000u, (h << 16u) & 0x80000000u);
}
