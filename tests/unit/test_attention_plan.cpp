// The Attention planner's choose step (ops/attention_plan.h) on the models' shapes: which plan and kernel
// run each attention, which operands are copied first and how the output is written, on the H200's limits
// and on a compatibility device's; and the errors of a forced kernel that cannot run. Pure: no GPU. The
// nodes are written as the graph passes write them (ops/internal_ops.h) and parsed by attention_problem.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/attention_plan.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

using ops::attention::AttentionChoice;
using ops::attention::AttentionKernel;
using Flags = std::array<bool, 3>;

const gpu::Capabilities& h200() {
  static const gpu::Capabilities caps = test::model_device(48 * 1024, 1024);
  return caps;
}
const gpu::Capabilities& compat() {
  static const gpu::Capabilities caps = test::model_device(16384, 128);
  return caps;
}

// An Attention node's inputs: descriptions, and the values of the constant ones (Reshape targets).
struct Inputs {
  std::vector<std::optional<ops::TensorDesc>> descs;
  std::vector<std::optional<Tensor>> constants;
  void add(const Shape& shape) {
    descs.push_back(ops::TensorDesc{DType::Float32, shape});
    constants.emplace_back();
  }
  void add_absent() {
    descs.emplace_back();
    constants.emplace_back();
  }
  void add_target(size_t position, const std::vector<int64_t>& target) {
    descs.resize(std::max(descs.size(), position + 1));
    constants.resize(descs.size());
    descs[position] = ops::TensorDesc{DType::Int64, {static_cast<int64_t>(target.size())}};
    constants[position] = Tensor::from_vector<int64_t>({static_cast<int64_t>(target.size())}, target);
  }
};

// The choice for the node, or the error (empty choice) it throws.
struct Chosen {
  std::optional<AttentionChoice> choice;
  std::string error;
};

Chosen choose(const ops::AttentionAttributes& attributes, const Inputs& in, const gpu::Capabilities& caps) {
  const ops::NodeInfo node{"attention", "Attention", "wgi", 1, ops::write_attention_attributes(attributes),
                           {},          {}};
  ops::PlanContext ctx{node, in.descs, {}, caps};
  for (const std::optional<Tensor>& c : in.constants) ctx.constant_inputs.push_back(c ? &*c : nullptr);
  Chosen out;
  try {
    out.choice = ops::attention::choose_attention_plan(ops::attention::attention_problem(ctx), caps);
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

// Window attention as DaViT (Florence-2's vision tower) exports it: the packed qkv projection of `windows`
// windows of 12 x 12 tokens, 4 heads of 32, read as views (read_packed_qkv), the output written with perm
// [0, 2, 1, 3] (write_attention_transposed).
Chosen davit_window(int64_t windows, const gpu::Capabilities& caps, const std::string& kernel = "") {
  ops::AttentionAttributes a;
  a.scale = 0.1767767f;
  a.qkv_packed = true;
  a.qkv_indices = {0, 1, 2};
  a.transpose_output = true;
  a.kernel = kernel;
  Inputs in;
  for (int i = 0; i < 3; ++i) in.add({windows, 144, 3 * 128});
  in.add_absent();
  in.add_absent();
  in.add_target(ops::AttentionInput::kPackedTarget, {windows, 144, 3, 4, 32});
  return choose(a, in, caps);
}

TEST(AttentionPlan, DavitWindowAttentionRunsTiledInPlace) {
  // 768 x 768: 256 windows x 4 heads, 144 queries each in one workgroup of 160.
  const Chosen big = davit_window(256, h200());
  ASSERT_TRUE(big.choice) << big.error;
  EXPECT_EQ(big.choice->kernel, AttentionKernel::Tiled);
  EXPECT_EQ(big.choice->tiled_queries, 160);
  EXPECT_EQ(big.choice->workgroups, 1024);
  EXPECT_EQ(big.choice->copied, (Flags{false, false, false}));
  EXPECT_FALSE(big.choice->output_copied);
  EXPECT_FALSE(big.choice->k_transposed);
  // A device of 128 invocations per workgroup: two workgroups of 128 queries per head.
  const Chosen narrow = davit_window(256, compat());
  ASSERT_TRUE(narrow.choice) << narrow.error;
  EXPECT_EQ(narrow.choice->kernel, AttentionKernel::Tiled);
  EXPECT_EQ(narrow.choice->tiled_queries, 128);
  EXPECT_EQ(narrow.choice->workgroups, 2048);
}

TEST(AttentionPlan, FewWindowsRunOnTheRowKernelWithKAndVCopied) {
  // 16 windows x 4 heads do not fill the GPU tiled (64 x 160 < 256 x 64 query rows): the row kernel, which
  // wants K^T and a contiguous V, so the strided views are copied so.
  for (const std::string& kernel : {std::string(), std::string("rows")}) {
    const Chosen c = davit_window(16, h200(), kernel);
    ASSERT_TRUE(c.choice) << c.error;
    EXPECT_EQ(c.choice->kernel, AttentionKernel::Rows) << kernel;
    EXPECT_EQ(c.choice->workgroups, 16 * 4 * 144) << kernel;
    EXPECT_TRUE(c.choice->k_transposed) << kernel;
    EXPECT_EQ(c.choice->copied, (Flags{false, true, true})) << kernel;
    EXPECT_FALSE(c.choice->output_copied) << kernel;
  }
  const Chosen tiled = davit_window(16, h200(), "tiled");
  ASSERT_TRUE(tiled.choice) << tiled.error;
  EXPECT_EQ(tiled.choice->kernel, AttentionKernel::Tiled);
}

// DaViT's channel attention: Q = q^T and V = v^T of the packed projection (qkv_transposed), K read as K^T,
// the product [B, heads, D, N] written [B, N, heads, D] (output_perm); V's last dim is the tokens.
Chosen davit_channel(const gpu::Capabilities& caps) {
  ops::AttentionAttributes a;
  a.scale = 0.1767767f;
  a.k_transposed = true;
  a.qkv_packed = true;
  a.qkv_indices = {0, 1, 2};
  a.qkv_transposed = Flags{true, false, true};
  a.output_perm = std::vector<int64_t>{0, 3, 1, 2};
  Inputs in;
  for (int i = 0; i < 3; ++i) in.add({2, 576, 3 * 256});
  in.add_absent();
  in.add_absent();
  in.add_target(ops::AttentionInput::kPackedTarget, {2, 576, 3, 8, 32});
  return choose(a, in, caps);
}

TEST(AttentionPlan, DavitChannelAttentionRunsThreeLaunchesOnViews) {
  const Chosen fast = davit_channel(h200());
  ASSERT_TRUE(fast.choice) << fast.error;
  EXPECT_EQ(fast.choice->kernel, AttentionKernel::ThreeLaunch);
  EXPECT_EQ(fast.choice->copied, (Flags{false, false, false}));
  EXPECT_TRUE(fast.choice->columns_out);  // Tq (the channels) is the output's contiguous dim
  EXPECT_FALSE(fast.choice->output_copied);
  // Without the fast GEMMs' views every strided operand and the output go through copies.
  const Chosen plain = davit_channel(compat());
  ASSERT_TRUE(plain.choice) << plain.error;
  EXPECT_EQ(plain.choice->kernel, AttentionKernel::ThreeLaunch);
  EXPECT_EQ(plain.choice->copied, (Flags{true, true, true}));
  EXPECT_FALSE(plain.choice->columns_out);
  EXPECT_TRUE(plain.choice->output_copied);
}

// SigLIP-B/16 at 224 x 224: 196 tokens, 12 heads of 64, Q, K and V split into heads in place
// (read_split_heads), the output written with perm [0, 2, 1, 3].
ops::AttentionAttributes siglip_attributes(const std::string& kernel = "") {
  ops::AttentionAttributes a;
  a.scale = 0.125f;
  a.kernel = kernel;
  a.heads_views = Flags{true, true, true};
  a.transpose_output = true;
  return a;
}
Inputs siglip_inputs(int64_t batch) {
  Inputs in;
  for (int i = 0; i < 3; ++i) in.add({batch, 196, 768});
  in.add_absent();
  in.add_absent();
  in.add_absent();
  for (size_t i = 0; i < 3; ++i) in.add_target(ops::AttentionInput::heads_target(i), {batch, 196, 12, 64});
  return in;
}
Chosen siglip(int64_t batch, const std::string& kernel = "") {
  return choose(siglip_attributes(kernel), siglip_inputs(batch), h200());
}

TEST(AttentionPlan, SiglipRunsRowsAloneAndGemmsInABatch) {
  // One image: 12 tiled workgroups would leave the GPU idle; the row kernel with K copied as K^T.
  const Chosen one = siglip(1);
  ASSERT_TRUE(one.choice) << one.error;
  EXPECT_EQ(one.choice->kernel, AttentionKernel::Rows);
  EXPECT_EQ(one.choice->workgroups, 12 * 196);
  EXPECT_TRUE(one.choice->k_transposed);
  EXPECT_EQ(one.choice->copied, (Flags{false, true, true}));
  EXPECT_FALSE(one.choice->output_copied);
  // Eight images: 96 heads x 196 query rows over 196 keys: the scores are a batched GEMM (then a Softmax
  // and P V), which reads the views in place and writes the output in place.
  const Chosen eight = siglip(8);
  ASSERT_TRUE(eight.choice) << eight.error;
  EXPECT_EQ(eight.choice->kernel, AttentionKernel::ThreeLaunch);
  EXPECT_FALSE(eight.choice->k_transposed);
  EXPECT_EQ(eight.choice->copied, (Flags{false, false, false}));
  EXPECT_FALSE(eight.choice->output_copied);
  // Forced, the tiled kernel still takes it: 96 heads x 224 query rows.
  const Chosen tiled = siglip(8, "tiled");
  ASSERT_TRUE(tiled.choice) << tiled.error;
  EXPECT_EQ(tiled.choice->kernel, AttentionKernel::Tiled);
  EXPECT_EQ(tiled.choice->tiled_queries, 224);
  EXPECT_EQ(tiled.choice->workgroups, 96);
}

TEST(AttentionPlan, BartDecoderStepWithPastRunsRowsWithoutCopies) {
  // One new token against 7 past ones, 2 sequences x 16 heads of 64, a padding mask per sequence.
  ops::AttentionAttributes a;
  a.scale = 0.125f;
  Inputs in;
  in.add({2, 16, 1, 64});
  in.add({2, 16, 8, 64});
  in.add({2, 16, 8, 64});
  in.add({2, 1, 1, 8});
  const Chosen c = choose(a, in, h200());
  ASSERT_TRUE(c.choice) << c.error;
  EXPECT_EQ(c.choice->kernel, AttentionKernel::Rows);
  EXPECT_EQ(c.choice->workgroups, 32);
  EXPECT_EQ(c.choice->key_splits, 1);  // 8 keys: one workgroup a row
  EXPECT_FALSE(c.choice->k_transposed);
  EXPECT_EQ(c.choice->copied, (Flags{false, false, false}));
  EXPECT_FALSE(c.choice->output_copied);
}

// BART-base's step: 12 heads x 1 query over a past of 65 and over the encoder's 590 tokens. The row kernel
// splits the keys until about 256 workgroups run, each over at least 32 keys, none over none.
TEST(AttentionPlan, DecoderStepSplitsItsKeysOverWorkgroups) {
  ops::AttentionAttributes a;
  a.scale = 0.125f;
  struct Case {
    int64_t batch, tk, splits, per_split;
  };
  for (const Case& k : {Case{1, 590, 19, 32}, Case{1, 65, 3, 22}, Case{3, 590, 8, 74}, Case{1, 64, 2, 32},
                        Case{1, 63, 1, 63}, Case{11, 590, 1, 590}}) {
    Inputs in;
    in.add({k.batch, 12, 1, 64});
    in.add({k.batch, 12, k.tk, 64});
    in.add({k.batch, 12, k.tk, 64});
    const Chosen c = choose(a, in, h200());
    ASSERT_TRUE(c.choice) << c.error;
    EXPECT_EQ(c.choice->kernel, AttentionKernel::Rows);
    EXPECT_EQ(c.choice->key_splits, k.splits) << k.batch << " x " << k.tk;
    EXPECT_EQ(c.choice->keys_per_split, k.per_split) << k.batch << " x " << k.tk;
    EXPECT_EQ(c.choice->workgroups, k.batch * 12 * k.splits);
    EXPECT_GT(k.tk, (k.splits - 1) * k.per_split);  // the last part has keys
  }
}

TEST(AttentionPlan, UnalignedHeadsAndForcedKernelsThatCannotRun) {
  // Heads of 80 (past the tiled kernel's 64) over 77 tokens, batch 3 x 5 heads.
  ops::AttentionAttributes a;
  Inputs in;
  for (int i = 0; i < 3; ++i) in.add({3, 5, 77, 80});
  const Chosen rows = choose(a, in, h200());
  ASSERT_TRUE(rows.choice) << rows.error;
  EXPECT_EQ(rows.choice->kernel, AttentionKernel::Rows);
  EXPECT_EQ(rows.choice->copied, (Flags{false, false, false}));  // contiguous K is read as it is
  a.kernel = "tiled";
  EXPECT_NE(
      choose(a, in, h200()).error.find("wgi.kernel = tiled needs head sizes up to 64; Q·K has 80 and V 80"),
      std::string::npos)
      << choose(a, in, h200()).error;
  a.kernel = "flash";  // choose's own error; the planner prefixes the node
  EXPECT_EQ(choose(a, in, h200()).error, "unknown wgi.kernel 'flash' (expected rows, tiled, gemm or matrix)");

  // V's last dim 600 (past the row kernel's 512): three launches; forcing rows is an error, and so is a mask
  // that differs across the batch.
  ops::AttentionAttributes wide;
  Inputs wide_in;
  wide_in.add({2, 3, 5, 24});
  wide_in.add({2, 3, 7, 24});
  wide_in.add({2, 3, 7, 600});
  const Chosen three = choose(wide, wide_in, h200());
  ASSERT_TRUE(three.choice) << three.error;
  EXPECT_EQ(three.choice->kernel, AttentionKernel::ThreeLaunch);
  EXPECT_FALSE(three.choice->columns_out);
  EXPECT_FALSE(three.choice->output_copied);
  wide.kernel = "rows";
  EXPECT_NE(choose(wide, wide_in, h200()).error.find("wgi.kernel = rows needs V's last dim <= 512"),
            std::string::npos);
  wide.kernel = "";
  wide_in.add({2, 1, 5, 7});
  EXPECT_NE(choose(wide, wide_in, h200()).error.find("a mask that differs across batch or heads"),
            std::string::npos)
      << choose(wide, wide_in, h200()).error;
}

// A session computing in f16 (precision f16 on subgroup matrices): the H200's limits with f16_compute set.
const gpu::Capabilities& h200_f16() {
  static const gpu::Capabilities caps = [] {
    gpu::Capabilities c = h200();
    c.f16_compute = true;
    return c;
  }();
  return caps;
}

TEST(AttentionPlan, MatrixKernelInF16SessionsWithItsSubgroupsPerWorkgroup) {
  // DaViT's windows: where the f32 plan takes the tiled kernel (256 windows) it keeps it (it ran faster);
  // with few windows (the f32 plan's row kernel) the matrix kernel: 144 queries = 9 blocks of 16, three
  // subgroups a workgroup (no padded rows), the views read in place; forced, on 256 windows too.
  const Chosen many = davit_window(256, h200_f16());
  ASSERT_TRUE(many.choice) << many.error;
  EXPECT_EQ(many.choice->kernel, AttentionKernel::Tiled);
  for (const auto& [windows, kernel] : {std::pair<int64_t, std::string>{16, ""}, {256, "matrix"}}) {
    const Chosen c = davit_window(windows, h200_f16(), kernel);
    ASSERT_TRUE(c.choice) << c.error;
    EXPECT_EQ(c.choice->kernel, AttentionKernel::MatrixF16) << windows;
    EXPECT_EQ(c.choice->matrix_subgroups, 3);
    EXPECT_EQ(c.choice->matrix_keys_per_chunk, 64);  // 37 KB of workgroup memory
    EXPECT_TRUE(c.choice->matrix_vec4);              // the packed projection's rows: 384 floats apart
    EXPECT_EQ(c.choice->workgroups, windows * 4 * 3);
    EXPECT_EQ(c.choice->copied, (Flags{false, false, false}));
    EXPECT_FALSE(c.choice->output_copied);
    EXPECT_FALSE(c.choice->k_transposed);
  }
  // A forced kernel keeps its own plan in an f16 session.
  const Chosen tiled = davit_window(256, h200_f16(), "tiled");
  ASSERT_TRUE(tiled.choice) << tiled.error;
  EXPECT_EQ(tiled.choice->kernel, AttentionKernel::Tiled);
  // SigLIP's 196 queries = 13 blocks: four subgroups (4 workgroups a head, 3 padded blocks) cost less than
  // three (5 workgroups) once each workgroup's staging of K and V counts.
  EXPECT_EQ(ops::attention::matrix_attention_subgroups(196), 4);
  // SigLIP-B's heads of 64 with four subgroups: chunks of 64 keys would take 61 KB, so 32 (40 KB).
  const Chosen sig = choose(siglip_attributes(), siglip_inputs(1), h200_f16());
  ASSERT_TRUE(sig.choice) << sig.error;
  EXPECT_EQ(sig.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_EQ(sig.choice->matrix_subgroups, 4);
  EXPECT_EQ(sig.choice->matrix_keys_per_chunk, 32);
  EXPECT_TRUE(sig.choice->matrix_vec4);
  // At batch 8 too: 96 heads, which the f32 plan runs as GEMMs (SiglipRunsRowsAloneAndGemmsInABatch), not
  // on the tiled kernel, whose invocation count alone would have sent DaViT's windows there.
  const Chosen sig8 = choose(siglip_attributes(), siglip_inputs(8), h200_f16());
  ASSERT_TRUE(sig8.choice) << sig8.error;
  EXPECT_EQ(sig8.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_EQ(sig8.choice->matrix_subgroups, 4);
  EXPECT_EQ(sig8.choice->workgroups, 96 * 4);
  EXPECT_EQ(sig8.choice->copied, (Flags{false, false, false}));
  EXPECT_EQ(ops::attention::matrix_attention_subgroups(144), 3);
  EXPECT_EQ(ops::attention::matrix_attention_subgroups(16), 1);
  EXPECT_EQ(ops::attention::matrix_attention_subgroups(17), 2);
  EXPECT_EQ(ops::attention::matrix_attention_subgroups(590), 4);

  // Heads of 80: past the kernel's 64, the f32 plan; forcing it names why.
  ops::AttentionAttributes a;
  Inputs in;
  for (int i = 0; i < 3; ++i) in.add({3, 5, 77, 80});
  const Chosen wide = choose(a, in, h200_f16());
  ASSERT_TRUE(wide.choice) << wide.error;
  EXPECT_EQ(wide.choice->kernel, AttentionKernel::Rows);
  a.kernel = "matrix";
  EXPECT_NE(
      choose(a, in, h200_f16()).error.find("wgi.kernel = matrix needs head sizes from 1 to 64; Q·K has 80"),
      std::string::npos)
      << choose(a, in, h200_f16()).error;
  // Heads of size 0 (every score 0): the matrices would have no columns, so the f32 plan, which pads them.
  Inputs empty_heads;
  for (int i = 0; i < 2; ++i) empty_heads.add({3, 5, 77, 0});
  empty_heads.add({3, 5, 77, 8});
  const Chosen empty = choose(ops::AttentionAttributes{}, empty_heads, h200_f16());
  ASSERT_TRUE(empty.choice) << empty.error;
  EXPECT_EQ(empty.choice->kernel, AttentionKernel::Rows);
  // Heads of 40 over 77 tokens with a mask per batch entry: the matrix kernel reads the mask per element.
  ops::AttentionAttributes masked;
  Inputs masked_in;
  for (int i = 0; i < 3; ++i) masked_in.add({3, 5, 77, 40});
  masked_in.add({3, 1, 77, 77});
  const Chosen m = choose(masked, masked_in, h200_f16());
  ASSERT_TRUE(m.choice) << m.error;
  EXPECT_EQ(m.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_EQ(m.choice->matrix_subgroups, 3);  // 5 blocks: 2 workgroups of 3 cost 10, of 4 12, of 2 12
  EXPECT_EQ(m.choice->workgroups, 15 * 2);
  EXPECT_EQ(m.choice->matrix_keys_per_chunk, 64);
  EXPECT_TRUE(m.choice->matrix_vec4);
  // K given as K^T (keys contiguous): read element by element.
  ops::AttentionAttributes kt;
  kt.k_transposed = true;
  Inputs kt_in;
  kt_in.add({2, 4, 50, 32});
  kt_in.add({2, 4, 32, 50});
  kt_in.add({2, 4, 50, 32});
  const Chosen t = choose(kt, kt_in, h200_f16());
  ASSERT_TRUE(t.choice) << t.error;
  EXPECT_EQ(t.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_TRUE(t.choice->k_transposed);
  EXPECT_FALSE(t.choice->matrix_vec4);
  // Forced without f16 compute: the error names the session option.
  masked.kernel = "matrix";
  EXPECT_NE(
      choose(masked, masked_in, h200()).error.find("wgi.kernel = matrix needs a session computing in f16"),
      std::string::npos)
      << choose(masked, masked_in, h200()).error;
  // A device with 32 KB of workgroup memory: SigLIP's heads of 64 take two subgroups in chunks of 32 keys
  // (25 KB) instead of four (40 KB); with 8 KB none fits, and forcing the kernel says how much it needs.
  gpu::Capabilities small = h200_f16();
  small.limits.max_compute_workgroup_storage_size = 32 * 1024;
  const Chosen fits = choose(siglip_attributes(), siglip_inputs(1), small);
  ASSERT_TRUE(fits.choice) << fits.error;
  EXPECT_EQ(fits.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_EQ(fits.choice->matrix_subgroups, 2);
  EXPECT_EQ(fits.choice->matrix_keys_per_chunk, 32);
  EXPECT_EQ(fits.choice->workgroups, 12 * 7);  // 196 queries in workgroups of 32
  small.limits.max_compute_workgroup_storage_size = 8 * 1024;
  const Chosen none = choose(siglip_attributes(), siglip_inputs(1), small);
  ASSERT_TRUE(none.choice) << none.error;
  EXPECT_NE(none.choice->kernel, AttentionKernel::MatrixF16);
  EXPECT_NE(
      choose(siglip_attributes("matrix"), siglip_inputs(1), small)
          .error.find("wgi.kernel = matrix needs 17152 bytes of workgroup memory; the device allows 8192"),
      std::string::npos)
      << choose(siglip_attributes("matrix"), siglip_inputs(1), small).error;
  // A decoder step (one query a head) keeps the row kernel.
  ops::AttentionAttributes step;
  Inputs step_in;
  step_in.add({1, 12, 1, 64});
  step_in.add({1, 12, 65, 64});
  step_in.add({1, 12, 65, 64});
  const Chosen s = choose(step, step_in, h200_f16());
  ASSERT_TRUE(s.choice) << s.error;
  EXPECT_EQ(s.choice->kernel, AttentionKernel::Rows);
}

}  // namespace
}  // namespace wgi
