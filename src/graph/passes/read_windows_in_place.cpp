#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"
#include "ops/reshape.h"

namespace wgi::graph {

namespace {

// Where the window geometry is all constants (tests, exports with static shapes): whether
// Reshape(image [B, H, W, C], target) is [B, H / wh, wh, W / ww, ww, C], i.e. the windows divide H and W.
// True where it cannot be known before planning.
bool windows_may_divide(const ValueShape& image, const std::optional<std::vector<int64_t>>& target) {
  const std::optional<Shape> xs = image.concrete();
  if (!xs || !target) return true;
  const std::optional<Shape> r = ops::reshape_result(*xs, *target);
  return xs->size() == 4 && r && r->size() == 6 && (*r)[0] == (*xs)[0] && (*r)[1] * (*r)[2] == (*xs)[1] &&
         (*r)[3] * (*r)[4] == (*xs)[2] && (*r)[5] == (*xs)[3];
}

}  // namespace

int read_windows_in_place(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId mi : node_ids(g)) {
    Node& mm = node_at(g, mi);
    if (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.outputs.size() != 1) continue;
    if (mm.inputs.size() < 2 || mm.inputs.size() > 3 || mm.inputs[0] == mm.inputs[1]) continue;
    ops::LinearAttributes internal = ops::read_linear_attributes(mm.info);
    if (internal.windows_in || internal.windows_out || internal.epilogue.residual) continue;
    // Backwards from A: Reshape <- Reshape <- Transpose(perm [0, 1, 3, 2, 4, 5]) <- Reshape <- X. A may also
    // be read by Shape nodes (exports compute the attention's targets from it); every other step has one
    // reader.
    const ValueId a = mm.inputs[0];
    if (a == kNoValue || is_graph_output(g, a)) continue;
    const NodeId r5 = NodeId::producer_of(g, a);
    if (!r5 || editor.removed(r5) || !is_plain_reshape(node_at(g, r5))) continue;
    std::vector<NodeId> shape_readers;
    if (!others_read_only_shape(g, readers, a, mi, shape_readers)) continue;
    const Node& reshape5 = node_at(g, r5);
    const NodeId r4 = sole_producer(g, readers, reshape5.inputs[0], r5);
    if (!r4 || !is_plain_reshape(node_at(g, r4))) continue;
    const Node& reshape4 = node_at(g, r4);
    const NodeId ti = sole_producer(g, readers, reshape4.inputs[0], r4);
    if (!ti || !is_transpose(node_at(g, ti), kSwapWindowAxes)) continue;
    const NodeId r3 = sole_producer(g, readers, node_at(g, ti).inputs[0], ti);
    if (!r3 || !is_plain_reshape(node_at(g, r3))) continue;
    const Node& reshape3 = node_at(g, r3);
    const ValueId x = reshape3.inputs[0];
    if (g.value(x).dtype != DType::Float32) continue;
    const ValueId t3 = reshape3.inputs[1], t4 = reshape4.inputs[1], t5 = reshape5.inputs[1];
    if (!derived_from_shapes(g, t3) || !derived_from_shapes(g, t4) || !derived_from_shapes(g, t5)) continue;
    if (g.value(x).shape.rank_known && g.value(x).shape.dims.size() != 4) continue;
    if (!windows_may_divide(g.value(x).shape, known_target(g, t3))) continue;
    const std::vector<NodeId> chain = {r3, ti, r4, r5};
    if (editor.any_removed(chain)) continue;

    using In = ops::WindowsInInput;
    mm.inputs.resize(In::kCount, kNoValue);  // the bias (if any) stays; no residual yet
    mm.inputs[ops::LinearInput::kA] = x;
    mm.inputs[In::kPartition] = t3;
    mm.inputs[In::kWindows] = t4;
    mm.inputs[In::kTokens] = t5;
    internal.windows_in = true;
    ops::write_linear_attributes(internal, mm.info.attributes);
    if (shape_readers.empty()) {
      for (NodeId n : chain) editor.remove(n);
    } else {
      // The Shape readers keep the Reshapes (no kernels), the second now reading the first: the same shape
      // unless a 0 in its target copies a dim the Transpose moved, which the MatMul's plan rejects.
      node_at(g, r4).inputs[0] = reshape3.outputs[0];
      editor.remove(ti);
    }
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
