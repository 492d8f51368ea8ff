// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: aliases of their input, no
// kernel) and shape ops computed on the host (Shape, Size, ConstantOfShape, Range): every opset form, on the
// GPU and folded on the host; a torch.onnx-style Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
// folded by plan_nodes and run through an ExecutionPlan; and the errors a model can cause.
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "runtime/execution_plan.h"
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

using test::contains;

// A reshape-like node: planned as an alias of input 0 with no kernel; on the GPU and on the host it returns
// the input's bytes with `shape`.
void expect_alias(const ops::NodeInfo& n, const NodeInputs& inputs, const Shape& shape) {
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, inputs);
  EXPECT_EQ(plan.alias_output_to_input, 0) << n.op_type;
  EXPECT_TRUE(plan.launches.empty()) << n.op_type;
  Tensor expected(inputs[0]->value.dtype(), shape, inputs[0]->value.bytes());
  expect_node_outputs(n, inputs, {expected});
}

TEST(DataMovementReshape, ZeroMinusOneAndAllowzero) {
  Tensor x = test::random_ints(DType::Int64, {2, 3, 4}, 1);
  struct Case {
    std::vector<int64_t> target;
    Shape expected;
  };
  for (const Case& c :
       {Case{{2, 3, 2, 2}, {2, 3, 2, 2}}, Case{{2, -1, 2}, {2, 6, 2}}, Case{{-1, 2, 3, 4}, {1, 2, 3, 4}},
        Case{{24}, {24}}, Case{{2, 0, 1, -1}, {2, 3, 1, 4}}, Case{{2, 0, 4, 1}, {2, 3, 4, 1}},
        Case{{0, 0, -1}, {2, 3, 4}}}) {
    expect_alias(make_node("Reshape", 14), {NodeInput{x}, NodeInput{ints(c.target), true}}, c.expected);
    expect_alias(make_node("Reshape", 5), {NodeInput{x}, NodeInput{ints(c.target), true}}, c.expected);
  }
  // allowzero=1: a 0 is a zero-sized dim.
  ops::NodeInfo az = make_node("Reshape", 14);
  az.attributes.set("allowzero", int64_t{1});
  Tensor empty = test::random_tensor({0, 3, 4}, 2);
  expect_alias(az, {NodeInput{empty}, NodeInput{ints({3, 4, 0}), true}}, {3, 4, 0});
}

TEST(DataMovementReshape, FlattenSqueezeUnsqueezeIdentity) {
  Tensor x = test::random_tensor({2, 3, 4, 5}, 3);
  for (int64_t axis = -4; axis <= 4; ++axis) {
    ops::NodeInfo f = make_node("Flatten", 13);
    f.attributes.set("axis", axis);
    const int64_t a = axis < 0 ? axis + 4 : axis;
    int64_t outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.shape()[static_cast<size_t>(d)];
    expect_alias(f, {NodeInput{x}}, {outer, 120 / outer});
  }
  expect_alias(make_node("Flatten", 1), {NodeInput{x}}, {2, 60});

  Tensor y = test::random_ints(DType::Int32, {1, 3, 1, 5}, 4);
  expect_alias(make_node("Squeeze", 13), {NodeInput{y}, NodeInput{ints({-2}), true}}, {1, 3, 5});
  expect_alias(make_node("Squeeze", 13), {NodeInput{y}}, {3, 5});
  expect_alias(make_node("Squeeze", 13), {NodeInput{y}, NodeInput{ints({}), true}}, {3, 5});
  ops::NodeInfo sq11 = make_node("Squeeze", 11);
  sq11.attributes.set("axes", std::vector<int64_t>{0, -2});
  expect_alias(sq11, {NodeInput{y}}, {3, 5});
  expect_alias(make_node("Squeeze", 1), {NodeInput{y}}, {3, 5});

  Tensor z = test::random_tensor({3, 4, 5}, 5);
  expect_alias(make_node("Unsqueeze", 13), {NodeInput{z}, NodeInput{ints({5, 4, 2}), true}},
               {3, 4, 1, 5, 1, 1});
  expect_alias(make_node("Unsqueeze", 13), {NodeInput{z}, NodeInput{ints({-1, 0}), true}}, {1, 3, 4, 5, 1});
  ops::NodeInfo un11 = make_node("Unsqueeze", 11);
  un11.attributes.set("axes", std::vector<int64_t>{3});
  expect_alias(un11, {NodeInput{z}}, {3, 4, 5, 1});
  expect_alias(make_node("Unsqueeze", 13),
               {NodeInput{Tensor::from_vector<int64_t>({}, {7})}, NodeInput{ints({0}), true}}, {1});
  expect_alias(make_node("Identity", 16), {NodeInput{z}}, {3, 4, 5});
}

TEST(DataMovementDropout, InferenceAliasesAndTheMaskIsAllTrue) {
  Tensor x = test::random_tensor({3, 4, 5}, 6);
  expect_alias(make_node("Dropout", 13), {NodeInput{x}}, {3, 4, 5});
  Tensor ratio = Tensor::from_vector<float>({}, {0.1f});
  Tensor off = Tensor(DType::Bool, {});
  Tensor mask(DType::Bool, {3, 4, 5});
  for (auto& b : mask.bytes()) b = std::byte{1};
  expect_node_outputs(make_node("Dropout", 13, 2),
                      {NodeInput{x}, NodeInput{ratio, true}, NodeInput{off, true}}, {x, mask});
  // Opset 7-9: the mask has the input's type.
  ops::NodeInfo old = make_node("Dropout", 7, 2);
  old.attributes.set("ratio", 0.2f);
  std::vector<float> ones(60, 1.0f);
  expect_node_outputs(old, {NodeInput{x}}, {x, Tensor::from_vector<float>({3, 4, 5}, ones)});

  // Training mode drops nothing with ratio 0; any other ratio would need a random mask.
  Tensor on(DType::Bool, {});
  on.bytes()[0] = std::byte{1};
  Tensor zero = Tensor::from_vector<float>({}, {0.0f});
  expect_node_outputs(make_node("Dropout", 13, 2), {NodeInput{x}, NodeInput{zero, true}, NodeInput{on, true}},
                      {x, mask});
  std::string msg =
      test::node_error(make_node("Dropout", 13), {NodeInput{x}, NodeInput{ratio, true}, NodeInput{on, true}});
  EXPECT_TRUE(contains(msg, "training_mode is true with a nonzero ratio")) << msg;
  msg = test::node_error(make_node("Dropout", 13), {NodeInput{x}, std::nullopt, NodeInput{on, true}});
  EXPECT_TRUE(contains(msg, "default ratio of 0.5")) << msg;
  msg = test::node_error(make_node("Dropout", 13), {NodeInput{x}, NodeInput{ratio, true}, NodeInput{off}});
  EXPECT_TRUE(contains(msg, "(training_mode) is computed at run time")) << msg;
}

TEST(DataMovementShapeOps, ShapeWithStartEndAndSize) {
  Tensor x = test::random_tensor({3, 4, 5}, 7);
  struct Case {
    std::optional<int64_t> start, end;
    std::vector<int64_t> expected;
  };
  for (const Case& c :
       {Case{{}, {}, {3, 4, 5}}, Case{{}, 10, {3, 4, 5}}, Case{-10, {}, {3, 4, 5}}, Case{{}, 1, {3}},
        Case{{}, -1, {3, 4}}, Case{1, {}, {4, 5}}, Case{1, 2, {4}}, Case{-1, {}, {5}}, Case{2, 1, {}}}) {
    ops::NodeInfo n = make_node("Shape", 15);
    if (c.start) n.attributes.set("start", *c.start);
    if (c.end) n.attributes.set("end", *c.end);
    expect_node_outputs(n, {NodeInput{x}}, {ints(c.expected)});
  }
  expect_node_outputs(make_node("Shape", 1), {NodeInput{x}}, {ints({3, 4, 5})});
  expect_node_outputs(make_node("Size", 13), {NodeInput{x}}, {Tensor::from_vector<int64_t>({}, {60})});
  expect_node_outputs(make_node("Size", 1), {NodeInput{Tensor::from_vector<float>({}, {1.0f})}},
                      {Tensor::from_vector<int64_t>({}, {1})});
}

TEST(DataMovementShapeOps, ConstantOfShapeAndRange) {
  ops::NodeInfo zeros = make_node("ConstantOfShape", 9);
  expect_node_outputs(zeros, {NodeInput{ints({4, 3, 2}), true}}, {Tensor(DType::Float32, {4, 3, 2})});
  ops::NodeInfo sevens = make_node("ConstantOfShape", 9);
  sevens.attributes.set("value", Tensor::from_vector<int32_t>({1}, {-7}));
  expect_node_outputs(sevens, {NodeInput{ints({10, 6}), true}},
                      {Tensor::from_vector<int32_t>({10, 6}, std::vector<int32_t>(60, -7))});
  expect_node_outputs(sevens, {NodeInput{ints({0}), true}}, {Tensor(DType::Int32, {0})});
  ops::NodeInfo ones = make_node("ConstantOfShape", 20);
  ones.attributes.set("value", Tensor::from_vector<int64_t>({1}, {1}));
  expect_node_outputs(ones, {NodeInput{ints({}), true}}, {Tensor::from_vector<int64_t>({}, {1})});

  auto f = [](float v) { return Tensor::from_vector<float>({}, {v}); };
  expect_node_outputs(make_node("Range", 11),
                      {NodeInput{f(1), true}, NodeInput{f(5), true}, NodeInput{f(2), true}},
                      {Tensor::from_vector<float>({2}, {1, 3})});
  expect_node_outputs(make_node("Range", 11),
                      {NodeInput{f(0.5f), true}, NodeInput{f(-1.0f), true}, NodeInput{f(-0.25f), true}},
                      {Tensor::from_vector<float>({6}, {0.5f, 0.25f, 0.0f, -0.25f, -0.5f, -0.75f})});
  auto i32 = [](int32_t v) { return Tensor::from_vector<int32_t>({}, {v}); };
  expect_node_outputs(make_node("Range", 11),
                      {NodeInput{i32(10), true}, NodeInput{i32(6), true}, NodeInput{i32(-3), true}},
                      {Tensor::from_vector<int32_t>({2}, {10, 7})});
  auto i64 = [](int64_t v) { return Tensor::from_vector<int64_t>({}, {v}); };
  expect_node_outputs(make_node("Range", 11),
                      {NodeInput{i64(-3), true}, NodeInput{i64(9), true}, NodeInput{i64(4), true}},
                      {ints({-3, 1, 5})});
  expect_node_outputs(make_node("Range", 11),
                      {NodeInput{i64(3), true}, NodeInput{i64(3), true}, NodeInput{i64(1), true}},
                      {ints({})});
}

// torch.onnx's reshape target: x.view(x.size(0), -1) becomes Shape -> Gather(0) -> Unsqueeze -> Concat(with
// [-1]) -> Reshape. With the input's shape known at plan time all of it folds on the host and the Reshape
// becomes an alias: the plan has no kernel at all, and the run returns the input's bytes reshaped.
TEST(DataMovementFolding, ShapeChainFoldsAndReshapeAliases) {
  graph::Graph g;
  g.opsets[""] = 13;
  auto value = [&](const std::string& name, std::optional<Tensor> constant = std::nullopt) {
    graph::Value v;
    v.name = name;
    if (constant) {
      v.dtype = constant->dtype();
      v.shape = graph::ValueShape::of(constant->shape());
    }
    v.constant = std::move(constant);
    return g.add_value(std::move(v));
  };
  auto add = [&](const std::string& op, std::vector<graph::ValueId> in, graph::ValueId out,
                 ops::Attributes attrs = {}) {
    graph::Node n;
    n.info = ops::NodeInfo{op + "_node", op, "", 13, std::move(attrs), {}, {g.value(out).name}};
    for (graph::ValueId v : in) n.info.input_names.push_back(g.value(v).name);
    n.inputs = std::move(in);
    n.outputs = {out};
    g.value(out).producer = static_cast<int32_t>(g.nodes.size());
    g.nodes.push_back(std::move(n));
  };
  const graph::ValueId x = value("x");
  g.inputs = {x};
  const graph::ValueId shape = value("shape"), batch = value("batch"), batch1 = value("batch1"),
                       target = value("target"), y = value("y");
  ops::Attributes axis0;
  axis0.set("axis", int64_t{0});
  add("Shape", {x}, shape);
  add("Gather", {shape, value("zero", Tensor::from_vector<int64_t>({}, {0}))}, batch, axis0);
  add("Unsqueeze", {batch, value("axes", ints({0}))}, batch1);
  add("Concat", {batch1, value("minus_one", ints({-1}))}, target, axis0);
  add("Reshape", {x, target}, y);
  g.outputs = {y};

  const std::vector<runtime::PlanInput> input_descs = {{{DType::Float32, {3, 4, 5}}, nullptr}};
  runtime::NodePlans plans =
      runtime::plan_nodes(g, ops::builtin_registry(), test::device().capabilities(), input_descs, {});
  ASSERT_TRUE(plans.host_values[static_cast<size_t>(target)].has_value());
  EXPECT_TRUE(test::identical(*plans.host_values[static_cast<size_t>(target)], ints({3, -1})));
  ASSERT_EQ(plans.gpu_nodes.size(), 1u);
  EXPECT_EQ(plans.gpu_nodes[0].plan.alias_output_to_input, 0);
  EXPECT_TRUE(plans.gpu_nodes[0].plan.launches.empty());
  EXPECT_EQ(plans.descs[static_cast<size_t>(y)].shape, (Shape{3, 20}));

  runtime::WeightStore weights(test::device());
  runtime::ExecutionPlan plan(test::device(), g, ops::builtin_registry(), weights, input_descs, {});
  EXPECT_EQ(plan.dispatch_count(), 0u);
  Tensor input = test::random_tensor({3, 4, 5}, 8);
  std::vector<Tensor> out = plan.run({&input}, nullptr);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(test::identical(out[0], Tensor(DType::Float32, {3, 20}, input.bytes())));
}

TEST(DataMovementErrors, ShapeOpsSayWhatIsWrong) {
  Tensor x = test::random_tensor({2, 3, 4}, 1);
  std::string msg =
      test::node_error(make_node("Reshape"), {NodeInput{x}, NodeInput{ints({-1, 2, -1}), true}});
  EXPECT_TRUE(contains(msg, "'dm_under_test'") && contains(msg, "has more than one -1")) << msg;
  msg = test::node_error(make_node("Reshape"), {NodeInput{x}, NodeInput{ints({5, -1}), true}});
  EXPECT_TRUE(contains(msg, "cannot infer the -1")) << msg;
  msg = test::node_error(make_node("Reshape"), {NodeInput{x}, NodeInput{ints({4, 5}), true}});
  EXPECT_TRUE(contains(msg, "has 20 elements; the input [2, 3, 4] has 24")) << msg;
  msg = test::node_error(make_node("Reshape"), {NodeInput{x}, NodeInput{ints({24})}});
  EXPECT_TRUE(contains(msg, "input 1 (the target shape) is computed at run time")) << msg;
  ops::NodeInfo az = make_node("Reshape", 14);
  az.attributes.set("allowzero", int64_t{1});
  msg = test::node_error(az, {NodeInput{test::random_tensor({0, 4}, 2)}, NodeInput{ints({0, -1}), true}});
  EXPECT_TRUE(contains(msg, "has both 0 and -1")) << msg;
  msg = test::node_error(make_node("Squeeze"), {NodeInput{x}, NodeInput{ints({1}), true}});
  EXPECT_TRUE(contains(msg, "cannot squeeze axis 1 of [2, 3, 4]: its size is 3")) << msg;
  msg = test::node_error(make_node("Unsqueeze"), {NodeInput{x}, NodeInput{ints({1, -4}), true}});
  EXPECT_TRUE(contains(msg, "name axis 1 twice")) << msg;
  msg = test::node_error(make_node("Unsqueeze", 11), {NodeInput{x}});
  EXPECT_TRUE(contains(msg, "the axes attribute is required")) << msg;
  ops::NodeInfo flat = make_node("Flatten");
  flat.attributes.set("axis", int64_t{4});
  EXPECT_TRUE(contains(test::node_error(flat, {NodeInput{x}}), "axis is 4; expected a value in [-3, 3]"));
  msg = test::node_error(make_node("ConstantOfShape", 9), {NodeInput{ints({2, 3})}});
  EXPECT_TRUE(contains(msg, "(the output shape) is computed at run time")) << msg;
  auto i64 = [](int64_t v) { return Tensor::from_vector<int64_t>({}, {v}); };
  msg = test::node_error(make_node("Range", 11),
                         {NodeInput{i64(0), true}, NodeInput{i64(4)}, NodeInput{i64(1), true}});
  EXPECT_TRUE(contains(msg, "(limit) is computed at run time")) << msg;
  msg = test::node_error(make_node("Range", 11),
                         {NodeInput{i64(0), true}, NodeInput{i64(4), true}, NodeInput{i64(0), true}});
  EXPECT_TRUE(contains(msg, "delta is 0")) << msg;
}

}  // namespace
}  // namespace wgi
