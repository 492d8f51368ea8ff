// libFuzzer target for what `wgi check` does without a GPU: import_model -> find_unsupported -> graph passes
// -> plan_nodes (pure C++) with WebGPU's default limits. The first input byte picks the value (1 to 8) that
// every symbolic or unknown input dim gets, so that plans stay small; the rest is the model. A wgi::Error
// (from the importer, or a planner's error for a node) is the expected answer to a bad model; any other
// exception, a crash, a sanitizer report, a leak, a hang or an allocation past -malloc_limit_mb is a bug.
// Build and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t dim_value = 1 + data[0] % 8;
  wgi::onnx::ImportOptions options;
  options.max_model_bytes = 16ull << 20;  // well below the fuzzer's -malloc_limit_mb
  try {
    // No folder for external data: fuzz_onnx_loader and fuzz_external_data cover it.
    wgi::graph::Graph g = wgi::onnx::import_model(std::as_bytes(std::span(data + 1, size - 1)), {}, options);
    const auto& registry = wgi::ops::builtin_registry();
    if (!wgi::onnx::find_unsupported(g, registry).empty()) return 0;
    wgi::graph::optimize(g, registry);
    std::vector<wgi::runtime::PlanInput> inputs;
    for (wgi::graph::ValueId v : g.inputs) {
      wgi::runtime::PlanInput input{{g.value(v).dtype, {}}, nullptr};
      for (const wgi::graph::Dim& d : g.value(v).shape.dims) {
        input.desc.shape.push_back(d.is_known() ? d.value : dim_value);
      }
      inputs.push_back(input);
    }
    std::vector<std::string> errors;
    wgi::runtime::plan_nodes(g, registry, wgi::gpu::default_capabilities(), inputs, {}, &errors);
  } catch (const wgi::Error&) {
    // The expected answer to a malformed or unplannable model.
  }
  return 0;
}
