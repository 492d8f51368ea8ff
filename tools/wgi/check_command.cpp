// `wgi check MODEL`: can wgi run this model? Lists every node it cannot run and why; exit 0 only if all run.
// Needs no GPU: support comes from the op registry, and when every input dim is known (or given with --dim)
// the whole model is also planned for those shapes with WebGPU's default limits, which catches unsupported
// attribute values and element types.
#include <iostream>
#include <map>
#include <memory>

#include "commands.h"
#include "graph/passes.h"
#include "model_inputs.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"

namespace wgi::cli {

void add_check_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model;
    std::vector<std::string> dims;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "List every node of an ONNX model that wgi cannot run, and why");
  cmd->add_option("model", opts->model, "The .onnx file")->required();
  cmd->add_option("--dim", opts->dims, "NAME=VALUE for a symbolic input dim (repeatable)");
  cmd->callback([opts, &exit_code] {
    graph::Graph g = onnx::import_model_file(opts->model);
    std::map<std::string, int> histogram;
    for (const auto& n : g.nodes) ++histogram[n.info.op_type];
    std::cout << opts->model << ": IR version " << g.ir_version << ", opsets";
    for (const auto& [domain, version] : g.opsets)
      std::cout << " " << (domain.empty() ? "ai.onnx" : domain) << ":" << version;
    std::cout << "\n" << g.nodes.size() << " nodes:";
    for (const auto& [op, count] : histogram) std::cout << " " << op << " x" << count << ";";
    std::cout << "\n";
    for (graph::ValueId v : g.inputs) {
      std::cout << "input  " << g.value(v).name << ": " << dtype_name(g.value(v).dtype) << " "
                << g.value(v).shape.to_string() << "\n";
    }
    for (graph::ValueId v : g.outputs) {
      std::cout << "output " << g.value(v).name << ": " << dtype_name(g.value(v).dtype) << " "
                << g.value(v).shape.to_string() << "\n";
    }
    const auto& registry = ops::builtin_registry();
    auto unsupported = onnx::find_unsupported(g, registry);
    if (!unsupported.empty()) {
      std::cout << onnx::format_unsupported(unsupported) << "\n";
      exit_code = 1;
      return;
    }
    const size_t imported_nodes = g.nodes.size();
    graph::PassReport report = graph::optimize(g, registry);
    std::cout << "optimised: " << report.summary() << "\n";

    // Plan for concrete shapes when they are known.
    const auto dims = parse_dims(opts->dims);
    std::vector<runtime::PlanInput> descs;
    std::string unknown;
    for (graph::ValueId v : g.inputs) {
      runtime::PlanInput input{{g.value(v).dtype, {}}, nullptr};
      ops::TensorDesc& desc = input.desc;
      for (const auto& d : g.value(v).shape.dims) {
        auto it = dims.find(d.symbol);
        if (d.is_known()) {
          desc.shape.push_back(d.value);
        } else if (!d.symbol.empty() && it != dims.end()) {
          desc.shape.push_back(it->second);
        } else {
          unknown += (unknown.empty() ? "" : ", ") + g.value(v).name + " (" +
                     (d.symbol.empty() ? "?" : d.symbol) + ")";
          break;
        }
      }
      descs.push_back(input);
    }
    if (!unknown.empty()) {
      std::cout << "all " << imported_nodes << " nodes are supported by op type and opset; give --dim for "
                << unknown << " to also check attributes and shapes\n";
      exit_code = 0;
      return;
    }
    std::vector<std::string> errors;
    runtime::NodePlans plans =
        runtime::plan_nodes(g, registry, gpu::default_capabilities(), descs, {}, &errors);
    for (const auto& e : errors) std::cout << "cannot run: " << e << "\n";
    if (!errors.empty()) {
      exit_code = 1;
      return;
    }
    std::cout << "all " << imported_nodes << " nodes can run (" << g.nodes.size()
              << " after optimisation): " << plans.gpu_nodes.size() << " on the GPU, " << plans.host_nodes
              << " computed on the host (shape arithmetic)\n";
    exit_code = 0;
  });
}

}  // namespace wgi::cli
