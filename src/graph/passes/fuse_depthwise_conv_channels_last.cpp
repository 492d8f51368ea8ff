#include "graph/passes.h"

#include <algorithm>
#include <optional>

#include "graph/passes/match.h"
#include "ops/conv_channels_last.h"
#include "ops/internal_ops.h"
#include "ops/reshape.h"

namespace wgi::graph {

namespace {

const std::vector<int64_t> kSwap12 = {0, 2, 1};  // [B, N, C] <-> [B, C, N]

// The Conv itself: depthwise 2-D, weight [C, 1, KH, KW] and group C, kernels up to 7x7, dilation 1, explicit
// pads, no residual.
struct DepthwiseConv {
  int64_t channels = 0;
  int64_t kh = 0;
  int64_t kw = 0;
  std::vector<int64_t> strides, pads;
  bool has_bias = false;
  ops::EpilogueAttributes epilogue;
  // The output has X's spatial size: then the conv's output shape is its input's.
  bool same_size = false;
};

std::optional<DepthwiseConv> match_depthwise_conv(const Graph& g, const Node& conv) {
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return std::nullopt;
  const ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(conv.info);
  if (epilogue.residual) return std::nullopt;
  const Tensor* w = constant_of(g, conv, 1);
  if (!is_float(w) || w->rank() != 4 || w->shape()[1] != 1) return std::nullopt;
  const int64_t channels = w->shape()[0], kh = w->shape()[2], kw = w->shape()[3];
  if (kh < 1 || kw < 1 || kh > ops::kDepthwiseConvChannelsLastMaxKernel ||
      kw > ops::kDepthwiseConvChannelsLastMaxKernel)
    return std::nullopt;
  const ops::Attributes& a = conv.info.attributes;
  if (a.get_int("group", 1) != channels) return std::nullopt;
  if (a.get_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  if (a.has("kernel_shape") && a.get_ints("kernel_shape", {}) != std::vector<int64_t>{kh, kw})
    return std::nullopt;
  if (a.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return std::nullopt;
  std::vector<int64_t> strides = a.get_ints("strides", {1, 1});
  std::vector<int64_t> pads = a.get_ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1 || pads.size() != 4 ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
    return std::nullopt;
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  const Tensor* bias = constant_of(g, conv, 2);
  if (has_bias && (!is_float(bias) || bias->element_count() != channels)) return std::nullopt;
  const bool same_size =
      strides == std::vector<int64_t>{1, 1} && pads[0] + pads[2] == kh - 1 && pads[1] + pads[3] == kw - 1;
  return DepthwiseConv{.channels = channels,
                       .kh = kh,
                       .kw = kw,
                       .strides = std::move(strides),
                       .pads = std::move(pads),
                       .has_bias = has_bias,
                       .epilogue = epilogue,
                       .same_size = same_size};
}

// Backwards from the conv: Reshape [B, C, H, W] <- Transpose(x, [0, 2, 1]).
struct ChannelsLastInput {
  NodeId reshape;    // the Reshape to NCHW (kept where others read its shape)
  NodeId transpose;  // the Transpose before it, removed with the chain; none where x_producer is read
  ValueId x = kNoValue;
  NodeId x_producer;                  // x's producer where it stays: a Transpose of the Reshape's input
  std::vector<NodeId> shape_readers;  // Shape nodes reading the NCHW tensor
};

std::optional<ChannelsLastInput> match_input(const Graph& g, const Readers& readers, const NodeEditor& editor,
                                             const std::vector<bool>& kept, NodeId ci, int64_t channels) {
  const Node& conv = node_at(g, ci);
  ChannelsLastInput in;
  const ValueId nchw = conv.inputs[0];
  const NodeId r1 = NodeId::producer_of(g, nchw);
  if (!r1 || is_graph_output(g, nchw)) return std::nullopt;
  in.reshape = r1;
  const Node& reshape1 = node_at(g, r1);
  if (!is_plain_reshape(reshape1)) return std::nullopt;
  // Other readers of the NCHW tensor or of the conv's output may only take their shape (as exports do to
  // compute the next Reshape's target): they then read the first Reshape, applied to x directly.
  if (!others_read_only_shape(g, readers, nchw, ci, in.shape_readers)) return std::nullopt;
  // x [B, N, C]: the input of the Transpose before the Reshape (removed with the chain), or, where the
  // exporter cancelled a Transpose pair (x = Transpose(v) read by the block, the Reshape reading v [B, C,
  // N] itself, as after DaViT's downsampling), the output of a Transpose of v (kept: the fused node reads
  // it).
  const ValueId v = reshape1.inputs[0];
  NodeId t1 = sole_producer(g, readers, v, r1);
  if (t1 && (!is_transpose(node_at(g, t1), kSwap12) || kept[t1.index()])) t1 = NodeId();
  in.transpose = t1;
  ValueId x = t1 ? node_at(g, t1).inputs[0] : kNoValue;
  for (size_t k = 0; !t1 && x == kNoValue && k < readers.of(v).size(); ++k) {
    const NodeId r = readers.of(v)[k];
    const Node& n = node_at(g, r);
    if (is_transpose(n, kSwap12) && !editor.removed(r) && n.outputs.size() == 1) {
      x = n.outputs[0];
      in.x_producer = r;
    }
  }
  if (x == kNoValue || g.value(x).dtype != DType::Float32) return std::nullopt;
  const ValueShape& xs = g.value(x).shape;
  if (xs.rank_known && (xs.dims.size() != 3 || (xs.dims[2].is_known() && xs.dims[2].value != channels)))
    return std::nullopt;
  in.x = x;
  return in;
}

// Forwards from the conv: Reshape [B, C, Ho * Wo] -> Transpose([0, 2, 1]) -> [Add(R, .)].
struct ChannelsLastOutput {
  NodeId reshape, transpose;
  ValueId y = kNoValue;  // the Transpose's output
  NodeId add;            // the residual Add, if fused
  ValueId residual = kNoValue;
  std::vector<NodeId> shape_readers;  // Shape nodes reading the conv's output
};

std::optional<ChannelsLastOutput> match_output(const Graph& g, const Readers& readers, const Node& conv,
                                               const DepthwiseConv& dw, ValueId x) {
  const ValueId conv_out = conv.outputs[0];
  if (is_graph_output(g, conv_out)) return std::nullopt;
  ChannelsLastOutput out;
  NodeId r2;
  bool ok = true;
  for (NodeId r : readers.of(conv_out)) {
    const Node& n = node_at(g, r);
    if (n.info.op_type == "Shape" && n.info.domain.empty()) {
      out.shape_readers.push_back(r);
    } else if (!r2 && is_plain_reshape(n) && n.inputs[0] == conv_out && n.inputs[1] != conv_out) {
      r2 = r;
    } else {
      ok = false;
    }
  }
  // The conv's output shape is its input's only when the conv keeps the spatial size.
  if (!ok || !r2 || (!out.shape_readers.empty() && !dw.same_size)) return std::nullopt;
  out.reshape = r2;
  const Node& reshape2 = node_at(g, r2);
  const NodeId t2 = sole_reader(g, readers, reshape2.outputs[0]);
  if (!t2 || !is_transpose(node_at(g, t2), kSwap12)) return std::nullopt;
  out.transpose = t2;
  const ValueId y = node_at(g, t2).outputs[0];
  out.y = y;
  // The residual: Add(R, y) or Add(y, R) as y's only reader, where R has y's shape for certain: x itself,
  // or a tensor of x's fully known shape, and the conv keeps the spatial size.
  NodeId add_node = sole_reader(g, readers, y);
  ValueId residual = kNoValue;
  if (add_node) {
    const Node& add = node_at(g, add_node);
    residual = add.info.op_type == "Add" && add.info.domain.empty() ? other_operand(add, y) : kNoValue;
    if (residual != kNoValue && !(dw.same_size && g.value(residual).dtype == DType::Float32 &&
                                  (residual == x || same_known_shape(g, residual, x)))) {
      residual = kNoValue;
    }
    if (residual == kNoValue) add_node = NodeId();
  }
  out.add = add_node;
  out.residual = residual;
  return out;
}

// The Reshape targets: checked here when they are constants (and x's shape is known), else by the op when it
// is planned (they must then be known: exports compute them from Shape nodes).
bool reshape_targets_fit(const Graph& g, const DepthwiseConv& dw, const ChannelsLastInput& in,
                         const ChannelsLastOutput& out) {
  const int64_t channels = dw.channels, kh = dw.kh, kw = dw.kw;
  const std::vector<int64_t>& strides = dw.strides;
  const std::vector<int64_t>& pads = dw.pads;
  const ValueId target1 = node_at(g, in.reshape).inputs[1], target2 = node_at(g, out.reshape).inputs[1];
  if (!derived_from_shapes(g, target1) || !derived_from_shapes(g, target2)) return false;
  const auto ints1 = constant_ints(g, target1), ints2 = constant_ints(g, target2);
  if (ints1 && (ints1->size() != 4 || ((*ints1)[1] != channels && (*ints1)[1] != 0))) return false;
  if (ints2 && (ints2->size() != 3 || ((*ints2)[1] != channels && (*ints2)[1] != 0))) return false;
  if (const std::optional<Shape> xc = g.value(in.x).shape.concrete(); xc && ints1 && ints2) {
    const int64_t b = (*xc)[0], n = (*xc)[1];
    const std::optional<Shape> s1 = ops::reshape_result({b, channels, n}, *ints1);
    if (!s1 || (*s1)[0] != b || (*s1)[1] != channels) return false;
    const int64_t out_h = (*s1)[2] + pads[0] + pads[2] - kh, out_w = (*s1)[3] + pads[1] + pads[3] - kw;
    if (out_h < 0 || out_w < 0) return false;
    const int64_t pixels = (out_h / strides[0] + 1) * (out_w / strides[1] + 1);
    const std::optional<Shape> s2 =
        ops::reshape_result({b, channels, out_h / strides[0] + 1, out_w / strides[1] + 1}, *ints2);
    if (!s2 || *s2 != Shape{b, channels, pixels}) return false;
  }
  return true;
}

Node channels_last_node(const Graph& g, const Node& conv, const DepthwiseConv& dw,
                        const ChannelsLastInput& in, const ChannelsLastOutput& out) {
  Node fused;
  fused.info.name =
      conv.info.name.empty() ? "depthwise_conv_channels_last" : conv.info.name + "_channels_last";
  fused.info.op_type = ops::kDepthwiseConvChannelsLastOp;
  fused.info.domain = ops::kDepthwiseConvChannelsLastDomain;
  fused.info.opset = 1;
  ops::ChannelsLastConvAttributes internal;
  internal.kernel_shape = {dw.kh, dw.kw};
  internal.pads = dw.pads;
  internal.strides = dw.strides;
  internal.epilogue = dw.epilogue;  // the activation (no residual: checked by match_depthwise_conv)
  fused.info.attributes = ops::write_channels_last_conv_attributes(internal);
  using In = ops::ChannelsLastConvInput;
  fused.inputs.assign(In::kCount, kNoValue);
  fused.inputs[In::kX] = in.x;
  fused.inputs[In::kW] = conv.inputs[1];
  fused.inputs[In::kBias] = dw.has_bias ? conv.inputs[2] : kNoValue;
  fused.inputs[In::kResidual] = out.residual;
  fused.inputs[In::kImageTarget] = node_at(g, in.reshape).inputs[1];
  fused.inputs[In::kTokensTarget] = node_at(g, out.reshape).inputs[1];
  fused.outputs = {out.add ? node_at(g, out.add).outputs[0] : out.y};
  return fused;
}

}  // namespace

int fuse_depthwise_conv_channels_last(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  std::vector<bool> kept(g.nodes.size(), false);  // Transposes a fused node reads: never removed as a t1
  for (NodeId ci : node_ids(g)) {
    const Node& conv = node_at(g, ci);
    if (conv.info.op_type != "Conv" || !conv.info.domain.empty() || editor.removed(ci)) continue;
    const std::optional<DepthwiseConv> dw = match_depthwise_conv(g, conv);
    if (!dw) continue;
    const std::optional<ChannelsLastInput> in = match_input(g, readers, editor, kept, ci, dw->channels);
    if (!in) continue;
    const std::optional<ChannelsLastOutput> out = match_output(g, readers, conv, *dw, in->x);
    if (!out || !reshape_targets_fit(g, *dw, *in, *out)) continue;

    std::vector<NodeId> chain = {in->reshape, ci, out->reshape, out->transpose};
    if (in->transpose) chain.push_back(in->transpose);
    if (out->add) chain.push_back(out->add);
    if (editor.any_removed(chain)) continue;

    Node fused = channels_last_node(g, conv, *dw, *in, *out);
    const ValueId nchw = conv.inputs[0];
    if (in->shape_readers.empty() && out->shape_readers.empty()) {
      editor.remove(in->reshape);
    } else {
      // Reshape(x, target1) has Reshape(Transpose(x), target1)'s shape (or fails when planned where a 0
      // copies a dim that differs): no kernel, as every Reshape.
      node_at(g, in->reshape).inputs[0] = in->x;
      for (NodeId s : in->shape_readers) node_at(g, s).inputs[0] = nchw;
      for (NodeId s : out->shape_readers) node_at(g, s).inputs[0] = nchw;
    }
    for (NodeId n : chain) {
      if (n != in->reshape) editor.remove(n);
    }
    if (in->x_producer) kept[in->x_producer.index()] = true;
    editor.add(std::move(fused));
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
