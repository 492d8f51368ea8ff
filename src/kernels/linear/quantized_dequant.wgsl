// The dequantisation of weight-only quantized codes (layouts in linear/quantized_common.wgsl), shared by the
// quantized matmuls' own kernels and by the fast GEMM's B_QUANT form (gemm_fast.wgsl, whose GemmParams then
// carry the same fields: K, block_size, col_words, scale_col_stride, zp_col_bits, blocks_per_col,
// default_zero). The includer declares `params`, B as `b: array<u32>`, `scales` and `zero_points`.
const BITS: u32 = {{BITS}}u;
const CODES_PER_WORD: u32 = 32u / BITS;
const CODE_MASK: u32 = (1u << BITS) - 1u;

#if CODE_TABLE
// The 16 values a 4-bit code stands for, as multiples of the block's absmax (MatMulBnb4's quant_type).
#if NF4
// NF4 (QLoRA, arXiv 2305.14314): quantiles of a standard normal scaled to [-1, 1], with an exact zero.
var<private> code_table: array<f32, 16> = array<f32, 16>(
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023,
    1.0);
#else
// bitsandbytes' FP4: sign bit 8, then a 3-bit e2m1-like magnitude (0, 0.0625, 8, 12, 4, 6, 2, 3 for codes
// 0..7) divided by its largest value, 12.
var<private> code_table: array<f32, 16> = array<f32, 16>(
    0.0, 0.0625 / 12.0, 8.0 / 12.0, 1.0, 4.0 / 12.0, 6.0 / 12.0, 2.0 / 12.0, 3.0 / 12.0,
    -0.0, -0.0625 / 12.0, -8.0 / 12.0, -1.0, -4.0 / 12.0, -6.0 / 12.0, -2.0 / 12.0, -3.0 / 12.0);
#endif
#endif

fn load_scale(i: u32) -> f32 {
#if SCALES_F16
  return unpack2x16float(scales[i / 2u])[i % 2u];
#else
  return scales[i];
#endif
}

// The scale and zero point of the block holding element (n, k).
struct BlockQuant {
  scale: f32,
  zero: f32,
}

fn block_quant(n: u32, k: u32) -> BlockQuant {
  let block = (n * params.scale_col_stride + k) / params.block_size;
  var q: BlockQuant;
  q.scale = load_scale(block);
  q.zero = params.default_zero;
#if ZP_PACKED
  let bit = n * params.zp_col_bits + (k / params.block_size) * BITS;
  q.zero = f32((zero_points[bit / 32u] >> (bit % 32u)) & CODE_MASK);
#endif
#if ZP_FLOAT
  let zi = n * params.blocks_per_col + k / params.block_size;
#if ZP_F16
  q.zero = unpack2x16float(zero_points[zi / 2u])[zi % 2u];
#else
  q.zero = zero_points[zi];
#endif
#endif
  return q;
}

fn dequantize(code: u32, q: BlockQuant) -> f32 {
#if CODE_TABLE
  return code_table[code] * q.scale;
#else
  return (f32(code) - q.zero) * q.scale;
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
