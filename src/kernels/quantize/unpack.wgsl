// 8-bit weights prepacked four per u32 (byte j of word w is element 4 w + j, src/ops/integer_linear.cpp),
// as i32: uint8 zero-extended, int8 sign-extended (B_SIGNED).
fn unpack_byte(word: u32, j: u32) -> i32 {
#if B_SIGNED
  return extractBits(i32(word), 8u * j, 8u);
#else
  return i32(extractBits(word, 8u * j, 8u));
#endif
}

// QLINEAR: an exact int32 accumulator requantized to the output type, round half to even and saturated
// (QLinearMatMul / QLinearConv): clamp(round(acc * multiplier) + zero_point, qmin, qmax).
fn requantize(acc: i32, multiplier: f32, zero_point: i32, qmin: i32, qmax: i32) -> i32 {
  let q = round(f32(acc) * multiplier) + f32(zero_point);
  return i32(clamp(q, f32(qmin), f32(qmax)));
}
