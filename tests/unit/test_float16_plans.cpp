// Plan structure of the float16 exports against their float32 models, without a GPU (as `wgi check
// --kernels` plans): after the graph passes (compute_float16_in_float32, docs/float16.md) each node of a
// `_fp16` file plans the kernels its float32 model's node plans, the GEMMs and convs reading their float16
// weights packed (labels "..._bf16", "..._wf16"), and the dispatch counts are equal, for WebGPU's default
// limits and for the limits of a large GPU (the H200's: the fast GEMM, attention and conv kernels). Numerics
// are checked on the GPU (tests/gpu/test_float16.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/npy.h"
#include "gpu/large_gpu_capabilities.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";

// Kernel label -> launches, over every GPU node of `model` planned for `caps` with the inputs beside it; the
// float16-weight suffixes dropped (unless `keep_half_suffixes`), so that a GEMM or implicit-GEMM conv
// reading a float16 weight counts as the float32 one it mirrors.
std::map<std::string, int> planned_kernels(const fs::path& model, const gpu::Capabilities& caps,
                                           bool keep_half_suffixes = false) {
  graph::Graph g = onnx::import_model_file(model);
  graph::optimize(g, ops::builtin_registry());
  std::vector<runtime::PlanInput> inputs;
  std::vector<Tensor> values;
  values.reserve(g.inputs.size());
  for (graph::ValueId v : g.inputs) {
    values.push_back(npy::load(model.parent_path() / ("input_" + g.value(v).name + ".npy")));
    inputs.push_back({{g.value(v).dtype, values.back().shape()}, nullptr});
  }
  const runtime::NodePlans plans = runtime::plan_nodes(g, ops::builtin_registry(), caps, inputs, {});
  std::map<std::string, int> kernels;
  for (const runtime::NodePlans::GpuNode& node : plans.gpu_nodes) {
    for (const ops::KernelLaunch& launch : node.op_plan().launches) {
      std::string label = launch.program.label;
      for (const char* half_weight : {"_bf16", "_wf16"}) {
        const size_t at = label.find(half_weight);
        if (at != std::string::npos && !keep_half_suffixes) label.erase(at, 5);
      }
      ++kernels[label];
    }
  }
  return kernels;
}

int dispatches(const std::map<std::string, int>& kernels) {
  int n = 0;
  for (const auto& [label, count] : kernels) n += count;
  return n;
}

TEST(Float16Plans, Float16ExportsPlanTheKernelsOfTheirFloat32Models) {
  for (const char* name : {"siglip_vision_tiny_opset17", "florence2_vision_tiny_opset17",
                           "tiny_transformer_opset17", "resnet_tiny_opset17", "small_cnn_opset17"}) {
    for (const bool large : {false, true}) {
      const gpu::Capabilities caps = large ? gpu::large_gpu_capabilities() : gpu::default_capabilities();
      const auto fp32 = planned_kernels(kModels / name / "model.onnx", caps);
      const auto fp16 = planned_kernels(kModels / name / "model_fp16.onnx", caps);
      EXPECT_GT(dispatches(fp32), 0) << name;
      EXPECT_EQ(dispatches(fp16), dispatches(fp32)) << name << (large ? ", large GPU" : ", default limits");
      EXPECT_EQ(fp16, fp32) << name << (large ? ", large GPU" : ", default limits");
      std::cerr << "[ " << name << (large ? " (large GPU)" : " (default limits)") << ": " << dispatches(fp32)
                << " dispatches fp32, " << dispatches(fp16) << " fp16 ]\n";
    }
  }
}

// A session computing in f16 (SessionOptions::precision, docs/float16.md) on a device with subgroup matrices:
// SigLIP-tiny's constant-weight GEMMs (its projections and MLP) plan the matrix kernel, each after its cast
// of A; the same device computing in f32 plans none.
TEST(Float16Plans, AnF16SessionPlansConstantWeightGemmsOnSubgroupMatrices) {
  const fs::path model = kModels / "siglip_vision_tiny_opset17/model.onnx";
  gpu::Capabilities caps = gpu::large_gpu_f16_capabilities();
  const auto count = [](const std::map<std::string, int>& kernels, const std::string& prefix) {
    int n = 0;
    for (const auto& [label, launches] : kernels) n += label.rfind(prefix, 0) == 0 ? launches : 0;
    return n;
  };
  const auto f32 = planned_kernels(model, caps);
  caps.f16_compute = true;
  const auto f16 = planned_kernels(model, caps);
  const int matrix = count(f16, "gemm_matrix_f16");
  EXPECT_GT(matrix, 4);
  EXPECT_EQ(count(f16, "gemm_a_to_f16"), 0);  // every K a multiple of 8: the product reads A as float32
  EXPECT_EQ(count(f32, "gemm_matrix_f16"), 0);
  EXPECT_EQ(count(f32, "gemm_a_to_f16"), 0);
  EXPECT_LT(count(f16, "gemm_fast") + count(f16, "gemm_tiled"),
            count(f32, "gemm_fast") + count(f32, "gemm_tiled"));
}

// DaViT's window attention reads its qkv MatMul's A through the window partition and writes its proj MatMul's
// output through the window reverse (row maps): in f16 the product reads A's rows through the map
// (gemm_matrix_f16_rows) and writes the reverse through the bounce, so those GEMMs run on the matrix kernel
// too, with no window copies and no more dispatches than in f32 (fewer: the attention on its matrix kernel
// reads K and V in place where f32's row kernel copies them).
TEST(Float16Plans, AnF16SessionPlansDaVitsWindowGemmsOnSubgroupMatrices) {
  const fs::path model = kModels / "florence2_vision_tiny_opset17/model.onnx";
  gpu::Capabilities caps = gpu::large_gpu_f16_capabilities();
  const auto f32 = planned_kernels(model, caps);
  caps.f16_compute = true;
  const auto f16 = planned_kernels(model, caps);
  auto count = [](const std::map<std::string, int>& kernels, const std::string& prefix) {
    int n = 0;
    for (const auto& [label, launches] : kernels) n += label.rfind(prefix, 0) == 0 ? launches : 0;
    return n;
  };
  EXPECT_GT(count(f16, "gemm_matrix_f16_rows"), 0);
  EXPECT_EQ(count(f16, "gemm_a_to_f16"), 0);
  EXPECT_LE(count(f16, "copy_strided"), count(f32, "copy_strided"));
  EXPECT_GT(count(f16, "attention_matrix_f16"), 0);
  EXPECT_LE(dispatches(f16) - dispatches(f32),
            count(f16, "gemm_split_reduce") - count(f32, "gemm_split_reduce"));
}

// The products an f16 session leaves off the matrix kernel read their float32 weights as float16: a decoder
// step's projections and LM head (M = 6 rows here) run on the GEMV with B_F16 ("_bf16"), the weights
// converted once at planning; the same device computing in float32 plans the same GEMVs on float32 weights.
TEST(Float16Plans, AnF16SessionsGemvsReadTheirWeightsAsFloat16) {
  const fs::path model = kModels / "bart_decoder_cached_cross_tiny_opset17/model.onnx";
  gpu::Capabilities caps = gpu::large_gpu_f16_capabilities();
  const auto gemvs = [](const std::map<std::string, int>& kernels, bool half) {
    int n = 0;
    for (const auto& [label, launches] : kernels) {
      if (label.rfind("gemv", 0) == 0 && (label.find("_bf16") != std::string::npos) == half) n += launches;
    }
    return n;
  };
  const auto f32 = planned_kernels(model, caps, true);
  caps.f16_compute = true;
  const auto f16 = planned_kernels(model, caps, true);
  EXPECT_GT(gemvs(f32, false), 4);
  EXPECT_EQ(gemvs(f32, true), 0);
  EXPECT_EQ(gemvs(f16, true), gemvs(f32, false));
  EXPECT_EQ(gemvs(f16, false), 0);
  EXPECT_EQ(dispatches(f16), dispatches(f32));
}

}  // namespace
}  // namespace wgi
