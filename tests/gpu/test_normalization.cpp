// The normalisation family against float64 references: every Reduce* op in both axes forms (attribute before
// opset 13/18, input after), keepdims, negative and multiple axes, reducing all or (noop_with_empty_axes)
// none, both kernel variants (workgroup per output / invocation per output), integer reductions, host
// folding; ArgMax / ArgMin with ties; Softmax / LogSoftmax in the opset < 13 (flatten) and 13+ (one axis)
// forms; LayerNormalization with its optional outputs, InstanceNormalization, GroupNormalization 18 and 21,
// BatchNormalization; grids folded past the dispatch limit; and the errors a user can cause.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/reference_normalization.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

const test::NodeMaker node{"norm_under_test"};

Tensor int64_tensor(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// Relative tolerance scaled by sqrt of the number of terms combined into each output.
test::Tolerance norm_tolerance(int64_t terms) {
  const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)));
  return [scale](double ref) { return 1e-5 * scale * (1 + std::abs(ref)); };
}

::testing::AssertionResult exact_ints(const Tensor& got, const test::NormReference& ref) {
  if (got.shape() != ref.shape) {
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(got.shape()) << ", expected " << shape_to_string(ref.shape);
  }
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double v = got.dtype() == DType::Int64 ? static_cast<double>(got.data<int64_t>()[i])
                                                 : static_cast<double>(got.data<int32_t>()[i]);
    if (v != ref.values[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << v << ", expected " << ref.values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

int64_t count_reduced(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[static_cast<size_t>(a)];
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// Reduce*

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;  // as given to the op (may be negative); empty = all axes
  bool keepdims;
};

std::vector<int64_t> normalized_axes(const ReduceCase& c) {
  std::vector<int64_t> axes;
  if (c.axes.empty()) {
    for (size_t a = 0; a < c.shape.size(); ++a) axes.push_back(static_cast<int64_t>(a));
  }
  for (int64_t a : c.axes) axes.push_back(a < 0 ? a + static_cast<int64_t>(c.shape.size()) : a);
  return axes;
}

const ReduceCase kReduceCases[] = {
    {{2, 3, 5}, {1}, true},         // the ONNX examples' shape
    {{2, 3, 5}, {-1}, false},       // negative axis, dropped
    {{4, 300}, {1}, true},          // long contiguous rows: a workgroup per output
    {{3, 257, 2}, {1}, false},      // long strided reduction
    {{2, 3, 4, 5}, {0, 2}, true},   // two reduced groups interleaved with kept ones
    {{2, 3, 4}, {}, false},         // all axes (axes absent)
    {{1000, 7}, {1}, true},         // many short rows: an invocation per output
    {{2, 1, 3, 6}, {1, 3}, false},  // a unit axis among the reduced ones
    {{5, 40, 3}, {0, 2}, true},     // outer + inner reduced around a kept middle axis
};

struct ReduceOpCase {
  const char* op;
  float lo, hi;  // input range keeping the result well conditioned (LogSum needs a positive sum)
};

class NormReduceTest : public ::testing::TestWithParam<ReduceOpCase> {};

TEST_P(NormReduceTest, BothAxesFormsMatchFloat64Reference) {
  const ReduceOpCase& op = GetParam();
  const int axes_input_since = std::string(op.op) == "ReduceSum" ? 13 : 18;
  uint64_t seed = 7;
  for (const ReduceCase& c : kReduceCases) {
    const Tensor x = test::random_tensor(c.shape, ++seed, op.lo, op.hi);
    const auto axes = normalized_axes(c);
    const auto ref = test::reduce_reference(x, op.op, axes, c.keepdims);
    for (int opset : {axes_input_since - 1, axes_input_since}) {
      ops::NodeInfo n = node(op.op, opset);
      n.attributes.set("keepdims", int64_t{c.keepdims ? 1 : 0});
      Inputs in = {NodeInput{x}};
      if (!c.axes.empty()) {
        if (opset >= axes_input_since) {
          in.push_back(NodeInput{int64_tensor(c.axes), true});
        } else {
          n.attributes.set("axes", c.axes);
        }
      }
      const auto out = runtime::run_node(test::device(), n, in);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(
          test::all_close(out[0], ref.shape, ref.values, norm_tolerance(count_reduced(c.shape, axes))))
          << op.op << " opset " << opset << " " << shape_to_string(c.shape) << " axes "
          << shape_to_string(c.axes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Norm, NormReduceTest,
    ::testing::Values(ReduceOpCase{"ReduceSum", -1, 1}, ReduceOpCase{"ReduceMean", -1, 1},
                      ReduceOpCase{"ReduceMax", -1, 1}, ReduceOpCase{"ReduceMin", -1, 1},
                      ReduceOpCase{"ReduceProd", 0.95f, 1.05f}, ReduceOpCase{"ReduceL1", -1, 1},
                      ReduceOpCase{"ReduceL2", -1, 1}, ReduceOpCase{"ReduceSumSquare", -1, 1},
                      ReduceOpCase{"ReduceLogSum", 0.1f, 1}, ReduceOpCase{"ReduceLogSumExp", -3, 3}),
    [](const auto& p) { return std::string(p.param.op); });

TEST(NormReduce, LogSumExpIsStableForLargeValues) {
  const Tensor x = test::random_tensor({3, 500}, 5, 1000.0f, 1010.0f);
  ops::NodeInfo n = node("ReduceLogSumExp", 13);
  n.attributes.set("axes", std::vector<int64_t>{1});
  const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}});
  // exp(1000) overflows even float64: the reference subtracts each row's maximum too.
  std::vector<double> shifted;
  for (size_t i = 0; i < 3; ++i) {
    double m = -INFINITY;
    for (size_t k = 0; k < 500; ++k) m = std::max<double>(m, x.data<float>()[i * 500 + k]);
    double s = 0;
    for (size_t k = 0; k < 500; ++k) s += std::exp(x.data<float>()[i * 500 + k] - m);
    shifted.push_back(m + std::log(s));
  }
  EXPECT_TRUE(test::all_close(out[0], {3, 1}, shifted, norm_tolerance(500)));
}

TEST(NormReduce, EmptyAxesWithNoopReduceNothing) {
  const Tensor x = test::random_tensor({3, 4}, 9);
  std::vector<double> squares, same;
  for (float v : x.data<float>()) {
    squares.push_back(double(v) * v);
    same.push_back(v);
  }
  for (const auto& [op, opset, expected] :
       {std::tuple{"ReduceSum", 13, &same}, std::tuple{"ReduceSumSquare", 18, &squares},
        std::tuple{"ReduceMax", 18, &same}}) {
    ops::NodeInfo n = node(op, opset);
    n.attributes.set("noop_with_empty_axes", int64_t{1});
    // An empty axes input and an absent one mean the same.
    for (bool give_empty : {false, true}) {
      Inputs in = {NodeInput{x}};
      if (give_empty) in.push_back(NodeInput{int64_tensor({}), true});
      const auto out = runtime::run_node(test::device(), n, in);
      EXPECT_TRUE(test::all_close(out[0], {3, 4}, *expected, norm_tolerance(1))) << op;
    }
    // Without noop, empty axes reduce everything.
    ops::NodeInfo all = node(op, opset);
    const auto out =
        runtime::run_node(test::device(), all, Inputs{NodeInput{x}, NodeInput{int64_tensor({}), true}});
    EXPECT_EQ(out[0].shape(), (Shape{1, 1})) << op;
  }
}

TEST(NormReduce, IntegerReductionsOnTheGpuAreExact) {
  Tensor x64(DType::Int64, {3, 70, 4});
  Tensor x32(DType::Int32, {3, 70, 4});
  for (int64_t i = 0; i < x64.element_count(); ++i) {
    const int64_t v = (i * 7919) % 23 - 11;
    x64.data<int64_t>()[static_cast<size_t>(i)] = v;
    x32.data<int32_t>()[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  for (const Tensor* x : {&x64, &x32}) {
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin"}) {
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}}) {
        ops::NodeInfo n = node(op, 13);
        n.attributes.set("axes", axes);
        if (std::string(op) == "ReduceSum") n.opset = 11;
        const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{*x}});
        EXPECT_EQ(out[0].dtype(), x->dtype());
        EXPECT_TRUE(exact_ints(out[0], test::reduce_reference(*x, op, axes, true)))
            << op << " " << dtype_name(x->dtype()) << " axes " << shape_to_string(axes);
      }
    }
    // Products of small values stay within i32.
    Tensor small(x->dtype(), {4, 6});
    for (int64_t i = 0; i < 24; ++i) {
      const int64_t v = i % 5 - 2 == 0 ? 3 : i % 5 - 2;
      if (x->dtype() == DType::Int64)
        small.data<int64_t>()[static_cast<size_t>(i)] = v;
      else
        small.data<int32_t>()[static_cast<size_t>(i)] = static_cast<int32_t>(v);
    }
    ops::NodeInfo n = node("ReduceProd", 13);
    n.attributes.set("axes", std::vector<int64_t>{1});
    const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{small}});
    EXPECT_TRUE(exact_ints(out[0], test::reduce_reference(small, "ReduceProd", {1}, true)));
  }
}

// Shape arithmetic (e.g. ReduceProd of a Shape output) folds on the host through evaluate_on_host.
TEST(NormReduce, HostFoldingOfInt64AndFloat32) {
  const auto& registry = ops::builtin_registry();
  const Tensor dims = int64_tensor({2, 3, 7});
  {
    ops::NodeInfo n = node("ReduceProd", 13);
    n.attributes.set("keepdims", int64_t{0});
    const auto* entry = registry.find("", "ReduceProd", 13);
    ASSERT_NE(entry, nullptr);
    ASSERT_TRUE(entry->handler.evaluate_on_host);
    ops::PlanContext ctx{n, {ops::TensorDesc{DType::Int64, {3}}}, {&dims}, test::device().capabilities()};
    const Tensor* host[] = {&dims};
    auto out = entry->handler.evaluate_on_host(ctx, host);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DType::Int64);
    EXPECT_EQ(out[0].shape(), Shape{});
    EXPECT_EQ(out[0].data<int64_t>()[0], 42);
  }
  {
    // ReduceSum 13 with its axes as a host-known input; ReduceMax 18 likewise.
    const Tensor m = Tensor::from_vector<int64_t>({2, 3}, {1, 5, -2, 4, 0, 9});
    const Tensor axes = int64_tensor({-1});
    for (const auto& [op, opset, want] : {std::tuple{"ReduceSum", 13, std::vector<int64_t>{4, 13}},
                                          std::tuple{"ReduceMax", 18, std::vector<int64_t>{5, 9}},
                                          std::tuple{"ArgMax", 13, std::vector<int64_t>{1, 2}}}) {
      ops::NodeInfo n = node(op, opset);
      if (std::string(op) == "ArgMax") n.attributes.set("axis", int64_t{-1});
      const auto* entry = registry.find("", op, opset);
      ASSERT_NE(entry, nullptr) << op;
      const bool axes_input = std::string(op) != "ArgMax";
      ops::PlanContext ctx{n, {ops::TensorDesc{DType::Int64, {2, 3}}}, {&m}, test::device().capabilities()};
      std::vector<const Tensor*> host = {&m};
      if (axes_input) {
        ctx.inputs.push_back(ops::TensorDesc{DType::Int64, {1}});
        ctx.constant_inputs.push_back(&axes);
        host.push_back(&axes);
      }
      auto out = entry->handler.evaluate_on_host(ctx, host);
      ASSERT_EQ(out.size(), 1u) << op;
      EXPECT_EQ(out[0].shape(), (Shape{2, 1})) << op;
      EXPECT_EQ(std::vector<int64_t>(out[0].data<int64_t>().begin(), out[0].data<int64_t>().end()), want)
          << op;
    }
  }
  {
    const Tensor f = test::random_tensor({3, 4}, 3);
    ops::NodeInfo n = node("ReduceMean", 13);
    n.attributes.set("axes", std::vector<int64_t>{0});
    const auto* entry = registry.find("", "ReduceMean", 13);
    ops::PlanContext ctx{n, {ops::TensorDesc{DType::Float32, {3, 4}}}, {&f}, test::device().capabilities()};
    const Tensor* host[] = {&f};
    auto out = entry->handler.evaluate_on_host(ctx, host);
    ASSERT_EQ(out.size(), 1u);
    const auto ref = test::reduce_reference(f, "ReduceMean", {0}, true);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, norm_tolerance(1)));
  }
  {
    // A runtime data input is not folded.
    ops::NodeInfo n = node("ReduceSum", 11);
    const auto* entry = registry.find("", "ReduceSum", 11);
    ops::PlanContext ctx{n, {ops::TensorDesc{DType::Float32, {3}}}, {nullptr}, test::device().capabilities()};
    const Tensor* host[] = {nullptr};
    EXPECT_TRUE(entry->handler.evaluate_on_host(ctx, host).empty());
  }
}

TEST(NormReduce, FoldedGridsPastTheDispatchLimit) {
  // With at most 16 workgroups per dimension, both variants run on 2-D / 3-D grids.
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 16;
  for (const Shape& shape : {Shape{700, 40}, Shape{70, 300}, Shape{3000, 3}}) {
    const Tensor x = test::random_tensor(shape, 21);
    ops::NodeInfo n = node("ReduceMean", 13);
    n.attributes.set("axes", std::vector<int64_t>{1});
    const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}}, options);
    const auto ref = test::reduce_reference(x, "ReduceMean", {1}, true);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, norm_tolerance(shape[1])))
        << shape_to_string(shape);
    ops::NodeInfo s = node("Softmax", 13);
    const auto sm = runtime::run_node(test::device(), s, Inputs{NodeInput{x}}, options);
    const auto sref = test::softmax_reference(x, 1, false, false);
    EXPECT_TRUE(test::all_close(sm[0], sref.shape, sref.values, norm_tolerance(shape[1])))
        << shape_to_string(shape);
  }
}

TEST(NormReduce, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({2, 3}, 1);
  {
    ops::NodeInfo n = node("ReduceSum", 13);
    const std::string e = run_error(n, Inputs{NodeInput{x}, NodeInput{int64_tensor({1}), false}});
    EXPECT_NE(e.find("'norm_under_test'"), std::string::npos) << e;
    EXPECT_NE(e.find("axes"), std::string::npos) << e;
    EXPECT_NE(e.find("planned"), std::string::npos) << e;
  }
  {
    ops::NodeInfo n = node("ReduceMean", 13);
    n.attributes.set("axes", std::vector<int64_t>{1, -1});
    EXPECT_NE(run_error(n, Inputs{NodeInput{x}}).find("twice"), std::string::npos);
    n.attributes.set("axes", std::vector<int64_t>{2});
    EXPECT_NE(run_error(n, Inputs{NodeInput{x}}).find("[-2, 1]"), std::string::npos);
  }
  {
    ops::NodeInfo n = node("ReduceMean", 18);
    n.attributes.set("axes", std::vector<int64_t>{1});
    EXPECT_NE(run_error(n, Inputs{NodeInput{x}}).find("input 1"), std::string::npos);
  }
  {
    ops::NodeInfo n = node("ReduceMean", 13);
    const std::string e = run_error(n, Inputs{NodeInput{Tensor(DType::UInt8, {4})}});
    EXPECT_NE(e.find("uint8"), std::string::npos) << e;
    const std::string e2 = run_error(n, Inputs{NodeInput{Tensor(DType::Int64, {4})}});
    EXPECT_NE(e2.find("int64"), std::string::npos) << e2;
  }
}

// ---------------------------------------------------------------------------------------------------------
// ArgMax / ArgMin

TEST(NormArgMax, TiesKeepdimsNegativeAxesAndLongRows) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  uint64_t seed = 100;
  for (const Case& c : {Case{{2, 3, 4}, 1}, Case{{2, 3, 4}, -1}, Case{{3, 1000}, 1}, Case{{5, 300, 2}, 1},
                        Case{{7}, 0}, Case{{600, 5}, 0}}) {
    // Values on a coarse grid, so that ties are common.
    Tensor x = test::random_tensor(c.shape, ++seed, -4, 4);
    for (float& v : x.data<float>()) v = std::floor(v);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    for (const char* op : {"ArgMax", "ArgMin"}) {
      for (bool last : {false, true}) {
        for (bool keepdims : {true, false}) {
          ops::NodeInfo n = node(op, 13);
          n.attributes.set("axis", c.axis);
          n.attributes.set("keepdims", int64_t{keepdims});
          n.attributes.set("select_last_index", int64_t{last});
          const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}});
          EXPECT_EQ(out[0].dtype(), DType::Int64);
          EXPECT_TRUE(exact_ints(out[0], test::reduce_reference(x, op, {axis}, keepdims, last)))
              << op << " " << shape_to_string(c.shape) << " axis " << c.axis << (last ? " last" : " first");
        }
      }
    }
  }
  // Integer input.
  const Tensor xi = Tensor::from_vector<int64_t>({2, 4}, {3, -1, 3, 2, -5, -5, -7, 0});
  ops::NodeInfo n = node("ArgMin", 13);
  n.attributes.set("axis", int64_t{1});
  const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{xi}});
  EXPECT_TRUE(exact_ints(out[0], test::reduce_reference(xi, "ArgMin", {1}, true)));
}

// ---------------------------------------------------------------------------------------------------------
// Softmax / LogSoftmax

TEST(NormSoftmax, BothOpsetFormsMatchFloat64Reference) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  uint64_t seed = 300;
  for (const Case& c :
       {Case{{3, 4, 5}, 0}, Case{{3, 4, 5}, 1}, Case{{3, 4, 5}, 2}, Case{{3, 4, 5}, -1}, Case{{2, 300}, 1},
        Case{{5, 1000}, -1}, Case{{4, 3, 100}, 1}, Case{{2, 70, 9}, 1}, Case{{1, 1}, 0}, Case{{6}, 0}}) {
    const Tensor x = test::random_tensor(c.shape, ++seed, -5, 5);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    for (bool log : {false, true}) {
      for (int opset : {11, 13}) {
        ops::NodeInfo n = node(log ? "LogSoftmax" : "Softmax", opset);
        n.attributes.set("axis", c.axis);
        const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}});
        const auto ref = test::softmax_reference(x, axis, opset < 13, log);
        EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values,
                                    norm_tolerance(c.shape[static_cast<size_t>(axis)])))
            << n.op_type << " opset " << opset << " " << shape_to_string(c.shape) << " axis " << c.axis;
      }
    }
  }
}

TEST(NormSoftmax, DefaultAxisDiffersByOpset) {
  const Tensor x = test::random_tensor({2, 3, 4}, 17, -3, 3);
  for (int opset : {11, 13}) {
    const auto out = runtime::run_node(test::device(), node("Softmax", opset), Inputs{NodeInput{x}});
    // opset 11: axis 1 and flatten ([2, 12] rows); opset 13: the last axis alone.
    const auto ref =
        opset < 13 ? test::softmax_reference(x, 1, true, false) : test::softmax_reference(x, 2, false, false);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, norm_tolerance(12))) << opset;
  }
}

TEST(NormSoftmax, LargeValuesStayFinite) {
  Tensor x = test::random_tensor({3, 80}, 19, 5000, 6000);
  for (bool log : {false, true}) {
    const auto out =
        runtime::run_node(test::device(), node(log ? "LogSoftmax" : "Softmax", 13), Inputs{NodeInput{x}});
    const auto ref = test::softmax_reference(x, 1, false, log);
    EXPECT_TRUE(
        test::all_close(out[0], ref.shape, ref.values, [](double r) { return 1e-3 * (1 + std::abs(r)); }));
  }
  EXPECT_NE(run_error(node("Softmax", 13), Inputs{NodeInput{Tensor(DType::Int64, {2})}}).find("float32"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// Y, and Mean / InvStdDev where `outputs` names them (an empty name: not requested), against the reference.
void expect_layer_norm_outputs(const std::vector<Tensor>& out, const std::vector<std::string>& outputs,
                               const test::LayerNormReference& ref, int64_t length, const std::string& what) {
  ASSERT_EQ(out.size(), outputs.size()) << what;
  EXPECT_TRUE(test::all_close(out[0], ref.y.shape, ref.y.values, norm_tolerance(length))) << what;
  if (outputs.size() > 1 && !outputs[1].empty()) {
    EXPECT_TRUE(test::all_close(out[1], ref.mean.shape, ref.mean.values, norm_tolerance(length))) << what;
  }
  if (outputs.size() > 2) {
    EXPECT_TRUE(
        test::all_close(out[2], ref.inv_std_dev.shape, ref.inv_std_dev.values, norm_tolerance(length)))
        << what;
  }
}

// LayerNormalization, InstanceNormalization, GroupNormalization, BatchNormalization

TEST(NormLayerNorm, AxesBroadcastScaleAndOptionalOutputs) {
  struct Case {
    Shape shape;
    int64_t axis;
    Shape scale_shape;  // empty: the normalised shape
    bool bias;
  };
  uint64_t seed = 500;
  for (const Case& c :
       {Case{{2, 3, 64}, -1, {}, true}, Case{{4, 33}, 1, {}, true}, Case{{2, 3, 4, 5}, 1, {}, true},
        Case{{3, 700}, -1, {}, false}, Case{{2, 3, 4, 5}, 2, {5}, true},
        Case{{2, 3, 4, 5}, 0, {1, 4, 5}, true}, Case{{5, 7}, -1, {1}, true}}) {
    const Tensor x = test::random_tensor(c.shape, ++seed, -2, 3);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    const Shape normalized(c.shape.begin() + axis, c.shape.end());
    const Shape ps = c.scale_shape.empty() ? normalized : c.scale_shape;
    const Tensor scale = test::random_tensor(ps, ++seed, 0.5, 1.5);
    const Tensor bias = test::random_tensor(ps, ++seed);
    const auto ref = test::layer_norm_reference(x, axis, scale, c.bias ? &bias : nullptr, 1e-3);
    const int64_t length = element_count(normalized);
    // Y only; Y + Mean + InvStdDev; Y + InvStdDev (Mean unnamed).
    for (const std::vector<std::string>& outputs :
         {std::vector<std::string>{"y"}, std::vector<std::string>{"y", "mean", "inv_std"},
          std::vector<std::string>{"y", "", "inv_std"}}) {
      ops::NodeInfo n = node("LayerNormalization", 17);
      n.attributes.set("axis", c.axis);
      n.attributes.set("epsilon", 1e-3f);
      n.output_names = outputs;
      Inputs in = {NodeInput{x}, NodeInput{scale, true}};
      if (c.bias) in.push_back(NodeInput{bias, true});
      const auto out = runtime::run_node(test::device(), n, in);
      ASSERT_EQ(out.size(), outputs.size());
      const std::string what = shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " outputs " +
                               std::to_string(outputs.size());
      expect_layer_norm_outputs(out, outputs, ref, length, what);
    }
  }
}

TEST(NormLayerNorm, Errors) {
  const Tensor x = test::random_tensor({2, 4, 5}, 1);
  ops::NodeInfo n = node("LayerNormalization", 17);
  EXPECT_NE(
      run_error(n, Inputs{NodeInput{x}, NodeInput{test::random_tensor({4, 1}, 2), true}}).find("[4, 1]"),
      std::string::npos);
  n.attributes.set("axis", int64_t{3});
  EXPECT_NE(
      run_error(n, Inputs{NodeInput{x}, NodeInput{test::random_tensor({5}, 2), true}}).find("axis is 3"),
      std::string::npos);
  n.attributes.set("axis", int64_t{-1});
  n.attributes.set("stash_type", int64_t{11});
  EXPECT_NE(
      run_error(n, Inputs{NodeInput{x}, NodeInput{test::random_tensor({5}, 2), true}}).find("stash_type"),
      std::string::npos);
}

// layer_norm_rows.wgsl runs LayerNormalization when scale (and bias) hold one value per row element and the
// row length is a multiple of 4, up to 8192; row_norm.wgsl runs the rest. Values around 3 +- 1, so the mean
// is far from 0 and the variance must come from centred values. Row counts that are not a multiple of the
// rows per workgroup (8 to 128 invocations per row, so 2 to 32 rows per workgroup) leave rows past the end.
TEST(NormLayerNorm, RowsKernelAndItsFallbacks) {
  struct Case {
    Shape shape;
    int64_t axis;
    Shape scale_shape;  // empty: the normalised shape
    Shape bias_shape;   // empty: the normalised shape; {0}: no bias
    bool fast;          // layer_norm_rows expected
  };
  const Shape none{0};
  const gpu::Capabilities& caps = test::device().capabilities();
  uint64_t seed = 900;
  for (const Case& c : {
           Case{{197, 4}, -1, {}, {}, true},       // 8 invocations, 1 of them busy; 32 rows per workgroup
           Case{{1, 128}, -1, {}, none, true},     // one row in a 32-row workgroup
           Case{{2305, 128}, 1, {}, {}, true},     // 72 workgroups of 32 rows and 1 row
           Case{{197, 512}, -1, {}, none, true},   // 32 invocations x 4 vec4s
           Case{{2, 197, 768}, -1, {}, {}, true},  // batch; 32 invocations x 6 vec4s
           Case{{3, 4, 256}, 1, {}, {}, true},     // axis 1: rows of 1024, 32 invocations x 8 vec4s
           Case{{6, 1, 4, 8}, 1, {1, 4, 8}, {}, true},  // scale [1, 4, 8] on axes [1, 4, 8]: one per element
           Case{{5, 8192}, -1, {}, none, true},         // the cap: 128 invocations x 16 vec4s
           Case{{3, 8196}, -1, {}, {}, false},          // above the cap
           Case{{197, 30}, -1, {}, {}, false},          // length not a multiple of 4
           Case{{4, 6, 64}, 1, {64}, {64}, false},      // scale and bias broadcast over a trailing axis
           Case{{6, 64}, -1, {}, {1}, false},           // bias broadcast, scale per element
       }) {
    const Tensor x = test::random_tensor(c.shape, ++seed, 2, 4);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    const Shape normalized(c.shape.begin() + axis, c.shape.end());
    const bool has_bias = c.bias_shape != none;
    const Tensor scale =
        test::random_tensor(c.scale_shape.empty() ? normalized : c.scale_shape, ++seed, 0.5, 1.5);
    const Tensor bias =
        test::random_tensor(c.bias_shape.empty() || !has_bias ? normalized : c.bias_shape, ++seed);
    const auto ref = test::layer_norm_reference(x, axis, scale, has_bias ? &bias : nullptr, 1e-5);
    const int64_t length = element_count(normalized);
    for (const std::vector<std::string>& outputs :
         {std::vector<std::string>{"y"}, std::vector<std::string>{"y", "mean", "inv_std"},
          std::vector<std::string>{"y", "", "inv_std"}}) {
      ops::NodeInfo n = node("LayerNormalization", 17);
      n.attributes.set("axis", c.axis);
      n.output_names = outputs;
      Inputs in = {NodeInput{x}, NodeInput{scale, true}};
      if (has_bias) in.push_back(NodeInput{bias, true});
      const std::string what = shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " scale " +
                               shape_to_string(scale.shape()) + (has_bias ? " bias " : " no bias ") +
                               "outputs " + std::to_string(outputs.size());
      const std::string label = runtime::plan_node(caps, n, in).launches.at(0).program.label;
      EXPECT_EQ(label, std::string(c.fast ? "layer_norm_rows" : "row_norm_LayerNormalization") +
                           (outputs.size() > 1 ? "_stats" : ""))
          << what;
      const auto out = runtime::run_node(test::device(), n, in);
      ASSERT_EQ(out.size(), outputs.size());
      expect_layer_norm_outputs(out, outputs, ref, length, what);
    }
  }
}

TEST(NormLayerNorm, RowsKernelOnFoldedGrids) {
  // At most 16 workgroups per dimension: 700 rows of 128 (32 per workgroup) take 22 workgroups, folded to a
  // 16 x 2 grid whose last 10 workgroups hold no rows; 300 rows of 2048 (4 per workgroup) take 75,
  // folded to 16 x 5.
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 16;
  uint64_t seed = 950;
  for (const Shape& shape : {Shape{700, 128}, Shape{300, 2048}}) {
    const Tensor x = test::random_tensor(shape, ++seed, 2, 4);
    const Tensor scale = test::random_tensor({shape[1]}, ++seed, 0.5, 1.5);
    const Tensor bias = test::random_tensor({shape[1]}, ++seed);
    ops::NodeInfo n = node("LayerNormalization", 17);
    n.output_names = {"y", "mean", "inv_std"};
    const Inputs in = {NodeInput{x}, NodeInput{scale, true}, NodeInput{bias, true}};
    const ops::OpPlan plan = runtime::plan_node(*options.capabilities, n, in);
    EXPECT_EQ(plan.launches.at(0).program.label, "layer_norm_rows_stats");
    EXPECT_GT(plan.launches.at(0).groups.y, 1u);
    const auto out = runtime::run_node(test::device(), n, in, options);
    const auto ref = test::layer_norm_reference(x, 1, scale, &bias, 1e-5);
    expect_layer_norm_outputs(out, n.output_names, ref, shape[1], shape_to_string(shape));
  }
}

TEST(NormInstanceNorm, MatchesFloat64Reference) {
  uint64_t seed = 700;
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{2, 4, 100}, Shape{1, 2, 1, 3}, Shape{3, 5, 17, 19}}) {
    const Tensor x = test::random_tensor(shape, ++seed, -1, 4);
    const Tensor scale = test::random_tensor({shape[1]}, ++seed);
    const Tensor bias = test::random_tensor({shape[1]}, ++seed);
    ops::NodeInfo n = node("InstanceNormalization", 6);
    n.attributes.set("epsilon", 1e-2f);
    const auto out = runtime::run_node(test::device(), n,
                                       Inputs{NodeInput{x}, NodeInput{scale, true}, NodeInput{bias, true}});
    const auto ref = test::instance_norm_reference(x, scale, bias, 1e-2);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values,
                                norm_tolerance(element_count(shape) / shape[0] / shape[1])))
        << shape_to_string(shape);
  }
}

TEST(NormGroupNorm, Opset18PerGroupAndOpset21PerChannel) {
  uint64_t seed = 800;
  for (const auto& [shape, groups] :
       {std::pair{Shape{2, 6, 3, 4}, int64_t{3}}, std::pair{Shape{1, 8, 50}, int64_t{2}},
        std::pair{Shape{2, 4, 5}, int64_t{4}}}) {
    const Tensor x = test::random_tensor(shape, ++seed, -2, 2);
    for (int opset : {18, 21}) {
      const int64_t params = opset >= 21 ? shape[1] : groups;
      const Tensor scale = test::random_tensor({params}, ++seed);
      const Tensor bias = test::random_tensor({params}, ++seed);
      ops::NodeInfo n = node("GroupNormalization", opset);
      n.attributes.set("num_groups", groups);
      const auto out = runtime::run_node(test::device(), n,
                                         Inputs{NodeInput{x}, NodeInput{scale, true}, NodeInput{bias, true}});
      const auto ref = test::group_norm_reference(x, groups, scale, bias, 1e-5, opset >= 21);
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values,
                                  norm_tolerance(element_count(shape) / shape[0] / groups)))
          << shape_to_string(shape) << " opset " << opset;
    }
  }
  ops::NodeInfo n = node("GroupNormalization", 21);
  n.attributes.set("num_groups", int64_t{4});
  const Tensor x = test::random_tensor({1, 6, 2}, 1);
  const Tensor p = test::random_tensor({6}, 2);
  EXPECT_NE(run_error(n, Inputs{NodeInput{x}, NodeInput{p, true}, NodeInput{p, true}}).find("divide"),
            std::string::npos);
}

TEST(NormBatchNorm, InferenceAcrossOpsetsAndClearTrainingErrors) {
  uint64_t seed = 900;
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{3, 4}, Shape{2, 5, 33}}) {
    const int64_t c = shape[1];
    const Tensor x = test::random_tensor(shape, ++seed, -3, 3);
    const Tensor scale = test::random_tensor({c}, ++seed);
    const Tensor bias = test::random_tensor({c}, ++seed);
    const Tensor mean = test::random_tensor({c}, ++seed);
    const Tensor var = test::random_tensor({c}, ++seed, 0.1f, 2.0f);
    for (int opset : {7, 9, 14, 15}) {
      ops::NodeInfo n = node("BatchNormalization", opset);
      n.attributes.set("epsilon", 1e-3f);
      const auto out = runtime::run_node(test::device(), n,
                                         Inputs{NodeInput{x}, NodeInput{scale, true}, NodeInput{bias, true},
                                                NodeInput{mean, true}, NodeInput{var, true}});
      const auto ref = test::batch_norm_reference(x, scale, bias, mean, var, 1e-3);
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, norm_tolerance(1)))
          << shape_to_string(shape) << " opset " << opset;
    }
  }
  // Opset 7's spatial = 0: statistics per channel and position.
  {
    const Tensor x = test::random_tensor({2, 3, 4}, 1);
    const Tensor s = test::random_tensor({3, 4}, 2), b = test::random_tensor({3, 4}, 3),
                 m = test::random_tensor({3, 4}, 4), v = test::random_tensor({3, 4}, 5, 0.5f, 1.0f);
    ops::NodeInfo n = node("BatchNormalization", 7);
    n.attributes.set("spatial", int64_t{0});
    const auto out = runtime::run_node(
        test::device(), n, Inputs{NodeInput{x}, NodeInput{s}, NodeInput{b}, NodeInput{m}, NodeInput{v}});
    // Viewed as [N, C * L] with per-"channel" statistics, it is the spatial reference on a reshaped input.
    const Tensor x2(DType::Float32, {2, 12}, x.bytes());
    const auto flat = [](const Tensor& t) { return Tensor(DType::Float32, {12}, t.bytes()); };
    const auto ref = test::batch_norm_reference(x2, flat(s), flat(b), flat(m), flat(v), 1e-5);
    EXPECT_TRUE(test::all_close(out[0], {2, 3, 4}, ref.values, norm_tolerance(1)));
  }
  const Tensor x = test::random_tensor({2, 3, 4}, 1);
  const Tensor p = test::random_tensor({3}, 2, 0.5f, 1.0f);
  Inputs in = {NodeInput{x}, NodeInput{p}, NodeInput{p}, NodeInput{p}, NodeInput{p}};
  ops::NodeInfo n = node("BatchNormalization", 15);
  n.attributes.set("training_mode", int64_t{1});
  EXPECT_NE(run_error(n, in).find("training_mode"), std::string::npos);
  ops::NodeInfo t = node("BatchNormalization", 9);
  t.output_names = {"y", "running_mean"};
  EXPECT_NE(run_error(t, in).find("training"), std::string::npos);
  ops::NodeInfo w = node("BatchNormalization", 15);
  Inputs bad = in;
  bad[3] = NodeInput{test::random_tensor({4}, 3)};
  EXPECT_NE(run_error(w, bad).find("one per channel"), std::string::npos);
}

}  // namespace
}  // namespace wgi
