// Max, min and clamp that propagate NaN, as ONNX Runtime's elementwise ops do (Relu(NaN) = NaN,
// Max(NaN, 1) = NaN). WGSL's max / min / clamp may return either operand when one is NaN, and the CPU
// adapters differ. NaN is tested on the bits: WGSL lets an implementation assume that floats are never NaN,
// so a test like x != x may be folded to false. Written over elementwise/math.wgsl's F and U (f32 / u32 or
// vec4 of them), which includes this file.

fn wgi_is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// Either NaN operand itself (a first), else max(a, b).
fn wgi_max(a: F, b: F) -> F {
  let nan_a = (bitcast<U>(a) & U(0x7fffffffu)) > U(0x7f800000u);
  let nan_b = (bitcast<U>(b) & U(0x7fffffffu)) > U(0x7f800000u);
  return select(select(max(a, b), b, nan_b), a, nan_a);
}

fn wgi_min(a: F, b: F) -> F {
  let nan_a = (bitcast<U>(a) & U(0x7fffffffu)) > U(0x7f800000u);
  let nan_b = (bitcast<U>(b) & U(0x7fffffffu)) > U(0x7f800000u);
  return select(select(min(a, b), b, nan_b), a, nan_a);
}

// ONNX Clip: min(max(x, lo), hi).
fn wgi_clamp(x: F, lo: F, hi: F) -> F {
  return wgi_min(wgi_max(x, lo), hi);
}
