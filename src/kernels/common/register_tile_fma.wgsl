    // common/register_tile_fma.wgsl: the register-tile FMA block of the 256-invocation GEMM kernels
    // (linear/gemm_fast.wgsl, conv/implicit_gemm.wgsl), included as statements inside their K-slab loop, not
    // as a function: a call taking acc by pointer is one more thing the driver must inline before it can
    // unroll this loop and keep acc in registers (the kernels' IN_PLACE_EPILOGUE notes say what losing that
    // costs). It multiplies slab s of both workgroup tiles into the thread's TM x TN tile: per k it reads GM
    // vec4s of A (rows g * 64 + ty * 4 + 0..3) and GN of B (columns g * 64 + tx * 4 + 0..3) and does
    // TM * TN FMAs. The includer declares TM, GM, GN, BK, STAGES, SA and SB (vec4s per k row of a_tile and
    // b_tile, any padding included), a_tile, b_tile, the loop's s, the thread's tx and ty, and
    // acc: array<vec4<f32>, TM * GN> (row r, column group g at acc[r * GN + g]).
    let a_base = (s % STAGES) * (BK * SA) + ty;
    let b_base = (s % STAGES) * (BK * SB) + tx;
    for (var k = 0u; k < BK; k++) {
      var av: array<vec4<f32>, GM>;
      var bv: array<vec4<f32>, GN>;
      for (var g = 0u; g < GM; g++) {
        av[g] = a_tile[a_base + k * SA + g * 16u];
      }
      for (var g = 0u; g < GN; g++) {
        bv[g] = b_tile[b_base + k * SB + g * 16u];
      }
      for (var gi = 0u; gi < GM; gi++) {
        for (var i = 0u; i < 4u; i++) {
          let x = vec4<f32>(av[gi][i]);
          for (var gj = 0u; gj < GN; gj++) {
            let r = (gi * 4u + i) * GN + gj;
            acc[r] = fma(x, bv[gj], acc[r]);
          }
        }
      }
    }
