// Element types and math helpers shared by the elementwise kernels.
//
// F, I and U are the float, signed and unsigned element types at the kernel's width: scalars, or vec4 when
// the define MATH_VEC4 is set (not plain VEC4: kernels that include this file through common/activation.wgsl
// have a VEC4 of their own and want the scalar helpers). Every helper is written over them, so one text
// serves both widths; branches are therefore select()s, and both sides must stay finite-or-harmless for every
// input.
#if MATH_VEC4
alias F = vec4<f32>;
alias I = vec4<i32>;
alias U = vec4<u32>;
#else
alias F = f32;
alias I = i32;
alias U = u32;
#endif

#include "common/nan.wgsl"

// A quiet NaN. Through a var: WGSL rejects a NaN that constant evaluation can see.
fn wgi_nan() -> F {
  var bits = U(0x7fc00000u);
  return bitcast<F>(bits);
}

// exp() only of a non-positive argument: no inf/inf for very negative x, and the tail keeps its relative
// accuracy (1 / (1 + exp(-x)) would round 1 + exp(-x) and lose it).
fn wgi_sigmoid(x: F) -> F {
  let e = exp(-abs(x));
  let r = F(1.0) / (F(1.0) + e);
  return select(e * r, r, x >= F(0.0));
}

// Cephes tanhf: below 0.625 an odd polynomial (1 - 2 / (exp(2x) + 1) would cancel there); above, that exp
// form, which saturates to +-1 where the textbook (e^x - e^-x) / (e^x + e^-x) gives inf / inf.
fn wgi_tanh(x: F) -> F {
  let ax = abs(x);
  let s = x * x;
  let p = ((((F(-5.70498872745e-3) * s + F(2.06390887954e-2)) * s - F(5.37397155531e-2)) * s +
            F(1.33314422036e-1)) * s - F(3.33332819422e-1)) * s;
  let small = fma(p, x, x);
  let big = F(1.0) - F(2.0) / (exp(F(2.0) * ax) + F(1.0));
  return select(select(-big, big, x >= F(0.0)), small, ax < F(0.625));
}

// N. Juffa's faithfully rounded erff (about 1 ulp; stackoverflow.com/a/35148199, also used by MLX and
// PyTorch's Metal backend). WGSL has no erf, and the textbook Abramowitz-Stegun 7.1.26 is only good to ~1e-7
// absolute.
fn wgi_erf(a: F) -> F {
  let t = abs(a);
  let s = a * a;
  // |a| > 0.927734375: erf = 1 - exp(r(t)).
  var r = fma(F(-1.72853470e-5), t, F(3.83197126e-4));
  let u = fma(F(-3.88396438e-3), t, F(2.42546219e-2));
  r = fma(r, s, u);
  r = fma(r, t, F(-1.06777877e-1));
  r = fma(r, t, F(-6.34846687e-1));
  r = fma(r, t, F(-1.28717512e-1));
  r = fma(r, t, -t);
  let big = F(1.0) - exp(r);
  // Below: an odd polynomial.
  var q = F(-5.96761703e-4);
  q = fma(q, s, F(4.99119423e-3));
  q = fma(q, s, F(-2.67681349e-2));
  q = fma(q, s, F(1.12819925e-1));
  q = fma(q, s, F(-3.76125336e-1));
  q = fma(q, s, F(1.28379166e-1));
  q = fma(q, a, a);
  return select(q, select(-big, big, a >= F(0.0)), t > F(0.927734375));
}

// Cephes sinf / cosf: |x| reduced by multiples of pi/4 in three parts (exact products while the multiple
// fits 16 bits, so accurate up to |x| ~ 8192), then minimax polynomials on [-pi/4, pi/4]. WGSL's own sin and
// cos only promise 2^-11 absolute error, and CPU adapters deliver about that (2e-4 on SwiftShader).
struct WgiOctant {
  s: F,  // sin and cos of the reduced argument
  c: F,
  k: U,  // which quarter turn (0..3) of the reduced argument
}

fn wgi_reduce_octant(ax: F) -> WgiOctant {
  var j = floor(ax * F(1.27323954473516));
  j = j + (j - F(2.0) * floor(j * F(0.5)));  // odd octants round up to the next even one
  let z = ((ax - j * F(0.78515625)) - j * F(2.4187564849853515625e-4)) - j * F(3.77489497744594108e-8);
  let zz = z * z;
  let s = ((F(-1.9515295891e-4) * zz + F(8.3321608736e-3)) * zz - F(1.6666654611e-1)) * zz * z + z;
  let c = ((F(2.443315711809948e-5) * zz - F(1.388731625493765e-3)) * zz + F(4.166664568298827e-2)) * zz *
          zz - F(0.5) * zz + F(1.0);
  return WgiOctant(s, c, (U(j) >> U(1u)) & U(3u));
}

fn wgi_sin(x: F) -> F {
  let o = wgi_reduce_octant(abs(x));
  var r = select(o.s, o.c, (o.k & U(1u)) == U(1u));
  r = select(r, -r, o.k >= U(2u));
  return select(r, -r, x < F(0.0));
}

fn wgi_cos(x: F) -> F {
  let o = wgi_reduce_octant(abs(x));
  let r = select(o.c, o.s, (o.k & U(1u)) == U(1u));
  return select(r, -r, ((o.k + U(1u)) & U(2u)) != U(0u));
}

// exp(x) - 1 without the cancellation near 0 (Elu, Selu, Celu for small negative x): Taylor terms up to x^8
// below |x| = 0.35 (relative error < 3e-9), exp(x) - 1 above, where the result is at least 0.29 in magnitude.
fn wgi_expm1(x: F) -> F {
  let p = x * (F(1.0) + x * (F(0.5) + x * (F(1.0 / 6.0) + x * (F(1.0 / 24.0) + x * (F(1.0 / 120.0) +
      x * (F(1.0 / 720.0) + x * (F(1.0 / 5040.0) + x * F(1.0 / 40320.0))))))));
  return select(exp(x) - F(1.0), p, abs(x) < F(0.35));
}

// log(1 + x) for x in [0, 1] with full relative accuracy: 2 atanh(s), s = x / (2 + x) <= 1/3, summed to s^17.
// WGSL's log only promises 2^-21 absolute error near 1, so log(1 + x) loses tiny x (Softplus tails) entirely.
fn wgi_log1p_unit(x: F) -> F {
  let s = x / (F(2.0) + x);
  let z = s * s;
  let p = F(1.0) + z * (F(1.0 / 3.0) + z * (F(1.0 / 5.0) + z * (F(1.0 / 7.0) + z * (F(1.0 / 9.0) +
      z * (F(1.0 / 11.0) + z * (F(1.0 / 13.0) + z * (F(1.0 / 15.0) + z * F(1.0 / 17.0))))))));
  return F(2.0) * s * p;
}

// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x, exact tails for very negative x.
fn wgi_softplus(x: F) -> F {
  return max(x, F(0.0)) + wgi_log1p_unit(exp(-abs(x)));
}

// numpy's power for floats. Integer exponents up to 2^16 use binary powering: exact where the result is
// representable (x^2, x^3 of LayerNorm decompositions; integer bases cast back to int) and defined for
// negative bases. Other exponents go through exp2(y log2|x|), NaN for a negative base.
fn wgi_pow(x: F, y: F) -> F {
  let ay = abs(y);
  let is_int = floor(y) == y;
  let small_int = is_int & (ay <= F(65536.0));
  var n = select(U(0u), U(ay), small_int);
  var base = x;
  var acc = F(1.0);
  loop {
    if (all(n == U(0u))) {
      break;
    }
    acc = select(acc, acc * base, (n & U(1u)) == U(1u));
    base = base * base;
    n = n >> U(1u);
  }
  let by_powering = select(acc, F(1.0) / acc, y < F(0.0));
  let magnitude = exp2(y * log2(abs(x)));
  let odd = is_int & (ay - F(2.0) * floor(ay * F(0.5)) == F(1.0));
  var general = select(magnitude, -magnitude, (x < F(0.0)) & odd);
  general = select(general, wgi_nan(), (x < F(0.0)) & !is_int);
  return select(general, by_powering, small_int);
}

// Integer power by squaring, wrapping like the integer type. A negative exponent truncates 1 / x^|y| toward
// 0.
fn wgi_ipow(x: I, y: I) -> I {
  var n = U(max(y, I(0)));
  var base = x;
  var acc = I(1);
  loop {
    if (all(n == U(0u))) {
      break;
    }
    acc = select(acc, acc * base, (n & U(1u)) == U(1u));
    base = base * base;
    n = n >> U(1u);
  }
  let odd = (y & I(1)) != I(0);
  let reciprocal = select(I(0), select(I(1), I(-1), (x == I(-1)) & odd), abs(x) == I(1));
  return select(acc, reciprocal, y < I(0));
}

// C's fmod for floats: the remainder has the dividend's sign. fma keeps a - b * trunc(a / b) exact when the
// quotient is right.
fn wgi_fmod(a: F, b: F) -> F {
  return fma(-b, trunc(a / b), a);
}

// Python's (ONNX Mod with fmod = 0) integer remainder: the result has the divisor's sign.
fn wgi_mod_floor(a: I, b: I) -> I {
  let r = a % b;
  return select(r, r + b, (r != I(0)) & ((r < I(0)) != (b < I(0))));
}

// int8 and uint8 live in 32-bit words on the device (runtime/device_tensor.h); arithmetic results wrap back.
fn wgi_wrap_i8(v: I) -> I {
  return (v << U(24u)) >> U(24u);
}

fn wgi_wrap_u8(v: U) -> U {
  return v & U(255u);
}

// ---- Hyperbolic and inverse hyperbolic functions (Sinh, Cosh, Asinh, Acosh, Atanh) ----
// WGSL's builtins are the textbook formulas (sinh = (exp(x) - exp(-x)) / 2, asinh = log(x + sqrt(x^2 + 1)),
// atanh = log((1 + x) / (1 - x)) / 2): they cancel near 0 (and asinh for negative x) and overflow early.
// These keep the relative accuracy there and reach the float32 range's end.

const WGI_LN2 = 0.6931471805599453;

// exp(a - ln 2) = exp(a) / 2 without overflowing for a up to ~89.4, where sinh and cosh are still finite.
fn wgi_sinh(x: F) -> F {
  let a = abs(x);
  let small = F(0.5) * (wgi_expm1(a) - wgi_expm1(-a));
  let r = select(exp(a - F(WGI_LN2)) - exp(-a - F(WGI_LN2)), small, a < F(1.0));
  return select(-r, r, x >= F(0.0));
}

fn wgi_cosh(x: F) -> F {
  let a = abs(x);
  return exp(a - F(WGI_LN2)) + exp(-a - F(WGI_LN2));
}

// asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) for small a (the argument stays below 0.62), log(a + sqrt(a^2
// + 1)) in between, log(a) + ln 2 past 1e4 (where a^2 + 1 rounds to a^2, and before a^2 overflows).
fn wgi_asinh(x: F) -> F {
  let a = abs(x);
  let s = sqrt(a * a + F(1.0));
  let small = wgi_log1p_unit(a + a * a / (F(1.0) + s));
  let r = select(select(log(a + s), small, a < F(0.5)), log(a) + F(WGI_LN2), a > F(1e4));
  return select(-r, r, x >= F(0.0));
}

// acosh(x) = log1p(t), t = (x - 1) + sqrt((x - 1)(x + 1)), while t <= 1 (x - 1 is exact there, so no
// cancellation near 1); log(x + sqrt(x^2 - 1)) above; log(x) + ln 2 past 1e4. NaN below 1.
fn wgi_acosh(x: F) -> F {
  let d = x - F(1.0);
  let t = d + sqrt(max(d * (x + F(1.0)), F(0.0)));
  let mid = log(x + sqrt(max(x * x - F(1.0), F(0.0))));
  let r = select(select(mid, wgi_log1p_unit(t), t <= F(1.0)), log(x) + F(WGI_LN2), x > F(1e4));
  return select(r, wgi_nan(), x < F(1.0));
}

// atanh(a) = log1p(2a / (1 - a)) / 2 for a <= 1/3 (the argument stays within [0, 1]), log((1 + a) / (1 - a)) / 2
// above (the result is at least 0.34 there); inf at 1, NaN past it.
fn wgi_atanh(x: F) -> F {
  let a = abs(x);
  let small = F(0.5) * wgi_log1p_unit(F(2.0) * a / (F(1.0) - a));
  let r = select(F(0.5) * log((F(1.0) + a) / (F(1.0) - a)), small, a <= F(1.0 / 3.0));
  return select(select(-r, r, x >= F(0.0)), wgi_nan(), a > F(1.0));
}

// ---- Inverse trigonometric functions (Asin, Acos, Atan) ----
// WGSL's builtins promise 4096 ulp; the CPU adapters' measure up to 4e-4 absolute. These are Cephes'
// single-precision reductions and polynomials (a few ulp).

const WGI_PI_2 = 1.5707963267948966;
const WGI_PI_4 = 0.7853981633974483;

// atan of |x| reduced to |t| <= tan(pi/8) through atan(a) = pi/2 + atan(-1/a) (a > tan(3pi/8)) or
// pi/4 + atan((a - 1) / (a + 1)) (a > tan(pi/8)).
fn wgi_atan(x: F) -> F {
  let a = abs(x);
  let far = a > F(2.414213562373095);
  let mid = a > F(0.4142135623730950);
  let t = select(select(a, (a - F(1.0)) / (a + F(1.0)), mid), F(-1.0) / a, far);
  let base = select(select(F(0.0), F(WGI_PI_4), mid), F(WGI_PI_2), far);
  let z = t * t;
  let r = base + ((((F(8.05374449538e-2) * z - F(1.38776856032e-1)) * z + F(1.99777106478e-1)) * z -
                   F(3.33329491539e-1)) * z * t + t);
  return select(-r, r, x >= F(0.0));
}

// asin on [0, 0.5] by its polynomial; above, asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)) (1 - a is exact).
fn wgi_asin_abs(a: F) -> F {
  let high = a > F(0.5);
  let z = select(a * a, F(0.5) * (F(1.0) - a), high);
  let s = select(a, sqrt(z), high);
  let p = ((((F(4.2163199048e-2) * z + F(2.4181311049e-2)) * z + F(4.5470025998e-2)) * z + F(7.4953002686e-2)) * z +
           F(1.6666752422e-1)) * z * s + s;
  return select(p, F(WGI_PI_2) - F(2.0) * p, high);
}

fn wgi_asin(x: F) -> F {
  let r = wgi_asin_abs(min(abs(x), F(1.0)));
  return select(select(-r, r, x >= F(0.0)), wgi_nan(), abs(x) > F(1.0));
}

// acos near +-1 as 2 asin(sqrt((1 -+ x) / 2)): pi/2 - asin(x) would lose acos's small values near 1.
fn wgi_acos(x: F) -> F {
  let h = sqrt(F(0.5) * (F(1.0) - min(abs(x), F(1.0))));
  let near_one = F(2.0) * wgi_asin_abs(h);
  let middle = F(WGI_PI_2) - wgi_asin_abs(abs(x)) * select(F(-1.0), F(1.0), x >= F(0.0));
  let r = select(middle, select(F(2.0 * WGI_PI_2) - near_one, near_one, x > F(0.0)), abs(x) > F(0.5));
  return select(r, wgi_nan(), abs(x) > F(1.0));
}
