#include "runtime/execution_plan.h"

#include <algorithm>
#include <climits>

#include "graph/memory_planner.h"
#include "runtime/device_tensor.h"
#include "runtime/plan_binding.h"

namespace wgi::runtime {

const gpu::Buffer& WeightStore::get(const graph::Graph& graph, graph::ValueId value) {
  auto it = buffers_.find(value);
  if (it != buffers_.end()) return it->second;
  const graph::Value& v = graph.value(value);
  gpu::Buffer buffer = upload_tensor(device_, *v.constant, "weight '" + v.name + "'");
  bytes_ += buffer.size();
  return buffers_.emplace(value, std::move(buffer)).first->second;
}

NodePlans plan_nodes(const graph::Graph& graph, const ops::OpRegistry& registry,
                     const gpu::Capabilities& caps, const std::vector<PlanInput>& inputs,
                     const std::function<void(size_t, size_t)>& progress, std::vector<std::string>* errors) {
  const size_t value_count = graph.values.size();
  NodePlans out;
  out.descs.resize(value_count);
  out.host_values.resize(value_count);
  std::vector<bool> known(value_count, false);
  for (size_t v = 0; v < value_count; ++v) {
    if (const auto& c = graph.values[v].constant) {
      out.descs[v] = {c->dtype(), c->shape()};
      known[v] = true;
    }
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const size_t v = static_cast<size_t>(graph.inputs[i]);
    out.descs[v] = inputs.at(i).desc;
    if (inputs[i].value) out.host_values[v] = *inputs[i].value;
    known[v] = true;
  }
  auto host_value = [&](graph::ValueId v) -> const Tensor* {
    if (v == graph::kNoValue) return nullptr;
    if (const auto& c = graph.value(v).constant) return &*c;
    const auto& h = out.host_values[static_cast<size_t>(v)];
    return h ? &*h : nullptr;
  };
  // Nodes whose outputs can be computed on the host (shape arithmetic on now-known shapes, constant
  // subgraphs) are folded instead of planned.
  for (size_t ni = 0; ni < graph.nodes.size(); ++ni) {
    if (progress) progress(ni, graph.nodes.size());
    const graph::Node& node = graph.nodes[ni];
    if (std::any_of(node.inputs.begin(), node.inputs.end(), [&](graph::ValueId v) {
          return v != graph::kNoValue && !known[static_cast<size_t>(v)];
        })) {
      continue;  // depends on a node that failed to plan (only when collecting errors)
    }
    try {
      const auto* entry = registry.find(node.info.domain, node.info.op_type, node.info.opset);
      if (!entry) {
        throw Error(
            node.info.describe() + ": " +
            registry.unsupported_reason(node.info.domain, node.info.op_type, node.info.opset).value());
      }
      ops::PlanContext ctx{node.info, {}, {}, caps};
      std::vector<const Tensor*> host_inputs;
      for (graph::ValueId v : node.inputs) {
        if (v == graph::kNoValue) {
          ctx.inputs.push_back(std::nullopt);
        } else {
          ctx.inputs.push_back(out.descs[static_cast<size_t>(v)]);
        }
        ctx.constant_inputs.push_back(host_value(v));
        host_inputs.push_back(host_value(v));
      }
      bool folded = false;
      if (entry->handler.evaluate_on_host) {
        std::vector<Tensor> results = entry->handler.evaluate_on_host(ctx, host_inputs);
        if (results.size() == node.outputs.size()) {
          for (size_t o = 0; o < results.size(); ++o) {
            graph::ValueId v = node.outputs[o];
            if (v == graph::kNoValue) continue;
            out.descs[static_cast<size_t>(v)] = {results[o].dtype(), results[o].shape()};
            out.host_values[static_cast<size_t>(v)] = std::move(results[o]);
          }
          folded = true;
        }
      }
      if (!folded) {
        ops::OpPlan plan = entry->handler.plan(ctx);
        if (plan.outputs.size() < node.outputs.size()) {
          throw Error(node.info.describe() + ": the op planned " + std::to_string(plan.outputs.size()) +
                      " outputs but the node has " + std::to_string(node.outputs.size()));
        }
        for (size_t o = 0; o < node.outputs.size(); ++o) {
          if (node.outputs[o] != graph::kNoValue)
            out.descs[static_cast<size_t>(node.outputs[o])] = plan.outputs[o];
        }
        out.gpu_nodes.push_back({ni, std::move(plan)});
      }
      for (graph::ValueId v : node.outputs) {
        if (v != graph::kNoValue) known[static_cast<size_t>(v)] = true;
      }
    } catch (const Error& e) {
      if (!errors) throw;
      errors->push_back(e.what());
    }
  }
  if (progress) progress(graph.nodes.size(), graph.nodes.size());
  return out;
}

ExecutionPlan::ExecutionPlan(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
                             WeightStore& weights, const std::vector<PlanInput>& inputs,
                             const std::function<void(size_t, size_t)>& progress)
    : device_(device), graph_(graph) {
  const size_t value_count = graph.values.size();
  NodePlans planned = plan_nodes(graph, registry, device.capabilities(), inputs, progress);
  descs_ = std::move(planned.descs);
  host_values_ = std::move(planned.host_values);
  auto& gpu_nodes = planned.gpu_nodes;
  locations_.resize(value_count);
  auto host_value = [&](graph::ValueId v) -> const Tensor* {
    if (v == graph::kNoValue) return nullptr;
    if (const auto& c = graph.value(v).constant) return &*c;
    const auto& h = host_values_[static_cast<size_t>(v)];
    return h ? &*h : nullptr;
  };

  // 2. Lifetimes. Each GPU-produced value lives from its step to its last reader; graph outputs to the end. A
  //    reshape-like output is its input's memory, so it extends its root's lifetime instead of taking its
  //    own.
  std::vector<graph::ValueId> root(value_count);
  for (size_t v = 0; v < value_count; ++v) root[v] = static_cast<graph::ValueId>(v);
  std::vector<int32_t> first_use(value_count, -1), last_use(value_count, -1);
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    const graph::Node& node = graph.nodes[gpu_nodes[s].node];
    for (graph::ValueId v : node.inputs) {
      if (v != graph::kNoValue)
        last_use[static_cast<size_t>(root[static_cast<size_t>(v)])] = static_cast<int32_t>(s);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      graph::ValueId out = node.outputs[o];
      if (out == graph::kNoValue) continue;
      if (o == 0 && gpu_nodes[s].plan.alias_output_to_input >= 0) {
        graph::ValueId in = node.inputs.at(static_cast<size_t>(gpu_nodes[s].plan.alias_output_to_input));
        root[static_cast<size_t>(out)] = root[static_cast<size_t>(in)];
        continue;
      }
      first_use[static_cast<size_t>(out)] = static_cast<int32_t>(s);
      last_use[static_cast<size_t>(out)] =
          std::max(last_use[static_cast<size_t>(out)], static_cast<int32_t>(s));
    }
  }
  for (graph::ValueId v : graph.outputs)
    last_use[static_cast<size_t>(root[static_cast<size_t>(v)])] = INT32_MAX;

  std::vector<graph::BufferRequest> requests;
  std::vector<size_t> request_value;  // the value placed, or SIZE_MAX for a scratch buffer
  std::vector<std::pair<size_t, size_t>> scratch_request;  // (step, scratch index) for scratch requests
  for (size_t v = 0; v < value_count; ++v) {
    if (first_use[v] < 0 || root[v] != static_cast<graph::ValueId>(v)) continue;
    requests.push_back({device_byte_size(descs_[v]), first_use[v], last_use[v]});
    request_value.push_back(v);
    scratch_request.push_back({SIZE_MAX, 0});
  }
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    for (size_t k = 0; k < gpu_nodes[s].plan.scratch_bytes.size(); ++k) {
      requests.push_back(
          {gpu_nodes[s].plan.scratch_bytes[k], static_cast<int32_t>(s), static_cast<int32_t>(s)});
      request_value.push_back(SIZE_MAX);
      scratch_request.push_back({s, k});
    }
  }
  graph::MemoryPlan memory = graph::plan_memory(requests, device.limits().max_buffer_size);
  activation_bytes_ = memory.total_bytes();
  std::vector<gpu::Buffer*> shared;
  for (size_t b = 0; b < memory.buffer_sizes.size(); ++b) {
    owned_.push_back(std::make_unique<gpu::Buffer>(
        device.create_buffer(memory.buffer_sizes[b], "activations " + std::to_string(b))));
    shared.push_back(owned_.back().get());
  }
  std::vector<std::vector<gpu::BufferSlice>> scratch(gpu_nodes.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    gpu::BufferSlice slice{shared[memory.buffer_of[r]], 0,
                           std::max<uint64_t>(4, (requests[r].size + 3) / 4 * 4)};
    if (request_value[r] != SIZE_MAX) {
      locations_[request_value[r]] = slice;
    } else {
      auto [s, k] = scratch_request[r];
      scratch[s].resize(std::max(scratch[s].size(), k + 1));
      scratch[s][k] = slice;
    }
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const size_t v = static_cast<size_t>(graph.inputs[i]);
    owned_.push_back(std::make_unique<gpu::Buffer>(device.create_buffer(
        device_byte_size(descs_[v]), "input '" + graph.value(graph.inputs[i]).name + "'")));
    locations_[v] = {owned_.back().get(), 0, device_byte_size(descs_[v])};
  }

  // Where a value is read from: the activation or input buffer of its root, a weight, or a host value
  // uploaded now.
  auto location_of = [&](graph::ValueId v) -> gpu::BufferSlice {
    if (v == graph::kNoValue) return {};
    const size_t r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (locations_[r].buffer) {
      gpu::BufferSlice s = locations_[r];
      s.size = std::min<uint64_t>(s.resolved_size(), device_byte_size(descs_[static_cast<size_t>(v)]));
      return s;
    }
    if (graph.value(static_cast<graph::ValueId>(r)).constant) {
      return {&weights.get(graph, static_cast<graph::ValueId>(r))};
    }
    if (host_values_[r]) {
      owned_.push_back(std::make_unique<gpu::Buffer>(
          upload_tensor(device, *host_values_[r], "folded '" + graph.values[r].name + "'")));
      locations_[r] = {owned_.back().get()};
      return locations_[r];
    }
    throw Error("internal: value '" + graph.value(v).name + "' has no location");
  };

  // 3. Pipelines (all compiled at once), prepacked constants and bind groups.
  std::vector<const gpu::ProgramSource*> programs;
  for (const auto& n : gpu_nodes) {
    for (const auto& launch : n.plan.launches) programs.push_back(&launch.program);
  }
  device.pipelines().prefetch(programs);
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    const graph::Node& node = graph.nodes[gpu_nodes[s].node];
    const ops::OpPlan& plan = gpu_nodes[s].plan;
    // Only inputs a kernel binds (or an output aliases) need device memory: others, such as Slice's `ends`
    // (often INT64_MAX, which no 32-bit GPU integer holds), are read on the host when planning.
    std::vector<bool> bound(node.inputs.size(), false);
    for (const auto& launch : plan.launches) {
      for (const ops::TensorRef& ref : launch.bindings) {
        if (ref.kind == ops::TensorRef::Kind::Input && ref.index < bound.size()) bound[ref.index] = true;
      }
    }
    if (plan.alias_output_to_input >= 0) bound.at(static_cast<size_t>(plan.alias_output_to_input)) = true;
    std::vector<gpu::BufferSlice> in, out, constants;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      in.push_back(bound[i] ? location_of(node.inputs[i]) : gpu::BufferSlice{});
    for (size_t o = 0; o < plan.outputs.size(); ++o) {
      out.push_back(o < node.outputs.size() && node.outputs[o] != graph::kNoValue
                        ? location_of(node.outputs[o])
                        : gpu::BufferSlice{});
    }
    for (const Tensor& c : plan.constants) {
      owned_.push_back(
          std::make_unique<gpu::Buffer>(upload_tensor(device, c, node.info.describe() + " prepacked")));
      prepacked_bytes_ += owned_.back()->size();
      constants.push_back({owned_.back().get()});
    }
    PlannedStep step;
    step.node = gpu_nodes[s].node;
    step.first_dispatch = dispatches_.size();
    for (auto& d : bind_plan(device, node.info, plan, {in, out, scratch[s], constants}))
      dispatches_.push_back(std::move(d));
    step.dispatch_count = dispatches_.size() - step.first_dispatch;
    for (const auto& launch : plan.launches)
      step.kernel += (step.kernel.empty() ? "" : "+") + launch.program.label;
    steps_.push_back(std::move(step));
  }
  // Graph outputs that are host values (constants, folded) are returned from the host; the others are
  // downloaded from where their root lives.
  for (graph::ValueId v : graph.outputs) {
    output_locations_.push_back(host_value(v) ? gpu::BufferSlice{} : location_of(v));
  }
}

std::vector<Tensor> ExecutionPlan::run(const std::vector<const Tensor*>& inputs,
                                       gpu::TimestampProfiler* profiler) {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const size_t v = static_cast<size_t>(graph_.inputs[i]);
    write_tensor(device_, locations_[v], *inputs.at(i), "input '" + graph_.values[v].name + "'");
  }
  gpu::CommandBatch batch(device_);
  for (size_t d = 0; d < dispatches_.size(); ++d) {
    if (profiler && d < profiler->capacity()) {
      batch.dispatch_timed(dispatches_[d], *profiler, static_cast<uint32_t>(d));
    } else {
      batch.dispatch(dispatches_[d]);
    }
  }
  batch.submit();
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < graph_.outputs.size(); ++o) {
    const size_t v = static_cast<size_t>(graph_.outputs[o]);
    if (const auto& c = graph_.values[v].constant) {
      outputs.push_back(*c);
    } else if (host_values_[v]) {
      outputs.push_back(*host_values_[v]);
    } else {
      outputs.push_back(read_tensor(device_, output_locations_[o], descs_[v]));
    }
  }
  return outputs;
}

}  // namespace wgi::runtime
