// (cos, sin) of 2 pi m / n for 0 <= m < n, exact at the quarter turns: the angle is reduced to its quadrant
// in integers first, so e.g. m = n / 2 gives (-1, 0), not sin(f32(pi)) ~ -8.7e-8, and a DFT of a real signal
// keeps its exact zeros. The quadrant's cos and sin are wgi's polynomial ones (elementwise/math.wgsl): WGSL's
// builtins promise only 2^-11 absolute error, and CPU adapters deliver about that.
#include "elementwise/math.wgsl"

fn twiddle(m: u32, n: u32) -> vec2<f32> {
  let quarter = (4u * m) / n;            // 0..3
  let rest = 4u * m - quarter * n;       // the angle within the quadrant, in units of (pi / 2) / n
  let phi = 1.5707963267948966 * f32(rest) / f32(n);
  let c = wgi_cos(phi);
  let s = wgi_sin(phi);
  switch (quarter) {
    case 0u: { return vec2<f32>(c, s); }
    case 1u: { return vec2<f32>(-s, c); }
    case 2u: { return vec2<f32>(-c, -s); }
    default: { return vec2<f32>(s, -c); }
  }
}
