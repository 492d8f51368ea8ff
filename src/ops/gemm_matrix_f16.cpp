#include "ops/gemm_matrix_f16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/integer_math.h"
#include "gpu/dispatch_grid.h"
#include "ops/float16.h"
#include "ops/fused_residual.h"
#include "ops/kernel_interface.h"

namespace wgi::ops {

namespace {

uint32_t padded(uint32_t v, uint32_t multiple) {
  return ceil_div(std::max<uint32_t>(v, 1), multiple) * multiple;
}

// What the accumulators can start from or take in as they are (no alpha, no activation, no output row map),
// with no bias or a constant float32 one of N values broadcast over rows at beta 1.
bool accumulator_epilogue(const GemmLaunchSpec& spec, const Tensor* bias) {
  const bool row_bias =
      !spec.bias || (bias && spec.bias_stride_m == 0 && spec.bias_stride_n == 1 && spec.beta == 1.0f &&
                     bias->element_count() >= spec.n && bias->dtype() == DType::Float32);
  return row_bias && spec.alpha == 1.0f && spec.activation.kind == FusedActivation::Kind::None &&
         !spec.out_row_map;
}

// The epilogue the kernel's direct stores apply: at most the bias, taken into the accumulators (the bias
// rows), nothing after.
bool plain_epilogue(const GemmLaunchSpec& spec, const Tensor* bias) {
  return !spec.residual && accumulator_epilogue(spec, bias);
}

// The epilogue RESIDUAL_ACC takes into the accumulators of interior tiles: a fused residual and at most a
// bias within the float16 range (split into two halves).
bool residual_epilogue(const GemmLaunchSpec& spec, const Tensor* bias) {
  if (!spec.residual || !accumulator_epilogue(spec, bias)) return false;
  if (!spec.bias) return true;
  const auto* values = reinterpret_cast<const float*>(bias->bytes().data());
  return std::all_of(values, values + spec.n, [](float v) { return std::abs(v) <= 65504.0f; });
}

}  // namespace

std::string matrix_f16_gemm_problem(const GemmLaunchSpec& spec, const gpu::Capabilities& caps) {
  if (!caps.f16_compute) return "the session computes in float32";
  if (spec.kernel != GemmKernel::Auto) return "a kernel is forced";
  if (spec.b_quantized) return "B is quantized";
  if (spec.batch != 1) return "a batch of products";
  if (gemm_has_strided_views(spec)) return "strided views";
  if (spec.a_km) return "A is stored [K, M]";
  if (spec.m <= 8) return "M <= 8 (the GEMV)";
  return "";
}

bool matrix_f16_tall_tile(uint64_t tiles, uint32_t splits, const gpu::Limits& limits) {
  return splits == 1 && tiles >= kMatrixF16TallMinTiles &&
         limits.max_compute_invocations_per_workgroup >= kMatrixF16TallInvocations &&
         limits.max_compute_workgroup_size_x >= kMatrixF16TallInvocations &&
         limits.max_compute_workgroup_storage_size >= kMatrixF16TallStorageBytes;
}

uint32_t matrix_f16_split_count(uint64_t tiles, uint32_t k) {
  constexpr uint64_t kMinChunk = 4 * kMatrixF16Slab;
  if (tiles == 0 || tiles >= kMatrixF16WaveTiles || k < 2 * kMinChunk) return 1;
  return static_cast<uint32_t>(std::min(ceil_div(2 * kMatrixF16WaveTiles, tiles), uint64_t{k} / kMinChunk));
}

Tensor matrix_f16_b(const Tensor& b, int64_t k, int64_t n, bool stored_nk) {
  const int64_t kp = padded(static_cast<uint32_t>(k), kMatrixF16Slab);
  const int64_t np = padded(static_cast<uint32_t>(n), kMatrixF16Tile);
  // [K, N] in b's type first (prepack_b: the blocked, parallel transpose of a stored [N, K]), then its rows
  // padded and converted.
  const Tensor kn = prepack_b(b, k, n, stored_nk, false);
  Tensor out(DType::Float16, {kp, np});
  auto* dst = reinterpret_cast<uint16_t*>(out.bytes().data());
  std::memset(dst, 0, static_cast<size_t>(kp * np) * sizeof(uint16_t));
  const bool half = kn.dtype() == DType::Float16;
  const auto* f32 = reinterpret_cast<const float*>(kn.bytes().data());
  const auto* f16 = reinterpret_cast<const uint16_t*>(kn.bytes().data());
  for (int64_t kk = 0; kk < k; ++kk) {
    uint16_t* row = dst + kk * np;
    if (half) {
      std::memcpy(row, f16 + kk * n, static_cast<size_t>(n) * sizeof(uint16_t));
    } else {
      for (int64_t nn = 0; nn < n; ++nn) row[nn] = float_to_half(f32[kk * n + nn]);
    }
  }
  return out;
}

Tensor matrix_f16_bias_rows(const Tensor& bias, int64_t n) {
  const int64_t np = padded(static_cast<uint32_t>(n), kMatrixF16Tile);
  Tensor out(DType::Float32, {16, np});
  auto* dst = reinterpret_cast<float*>(out.bytes().data());
  std::memset(dst, 0, static_cast<size_t>(16 * np) * sizeof(float));
  const auto* src = reinterpret_cast<const float*>(bias.bytes().data());
  for (int64_t r = 0; r < 16; ++r) std::memcpy(dst + r * np, src, static_cast<size_t>(n) * sizeof(float));
  return out;
}

Tensor matrix_f16_bias_split(const Tensor& bias, int64_t n) {
  const int64_t np = padded(static_cast<uint32_t>(n), kMatrixF16Tile);
  Tensor out(DType::Float16, {32, np});
  auto* dst = reinterpret_cast<uint16_t*>(out.bytes().data());
  std::memset(dst, 0, static_cast<size_t>(32 * np) * sizeof(uint16_t));
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 16; ++c) dst[r * np + c] = float_to_half(1.0f);
  const auto* src = reinterpret_cast<const float*>(bias.bytes().data());
  for (int64_t c = 0; c < n; ++c) {
    const uint16_t hi = float_to_half(src[c]);
    dst[16 * np + c] = hi;
    dst[17 * np + c] = float_to_half(src[c] - half_to_float(hi));
  }
  return out;
}

void append_matrix_f16_gemm(const PlanContext& ctx, const GemmLaunchSpec& spec, const Tensor& b, bool b_nk,
                            const Tensor* bias, OpPlan& plan, const MatrixF16Conv* conv) {
  const uint32_t kp = padded(spec.k, kMatrixF16Slab), np = padded(spec.n, kMatrixF16Tile);
  const uint32_t tiles_n = np / kMatrixF16Tile;
  // A split writes raw partial sums ([split][M][N], stored directly where a tile is whole); the reduction
  // applies the whole epilogue.
  const uint64_t tiles_128 = uint64_t{padded(spec.m, kMatrixF16Tile) / kMatrixF16Tile} * tiles_n;
  const uint32_t splits = conv ? 1 : matrix_f16_split_count(tiles_128, spec.k);
  const bool split = splits > 1;
  const bool tall = matrix_f16_tall_tile(tiles_128, splits, ctx.caps.limits);
  const uint32_t tile_rows = tall ? kMatrixF16TallRows : kMatrixF16Tile;
  const uint32_t rows = padded(spec.m, tile_rows), tiles_m = rows / tile_rows;

  // A read as float32 by the product itself (A_F32: converted as it is staged), where whole 8-value chunks
  // of its rows are 16-byte aligned, or a convolution's gathers (A_CONV); else cast to float16 [rows, kp],
  // zero-padded, by a launch of its own.
  bool a_f32 = conv ? !conv->nhwc_f16 : spec.k % 8 == 0;
  if (spec.a_row_map) {
    for (uint32_t stride : spec.a_row_map->strides) a_f32 = a_f32 && stride % 4 == 0;
  }
  const bool a_chunks = a_f32 || conv;
  TensorRef a16 = spec.a;
  if (!a_chunks) {
    a16 = plan.add_scratch(uint64_t{rows} * kp * sizeof(uint16_t));
    KernelLaunch cast;
    KernelInterface iface;
    const bool mapped = spec.a_row_map.has_value();
    std::vector<UniformMember> members{{"M", UniformType::U32},
                                       {"K", UniformType::U32},
                                       {"rows", UniformType::U32},
                                       {"k_padded", UniformType::U32}};
    if (mapped) {
      members.push_back({"a_row_extents", UniformType::Vec4U});
      members.push_back({"a_row_strides", UniformType::Vec4U});
    }
    iface.read("a", "f32", spec.a).read_write("a16", "u32", a16).uniforms(std::move(members));
    cast.program.wgsl = iface.load_wgsl("linear/gemm_a_to_f16.wgsl", {{"A_ROW_MAP", mapped ? "1" : "0"}});
    cast.program.label = mapped ? "gemm_a_to_f16_rows" : "gemm_a_to_f16";
    iface.bind(cast);
    UniformValues values = iface.values();
    values.u32("M", spec.m).u32("K", spec.k).u32("rows", rows).u32("k_padded", kp);
    if (mapped)
      values.vec4u("a_row_extents", spec.a_row_map->extents).vec4u("a_row_strides", spec.a_row_map->strides);
    cast.uniform = values.bytes();
    cast.groups = gpu::fold_workgroups(ceil_div(uint64_t{rows} * kp / 2, uint64_t{256}),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
    plan.launches.push_back(std::move(cast));
  }

  const TensorRef b16 = TensorRef::constant(static_cast<uint32_t>(plan.constants.size()));
  plan.constants.push_back(matrix_f16_b(b, spec.k, spec.n, b_nk));
  // Direct stores (subgroupMatrixStore to the output) only where some tile lies inside M x N: Dawn asks a
  // buffer that a shader loads or stores subgroup matrices from to hold at least one whole matrix, which a
  // smaller output may not (a split's partial sums are padded to it below).
  const bool interior = spec.m >= tile_rows && spec.n >= kMatrixF16Tile;
  const bool direct = !conv && (split || (interior && plain_epilogue(spec, bias)));
  const bool residual_acc = !conv && !split && interior && !direct && residual_epilogue(spec, bias);
  const bool bias_rows = !split && direct && spec.bias;
  const bool bias_split = residual_acc && spec.bias;
  // The bias's constant for the accumulators: f32 rows for DIRECT_STORE, float16 halves for RESIDUAL_ACC.
  TensorRef bias_rows_ref = TensorRef::zero();
  if (bias_rows || bias_split) {
    bias_rows_ref = TensorRef::constant(static_cast<uint32_t>(plan.constants.size()));
    plan.constants.push_back(bias_rows ? matrix_f16_bias_rows(*bias, spec.n)
                                       : matrix_f16_bias_split(*bias, spec.n));
  }

  kernels::Defines defines = gemm_defines_off();
  (split ? FusedActivation{} : spec.activation).add_defines(defines);  // a split's reduction applies it
  const bool residual = !split && spec.residual.has_value();
  defines["SPLIT_K"] = split ? "1" : "0";
  defines["TALL_TILE"] = tall ? "1" : "0";
  defines["A_F32"] = a_f32 ? "1" : "0";
  defines["A_CHUNKS"] = a_chunks ? "1" : "0";
  defines["A_CONV"] = conv ? "1" : "0";
  defines["OUT_COL_STRIDE"] = conv ? "1" : "0";
  // A cast to f16 first is packed (no map to read); a split's partial sums are written packed.
  row_map_defines(spec, a_f32, !split, defines);
  const bool row_maps = spec.a_row_map || spec.out_row_map;
  const TensorRef out =
      split
          ? plan.add_scratch(std::max<uint64_t>(uint64_t{splits} * spec.m * spec.n, 16 * 16) * sizeof(float))
          : spec.out;
  defines["RESIDUAL"] = residual ? "1" : "0";
  defines["DIRECT_STORE"] = direct ? "1" : "0";
  defines["RESIDUAL_ACC"] = residual_acc ? "1" : "0";
  defines["DIRECT_INTERIOR"] = direct || residual_acc ? "1" : "0";
  defines["BIAS_ROWS"] = bias_rows ? "1" : "0";
  defines["BIAS_SPLIT"] = bias_split ? "1" : "0";
  std::vector<UniformMember> members = gemm_params_members(row_maps, false);
  if (conv) {
    for (const char* name : {"conv_input", "conv_kernel", "conv_step", "conv_output"})
      members.push_back({name, UniformType::Vec4U});
    members.push_back({"out_col_stride", UniformType::U32});
  }
  KernelInterface iface;
  const char* a_type = conv ? (a_f32 ? "f32" : "vec4<u32>") : a_f32 ? "vec4<f32>" : "vec4<u32>";
  iface.read("a", a_type, a16)
      .read("b", "vec2<u32>", b16)
      .read("bias", "f32", spec.bias.value_or(TensorRef::zero()))
      .read(bias_split ? "bias_split" : "bias_rows", bias_split ? "f16" : "f32", bias_rows_ref)
      .read_write("output", "f32", out)
      .uniforms(std::move(members), "GemmParams");
  if (residual) add_residual_binding(iface, *spec.residual, "f32");
  KernelLaunch gemm;
  gemm.program.wgsl = iface.load_wgsl("linear/gemm_matrix_f16.wgsl", defines);
  gemm.program.label = std::string("gemm_matrix_f16") + (conv ? (a_f32 ? "_conv" : "_conv_nhwc") : "") +
                       (a_f32 && spec.a_row_map ? "_rows" : "") +
                       (split                            ? "_split"
                        : direct || residual_acc || conv ? ""
                                                         : "_bounce") +
                       residual_label_suffix(residual) + (split ? "" : spec.activation.label_suffix()) +
                       (tall ? "_tall" : "");
  iface.bind(gemm);
  GemmLaunchSpec padded_spec = spec;
  padded_spec.a_row_stride = a_chunks ? spec.k : kp;  // the operands' row strides as read
  padded_spec.b_row_stride = np;
  UniformValues values = gemm_params_values(iface, padded_spec, tiles_m, tiles_n, splits, false);
  if (conv) {
    values.vec4u("conv_input", conv->input)
        .vec4u("conv_kernel", conv->kernel)
        .vec4u("conv_step", conv->step)
        .vec4u("conv_output", conv->output)
        .u32("out_col_stride", conv->out_col_stride);
  }
  gemm.uniform = values.bytes();
  gemm.groups = gpu::fold_workgroups(uint64_t{tiles_m} * tiles_n * splits,
                                     ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(gemm));
  if (split) plan.launches.push_back(gemm_split_reduce_launch(ctx, spec, splits, out));
}

}  // namespace wgi::ops
