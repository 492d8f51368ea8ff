// The dequantisation of weight-only quantized codes (layouts in linear/quantized_common.wgsl), shared by the
// quantized matmuls' own kernels and by the fast GEMM's B_QUANT form (gemm_fast.wgsl, whose GemmParams then
// carry the same fields: K, block_size, col_words, scale_col_stride, zp_col_bits, blocks_per_col,
// default_zero). The includer declares `params`, B as `b: array<u32>`, `scales` and `zero_points`.
const BITS: u32 = {{BITS}}u;
const CODES_PER_WORD: u32 = 32u / BITS;
const CODE_MASK: u32 = (1u << BITS) - 1u;

#include "common/f16_bits.wgsl"

// Integer codes become floats without an int -> float conversion instruction (on some GPUs, NVIDIA's, a
// fraction of the rate of adds): 0x4B000000 | c is the float 2^23 + c for any c < 2^23, so the code's float
// is that minus 2^23, exactly. An integer zero point folds into the same subtraction (code - zero = (2^23 +
// code) - (2^23 + zero), all exact), taken once per block (BlockQuant.offset); a float one is subtracted
// after, which rounds once as f32(code) - zero did.
const CODE_BIAS: u32 = 0x4B000000u;  // the bits of 2^23
const CODE_BIAS_F32: f32 = 8388608.0;

fn biased_code(code: u32) -> f32 {
  return bitcast<f32>(CODE_BIAS | code);
}

#if CODE_TABLE
// The 16 values a 4-bit code stands for, as multiples of the block's absmax (MatMulBnb4's quant_type),
// looked up by a tree of selects on the code's bits: a dynamically indexed array would live in per-thread
// (local) memory, a load per code; constant indices fold to the same f32 constants.
#if NF4
// NF4 (QLoRA, arXiv 2305.14314): quantiles of a standard normal scaled to [-1, 1], with an exact zero.
const CODE_VALUES: array<f32, 16> = array<f32, 16>(
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023,
    1.0);
#else
// bitsandbytes' FP4: sign bit 8, then a 3-bit e2m1-like magnitude (0, 0.0625, 8, 12, 4, 6, 2, 3 for codes
// 0..7) divided by its largest value, 12.
const CODE_VALUES: array<f32, 16> = array<f32, 16>(
    0.0, 0.0625 / 12.0, 8.0 / 12.0, 1.0, 4.0 / 12.0, 6.0 / 12.0, 2.0 / 12.0, 3.0 / 12.0,
    -0.0, -0.0625 / 12.0, -8.0 / 12.0, -1.0, -4.0 / 12.0, -6.0 / 12.0, -2.0 / 12.0, -3.0 / 12.0);
#endif

fn code_value(code: u32) -> f32 {
  let b0 = (code & 1u) != 0u;
  let b1 = (code & 2u) != 0u;
  let b2 = (code & 4u) != 0u;
  let v0 = select(select(CODE_VALUES[0], CODE_VALUES[1], b0), select(CODE_VALUES[2], CODE_VALUES[3], b0), b1);
  let v1 = select(select(CODE_VALUES[4], CODE_VALUES[5], b0), select(CODE_VALUES[6], CODE_VALUES[7], b0), b1);
  let v2 =
      select(select(CODE_VALUES[8], CODE_VALUES[9], b0), select(CODE_VALUES[10], CODE_VALUES[11], b0), b1);
  let v3 =
      select(select(CODE_VALUES[12], CODE_VALUES[13], b0), select(CODE_VALUES[14], CODE_VALUES[15], b0), b1);
  return select(select(v0, v1, b2), select(v2, v3, b2), (code & 8u) != 0u);
}
#endif

fn load_scale(i: u32) -> f32 {
#if SCALES_F16
  return unpack_f16(scales[i / 2u], i % 2u);
#else
  return scales[i];
#endif
}

// The scale and zero point of the block holding element (n, k): `offset` is what dequantize subtracts from
// the biased code, 2^23 + zero for an integer zero point (packed, or the default 2^(BITS-1)), 2^23 for a
// float one (ZP_FLOAT), which is then `zero`.
struct BlockQuant {
  scale: f32,
  offset: f32,
  zero: f32,
}

fn block_quant(n: u32, k: u32) -> BlockQuant {
  // block_size is a power of two (the op checks it): shifts instead of divisions by a runtime value.
  let block_shift = countTrailingZeros(params.block_size);
  let block = (n * params.scale_col_stride + k) >> block_shift;
  var q: BlockQuant;
  q.scale = load_scale(block);
  q.offset = CODE_BIAS_F32 + params.default_zero;  // exact: the default zero is a small integer
  q.zero = 0.0;
#if ZP_PACKED
  let bit = n * params.zp_col_bits + (k >> block_shift) * BITS;
  q.offset = biased_code((zero_points[bit / 32u] >> (bit % 32u)) & CODE_MASK);
#endif
#if ZP_FLOAT
  let zi = n * params.blocks_per_col + (k >> block_shift);
  q.offset = CODE_BIAS_F32;
#if ZP_F16
  q.zero = unpack_f16(zero_points[zi / 2u], zi % 2u);
#else
  q.zero = zero_points[zi];
#endif
#endif
  return q;
}

// The block's zero point as a float: an integer one is in q.offset (2^23 + zero, so the difference is
// exact), a float one in q.zero (q.offset is then 2^23).
fn block_zero(q: BlockQuant) -> f32 {
  return (q.offset - CODE_BIAS_F32) + q.zero;
}

fn dequantize(code: u32, q: BlockQuant) -> f32 {
#if CODE_TABLE
  return code_value(code) * q.scale;
#else
#if ZP_FLOAT
  return ((biased_code(code) - q.offset) - q.zero) * q.scale;
#else
  return (biased_code(code) - q.offset) * q.scale;
#endif
#endif
}

// The CODES_PER_WORD weights of column n from element k0 (a multiple of CODES_PER_WORD) on, zero at and
// past K (the padding of a partial last block, or past the column's end). A word never straddles two of
// MatMulNBits' blocks: a block (16 codes or more, a power of two) holds whole words.
#if !B_QUADS
fn dequantize_word(n: u32, k0: u32) -> array<f32, CODES_PER_WORD> {
  if (k0 >= params.K) {
    return array<f32, CODES_PER_WORD>();
  }
  return dequantize_codes(n, k0, b[n * params.col_words + k0 / CODES_PER_WORD]);
}
#endif

// The same from the word already read (k0 < K).
fn dequantize_codes(n: u32, k0: u32, word: u32) -> array<f32, CODES_PER_WORD> {
  var w: array<f32, CODES_PER_WORD>;
  var q = block_quant(n, k0);
  for (var i = 0u; i < CODES_PER_WORD; i++) {
    let k = k0 + i;
#if SCALE_PER_CODE
    q = block_quant(n, min(k, params.K - 1u));
#endif
    let v = dequantize((word >> (i * BITS)) & CODE_MASK, q);
    w[i] = select(0.0, v, k < params.K);
  }
  return w;
}
