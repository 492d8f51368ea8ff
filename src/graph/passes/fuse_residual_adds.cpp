#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fuse_residual_adds(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    const Node& add = node_at(g, i);
    if (add.info.op_type != "Add" || (!add.info.domain.empty() && add.info.domain != "ai.onnx")) continue;
    if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) continue;
    // An attention mask added to the scores: fuse_attention's.
    const auto& sum_readers = readers.of(add.outputs[0]);
    if (std::any_of(sum_readers.begin(), sum_readers.end(),
                    [&](NodeId r) { return node_at(g, r).info.op_type == "Softmax"; }))
      continue;
    for (size_t side = 0; side < 2; ++side) {
      const NodeId p = sole_producer(g, readers, add.inputs[side], i);
      if (!p || editor.removed(p)) continue;
      Node& producer = node_at(g, p);
      const std::string& op = producer.info.op_type;
      const bool nbits = is_matmul_nbits(producer);                     // R as its input 6, after its own
      const bool scaled_integer = is_scaled_integer_product(producer);  // R as its input 7
      const size_t residual_input = nbits            ? ops::kNBitsResidualInput
                                    : scaled_integer ? ops::ScaledIntegerInput::kResidual
                                                     : ops::kFusedResidualInput;
      if ((op != "MatMul" && op != "Gemm" && op != "Conv" && !nbits && !scaled_integer) ||
          (!nbits && !producer.info.domain.empty()))
        continue;
      // A window reverse written in place (write_windows_in_place) keeps an empty residual input before its
      // shape inputs.
      const bool windows_out = op == "MatMul" && ops::read_linear_attributes(producer.info).windows_out &&
                               producer.inputs.size() > ops::kMatMulWindowInputs &&
                               producer.inputs[ops::kFusedResidualInput] == kNoValue;
      if (producer.outputs.size() != 1 || producer.inputs.size() < 2 ||
          (producer.inputs.size() > residual_input && !windows_out))
        continue;
      ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(producer.info);
      if (!epilogue.activation.empty() || epilogue.residual) continue;
      if (op == "MatMul" &&
          (produced_by(g, producer.inputs[0], "Softmax") || produced_by(g, producer.inputs[1], "Softmax")))
        continue;  // attention's P V
      const ValueId residual = add.inputs[1 - side];
      const Value& r = g.value(residual);
      if (!is_float_type(r.dtype) || g.value(add.inputs[side]).dtype != r.dtype) continue;
      if (!shapes_may_match(g.value(add.inputs[side]).shape, r.shape) ||
          !shapes_may_match(g.value(add.outputs[0]).shape, r.shape))
        continue;
      if (windows_out) {
        producer.inputs[ops::kFusedResidualInput] = residual;
      } else {
        producer.inputs.resize(residual_input, kNoValue);
        producer.inputs.push_back(residual);
      }
      epilogue.residual = true;
      ops::write_epilogue_attributes(epilogue, producer.info.attributes);
      producer.outputs[0] = add.outputs[0];
      editor.remove(i);
      ++count;
      break;
    }
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
