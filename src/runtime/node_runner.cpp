#include "runtime/node_runner.h"

#include "runtime/data_dependent.h"
#include "runtime/device_tensor.h"
#include "runtime/plan_binding.h"

namespace wgi::runtime {

namespace {

const ops::OpHandler& find_handler(const ops::NodeInfo& node, const ops::OpRegistry& registry) {
  if (const auto* entry = registry.find(node.domain, node.op_type, node.opset)) return entry->handler;
  throw Error(node.describe() + ": " +
              registry.unsupported_reason(node.domain, node.op_type, node.opset).value());
}

}  // namespace

ops::OpPlan plan_node(const gpu::Capabilities& caps, const ops::NodeInfo& node,
                      std::span<const std::optional<NodeInput>> inputs, const ops::OpRegistry& registry,
                      const ops::GemmTuning* gemm_tuning) {
  const ops::OpHandler& handler = find_handler(node, registry);
  // The node is alone: tag 1 (PreparedNode's run status names it).
  ops::PlanContext ctx{node, {}, {}, caps, gemm_tuning, 1};
  for (const auto& in : inputs) {
    if (in) {
      ctx.inputs.push_back(ops::TensorDesc{in->value.dtype(), in->value.shape()});
      ctx.constant_inputs.push_back(in->constant ? &in->value : nullptr);
    } else {
      ctx.inputs.push_back(std::nullopt);
      ctx.constant_inputs.push_back(nullptr);
    }
  }
  return handler.plan(ctx);
}

PreparedNode::PreparedNode(gpu::Device& device, const ops::NodeInfo& node,
                           std::span<const std::optional<NodeInput>> inputs, const NodeRunOptions& options,
                           const ops::OpRegistry& registry)
    : device_(device),
      node_(node),
      plan_(plan_node(options.capabilities.value_or(device.capabilities()), node, inputs, registry,
                      options.gemm_tuning)) {
  // Fills a buffer from byte `from` (a multiple of 4) to its end with a quiet NaN with a payload.
  auto poison = [&](const gpu::Buffer& buffer, uint64_t from) {
    if (!options.poison_outputs || from >= buffer.size()) return;
    std::vector<uint32_t> bits((buffer.size() - from) / 4, 0x7fc0dead);
    device.upload(buffer, from, std::as_bytes(std::span<const uint32_t>(bits)));
  };
  // A tensor's buffer with the bytes past the tensor (buffers are whole 16-byte units) poisoned: no kernel
  // may read them, and on a device without Dawn's lazy clearing they are not zero.
  auto upload = [&](const Tensor& t, const std::string& label) {
    gpu::Buffer buffer = upload_tensor(device, t, label);
    poison(buffer, t.element_count() == 0 ? buffer.size() : device_byte_size({t.dtype(), t.shape()}));
    return buffer;
  };
  auto own = [&](gpu::Buffer buffer) -> gpu::BufferSlice {
    owned_.push_back(std::make_unique<gpu::Buffer>(std::move(buffer)));
    return {owned_.back().get()};
  };
  // Upload only what a kernel binds or an output aliases (see ExecutionPlan for why).
  std::vector<bool> bound(inputs.size(), false);
  for (const auto& launch : plan_.launches) {
    for (const ops::TensorRef& ref : launch.bindings) {
      if (ref.kind == ops::TensorRef::Kind::Input && ref.index < bound.size()) bound[ref.index] = true;
    }
  }
  if (plan_.alias_output_to_input >= 0) bound.at(static_cast<size_t>(plan_.alias_output_to_input)) = true;
  std::vector<gpu::BufferSlice> input_slices;
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_slices.push_back(
        inputs[i] && bound[i] ? own(upload(inputs[i]->value, node.describe() + " input " + std::to_string(i)))
                              : gpu::BufferSlice{});
  }
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    if (plan_.alias_output_to_input >= 0 && i == 0) {
      outputs_.push_back(input_slices.at(static_cast<size_t>(plan_.alias_output_to_input)));
      continue;
    }
    gpu::BufferSlice slice = own(device.create_buffer(device_byte_size(plan_.outputs[i]), "output"));
    poison(*slice.buffer, 0);
    outputs_.push_back(slice);
  }
  std::vector<gpu::BufferSlice> scratch_slices;
  for (uint64_t bytes : plan_.scratch_bytes) {
    scratch_slices.push_back(own(device.create_buffer(bytes, "scratch")));
    // Scratch too: in a model it is a pooled activation buffer holding an earlier tensor, and on a device
    // without Dawn's lazy clearing a fresh buffer is not zero either.
    poison(*scratch_slices.back().buffer, 0);
  }
  std::vector<gpu::BufferSlice> constant_slices;
  for (const Tensor& c : plan_.constants) {
    constant_slices.push_back(own(upload(c, node.describe() + " prepacked constant")));
  }
  for (const auto& launch : plan_.launches) {
    for (const ops::TensorRef& ref : launch.bindings) {
      if (ref.kind == ops::TensorRef::Kind::RunStatus && !status_)
        status_ = std::make_unique<RunStatus>(device);
    }
  }
  dispatches_ = bind_plan(device, node, plan_,
                          {input_slices, outputs_, scratch_slices, constant_slices,
                           status_ ? status_->slice() : gpu::BufferSlice{}});
}

void PreparedNode::encode(gpu::CommandBatch& batch) const {
  for (const auto& d : dispatches_) batch.dispatch(d);
}

void PreparedNode::encode_timed(gpu::CommandBatch& batch, gpu::TimestampProfiler& profiler,
                                uint32_t first_slot) const {
  for (size_t i = 0; i < dispatches_.size(); ++i)
    batch.dispatch_timed(dispatches_[i], profiler, first_slot + static_cast<uint32_t>(i));
}

std::vector<Tensor> PreparedNode::read_outputs() {
  std::vector<std::vector<std::byte>> bytes(plan_.outputs.size());
  std::vector<gpu::Device::DownloadRegion> regions;
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    bytes[i].resize(device_payload_bytes(plan_.outputs[i]));
    regions.push_back({outputs_[i].buffer, outputs_[i].offset, bytes[i]});
  }
  if (status_) regions.push_back(status_->region());
  device_.download(regions);
  if (status_) status_->check_downloaded([this](uint32_t tag) { return tag == 1 ? &node_ : nullptr; });
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    outputs.push_back(from_device_bytes(plan_.outputs[i], bytes[i]));
  // Outputs of data-dependent size: cut to the extent the kernels wrote (its output, poisoned like the
  // others, fails the bound check if no kernel wrote it), which is not one of the node's.
  const ops::DataDependence* dd = ops::data_dependence(node_);
  if (dd && dd->outputs && dd->extent_output < outputs.size()) {
    const uint32_t extent = static_cast<uint32_t>(outputs[dd->extent_output].data<int32_t>()[0]);
    const std::vector<ops::DataDependentOutput> dynamic = dd->outputs(node_, plan_.outputs);
    const std::vector<ops::TensorDesc> real = real_output_descs(node_, plan_.outputs, dynamic, extent);
    for (const ops::DataDependentOutput& d : dynamic)
      outputs[d.output] = leading_elements(outputs[d.output], real[d.output].shape);
    outputs.resize(dd->extent_output);
  }
  return outputs;
}

std::vector<Tensor> PreparedNode::run() {
  gpu::CommandBatch batch(device_);
  encode(batch);
  batch.submit();
  if (status_) status_->mark_pending();
  return read_outputs();
}

std::vector<Tensor> run_node(gpu::Device& device, const ops::NodeInfo& node,
                             std::span<const std::optional<NodeInput>> inputs, const NodeRunOptions& options,
                             const ops::OpRegistry& registry) {
  return PreparedNode(device, node, inputs, options, registry).run();
}

}  // namespace wgi::runtime
