#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fuse_bias_adds(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    const Node& add = node_at(g, i);
    if (add.info.op_type != "Add" || add.inputs.size() != 2) continue;
    for (size_t side = 0; side < 2; ++side) {
      NodeId p = sole_producer(g, readers, add.inputs[side], i);
      if (!p || editor.removed(p)) continue;
      Node& mm = node_at(g, p);
      const Tensor* c = constant_of(g, add, 1 - side);
      if (!is_float_or_half(c)) continue;
      // MatMul(A, B) with a constant B [K, N] (or [N, K] with wgi.trans_b), or MatMulNBits without a bias
      // yet (its output has A's rank; a residual or activation would come after the bias).
      const bool nbits = is_matmul_nbits(mm);
      int64_t n = 0;
      if (nbits) {
        const ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(mm.info);
        if (mm.inputs.size() > ops::kNBitsBiasInput + 1 ||
            (mm.inputs.size() > ops::kNBitsBiasInput && mm.inputs[ops::kNBitsBiasInput] != kNoValue) ||
            epilogue.residual || !epilogue.activation.empty())
          continue;
        n = mm.info.attributes.get_int("N", 0);
      } else {
        if (mm.info.op_type != "MatMul" || mm.inputs.size() != 2) continue;
        const Tensor* b = constant_of(g, mm, 1);
        // B and the bias of one type, float32 or float16, or a float16 B with a float32 bias (as
        // compute_float16_in_float32 leaves them): MatMul reads a float16 B packed.
        if (!b || !is_float_or_half(b) || b->rank() != 2) continue;
        if (b->dtype() != c->dtype() && c->dtype() != DType::Float32) continue;
        n = b->shape()[ops::read_linear_attributes(mm.info).trans_b ? 0 : 1];
      }
      // The bias must be a row vector: [N] or [1, ..., 1, N].
      const auto& cs = c->shape();
      if (cs.empty() || cs.back() != n || c->element_count() != n) continue;
      // Broadcasting must not raise the output's rank: a [N] bias never does; [1, ..., N] only if A's rank is
      // known to be at least as large.
      const auto& a_shape = g.value(mm.inputs[0]).shape;
      const size_t out_rank = nbits ? a_shape.dims.size() : std::max<size_t>(a_shape.dims.size(), 2);
      if (cs.size() > 1 && (!a_shape.rank_known || cs.size() > out_rank)) continue;
      Tensor bias = *c;
      ValueId bias_id =
          add_constant(g, g.value(add.inputs[1 - side]).name + "_row", Tensor(c->dtype(), {n}, bias.bytes()));
      if (nbits) {
        mm.inputs.resize(ops::kNBitsBiasInput + 1, kNoValue);
        mm.inputs[ops::kNBitsBiasInput] = bias_id;
      } else {
        mm.inputs.push_back(bias_id);  // input 2: ops::LinearInput::kBias
      }
      mm.outputs[0] = add.outputs[0];
      editor.remove(i);
      ++count;
      break;
    }
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
