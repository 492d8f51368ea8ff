// f32 division rounded correctly (to nearest, ties to even), as IEEE 754 and the ONNX reference divide.
// WGSL lets x / y be 2.5 ULP off, and GPUs use that (a reciprocal and a multiply): a quotient that should be
// exactly k + 0.5 (a tie of QuantizeLinear's rounding) or DynamicQuantizeLinear's range / 255 could come out an
// ULP away and round to another integer. Here the 24-bit significands are divided bit by bit in u32, with the
// remainder deciding the last bit. Zeros, infinities, NaN, subnormal operands and results outside the normal
// range fall back to the hardware division (no quantization step divides such values in practice).

fn wgi_div_rn(x: f32, y: f32) -> f32 {
  let bx = bitcast<u32>(x);
  let by = bitcast<u32>(y);
  let ex = i32((bx >> 23u) & 0xffu);
  let ey = i32((by >> 23u) & 0xffu);
  if (ex == 0 || ex == 255 || ey == 0 || ey == 255) {
    return x / y;
  }
  var mx = (bx & 0x7fffffu) | 0x800000u;
  let my = (by & 0x7fffffu) | 0x800000u;
  var e = ex - ey;
  if (mx < my) {
    mx = mx << 1u;
    e = e - 1;
  }
  // mx / my in [1, 2): 24 quotient bits, the remainder kept below my (< 2^24, so 2 * rem fits u32).
  var q = 0u;
  var rem = mx;
  for (var i = 0u; i < 24u; i++) {
    q = q << 1u;
    if (rem >= my) {
      rem = rem - my;
      q = q | 1u;
    }
    rem = rem << 1u;
  }
  // rem is now twice the final remainder: against my it says whether the rest is below, at or above half.
  if (rem > my || (rem == my && (q & 1u) == 1u)) {
    q = q + 1u;
    if (q == 0x1000000u) {
      q = 0x800000u;
      e = e + 1;
    }
  }
  let biased = e + 127;
  if (biased <= 0 || biased >= 255) {
    return x / y;
  }
  return bitcast<f32>(((bx ^ by) & 0x80000000u) | (u32(biased) << 23u) | (q & 0x7fffffu));
}
