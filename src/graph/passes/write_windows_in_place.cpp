#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"
#include "ops/reshape.h"

namespace wgi::graph {

namespace {

// A Slice (default domain) of one axis `axis` from 0 with step 1, as the window reverse's crop is exported:
// starts [0], axes [axis], steps [1] or absent, as constants; the ends (computed from shapes) are input 2.
bool is_crop(const Graph& g, const Node& n, int64_t axis) {
  if (n.info.op_type != "Slice" || !n.info.domain.empty() || n.inputs.size() < 4 || n.inputs.size() > 5 ||
      n.outputs.size() != 1)
    return false;
  if (known_target(g, n.inputs[1]) != std::vector<int64_t>{0}) return false;
  if (known_target(g, n.inputs[3]) != std::vector<int64_t>{axis}) return false;
  if (n.inputs.size() == 5 && n.inputs[4] != kNoValue &&
      known_target(g, n.inputs[4]) != std::vector<int64_t>{1})
    return false;
  return n.inputs[2] != kNoValue && derived_from_shapes(g, n.inputs[2]);
}

}  // namespace

int write_windows_in_place(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  // The next node along a chain: the only reader of `n`'s output, not yet removed.
  auto next = [&](const Node& n) {
    const NodeId r = next_in_chain(g, readers, n);
    return r && !editor.removed(r) ? r : NodeId();
  };
  for (NodeId mi : node_ids(g)) {
    Node& mm = node_at(g, mi);
    if (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.outputs.size() != 1) continue;
    if (mm.inputs.size() < 2 || mm.inputs.size() > 3) continue;
    ops::LinearAttributes internal = ops::read_linear_attributes(mm.info);
    if (internal.windows_in || internal.windows_out || internal.epilogue.residual ||
        !internal.epilogue.activation.empty())
      continue;
    // Forwards: Reshape -> Reshape -> Transpose(perm [0, 1, 3, 2, 4, 5]) -> Reshape -> Slice(axis 1) ->
    // Slice(axis 2) -> Reshape, each the only reader of the one before.
    const NodeId r8 = next(mm);
    if (!r8 || !is_plain_reshape(node_at(g, r8))) continue;
    const NodeId r9 = next(node_at(g, r8));
    if (!r9 || !is_plain_reshape(node_at(g, r9))) continue;
    const NodeId ti = next(node_at(g, r9));
    if (!ti || !is_transpose(node_at(g, ti), kSwapWindowAxes)) continue;
    const NodeId r10 = next(node_at(g, ti));
    if (!r10 || !is_plain_reshape(node_at(g, r10))) continue;
    // The crop is exported only where the image was padded when traced (DaViT at 768 x 768 has none).
    NodeId s1 = next(node_at(g, r10)), s2, r11 = s1;
    if (s1 && is_crop(g, node_at(g, s1), 1)) {
      s2 = next(node_at(g, s1));
      if (!s2 || !is_crop(g, node_at(g, s2), 2)) continue;
      r11 = next(node_at(g, s2));
    } else {
      s1 = NodeId();
    }
    if (!r11 || !is_plain_reshape(node_at(g, r11))) continue;
    const Node &reshape8 = node_at(g, r8), &reshape9 = node_at(g, r9), &reshape10 = node_at(g, r10),
               &reshape11 = node_at(g, r11);
    const ValueId t8 = reshape8.inputs[1], t9 = reshape9.inputs[1], t10 = reshape10.inputs[1],
                  t11 = reshape11.inputs[1];
    const ValueId end_h = s1 ? node_at(g, s1).inputs[2] : kNoValue,
                  end_w = s2 ? node_at(g, s2).inputs[2] : kNoValue;
    bool known = true;
    for (ValueId t : {t8, t9, t10, t11}) known = known && derived_from_shapes(g, t);
    if (!known) continue;
    // A crop that constants show to cut rows or columns (a padded image): the reverse is then not the
    // output; left as exported. Shape-derived crops are checked when planned (a non-empty one runs as
    // copies after the product).
    const std::optional<std::vector<int64_t>> image = known_target(g, t10);
    bool cuts = false;
    for (const auto& [end, axis] : {std::pair{end_h, size_t{1}}, std::pair{end_w, size_t{2}}}) {
      const std::optional<std::vector<int64_t>> e = known_target(g, end);
      if (e && image && image->size() == 4 && (*image)[axis] > 0 && e->size() == 1 &&
          std::clamp<int64_t>((*e)[0] < 0 ? (*e)[0] + (*image)[axis] : (*e)[0], 0, (*image)[axis]) !=
              (*image)[axis])
        cuts = true;
    }
    if (cuts) continue;
    // Where the product's shape and the targets are constants: the windows must divide the image.
    if (const std::optional<Shape> ps = g.value(mm.outputs[0]).shape.concrete(); ps) {
      const auto k8 = known_target(g, t8), k9 = known_target(g, t9);
      if (k8 && k9) {
        const std::optional<Shape> a8 = ops::reshape_result(*ps, *k8);
        const std::optional<Shape> a9 = a8 ? ops::reshape_result(*a8, *k9) : std::nullopt;
        if (!a9 || a9->size() != 6 || a9->back() != ps->back()) continue;
      }
    }
    std::vector<NodeId> chain = {r8, r9, ti, r10, r11};
    if (s1) chain.insert(chain.end(), {s1, s2});
    const ValueId out = reshape11.outputs[0];
    using In = ops::WindowsOutInput;
    mm.inputs.resize(In::kCount, kNoValue);  // the bias (if any) stays; no residual yet
    mm.inputs[In::kWindows] = t8;
    mm.inputs[In::kWindowsImage] = t9;
    mm.inputs[In::kImage] = t10;
    mm.inputs[In::kCropEndH] = end_h;
    mm.inputs[In::kCropEndW] = end_w;
    mm.inputs[In::kOutput] = t11;
    mm.outputs[0] = out;
    internal.windows_out = true;
    ops::write_linear_attributes(internal, mm.info.attributes);
    for (NodeId n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
