// What an op is to wgi: a handler that turns a node with concrete input shapes into a plan of GPU kernel
// launches (Plan -> Program -> Dispatch, see docs/architecture.md).
//
// Plan: pure C++ from shapes, attributes and device capabilities; no GPU access, unit-testable.
// Program: each launch carries a gpu::ProgramSource (kernel text + override constants + binding kinds); the
//   pipeline cache keys on exactly that, so shapes and scalars go into the uniform block, not the text.
// Dispatch: the runtime binds the launch's TensorRefs to buffers, uploads the uniform block once, and encodes
//   the dispatch on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/dispatch_grid.h"
#include "gpu/pipeline_cache.h"
#include "ops/attributes.h"
#include "wgi/tensor.h"

namespace wgi::ops {

struct TensorDesc {
  DType dtype = DType::Float32;
  Shape shape;
  bool operator==(const TensorDesc&) const = default;
};

struct NodeInfo {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int opset = 0;       // the model's opset for `domain`
  Attributes attributes;
  std::vector<std::string> input_names;   // for messages; may be empty
  std::vector<std::string> output_names;  // for messages; may be empty

  // "node 'conv1' (Conv, opset 13)": the prefix of every error about this node.
  std::string describe() const;
};

struct GemmTuning;  // ops/gemm_tuning.h

// The plan-time view of one node.
struct PlanContext {
  const NodeInfo& node;
  std::vector<std::optional<TensorDesc>> inputs;  // nullopt: optional input not given
  std::vector<const Tensor*> constant_inputs;     // the value, when known at plan time; else nullptr
  const gpu::Capabilities& caps;
  // GEMM configurations measured on this device, preferred over the GEMM planner's rules (node attributes
  // still win), and an observer of the GEMM problems planned; null: the rules alone. Plans stay pure
  // functions of their inputs and the table; a Session's table only gains entries for problems that none of
  // its plans has planned yet (it tunes a new plan's problems before planning it), so memoised node plans
  // stay valid.
  const GemmTuning* gemm_tuning = nullptr;
  // Names this node in the run status (runtime/run_status.h) that kernels checking data-dependent indices
  // bind (TensorRef::run_status()) and write this tag to; the runtime gives every node its own, non-zero.
  uint32_t status_tag = 0;

  size_t input_count() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].has_value(); }
  // The input's description; throws naming the node and input if it is absent.
  const TensorDesc& input(size_t i) const;
  const Tensor* constant(size_t i) const { return i < constant_inputs.size() ? constant_inputs[i] : nullptr; }
  std::string input_name(size_t i) const;
  // Throws wgi::Error prefixed with the node's description.
  [[noreturn]] void fail(const std::string& message) const;
};

// Where a kernel binding's buffer comes from.
struct TensorRef {
  enum class Kind { Input, Output, Scratch, Constant, Zero, RunStatus };
  Kind kind = Kind::Input;
  uint32_t index = 0;
  // Bytes into the tensor's buffer where the binding starts (a product's later rows run as a launch of
  // their own: gemm_launch.h, the wave tail). A multiple of the device's minStorageBufferOffsetAlignment
  // (256 at most); only for Input, Output, Scratch and Constant.
  uint64_t byte_offset = 0;

  static TensorRef input(uint32_t i) { return {Kind::Input, i}; }
  static TensorRef output(uint32_t i) { return {Kind::Output, i}; }
  static TensorRef scratch(uint32_t i) { return {Kind::Scratch, i}; }
  static TensorRef constant(uint32_t i) { return {Kind::Constant, i}; }
  // The device's small zero buffer, for an optional input the node does not have (e.g. no bias).
  static TensorRef zero() { return {Kind::Zero, 0}; }
  // The run status (runtime/run_status.h, kernels/common/run_status.wgsl), a read_write storage binding.
  static TensorRef run_status() { return {Kind::RunStatus, 0}; }
  // The same tensor bound `bytes` further in.
  TensorRef advanced(uint64_t bytes) const {
    TensorRef r = *this;
    r.byte_offset += bytes;
    return r;
  }
};

struct KernelLaunch {
  gpu::ProgramSource program;
  // The storage bindings in @binding order, skipping the uniform's slot: program.bindings says where the
  // uniform sits (usually last, but a fused residual is bound after it: append_residual_binding in
  // ops/fused_residual.h).
  std::vector<TensorRef> bindings;
  std::vector<std::byte> uniform;  // packed with gpu::UniformBuilder; empty if the kernel has none
  gpu::WorkgroupCount groups;
};

struct OpPlan {
  std::vector<TensorDesc> outputs;
  std::vector<KernelLaunch> launches;
  std::vector<uint64_t> scratch_bytes;  // temporary buffers for multi-kernel ops
  std::vector<Tensor> constants;        // derived once from constant inputs (e.g. prepacked weights)
  int alias_output_to_input = -1;       // >= 0: output 0 is that input's bytes unchanged (reshape-like ops)

  // A new scratch buffer of `bytes`, and the reference that binds it.
  TensorRef add_scratch(uint64_t bytes) {
    scratch_bytes.push_back(bytes);
    return TensorRef::scratch(static_cast<uint32_t>(scratch_bytes.size() - 1));
  }
};

struct OpHandler {
  std::function<OpPlan(const PlanContext&)> plan;
  // Optional: computes the outputs on the CPU, used to fold constant subgraphs such as shape arithmetic.
  std::function<std::vector<Tensor>(const PlanContext&, std::span<const Tensor* const>)> evaluate_on_host;
  // float16 (ops/float16.h): unless set, the registry runs `plan` and `evaluate_on_host` in float32,
  // unpacking float16 inputs and packing float16 outputs around them. Set: the handler takes float16 as it is
  // (Cast; MatMul and Gemm, which read a constant float16 B packed and the rest through plan_with_float16).
  bool plans_float16 = false;
};

// Fails, naming `what`, unless a float32/int32 tensor of `shape` has at most `max_elements` elements (what
// the kernel's index type reaches) and fits one storage binding of the device.
void require_addressable(const PlanContext& ctx, const std::string& what, const Shape& shape,
                         int64_t max_elements = std::numeric_limits<uint32_t>::max());

}  // namespace wgi::ops
