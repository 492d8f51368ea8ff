#include "runtime/node_runner.h"

#include "gpu/commands.h"
#include "runtime/device_tensor.h"
#include "runtime/plan_binding.h"

namespace wgi::runtime {

namespace {

const ops::OpHandler& find_handler(const ops::NodeInfo& node, const ops::OpRegistry& registry) {
  if (const auto* entry = registry.find(node.domain, node.op_type, node.opset)) return entry->handler;
  throw Error(node.describe() + ": " + registry.unsupported_reason(node.domain, node.op_type, node.opset).value());
}

}  // namespace

ops::OpPlan plan_node(const gpu::Capabilities& caps, const ops::NodeInfo& node,
                      std::span<const std::optional<NodeInput>> inputs, const ops::OpRegistry& registry) {
  const ops::OpHandler& handler = find_handler(node, registry);
  ops::PlanContext ctx{node, {}, {}, caps};
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

std::vector<Tensor> run_node(gpu::Device& device, const ops::NodeInfo& node,
                             std::span<const std::optional<NodeInput>> inputs, const NodeRunOptions& options,
                             const ops::OpRegistry& registry) {
  ops::OpPlan plan = plan_node(options.capabilities.value_or(device.capabilities()), node, inputs, registry);

  std::vector<gpu::Buffer> owned;
  owned.reserve(inputs.size() + plan.outputs.size() + plan.scratch_bytes.size() + plan.constants.size());
  std::vector<gpu::BufferSlice> input_slices;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      input_slices.push_back({});
      continue;
    }
    owned.push_back(upload_tensor(device, inputs[i]->value, node.describe() + " input " + std::to_string(i)));
    input_slices.push_back({&owned.back()});
  }

  std::vector<gpu::BufferSlice> output_slices;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (plan.alias_output_to_input >= 0 && i == 0) {
      output_slices.push_back(input_slices.at(static_cast<size_t>(plan.alias_output_to_input)));
      continue;
    }
    uint64_t bytes = device_byte_size(plan.outputs[i]);
    owned.push_back(device.create_buffer(bytes, "output"));
    if (options.poison_outputs) {
      std::vector<uint32_t> poison(owned.back().size() / 4, 0x7fc0dead);  // a quiet NaN with a payload
      device.upload(owned.back(), 0, std::as_bytes(std::span<const uint32_t>(poison)));
    }
    output_slices.push_back({&owned.back()});
  }
  std::vector<gpu::BufferSlice> scratch_slices;
  for (uint64_t bytes : plan.scratch_bytes) {
    owned.push_back(device.create_buffer(bytes, "scratch"));
    scratch_slices.push_back({&owned.back()});
  }
  std::vector<gpu::BufferSlice> constant_slices;
  for (const Tensor& c : plan.constants) {
    owned.push_back(upload_tensor(device, c, node.describe() + " prepacked constant"));
    constant_slices.push_back({&owned.back()});
  }

  auto dispatches = bind_plan(device, node, plan, {input_slices, output_slices, scratch_slices, constant_slices});
  gpu::CommandBatch batch(device);
  for (const auto& d : dispatches) batch.dispatch(d);
  batch.submit();

  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    outputs.push_back(read_tensor(device, output_slices[i], plan.outputs[i]));
  }
  return outputs;
}

}  // namespace wgi::runtime
