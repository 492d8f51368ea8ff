#include "ops/gemm_launch.h"

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"

namespace wgi::ops {

namespace {
constexpr uint32_t kTile = 32;  // output tile of both kernels
}  // namespace

KernelLaunch make_gemm_launch(const PlanContext& ctx, const GemmLaunchSpec& spec) {
  const bool vec4 = spec.kernel == GemmKernel::Vec4;
  if (vec4 && (spec.a_km || !spec.b_nk || spec.k % 4 != 0 || spec.k == 0)) {
    ctx.fail("the vec4 GEMM kernel needs K % 4 == 0, A as [M, K] and B as [N, K]; this product has K = " +
             std::to_string(spec.k) + (spec.a_km ? ", A as [K, M]" : "") + (spec.b_nk ? "" : ", B as [K, N]"));
  }
  const uint32_t tiles_m = (spec.m + kTile - 1) / kTile;
  const uint32_t tiles_n = (spec.n + kTile - 1) / kTile;
  KernelLaunch launch;
  kernels::Defines defines = {{"A_KM", spec.a_km ? "1" : "0"}, {"B_NK", spec.b_nk ? "1" : "0"}};
  spec.activation.add_defines(defines);
  launch.program.label = std::string(vec4 ? "gemm_vec4" : "gemm_tiled") + (spec.a_km ? "_akm" : "") +
                         (spec.b_nk ? "_bnk" : "_bkn") + spec.activation.label_suffix();
  launch.program.wgsl = kernels::load_wgsl(vec4 ? "linear/gemm_vec4.wgsl" : "linear/gemm_tiled.wgsl", defines);
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                             gpu::BindingKind::Uniform};
  launch.bindings = {spec.a, spec.b, spec.bias.value_or(TensorRef::zero()), spec.out};
  launch.uniform = gpu::UniformBuilder()
                       .u32(spec.m)
                       .u32(spec.n)
                       .u32(spec.k)
                       .u32(spec.batch)
                       .u32(tiles_n)
                       .u32(tiles_m)
                       .u32(spec.bias ? 1 : 0)
                       .u32(0)
                       .f32(spec.alpha)
                       .f32(spec.beta)
                       .f32(spec.activation.min)
                       .f32(spec.activation.max)
                       .vec4u(spec.batch_dims)
                       .vec4u(spec.a_batch_strides)
                       .vec4u(spec.b_batch_strides)
                       .vec4u({spec.bias_stride_m, spec.bias_stride_n, 0, 0})
                       .bytes();
  launch.groups = gpu::fold_workgroups(uint64_t{tiles_m} * tiles_n * spec.batch,
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

}  // namespace wgi::ops
