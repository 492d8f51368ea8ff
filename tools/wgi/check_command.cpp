// `wgi check MODEL`: can wgi run this model? Lists every node it cannot run and why; exit 0 only if all run.
// Needs no GPU: support comes from the op registry, and when every input dim is known (or given with --dim)
// the whole model is also planned for those shapes with WebGPU's default limits (--device-limits large: a
// large GPU's; --kernels lists the kernels planned), which catches unsupported attribute values and element
// types, and then held to the buffer limits `wgi run` applies (every tensor a GPU node uses, and its scratch,
// within maxBufferSize; every binding within maxStorageBufferBindingSize). --precision f16 (with
// --device-limits large) plans as a float16-compute session on such a GPU would: the kernels it lists are
// those an H200 runs through dawn.node.
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "commands.h"
#include "gpu/large_gpu_capabilities.h"
#include "graph/passes.h"
#include "model_inputs.h"
#include "onnx/importer.h"
#include "runtime/device_tensor.h"
#include "runtime/execution_plan.h"
#include "wgi/printable.h"

namespace wgi::cli {

namespace {

// The input dims that neither the model nor --dim sizes: "N (image dim 0, mask dim 0)" per named dim, and a
// sentence per unnamed one. Empty when every dim is known.
std::vector<std::string> unsized_dims(const graph::Graph& g, const std::map<std::string, int64_t>& dims) {
  std::map<std::string, std::string> named;  // symbol -> where it appears
  std::vector<std::string> out;
  for (graph::ValueId v : g.inputs) {
    const graph::Value& value = g.value(v);
    const std::string input = printable(value.name);
    if (!value.shape.rank_known) {
      out.push_back("input '" + input + "' declares no shape (not even a rank), so no --dim can size it");
      continue;
    }
    for (size_t d = 0; d < value.shape.dims.size(); ++d) {
      const graph::Dim& dim = value.shape.dims[d];
      if (dim.is_known() || (!dim.symbol.empty() && dims.count(dim.symbol))) continue;
      if (dim.symbol.empty()) {
        out.push_back("input '" + input + "' dim " + std::to_string(d) +
                      " is unknown and has no name, so no --dim can size it");
        continue;
      }
      std::string& where = named[dim.symbol];
      where += (where.empty() ? "" : ", ") + input + " dim " + std::to_string(d);
    }
  }
  std::vector<std::string> give;
  for (const auto& [symbol, where] : named)
    give.push_back("--dim " + printable(symbol) + "=VALUE (" + where + ")");
  out.insert(out.begin(), give.begin(), give.end());
  return out;
}

// What `wgi run` would refuse when it places the plan in device memory (graph::plan_memory, Device::
// create_buffer) and binds it (gpu::CommandBatch): a tensor used by a GPU node, or a node's scratch, larger
// than one buffer may be, or a binding larger than one binding may be.
std::vector<std::string> buffer_limit_errors(const graph::Graph& g, const runtime::NodePlans& plans,
                                             const gpu::Limits& limits) {
  std::vector<std::string> errors;
  std::set<graph::ValueId> checked;
  const std::string limit = "more than one GPU buffer may hold (maxBufferSize " +
                            std::to_string(limits.max_buffer_size) + " in WebGPU's default limits)";
  for (const runtime::NodePlans::GpuNode& gpu_node : plans.gpu_nodes) {
    const graph::Node& node = *gpu_node.node;
    std::vector<graph::ValueId> bound = node.inputs;
    bound.insert(bound.end(), node.outputs.begin(), node.outputs.end());
    for (graph::ValueId v : bound) {
      if (v == graph::kNoValue || !checked.insert(v).second) continue;
      const ops::TensorDesc& desc = plans.descs[static_cast<size_t>(v)];
      const uint64_t count = static_cast<uint64_t>(element_count(desc.shape));
      if (count <= limits.max_buffer_size && runtime::device_byte_size(desc) <= limits.max_buffer_size)
        continue;
      errors.push_back(node.info.describe() + ": '" + printable(g.value(v).name) + "' " +
                       shape_to_string(desc.shape) + " " + std::string(dtype_name(desc.dtype)) + " needs " +
                       (count > limits.max_buffer_size ? "at least " + std::to_string(count)
                                                       : std::to_string(runtime::device_byte_size(desc))) +
                       " bytes, " + limit);
    }
    const ops::OpPlan& plan = gpu_node.op_plan();
    for (size_t k = 0; k < plan.scratch_bytes.size(); ++k) {
      if (plan.scratch_bytes[k] > limits.max_buffer_size) {
        errors.push_back(node.info.describe() + ": scratch buffer " + std::to_string(k) + " needs " +
                         std::to_string(plan.scratch_bytes[k]) + " bytes, " + limit);
      }
    }
    // Each binding of each launch, as gpu::CommandBatch checks it when the dispatch is bound.
    for (const ops::KernelLaunch& launch : plan.launches) {
      for (size_t b = 0; b < launch.bindings.size(); ++b) {
        const ops::TensorRef& ref = launch.bindings[b];
        uint64_t bytes = 0;
        std::string what;
        if ((ref.kind == ops::TensorRef::Kind::Input && ref.index < node.inputs.size() &&
             node.inputs[ref.index] != graph::kNoValue) ||
            (ref.kind == ops::TensorRef::Kind::Output && ref.index < node.outputs.size())) {
          const graph::ValueId v =
              ref.kind == ops::TensorRef::Kind::Input ? node.inputs[ref.index] : node.outputs[ref.index];
          if (static_cast<uint64_t>(element_count(plans.descs[static_cast<size_t>(v)].shape)) >
              limits.max_buffer_size) {
            continue;  // reported above
          }
          bytes = runtime::device_byte_size(plans.descs[static_cast<size_t>(v)]);
          what = "'" + printable(g.value(v).name) + "'";
        } else if (ref.kind == ops::TensorRef::Kind::Scratch && ref.index < plan.scratch_bytes.size()) {
          bytes = plan.scratch_bytes[ref.index];
          what = "scratch buffer " + std::to_string(ref.index);
        } else if (ref.kind == ops::TensorRef::Kind::Constant && ref.index < plan.constants.size()) {
          const Tensor& c = plan.constants[ref.index];
          bytes = runtime::device_byte_size({c.dtype(), c.shape()});
          what = "prepacked constant " + std::to_string(ref.index);
        }
        if (bytes > limits.max_storage_buffer_binding_size) {
          errors.push_back(node.info.describe() + ": kernel '" + launch.program.label + "' binds " + what +
                           " (binding " + std::to_string(b) + ") of " + std::to_string(bytes) +
                           " bytes, more than maxStorageBufferBindingSize " +
                           std::to_string(limits.max_storage_buffer_binding_size) +
                           " in WebGPU's default limits");
        }
      }
    }
  }
  return errors;
}

// One line per GPU node: its op, name and the kernels of its launches, then the number of dispatches.
void print_kernels(const runtime::NodePlans& plans) {
  size_t dispatches = 0;
  for (const runtime::NodePlans::GpuNode& gpu_node : plans.gpu_nodes) {
    const ops::OpPlan& plan = gpu_node.op_plan();
    std::cout << "  " << printable(gpu_node.node->info.op_type) << " '" << printable(gpu_node.node->info.name)
              << "':";
    for (const ops::KernelLaunch& launch : plan.launches) std::cout << " " << printable(launch.program.label);
    if (plan.launches.empty()) std::cout << " (no kernel)";
    std::cout << "\n";
    dispatches += plan.launches.size();
  }
  std::cout << "kernels: " << dispatches << " dispatches per run\n";
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model;
    std::vector<std::string> dims;
    bool kernels = false;
    std::string device_limits = "default";
    std::string precision = "f32";
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "List every node of an ONNX model that wgi cannot run, and why");
  cmd->add_option("model", opts->model, "The .onnx file")->required();
  cmd->add_option("--dim", opts->dims, "NAME=VALUE for a symbolic input dim (repeatable)");
  cmd->add_flag("--kernels", opts->kernels, "Print the kernels each node launches and the dispatch count");
  cmd->add_option("--device-limits", opts->device_limits,
                  "Plan for WebGPU's default limits (default) or a large discrete GPU's (large: the H200's "
                  "limits, subgroups)")
      ->check(CLI::IsMember({"default", "large"}));
  cmd->add_option(
         "--precision", opts->precision,
         "Plan as a session of this precision would (f16: with --device-limits large, as that GPU with "
         "shader-f16 and subgroup matrices, e.g. through dawn.node; docs/float16.md)")
      ->check(CLI::IsMember({"f32", "f16"}));
  cmd->callback([opts, &exit_code] {
    if (opts->precision == "f16" && opts->device_limits != "large")
      throw Error(
          "--precision f16 needs --device-limits large: only a large GPU's adapter has "
          "the features f16 compute needs");
    const auto dims = parse_dims(opts->dims);
    graph::Graph g = onnx::import_model_file(opts->model);
    std::map<std::string, int> histogram;
    for (const auto& n : g.nodes) ++histogram[printable(n.info.op_type)];
    std::cout << printable(opts->model) << ": IR version " << g.ir_version << ", opsets";
    for (const auto& [domain, version] : g.opsets)
      std::cout << " " << (domain.empty() ? "ai.onnx" : printable(domain)) << ":" << version;
    std::cout << "\n" << g.nodes.size() << " nodes:";
    for (const auto& [op, count] : histogram) std::cout << " " << op << " x" << count << ";";
    std::cout << "\n";
    std::vector<TensorInfo> input_infos;
    for (graph::ValueId v : g.inputs) {
      std::cout << "input  " << printable(g.value(v).name) << ": " << dtype_name(g.value(v).dtype) << " "
                << printable(g.value(v).shape.to_string()) << "\n";
      TensorInfo info;
      for (const graph::Dim& d : g.value(v).shape.dims) info.dim_names.push_back(d.symbol);
      input_infos.push_back(info);
    }
    for (graph::ValueId v : g.outputs) {
      std::cout << "output " << printable(g.value(v).name) << ": " << dtype_name(g.value(v).dtype) << " "
                << printable(g.value(v).shape.to_string()) << "\n";
    }
    warn_unknown_dims(dims, input_infos);
    const auto& registry = ops::builtin_registry();
    auto unsupported = onnx::find_unsupported(g, registry);
    if (!unsupported.empty()) {
      std::cout << onnx::format_unsupported(unsupported) << "\n";
      exit_code = 1;
      return;
    }
    const size_t imported_nodes = g.nodes.size();
    // WGI_DISABLE_PASSES applies as in a session, so that a plan can be compared with a pass off.
    graph::PassReport report = graph::optimize(g, registry, graph::DisabledPasses::from_environment({}));
    std::cout << "optimised: " << report.summary() << "\n";

    // Plan for concrete shapes when they are known.
    const std::vector<std::string> unsized = unsized_dims(g, dims);
    if (!unsized.empty()) {
      std::cout << "all " << imported_nodes
                << " nodes are supported by op type and opset; attributes, shapes and buffer limits are not "
                   "checked, since these input dims have no size:\n";
      for (const std::string& u : unsized) std::cout << "  " << u << "\n";
      exit_code = 0;
      return;
    }
    std::vector<runtime::PlanInput> descs;
    for (graph::ValueId v : g.inputs) {
      runtime::PlanInput input{{g.value(v).dtype, {}}, nullptr};
      for (const auto& d : g.value(v).shape.dims)
        input.desc.shape.push_back(d.is_known() ? d.value : dims.at(d.symbol));
      element_count(input.desc.shape);  // a wgi::Error for a shape whose element count overflows
      descs.push_back(input);
    }
    gpu::Capabilities caps = opts->precision == "f16"         ? gpu::large_gpu_f16_capabilities()
                             : opts->device_limits == "large" ? gpu::large_gpu_capabilities()
                                                              : gpu::default_capabilities();
    caps.f16_compute = opts->precision == "f16";  // as a precision f16 session sets it (runtime/session.cpp)
    std::vector<std::string> errors;
    runtime::NodePlans plans = runtime::plan_nodes(g, registry, caps, descs, {}, &errors);
    if (errors.empty()) errors = buffer_limit_errors(g, plans, caps.limits);
    for (const auto& e : errors) std::cout << "cannot run: " << e << "\n";
    if (!errors.empty()) {
      exit_code = 1;
      return;
    }
    std::cout << "all " << imported_nodes << " nodes can run (" << g.nodes.size()
              << " after optimisation): " << plans.gpu_nodes.size() << " on the GPU, " << plans.host_nodes
              << " computed on the host (shape arithmetic)\n";
    if (opts->kernels) print_kernels(plans);
    exit_code = 0;
  });
}

}  // namespace wgi::cli
