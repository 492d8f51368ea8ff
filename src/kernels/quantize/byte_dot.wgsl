// Dot products of words of four unsigned bytes (the integer GEMV's and tile kernel's packed operands):
// dot4U8Packed where the device has WGSL's packed_4x8_integer_dot_product (PACKED_DOT), else byte by byte.
// Exact in u32: four products of at most 255 * 255.
const ONES: u32 = 0x01010101u;  // byte_dot(w, ONES): the sum of w's four bytes

fn byte_dot(a: u32, b: u32) -> u32 {
#if PACKED_DOT
  return dot4U8Packed(a, b);
#else
  var s = 0u;
  for (var j = 0u; j < 4u; j++) {
    s += extractBits(a, 8u * j, 8u) * extractBits(b, 8u * j, 8u);
  }
  return s;
#endif
}
