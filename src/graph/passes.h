// Graph optimisations run once at load, before any shape is known. Each keeps the model's results unchanged
// (up to fp32 rounding for the folds) and leaves the graph topologically sorted. One file per pass in
// src/graph/passes/, their order in pass_table.cpp; docs/adding_a_pass.md says how to add one.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/registry.h"

namespace wgi::graph {

// One graph pass: its name (what SessionOptions::disabled_passes and WGI_DISABLE_PASSES name), what its
// count means in PassReport::summary, the function, and the order constraints it relies on, written once
// (docs/adding_a_pass.md). Passes that do not need the registry ignore it.
struct PassInfo {
  std::string name;      // "fuse_bias_adds"
  std::string reported;  // "MatMul+Add fused": the summary's words after the count
  int (*run)(Graph& graph, const ops::OpRegistry& registry);  // returns the nodes changed
  // The order constraints: passes that must have run before it / must run after it (checked by a unit test
  // against the table's order), and why.
  std::vector<std::string> after, before;
  std::string why;
};

// Every pass in the order optimize() runs them; a name may appear more than once (remove_dead_nodes runs
// twice), its counts then summed.
const std::vector<PassInfo>& pass_table();
// The distinct pass names, in table order: "eliminate_identities, read_transposed_weights, ...".
std::string pass_names();

// The count of each pass, by name.
class PassReport {
 public:
  // The nodes `pass` changed (summed over its runs and over subgraphs). Throws wgi::Error for a name that is
  // not in the table, so that a typo in a test fails.
  int count(const std::string& pass) const;
  void add(const std::string& pass, int count);
  std::string summary() const;                      // "3 Identity/Dropout removed, ...", in table order
  PassReport& operator+=(const PassReport& other);  // counts summed (a subgraph's into its graph's)

 private:
  std::map<std::string, int> counts_;
};

// The passes a caller switches off, by name: checked against the table (wgi::Error listing the valid names
// for an unknown one). `source` names where they came from in that message ("WGI_DISABLE_PASSES").
struct DisabledPasses {
  std::set<std::string> names;
  static DisabledPasses of(const std::vector<std::string>& names, const std::string& source);
  // "a,b" (spaces around names ignored, empty entries skipped), as WGI_DISABLE_PASSES and --disable-passes
  // give them.
  static DisabledPasses parse(const std::string& list, const std::string& source);
  // The list in WGI_DISABLE_PASSES joined with `names` (SessionOptions::disabled_passes).
  static DisabledPasses from_environment(const std::vector<std::string>& names);
  bool contains(const std::string& pass) const { return names.count(pass) != 0; }
};

// Every pass of the table, in order, except the disabled ones; then the same inside every subgraph (nodes
// read inside a subgraph are read: Node::outer_reads); the registry supplies host evaluation for constant
// folding.
PassReport optimize(Graph& graph, const ops::OpRegistry& registry, const DisabledPasses& disabled = {});

int eliminate_identities(Graph& graph);
int remove_dead_nodes(Graph& graph);
int fold_constants(Graph& graph, const ops::OpRegistry& registry);
int fold_batch_norms(Graph& graph);
// float16 values computed and stored as float32 (adapters without shader-f16 compute in f32 anyway): internal
// float16 values retyped float32, float16 constants widened except the weights kernels read packed (MatMul /
// Gemm B, a group-1 conv's weight), Casts from float32 to float32 removed; float16 graph inputs and outputs
// cast where they enter and leave, as are the float16 outputs of ops that set their type by attribute and of
// nodes with subgraphs (docs/float16.md).
int compute_float16_in_float32(Graph& graph);
// MatMul(x, Transpose(W)) with a constant W and a Transpose of its last two dims (how PyTorch exports
// nn.Linear): the MatMul reads W itself with the internal attribute wgi.trans_b = 1, instead of a transposed
// copy folded at load (a strided copy of every weight) that the GEMM planner would then transpose back.
// Runs before constant folding.
int read_transposed_weights(Graph& graph);
// MatMul(A, B) + Add(bias) with a constant B and a constant row-vector bias -> MatMul with the bias as input
// 2; likewise MatMulNBits without a bias -> the bias as its input 5.
int fuse_bias_adds(Graph& graph);
// Mul(MatMul(A, B [, bias]), s) with a constant float32 B read by that MatMul alone, a float32 scalar s and
// nothing fused after the product -> MatMul(A, B * s [, bias * s]); likewise MatMulNBits with float32 scales
// (the scales times s), and a rescaled MatMulInteger / ConvInteger (wgi.scaled_output: its weight's scale
// and bias times s): BART's query projections scaled by head_size^-0.5, one dispatch fewer each (a power of
// two there, so exact; otherwise a rounding per weight or scale).
int fold_scales_into_weights(Graph& graph);
// Window attention's partition and reverse as timm / DaViT / Swin export them, around the qkv and proj
// MatMuls (ops/gemm_launch.h, kMatMulWindowsInAttribute / kMatMulWindowsOutAttribute; the GEMM reads and
// writes them through row maps):
//   read_windows_in_place: MatMul(A) with A = Reshape(Reshape(Transpose(Reshape(X, [B, H/wh, wh, W/ww, ww,
//   C]), perm [0, 1, 3, 2, 4, 5]), [-1, wh, ww, C]), [-1, wh * ww, C]): the MatMul reads X itself, the three
//   targets as inputs 4-6. Each intermediate has one reader, except A, which Shape nodes may read too (they
//   then read the Reshapes without the Transpose: same shape, no kernel).
//   write_windows_in_place: MatMul -> Reshape -> Reshape [B, H/wh, W/ww, wh, ww, C] -> Transpose(perm
//   [0, 1, 3, 2, 4, 5]) -> Reshape [B, H, W, C] [-> Slice(axis 1, from 0) -> Slice(axis 2, from 0), the crop
//   of the padding, exported where the image was padded when traced] -> Reshape, each the only reader of the
//   one before: the MatMul produces the last Reshape's output, the targets and the crop's ends (empty without
//   a crop) as inputs 4-9, and fuse_residual_adds can then take the residual
//   Add after it. A crop that is not empty when planned (a padded image) runs as copies after the product.
// Targets may be computed from Shape nodes (checked by the MatMul when planned); where they are constants,
// windows that do not divide the image and crops that cut it are left as exported. Run after fuse_bias_adds,
// before fuse_residual_adds. Each returns the MatMuls changed.
int read_windows_in_place(Graph& graph);
int write_windows_in_place(Graph& graph);
// Add(P, R) or Add(R, P), P the output of a MatMul, Gemm or Conv (default domain) or of a com.microsoft
// MatMulNBits (which takes R as input 6, ops::kNBitsResidualInput, its inputs 3-5 being its own) that has no
// fused activation yet, is read only by this Add and is not a graph output: the producer takes R as input 3
// with the attribute "wgi.residual" = 1 (src/ops/fused_residual.h; input 2, the bias, may stay empty) and
// produces the Add's output, R added in its epilogue before any activation fused later (y = act(acc + bias +
// R)). Only where R has P's shape: the graph's shapes must agree where both are given (the same known or
// symbolic dims); where either is unknown (exports without value_info) the op checks when planned and, if R
// broadcasts, runs the add as a separate launch. Left alone: an Add read by a Softmax (an attention mask,
// fuse_attention's pattern) and a MatMul reading a Softmax (attention's P V).
int fuse_residual_adds(Graph& graph);
// 0.5 x (1 + erf(x / sqrt 2)) and 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as exporters write them
// (5 and 8 elementwise nodes, each a pass over memory) -> one ONNX Gelu node (opset 20; approximate="tanh"
// for the second), which fuse_activations then folds into a preceding GEMM or conv.
int fuse_gelu(Graph& graph);
// Relu / Clip (constant bounds) / Gelu read only from a Conv, ConvTranspose, Gemm, MatMul or MatMulNBits ->
// the producer's epilogue (ops/fused_activation.h).
int fuse_activations(Graph& graph);
// softmax(Q K^T * scale + mask) V as exported (see src/ops/attention.cpp) -> wgi's fused Attention node.
int fuse_attention(Graph& graph);
// After fuse_attention, for the packed projection exporters write (timm / DaViT / Swin window attention):
//   qkv [B, N, 3 * heads * D] -> Reshape [B, N, 3, heads, D] -> Transpose(perm [2, 0, 3, 1, 4])
//   -> Gather(axis 0, constant scalar index) for each of Q, K, V of one Attention node
//   -> [Transpose(perm [0, 1, 3, 2]), DaViT's channel attention's q^T and v^T]
// (every intermediate read only by the next step, none a graph output): the Attention node reads qkv itself
// as Q, K and V, with the Reshape's target as input 5 and attributes qkv_packed = 1, qkv_indices (the
// three Gather indices) and, where an operand was transposed, qkv_transposed (three flags);
// src/ops/attention.cpp works out the strided views when planning (the target may be computed from Shape
// nodes; it must be known then).
int read_packed_qkv(Graph& graph);
// An Attention node whose only reader is Transpose(perm [0, 2, 1, 3]) ([B, heads, N, Dv] -> [B, N, heads,
// Dv], before the heads are merged by a Reshape) writes that order itself (transpose_output = 1) and produces
// the Transpose's output; likewise for perm [0, 3, 1, 2] (DaViT's channel attention: [B, heads, D, N] ->
// [B, N, heads, D]; attribute output_perm), which the three-launch plan writes as out^T = V^T P^T.
int write_attention_transposed(Graph& graph);
// After fuse_attention (and read_packed_qkv): an Attention operand that is Transpose(perm [0, 2, 1, 3]) of a
// Reshape of X [B, N, heads * D] to [B, N, heads, D] (separate Q, K, V projections: SigLIP, BART), or K^T as
// Transpose(perm [0, 2, 3, 1]) of one (then read as K: k_transposed = 0), each intermediate read only by the
// next step: the node reads X itself through strides (attribute heads_views = [q, k, v] flags, the Reshape
// targets as inputs 6, 7, 8). Returns the nodes changed.
int read_split_heads(Graph& graph);
// Transpose(x [B, N, C], perm [0, 2, 1]) -> Reshape [B, C, H, W] -> depthwise Conv (weight [C, 1, KH, KW],
// group C, kernels up to 7x7, dilation 1) -> Reshape [B, C, Ho * Wo] -> Transpose(perm [0, 2, 1]) and an
// optional Add of a tensor of x's shape (a convolutional position encoding, DaViT's ConvPosEnc) -> wgi's
// DepthwiseConvChannelsLast (src/ops/conv_channels_last.h), which reads x in place. Every intermediate has
// that one reader, except Shape nodes on the conv's input or output (exports compute the second Reshape's
// target from them), which then read Reshape(x, target) instead. Reshape targets that are constants are
// checked here; shape-derived ones by the op when it is planned.
int fuse_depthwise_conv_channels_last(Graph& graph);
// Products that read the same A with constant weights of the same K, type and epilogue (MatMul with an
// optional bias; com.microsoft MatMulNBits with the same bits, block size and optional inputs): a decoder
// layer's q, k and v projections, a cross-attention's k and v. Up to ops::kMaxSplitOutputs of them become one
// product over their weights side by side (scales, zero points and biases too) whose output is split into
// their column blocks (wgi.split_columns, one output each): one launch where there were several. Runs after
// the fusions that match single products (biases, scales, activations, attention operands). Returns the
// products merged.
int merge_sibling_products(Graph& graph);
// LayerNormalization over the last axis (constant scale and bias) whose output a MatMul with a constant
// weight reads as A: the MatMul takes it in (wgi.layer_norm_epsilon, ops/internal_ops.h), normalising A
// itself where it runs as the GEMV (a decoder step's products: one launch fewer a LayerNorm) and with a
// launch before the product otherwise, and gives the normalised values to the LayerNormalization's other
// readers as its last output. After merge_sibling_products, so that a merged q, k, v product takes it.
// Returns the LayerNormalizations fused.
int fuse_layer_norm_into_products(Graph& graph);
// Dynamic quantization's rescale after a MatMulInteger or ConvInteger (DynamicQuantizeLinear's A, a constant
// weight, then Cast to float, Mul by a_scale * b_scale and an optional bias Add): the product writes the
// float32 result itself (wgi.scaled_output, ops/internal_ops.h), four launches fewer a product. Returns the
// products fused.
int fuse_dynamically_quantized_products(Graph& graph);
// A DynamicQuantizeLinear whose only reader is a rescaled MatMulInteger with a constant 2-D weight: the
// product takes the float A and quantizes it itself (wgi.quantize_a; the integer GEMV as it stages A, one
// launch fewer; other kernels with the quantization's launches first). Returns the quantizations taken in.
int fuse_dynamic_quantization_into_products(Graph& graph);
// Concats of two inputs whose first is an input of the graph (a decoder's past keys and values, each with
// the step's new ones), paired in node order where their axes agree and their inputs' shapes may match: one
// wgi ConcatPairs node a pair (data_movement_copy.cpp), one launch where the two Concats took two. Returns
// the Concats merged.
int merge_past_concats(Graph& graph);

}  // namespace wgi::graph
