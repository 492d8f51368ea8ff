#include "wgi/session.h"

#include <fstream>

#include "gpu/device.h"
#include "gpu/profiler.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"

namespace wgi {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

TensorInfo describe_value(const graph::Value& v) {
  TensorInfo info;
  info.name = v.name;
  info.dtype = v.dtype;
  for (const graph::Dim& d : v.shape.dims) {
    info.dims.push_back(d.is_known() ? d.value : -1);
    info.dim_names.push_back(d.symbol);
  }
  return info;
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<gpu::Device> device;
  graph::Graph graph;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;  // names as the model declares them, even if passes rewired the values
  std::unique_ptr<runtime::WeightStore> weights;
  std::map<std::string, std::unique_ptr<runtime::ExecutionPlan>> plans;  // by input-shape signature
  std::unique_ptr<gpu::TimestampProfiler> profiler;
  std::vector<NodeTiming> profile;
  std::string profiling_note;
  SessionStats stats;

  void load(graph::Graph imported);
  // Checks the inputs and returns them in graph order, with the shape signature of this call.
  std::vector<const Tensor*> check_inputs(const std::map<std::string, Tensor>& given,
                                          std::string& signature) const;
};

void Session::Impl::load(graph::Graph imported) {
  auto start = std::chrono::steady_clock::now();
  graph = std::move(imported);
  const ops::OpRegistry& registry = ops::builtin_registry();
  auto unsupported = onnx::find_unsupported(graph, registry);
  if (!unsupported.empty()) throw Error(onnx::format_unsupported(unsupported));
  for (graph::ValueId v : graph.inputs) inputs.push_back(describe_value(graph.value(v)));
  for (graph::ValueId v : graph.outputs) outputs.push_back(describe_value(graph.value(v)));
  graph::optimize(graph, registry);

  gpu::DeviceOptions device_options;
  if (!options.backend.empty()) device_options.backend = gpu::parse_backend(options.backend);
  if (!options.adapter.empty()) device_options.adapter_filter = options.adapter;
  device = gpu::Device::create(device_options);
  weights = std::make_unique<runtime::WeightStore>(*device);
  if (options.profiling) {
    if (device->features().timestamp_query) {
      profiling_note = "per-dispatch GPU time from timestamp queries";
    } else {
      profiling_note = "the adapter (" + device->adapter_info().device +
                       ") has no timestamp-query feature: no per-node GPU times";
    }
  }
  stats.nodes = graph.nodes.size();
  stats.load_ms = ms_since(start);
}

std::vector<const Tensor*> Session::Impl::check_inputs(const std::map<std::string, Tensor>& given,
                                                       std::string& signature) const {
  std::vector<const Tensor*> ordered;
  std::map<std::string, int64_t> symbols;
  for (const TensorInfo& info : inputs) {
    auto it = given.find(info.name);
    if (it == given.end()) {
      std::string expected;
      for (const auto& i : inputs) expected += (expected.empty() ? "" : ", ") + i.name;
      throw Error("input '" + info.name + "' is missing (the model's inputs: " + expected + ")");
    }
    const Tensor& t = it->second;
    if (t.dtype() != info.dtype) {
      throw Error("input '" + info.name + "' has type " + std::string(dtype_name(t.dtype())) +
                  "; the model expects " + std::string(dtype_name(info.dtype)));
    }
    if (!info.dims.empty() || t.rank() == 0) {
      if (static_cast<size_t>(t.rank()) != info.dims.size()) {
        throw Error("input '" + info.name + "' has shape " + shape_to_string(t.shape()) + " (rank " +
                    std::to_string(t.rank()) + "); the model expects rank " +
                    std::to_string(info.dims.size()));
      }
    }
    for (size_t d = 0; d < info.dims.size(); ++d) {
      const int64_t got = t.shape()[d];
      if (info.dims[d] >= 0 && got != info.dims[d]) {
        throw Error("input '" + info.name + "' has shape " + shape_to_string(t.shape()) + "; dim " +
                    std::to_string(d) + " must be " + std::to_string(info.dims[d]));
      }
      const std::string& symbol = info.dim_names[d];
      if (!symbol.empty()) {
        auto [sym, inserted] = symbols.emplace(symbol, got);
        if (!inserted && sym->second != got) {
          throw Error("input '" + info.name + "' dim " + std::to_string(d) + " ('" + symbol + "') is " +
                      std::to_string(got) + ", but another input set '" + symbol + "' to " +
                      std::to_string(sym->second));
        }
      }
    }
    ordered.push_back(&t);
    signature += shape_to_string(t.shape());
    if (runtime::host_visible(t)) {
      // Small inputs are planned with by value (shape-like inputs), so their value is part of the key.
      signature += "=";
      signature.append(reinterpret_cast<const char*>(t.bytes().data()), t.byte_size());
    }
    signature += ";";
  }
  for (const auto& [name, tensor] : given) {
    bool known = std::any_of(inputs.begin(), inputs.end(),
                             [&name = name](const TensorInfo& i) { return i.name == name; });
    if (!known) {
      std::string expected;
      for (const auto& i : inputs) expected += (expected.empty() ? "" : ", ") + i.name;
      throw Error("the model has no input '" + name + "' (its inputs: " + expected + ")");
    }
  }
  return ordered;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session Session::from_file(const std::filesystem::path& path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->load(onnx::import_model_file(path));
  return Session(std::move(impl));
}

Session Session::from_bytes(std::span<const std::byte> model, const SessionOptions& options,
                            const std::filesystem::path& base_dir) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->load(onnx::import_model(model, base_dir));
  return Session(std::move(impl));
}

const std::vector<TensorInfo>& Session::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorInfo>& Session::outputs() const {
  return impl_->outputs;
}
const SessionStats& Session::stats() const {
  return impl_->stats;
}
const std::vector<NodeTiming>& Session::last_profile() const {
  return impl_->profile;
}
std::string Session::profiling_note() const {
  return impl_->profiling_note;
}

std::string Session::adapter_description() const {
  return impl_->device->adapter_info().device + " on " +
         std::string(gpu::to_string(impl_->device->backend()));
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  Impl& s = *impl_;
  std::string signature;
  std::vector<const Tensor*> ordered = s.check_inputs(inputs, signature);
  auto it = s.plans.find(signature);
  if (it == s.plans.end()) {
    auto start = std::chrono::steady_clock::now();
    std::vector<runtime::PlanInput> plan_inputs;
    for (const Tensor* t : ordered) {
      plan_inputs.push_back({{t->dtype(), t->shape()}, runtime::host_visible(*t) ? t : nullptr});
    }
    std::function<void(size_t, size_t)> progress;
    if (s.options.progress) {
      progress = [&s](size_t done, size_t total) { s.options.progress(done, total, "planning"); };
    }
    auto plan = std::make_unique<runtime::ExecutionPlan>(*s.device, s.graph, ops::builtin_registry(),
                                                         *s.weights, plan_inputs, progress);
    s.stats.last_plan_ms = ms_since(start);
    it = s.plans.emplace(signature, std::move(plan)).first;
  }
  runtime::ExecutionPlan& plan = *it->second;
  s.stats.plans = s.plans.size();
  s.stats.dispatches = plan.dispatch_count();
  s.stats.peak_activation_bytes = plan.activation_bytes();
  s.stats.weight_bytes = s.weights->bytes() + plan.prepacked_bytes();
  s.stats.pipelines = s.device->pipelines().size();

  gpu::TimestampProfiler* profiler = nullptr;
  if (s.options.profiling && s.device->features().timestamp_query) {
    const uint32_t needed = static_cast<uint32_t>(std::max<size_t>(1, plan.dispatch_count()));
    if (!s.profiler || s.profiler->capacity() < needed) {
      s.profiler = std::make_unique<gpu::TimestampProfiler>(*s.device, needed);
    }
    profiler = s.profiler.get();
  }
  std::vector<Tensor> results = plan.run(ordered, profiler);
  s.stats.buffers_created = s.device->buffers_created();
  if (profiler) {
    std::vector<double> ms = profiler->read(static_cast<uint32_t>(plan.dispatch_count()));
    s.profile.clear();
    for (const runtime::PlannedStep& step : plan.steps()) {
      const graph::Node& node = s.graph.nodes[step.node];
      NodeTiming t{node.info.name, node.info.op_type, step.kernel, 0.0};
      for (size_t d = 0; d < step.dispatch_count; ++d) t.gpu_ms += ms[step.first_dispatch + d];
      s.profile.push_back(std::move(t));
    }
  }
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < results.size(); ++i) named[s.outputs[i].name] = std::move(results[i]);
  return named;
}

}  // namespace wgi
