// Program text shared between launches (gpu::ShaderText, kernels::load_wgsl's memo): a plan's kernel text
// grows with its distinct kernel variants, not with its launches, so planning memory stays bounded by the
// model's size (docs/robustness_audit.md, "Planning memory").
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/wgsl_library.h"
#include "ops/registry.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

TEST(ProgramText, LoadWgslSharesOneCopyPerVariant) {
  const gpu::ShaderText a = kernels::load_wgsl("elementwise/math.wgsl", {{"MATH_VEC4", "1"}});
  const gpu::ShaderText b = kernels::load_wgsl("elementwise/math.wgsl", {{"MATH_VEC4", "1"}});
  const gpu::ShaderText other = kernels::load_wgsl("elementwise/math.wgsl", {{"MATH_VEC4", "0"}});
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a.same_copy(b));
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_FALSE(a.same_copy(other));
  EXPECT_NE(a.str(), other.str());
  // The memo hands out the preprocessor's own result.
  EXPECT_EQ(a.str(), kernels::load_wgsl("elementwise/math.wgsl", {{"MATH_VEC4", "1"}}).str());
}

TEST(ProgramText, MemoDoesNotKeepTextsAlive) {
  std::optional<gpu::ShaderText::Weak> weak;
  {
    const gpu::ShaderText text = kernels::load_wgsl("common/dispatch_grid.wgsl");
    weak.emplace(text);
    EXPECT_FALSE(weak->expired());
  }
  // Nothing holds the text any more: the table's reference alone does not keep it.
  EXPECT_TRUE(weak->expired());
  EXPECT_FALSE(kernels::load_wgsl("common/dispatch_grid.wgsl").empty());
}

TEST(ProgramText, EqualityComparesContents) {
  const gpu::ShaderText a = std::string("fn main() {}\n");
  const gpu::ShaderText b = std::string("fn main() {}\n");
  const gpu::ShaderText c = std::string("fn main() { }\n");
  EXPECT_FALSE(a.same_copy(b));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(gpu::ShaderText() == gpu::ShaderText(std::string()));
}

// A Sum of 4096 inputs (the importer's fan-in cap) plans one launch per input. Before the texts were
// shared each launch held its own ~10 KB copy of broadcast.wgsl (40 MB for the node, from 12 KB of model).
TEST(ProgramText, WideSumHoldsOneTextPerKernelVariant) {
  constexpr size_t kInputs = 4096;
  ops::NodeInfo node{"wide_sum", "Sum", "", 13, {}, {}, {"y"}};
  ops::PlanContext ctx{
      node, std::vector<std::optional<ops::TensorDesc>>(kInputs, ops::TensorDesc{DType::Float32, {3, 5}}),
      std::vector<const Tensor*>(kInputs, nullptr), test::model_device(16384, 256)};
  const ops::OpRegistry::Entry* entry = ops::builtin_registry().find("", "Sum", 13);
  ASSERT_NE(entry, nullptr);
  const ops::OpPlan plan = entry->handler.plan(ctx);
  ASSERT_EQ(plan.launches.size(), kInputs - 1);

  std::set<const std::string*> copies;
  size_t text_bytes = 0;
  size_t other_bytes = 0;
  for (const ops::KernelLaunch& l : plan.launches) {
    if (copies.insert(&l.program.wgsl.str()).second) text_bytes += l.program.wgsl.size();
    other_bytes += sizeof(l) + l.program.label.size() + l.program.entry_point.size() +
                   l.program.constants.size() * sizeof(l.program.constants[0]) +
                   l.program.bindings.size() * sizeof(l.program.bindings[0]) +
                   l.bindings.size() * sizeof(l.bindings[0]) + l.uniform.size();
  }
  // Two variants: the first launch adds inputs 0 and 1, every other one accumulates an input in place.
  EXPECT_EQ(copies.size(), 2u);
  EXPECT_GT(text_bytes, 0u);
  EXPECT_LT(text_bytes, 64u * 1024);
  // What each launch holds of its own (label, uniform, bindings): well under a kilobyte.
  EXPECT_LT(other_bytes / plan.launches.size(), 1024u);
}

}  // namespace
}  // namespace wgi
