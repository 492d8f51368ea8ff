// Data-movement ops that are strided copies (Transpose, Concat, Split, Slice, Expand, Tile, DepthToSpace,
// SpaceToDepth): on the GPU and folded on the host, compared exactly against per-element references, for
// float32 and integer data, negative axes, every opset form, the tiled transpose and its fallback, folded
// grids, Concat past the storage-binding limit, and the errors a model can cause.
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/node_runner.h"
#include "support/expect_text.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::expect_node_outputs;
using test::ints;
using test::make_node;
using test::NodeInputs;

std::vector<std::string> launch_labels(const ops::NodeInfo& n, const NodeInputs& inputs,
                                       const gpu::Capabilities& caps = test::device().capabilities()) {
  std::vector<std::string> labels;
  for (const auto& l : runtime::plan_node(caps, n, inputs).launches) labels.push_back(l.program.label);
  return labels;
}

using test::contains;

// ---- Transpose ----

TEST(DataMovementTranspose, EveryPermutationOfThreeAxes) {
  for (DType dtype : {DType::Float32, DType::Int64}) {
    Tensor x = test::random_ints(dtype, {2, 3, 5}, 1);
    std::vector<int64_t> perm = {0, 1, 2};
    do {
      ops::NodeInfo n = make_node("Transpose");
      n.attributes.set("perm", perm);
      expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, perm)});
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(DataMovementTranspose, FourDimsDefaultPermAndOpset1) {
  Tensor x = test::random_tensor({2, 3, 4, 5}, 2);
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 3, 1}, {0, 3, 1, 2}, {1, 0, 3, 2}, {2, 0, 1, 3}}) {
    ops::NodeInfo n = make_node("Transpose");
    n.attributes.set("perm", perm);
    expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, perm)});
  }
  expect_node_outputs(make_node("Transpose", 1), {NodeInput{x}},
                      {test::transpose_reference(x, {3, 2, 1, 0})});
  Tensor s = Tensor::from_vector<float>({}, {2.5f});
  expect_node_outputs(make_node("Transpose"), {NodeInput{s}}, {s});
}

// Host folding past 16M elements: a layout that makes nothing larger than its constant input folds (a tied
// LM head's transposed embedding, 51289 x 768, runs as a constant instead of a Transpose on every run); an
// Expand past the limit stays on the GPU.
TEST(DataMovementFold, LargeConstantsFoldOnlyWithoutGrowing) {
  const int64_t rows = 4099, cols = 4097;  // 16.8M elements, past the 16M (1 << 24) limit
  Tensor w(DType::Float32, {rows, cols});
  auto values = w.data<float>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1009) - 504.0f;
  auto folded = test::fold_node(make_node("Transpose"), {NodeInput{w, true}});
  ASSERT_EQ(folded.size(), 1u);
  ASSERT_EQ(folded[0].shape(), (Shape{cols, rows}));
  const auto out = folded[0].data<float>();
  for (int64_t r : {int64_t{0}, int64_t{1}, rows / 2, rows - 1}) {
    for (int64_t c : {int64_t{0}, int64_t{3}, cols - 1}) {
      ASSERT_EQ(out[static_cast<size_t>(c * rows + r)], values[static_cast<size_t>(r * cols + c)])
          << r << "," << c;
    }
  }
  Tensor small = test::random_tensor({1, 4097}, 3);
  EXPECT_TRUE(
      test::fold_node(make_node("Expand", 8), {NodeInput{small, true}, NodeInput{ints({4099, 4097}), true}})
          .empty());
}

// Batched 2-D transposes take the workgroup-tile kernel: aligned and ragged tiles, and NCHW -> NHWC, whose
// H and W merge into one axis.
TEST(DataMovementTranspose, TiledKernelForBatchedMatrices) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case& c : {Case{{64, 32}, {1, 0}}, Case{{3, 67, 45}, {0, 2, 1}}, Case{{2, 9, 33}, {0, 2, 1}},
                        Case{{2, 16, 5, 7}, {0, 2, 3, 1}}}) {
    Tensor x = test::random_tensor(c.shape, 3);
    ops::NodeInfo n = make_node("Transpose");
    n.attributes.set("perm", c.perm);
    EXPECT_EQ(launch_labels(n, {NodeInput{x}}), std::vector<std::string>{"transpose_tile"})
        << shape_to_string(c.shape);
    expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, c.perm)});
  }
  // The same copy with a device too small for the tile kernel: the generic kernel.
  gpu::Capabilities small = test::device().capabilities();
  small.limits.max_compute_invocations_per_workgroup = 128;
  Tensor x = test::random_ints(DType::Int32, {3, 40, 41}, 4);
  ops::NodeInfo n = make_node("Transpose");
  n.attributes.set("perm", std::vector<int64_t>{0, 2, 1});
  EXPECT_EQ(launch_labels(n, {NodeInput{x}}, small), std::vector<std::string>{"copy_strided"});
  runtime::NodeRunOptions options;
  options.capabilities = small;
  expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, {0, 2, 1})}, options);
}

// A Transpose that only moves dims of size 1 (a one-token decoder step's [batch, 1, heads, size] -> [batch,
// heads, 1, size]) and a Slice that takes its whole input move no element: the output is the input's memory,
// with no launch. Not when a dim of more than one element moves too.
TEST(DataMovementTranspose, CopiesThatMoveNothingLaunchNothing) {
  for (DType dtype : {DType::Float32, DType::Int64}) {
    Tensor x = test::random_ints(dtype, {2, 1, 3, 5}, 5);
    ops::NodeInfo n = make_node("Transpose");
    n.attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    EXPECT_TRUE(launch_labels(n, {NodeInput{x}}).empty());
    expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, {0, 2, 1, 3})});
  }
  Tensor y = test::random_tensor({2, 1, 3, 5}, 6);
  ops::NodeInfo moves = make_node("Transpose");
  moves.attributes.set("perm", std::vector<int64_t>{2, 1, 0, 3});
  EXPECT_FALSE(launch_labels(moves, {NodeInput{y}}).empty());
  expect_node_outputs(moves, {NodeInput{y}}, {test::transpose_reference(y, {2, 1, 0, 3})});
  const NodeInputs whole{NodeInput{y}, NodeInput{ints({0}), true}, NodeInput{ints({1000}), true},
                         NodeInput{ints({2}), true}, NodeInput{ints({1}), true}};
  EXPECT_TRUE(launch_labels(make_node("Slice", 13), whole).empty());
  expect_node_outputs(make_node("Slice", 13), whole, {y});
}

// [B, N, H, D] -> [B, H, N, D] (attention heads): rows of D elements move as vec4 when D % 4 == 0.
TEST(DataMovementTranspose, ContiguousRowsMoveAsVec4) {
  for (int64_t d : {8, 6}) {
    Tensor x = test::random_tensor({2, 5, 3, d}, 9);
    ops::NodeInfo n = make_node("Transpose");
    n.attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    EXPECT_EQ(launch_labels(n, {NodeInput{x}}),
              std::vector<std::string>{d % 4 == 0 ? "copy_strided_vec4" : "copy_strided"});
    expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, {0, 2, 1, 3})});
  }
}

// Nine axes that cannot merge exceed the kernel's eight: the outermost is peeled into launches.
TEST(DataMovementTranspose, NineAxesArePeeled) {
  Tensor x = test::random_tensor(Shape(9, 2), 5);
  std::vector<int64_t> perm(9);
  std::iota(perm.rbegin(), perm.rend(), 0);
  ops::NodeInfo n = make_node("Transpose");
  n.attributes.set("perm", perm);
  EXPECT_EQ(launch_labels(n, {NodeInput{x}}).size(), 2u);
  expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, perm)});
}

// One invocation per workgroup makes 70000 elements 70000 workgroups, past the 65535-per-dimension limit of
// every device: the grid is folded into 2-D and decoded by the kernel. Then 3-D folds on a fake limit, for
// the generic and the tiled kernel.
TEST(DataMovementTranspose, GridsPast65535WorkgroupsAreFolded) {
  Tensor x = test::random_tensor({2, 35000}, 6);
  ops::NodeInfo n = make_node("Transpose");
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_invocations_per_workgroup = 1;
  options.capabilities->limits.max_compute_workgroup_size_x = 1;
  options.capabilities->limits.max_compute_workgroups_per_dimension =
      std::min<uint32_t>(65535, test::device().capabilities().limits.max_compute_workgroups_per_dimension);
  ops::OpPlan plan = runtime::plan_node(*options.capabilities, n, NodeInputs{NodeInput{x}});
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].program.label, "copy_strided");
  EXPECT_GT(plan.launches[0].groups.y, 1u);
  expect_node_outputs(n, {NodeInput{x}}, {test::transpose_reference(x, {1, 0})}, options);

  runtime::NodeRunOptions folded3d;
  folded3d.capabilities = test::device().capabilities();
  folded3d.capabilities->limits.max_compute_workgroups_per_dimension = 3;
  Tensor small = test::random_tensor({2, 5, 301}, 7);  // generic, scalar: 3010 / 256 = 12 workgroups
  ops::NodeInfo n3 = make_node("Transpose");
  n3.attributes.set("perm", std::vector<int64_t>{1, 0, 2});
  EXPECT_GT(runtime::plan_node(*folded3d.capabilities, n3, NodeInputs{NodeInput{small}}).launches[0].groups.z,
            1u);
  expect_node_outputs(n3, {NodeInput{small}}, {test::transpose_reference(small, {1, 0, 2})}, folded3d);
  Tensor tiles = test::random_tensor({5, 40, 40}, 8);  // 5 * 2 * 2 = 20 tiles
  ops::NodeInfo nt = make_node("Transpose");
  nt.attributes.set("perm", std::vector<int64_t>{0, 2, 1});
  const ops::OpPlan tiled = runtime::plan_node(*folded3d.capabilities, nt, NodeInputs{NodeInput{tiles}});
  EXPECT_EQ(tiled.launches[0].program.label, "transpose_tile");
  EXPECT_GT(tiled.launches[0].groups.z, 1u);
  expect_node_outputs(nt, {NodeInput{tiles}}, {test::transpose_reference(tiles, {0, 2, 1})}, folded3d);
}

// The real thing at the default workgroup size: 17.3M elements are 67600 workgroups of 256. Heavy (seconds on
// CPU adapters); checked with a direct loop rather than the per-element reference.
TEST(DataMovementHeavy, LargeTransposePast65535Workgroups) {
  const int64_t a = 64, b = 520, c = 520;
  Tensor x = test::iota_tensor(DType::Int32, {a, b, c});
  ops::NodeInfo n = make_node("Transpose");
  n.attributes.set("perm", std::vector<int64_t>{2, 1, 0});  // no axes merge, not a batched 2-D transpose
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, NodeInputs{NodeInput{x}});
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].program.label, "copy_strided");
  EXPECT_GT(plan.launches[0].groups.total(), 65535u);
  const std::vector<Tensor> out = runtime::run_node(test::device(), n, NodeInputs{NodeInput{x}});
  ASSERT_EQ(out[0].shape(), (Shape{c, b, a}));
  auto got = out[0].data<int32_t>();
  int64_t bad = 0;
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t i = 0; i < a; ++i) {
        bad += got[static_cast<size_t>((k * b + j) * a + i)] != static_cast<int32_t>((i * b + j) * c + k + 1);
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// ---- Concat ----

TEST(DataMovementConcat, EveryAxisPositiveAndNegative) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      std::vector<Tensor> parts;
      NodeInputs inputs;
      for (int64_t k : {2, 1, 3}) {
        Shape s = {2, 3, 4};
        s[a] = k;
        parts.push_back(test::random_ints(dtype, s, static_cast<uint64_t>(10 + k + axis)));
        inputs.push_back(NodeInput{parts.back()});
      }
      ops::NodeInfo n = make_node("Concat", axis < 0 ? 13 : 4);
      n.attributes.set("axis", axis);
      expect_node_outputs(n, inputs, {test::concat_reference(parts, axis)});
    }
  }
}

// Two inputs run as one launch (concat_pair; vec4 where the elements after the axis are a multiple of 4): a
// decoder step's past and new keys, on every axis, unequal lengths, float, int64 and bool; an empty input
// takes the copies instead.
TEST(DataMovementConcat, TwoInputsInOneLaunch) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
    for (const Shape& shape : {Shape{2, 3, 5, 8}, Shape{1, 2, 7, 3}}) {
      for (int64_t axis = 0; axis < 4; ++axis) {
        Shape first = shape, second = shape;
        second[static_cast<size_t>(axis)] = 1;  // a step's one new row
        const std::vector<Tensor> parts{test::random_ints(dtype, first, static_cast<uint64_t>(20 + axis)),
                                        test::random_ints(dtype, second, static_cast<uint64_t>(30 + axis))};
        ops::NodeInfo n = make_node("Concat");
        n.attributes.set("axis", axis - 4);
        const NodeInputs inputs{NodeInput{parts[0]}, NodeInput{parts[1]}};
        int64_t inner = 1;
        for (size_t d = static_cast<size_t>(axis) + 1; d < 4; ++d) inner *= shape[d];
        EXPECT_EQ(launch_labels(n, inputs),
                  std::vector<std::string>{inner % 4 == 0 ? "concat_pair_vec4" : "concat_pair"})
            << shape_to_string(shape) << " axis " << axis;
        expect_node_outputs(n, inputs, {test::concat_reference(parts, axis)});
      }
    }
  }
  Tensor a = test::random_tensor({2, 0, 3}, 1), b = test::random_tensor({2, 4, 3}, 2);
  ops::NodeInfo n = make_node("Concat");
  n.attributes.set("axis", int64_t{1});
  EXPECT_EQ(launch_labels(n, {NodeInput{a}, NodeInput{b}}), std::vector<std::string>{});  // b moves as is
  expect_node_outputs(n, {NodeInput{a}, NodeInput{b}}, {b});
}

// wgi's ConcatPairs (graph::merge_past_concats: a decoder layer's past keys and values with the step's new
// ones): two Concats of one shape in one launch, bit for bit; pairs of different shapes, or with an empty
// past (a first step), planned one Concat at a time.
TEST(DataMovementConcat, PairsOfOneShapeInOneLaunch) {
  struct Case {
    Shape past_0, new_0, past_1, new_1;
    int64_t axis;
    std::vector<std::string> labels;
  };
  const std::vector<Case> cases = {
      {{1, 4, 5, 8}, {1, 4, 1, 8}, {1, 4, 5, 8}, {1, 4, 1, 8}, 2, {"concat_pairs_vec4"}},
      {{2, 3, 5, 3}, {2, 3, 2, 3}, {2, 3, 5, 3}, {2, 3, 2, 3}, -2, {"concat_pairs"}},
      {{1, 4, 5, 8}, {1, 4, 1, 8}, {1, 4, 6, 8}, {1, 4, 1, 8}, 2, {"concat_pair_vec4", "concat_pair_vec4"}},
      {{1, 4, 0, 8}, {1, 4, 3, 8}, {1, 4, 0, 8}, {1, 4, 3, 8}, 2, {"copy_strided", "copy_strided"}},
  };
  uint64_t seed = 50;
  for (const Case& c : cases) {
    const std::vector<Tensor> parts = {
        test::random_tensor(c.past_0, ++seed), test::random_tensor(c.new_0, ++seed),
        test::random_tensor(c.past_1, ++seed), test::random_tensor(c.new_1, ++seed)};
    ops::NodeInfo n{"pairs_under_test", "ConcatPairs", "wgi", 1, {}, {"p0", "n0", "p1", "n1"}, {"y0", "y1"}};
    n.attributes.set("axis", c.axis);
    const NodeInputs inputs{NodeInput{parts[0]}, NodeInput{parts[1]}, NodeInput{parts[2]},
                            NodeInput{parts[3]}};
    std::vector<std::string> labels = launch_labels(n, inputs);
    for (std::string& label : labels)
      if (label.starts_with("copy_strided")) label = "copy_strided";  // vec4 or not: the copy's choice
    EXPECT_EQ(labels, c.labels) << shape_to_string(c.past_1);
    const std::vector<Tensor> out = runtime::run_node(test::device(), n, inputs);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(test::identical(out[0], test::concat_reference({parts[0], parts[1]}, c.axis)));
    EXPECT_TRUE(test::identical(out[1], test::concat_reference({parts[2], parts[3]}, c.axis)));
  }
}

// A ConcatPairs node written by hand (the domain is wgi's own): the wrong input count or halves that do not
// concatenate fail naming the node and what is wrong.
TEST(DataMovementConcat, PairsThatCannotRunAreErrors) {
  const Tensor a = test::random_tensor({2, 3}, 1), b = test::random_tensor({2, 1}, 2),
               c = test::random_tensor({3, 3}, 3);
  ops::NodeInfo n{"pairs_under_test", "ConcatPairs", "wgi", 1, {}, {"p0", "n0", "p1", "n1"}, {"y0", "y1"}};
  n.attributes.set("axis", int64_t{1});
  const std::string three = test::node_error(n, {NodeInput{a}, NodeInput{b}, NodeInput{a}});
  EXPECT_HAS(three, "pairs_under_test");
  EXPECT_HAS(three, "takes 4 inputs (two Concats of two), not 3");
  // The second half: [3, 3] with [2, 1] along axis 1 (their rows differ).
  const std::string half = test::node_error(n, {NodeInput{a}, NodeInput{b}, NodeInput{c}, NodeInput{b}});
  EXPECT_HAS(half, "node 'pairs_under_test, its second Concat' (Concat");
  EXPECT_HAS(half, "input 1 ('n1') has shape [2, 1], which does not match input 0 [3, 3]");
}

TEST(DataMovementConcat, EmptyInputsAndShapeVectors) {
  Tensor a = test::random_tensor({2, 0, 3}, 1), b = test::random_tensor({2, 4, 3}, 2);
  ops::NodeInfo n = make_node("Concat");
  n.attributes.set("axis", int64_t{1});
  expect_node_outputs(n, {NodeInput{a}, NodeInput{b}, NodeInput{a}}, {test::concat_reference({a, b, a}, 1)});
  // Shape arithmetic: 1-D int64 pieces, one empty, folded on the host.
  ops::NodeInfo v = make_node("Concat");
  v.attributes.set("axis", int64_t{0});
  NodeInputs shape_parts = {NodeInput{ints({1, -1}), true}, NodeInput{ints({}), true},
                            NodeInput{ints({64}), true}};
  auto folded = test::fold_node(v, shape_parts);
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_TRUE(test::identical(folded[0], ints({1, -1, 64})));
}

// One launch per input, so the inputs may outnumber the storage buffers a shader stage can bind.
TEST(DataMovementConcat, MoreInputsThanStorageBindings) {
  const uint32_t count = test::device().limits().max_storage_buffers_per_shader_stage + 3;
  std::vector<Tensor> parts;
  NodeInputs inputs;
  for (uint32_t i = 0; i < count; ++i) {
    parts.push_back(test::random_ints(DType::Int32, {3, 1 + i % 3, 5}, i));
    inputs.push_back(NodeInput{parts.back()});
  }
  ops::NodeInfo n = make_node("Concat");
  n.attributes.set("axis", int64_t{-2});
  EXPECT_EQ(runtime::plan_node(test::device().capabilities(), n, inputs).launches.size(), count);
  expect_node_outputs(n, inputs, {test::concat_reference(parts, 1)});
}

// ---- Split ----

TEST(DataMovementSplit, EveryOpsetForm) {
  Tensor x = test::random_ints(DType::Int64, {4, 6, 5}, 3);
  // Equal parts from the output count, negative axis.
  ops::NodeInfo equal = make_node("Split", 13, 3);
  equal.attributes.set("axis", int64_t{-2});
  expect_node_outputs(equal, {NodeInput{x}}, test::split_reference(x, 1, {2, 2, 2}));
  // Sizes as an attribute before opset 13, as an input from 13 (including an empty part).
  ops::NodeInfo attr = make_node("Split", 11, 3);
  attr.attributes.set("axis", int64_t{2});
  attr.attributes.set("split", std::vector<int64_t>{1, 0, 4});
  expect_node_outputs(attr, {NodeInput{x}}, test::split_reference(x, 2, {1, 0, 4}));
  ops::NodeInfo input = make_node("Split", 13, 2);
  expect_node_outputs(input, {NodeInput{x}, NodeInput{ints({3, 1}), true}},
                      test::split_reference(x, 0, {3, 1}));
  // num_outputs (opset 18) with an uneven last chunk: 6 = 3 + 3, 5 = 2 + 2 + 1.
  Tensor y = test::random_tensor({3, 5}, 4);
  ops::NodeInfo chunks = make_node("Split", 18, 3);
  chunks.attributes.set("axis", int64_t{1});
  chunks.attributes.set("num_outputs", int64_t{3});
  expect_node_outputs(chunks, {NodeInput{y}}, test::split_reference(y, 1, {2, 2, 1}));
}

// ---- Slice ----

struct SliceCase {
  std::vector<int64_t> starts, ends, axes, steps;
};

TEST(DataMovementSlice, ClampingNegativeIndicesAndSteps) {
  Tensor x = test::random_tensor({20, 10, 5}, 5);
  for (const SliceCase& c : {
           SliceCase{{0, 0}, {3, 10}, {0, 1}, {1, 1}},
           SliceCase{{1}, {1000}, {1}, {1}},     // end out of range
           SliceCase{{1000}, {1000}, {1}, {1}},  // empty
           SliceCase{{0}, {-1}, {1}, {1}},       // negative end
           SliceCase{{20, 10, 4}, {0, 0, 1}, {0, 1, 2}, {-1, -3, -2}},
           SliceCase{{-1, -2}, {-1000, -11}, {0, -2}, {-4, -1}},  // negative steps to the start
           SliceCase{{0, 3}, {20, 4}, {-3, -1}, {7, 1}},
           SliceCase{{INT32_MAX, INT32_MIN}, {INT32_MIN, INT32_MAX}, {2, 1}, {-1, 2}},
       }) {
    Tensor expected = test::slice_reference(x, c.starts, c.ends, c.axes, c.steps);
    ops::NodeInfo n = make_node("Slice", 13);
    expect_node_outputs(n,
                        {NodeInput{x}, NodeInput{ints(c.starts), true}, NodeInput{ints(c.ends), true},
                         NodeInput{ints(c.axes), true}, NodeInput{ints(c.steps), true}},
                        {expected});
  }
}

// torch.onnx writes open-ended slices (x[1:], x[::-1]) with INT64_MAX / INT64_MIN ends. The GPU path is
// covered above with i32 extremes: node runners upload every input, and int64 values beyond i32 cannot be.
TEST(DataMovementSlice, Int64ExtremesFoldOnTheHost) {
  Tensor x = test::random_ints(DType::Int64, {4, 6, 5}, 5);
  const SliceCase c{{INT64_MAX, INT64_MIN, 1}, {INT64_MIN, INT64_MAX, INT64_MAX}, {2, 1, 0}, {-1, 2, 1}};
  auto folded =
      test::fold_node(make_node("Slice", 13),
                      {NodeInput{x, true}, NodeInput{ints(c.starts), true}, NodeInput{ints(c.ends), true},
                       NodeInput{ints(c.axes), true}, NodeInput{ints(c.steps), true}});
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_TRUE(test::identical(folded[0], test::slice_reference(x, c.starts, c.ends, c.axes, c.steps)));
}

TEST(DataMovementSlice, DefaultAxesAndStepsInt32IndicesAndOpset9Attributes) {
  Tensor x = test::random_ints(DType::Int64, {6, 7}, 6);
  Tensor expected = test::slice_reference(x, {1, -5}, {5, 100}, {0, 1}, {1, 1});
  ops::NodeInfo n10 = make_node("Slice", 10);
  expect_node_outputs(n10,
                      {NodeInput{x}, NodeInput{Tensor::from_vector<int32_t>({2}, {1, -5}), true},
                       NodeInput{Tensor::from_vector<int32_t>({2}, {5, 100}), true}},
                      {expected});
  ops::NodeInfo n9 = make_node("Slice", 9);
  n9.attributes.set("starts", std::vector<int64_t>{1, -5});
  n9.attributes.set("ends", std::vector<int64_t>{5, 100});
  expect_node_outputs(n9, {NodeInput{x}}, {expected});
  ops::NodeInfo axes9 = make_node("Slice", 1);
  axes9.attributes.set("starts", std::vector<int64_t>{2});
  axes9.attributes.set("ends", std::vector<int64_t>{-1});
  axes9.attributes.set("axes", std::vector<int64_t>{1});
  expect_node_outputs(axes9, {NodeInput{x}}, {test::slice_reference(x, {2}, {-1}, {1}, {1})});
}

// ---- Expand, Tile ----

TEST(DataMovementExpand, BroadcastsBothWays) {
  struct Case {
    Shape in;
    std::vector<int64_t> target;
  };
  for (const Case& c :
       {Case{{3, 1}, {2, 1, 6}}, Case{{3, 1}, {3, 4}}, Case{{1}, {4, 5}}, Case{{2, 1, 3}, {1, 4, 1}},
        Case{{5}, {}}, Case{{}, {2, 3}}, Case{{3, 1}, {0, 1, 1}}}) {
    for (DType dtype : {DType::Float32, DType::Int64}) {
      Tensor x = test::random_ints(dtype, c.in, 7);
      expect_node_outputs(make_node("Expand", 8), {NodeInput{x}, NodeInput{ints(c.target), true}},
                          {test::expand_reference(x, c.target)});
    }
  }
}

TEST(DataMovementTile, RepeatsPerAxis) {
  struct Case {
    Shape in;
    std::vector<int64_t> repeats;
  };
  for (const Case& c : {Case{{2, 3, 4}, {2, 1, 3}}, Case{{2, 2}, {2, 2}}, Case{{5}, {7}},
                        Case{{2, 3}, {0, 2}}, Case{{1, 3, 1, 2, 1}, {2, 2, 3, 1, 2}}}) {
    for (DType dtype : {DType::Float32, DType::Int64}) {
      Tensor x = test::random_ints(dtype, c.in, 8);
      expect_node_outputs(make_node("Tile", 6), {NodeInput{x}, NodeInput{ints(c.repeats), true}},
                          {test::tile_reference(x, c.repeats)});
    }
  }
}

// ---- DepthToSpace, SpaceToDepth ----

TEST(DataMovementDepthSpace, BothModesAndTheInverse) {
  Tensor x = test::random_tensor({2, 8, 3, 5}, 9);
  for (const char* mode : {"DCR", "CRD"}) {
    ops::NodeInfo n = make_node("DepthToSpace", 13);
    n.attributes.set("blocksize", int64_t{2});
    n.attributes.set("mode", std::string(mode));
    expect_node_outputs(n, {NodeInput{x}}, {test::depth_to_space_reference(x, 2, mode)});
  }
  ops::NodeInfo old = make_node("DepthToSpace", 1);  // DCR only
  old.attributes.set("blocksize", int64_t{2});
  expect_node_outputs(old, {NodeInput{x}}, {test::depth_to_space_reference(x, 2, "DCR")});
  Tensor y = test::random_ints(DType::Int32, {2, 3, 6, 9}, 10);
  ops::NodeInfo s2d = make_node("SpaceToDepth", 13);
  s2d.attributes.set("blocksize", int64_t{3});
  expect_node_outputs(s2d, {NodeInput{y}}, {test::space_to_depth_reference(y, 3)});
}

// ---- Errors ----

TEST(DataMovementErrors, CopyOpsSayWhatIsWrong) {
  Tensor x = test::random_tensor({2, 3, 4}, 1);
  ops::NodeInfo bad_perm = make_node("Transpose");
  bad_perm.attributes.set("perm", std::vector<int64_t>{0, 0, 1});
  EXPECT_TRUE(contains(test::node_error(bad_perm, {NodeInput{x}}), "perm [0, 0, 1] is not a permutation"));
  bad_perm.attributes.set("perm", std::vector<int64_t>{1, 0});
  EXPECT_TRUE(contains(test::node_error(bad_perm, {NodeInput{x}}), "is not a permutation of the 3 axes"));

  ops::NodeInfo concat = make_node("Concat");
  concat.attributes.set("axis", int64_t{1});
  std::string msg = test::node_error(concat, {NodeInput{x}, NodeInput{test::random_tensor({2, 3, 5}, 2)}});
  EXPECT_TRUE(contains(msg, "'dm_under_test'") && contains(msg, "input 1 has shape [2, 3, 5]")) << msg;
  EXPECT_TRUE(contains(test::node_error(concat, {NodeInput{x}, NodeInput{ints({1})}}), "has type int64"));
  concat.attributes.set("axis", int64_t{3});
  EXPECT_TRUE(contains(test::node_error(concat, {NodeInput{x}}), "axis is 3; expected a value in [-3, 2]"));

  ops::NodeInfo slice = make_node("Slice");
  msg = test::node_error(slice, {NodeInput{x}, NodeInput{ints({0})}, NodeInput{ints({1}), true}});
  EXPECT_TRUE(contains(msg, "input 1 (starts) is computed at run time")) << msg;
  msg = test::node_error(slice, {NodeInput{x}, NodeInput{ints({0}), true}, NodeInput{ints({1}), true},
                                 NodeInput{ints({0}), true}, NodeInput{ints({0}), true}});
  EXPECT_TRUE(contains(msg, "has a 0")) << msg;
  msg = test::node_error(slice, {NodeInput{x}, NodeInput{ints({0, 0}), true}, NodeInput{ints({1}), true}});
  EXPECT_TRUE(contains(msg, "must have the same length")) << msg;

  ops::NodeInfo split = make_node("Split", 13, 2);
  msg = test::node_error(split, {NodeInput{x}, NodeInput{ints({1, 2}), true}});
  EXPECT_TRUE(contains(msg, "sums to 3, but the axis has 2")) << msg;
  ops::NodeInfo uneven = make_node("Split", 13, 3);
  uneven.attributes.set("axis", int64_t{2});
  EXPECT_TRUE(contains(test::node_error(uneven, {NodeInput{x}}), "does not split evenly into 3"));

  EXPECT_TRUE(contains(test::node_error(make_node("Expand"), {NodeInput{x}, NodeInput{ints({3, 5}), true}}),
                       "does not broadcast to the target shape [3, 5]"));
  EXPECT_TRUE(contains(test::node_error(make_node("Tile"), {NodeInput{x}, NodeInput{ints({2, 2}), true}}),
                       "repeats [2, 2] has 2 values"));
  ops::NodeInfo d2s = make_node("DepthToSpace");
  d2s.attributes.set("blocksize", int64_t{2});
  EXPECT_TRUE(contains(test::node_error(d2s, {NodeInput{test::random_tensor({1, 6, 2, 2}, 3)}}),
                       "not divisible by blocksize^2 = 4"));
}

}  // namespace
}  // namespace wgi
