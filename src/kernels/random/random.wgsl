// RandomUniform(Like), RandomNormal(Like) and Bernoulli from a counter-based generator: element i's value is a
// hash of (seed, i), so it needs no state, every invocation is independent, and a seed gives the same tensor
// on every run (wgi's random ops are reproducible draws, not a stream; docs/sampling_and_spectral_ops.md).
// The hash is PCG's output permutation applied twice (M. O'Neill), with the seed folded into the state.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// A uniform value in [0, 1) with 24 random bits, from draw `k` of element i.
fn uniform01(i: u32, k: u32) -> f32 {
  let h = pcg_hash(pcg_hash(i * 2u + k) ^ params.seed);
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
#if BERNOULLI
  y[i] = {{OUT_TYPE}}(select(0u, 1u, uniform01(i, 0u) < probability[i]));
#endif
#if NORMAL
  // Box-Muller: u1 in (0, 1] keeps the log finite.
  let u1 = 1.0 - uniform01(i, 0u);
  let u2 = uniform01(i, 1u);
  y[i] = params.a + params.b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
#endif
#if UNIFORM
  y[i] = params.a + params.b * uniform01(i, 0u);
#endif
}
