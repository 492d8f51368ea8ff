// Gather, GatherElements and Pad: on the GPU (indices known at plan time or computed at run time) and folded
// on the host, compared exactly against per-element references; negative indices and axes, int32/int64
// indices, out-of-range indices computed at run time, every Pad mode and opset form, and the errors a model
// can cause.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>

#include "runtime/node_runner.h"
#include "support/expect_text.h"
#include "support/reference_data_movement.h"
#include "support/reference_elementwise.h"
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

// ---- Gather ----

TEST(DataMovementGather, AxesIndexShapesAndNegativeIndices) {
  struct Case {
    Shape data;
    int64_t axis;
    Shape indices;
  };
  for (const Case& c : {Case{{5, 4, 3}, 0, {3}}, Case{{5, 4, 3}, 1, {2, 3}}, Case{{5, 4, 3}, -1, {}},
                        Case{{10}, 0, {4}}, Case{{7, 9}, -2, {2, 2, 2}}, Case{{3, 33}, 1, {40}}}) {
    const int64_t n =
        c.data[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis)];
    for (DType data_type : {DType::Float32, DType::Int64}) {
      for (DType index_type : {DType::Int64, DType::Int32}) {
        Tensor x = test::random_ints(data_type, c.data, 11);
        Tensor idx = test::random_ints(index_type, c.indices, 12, -n, n);  // half of them negative
        ops::NodeInfo g = make_node("Gather", 13);
        g.attributes.set("axis", c.axis);
        Tensor expected = test::gather_reference(x, idx, c.axis);
        const ops::OpPlan plan =
            runtime::plan_node(test::device().capabilities(), g, NodeInputs{NodeInput{x}, NodeInput{idx}});
        if (!plan.launches.empty()) {
          int64_t inner = 1;
          for (size_t d =
                   static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis) +
                   1;
               d < c.data.size(); ++d) {
            inner *= c.data[d];
          }
          EXPECT_EQ(plan.launches[0].program.label, inner % 4 == 0 ? "gather_vec4" : "gather");
        }
        for (bool known : {true, false}) {
          expect_node_outputs(g, {NodeInput{x}, NodeInput{idx, known}}, {expected});
        }
      }
    }
  }
}

TEST(DataMovementGather, OpsetOneAndShapeArithmetic) {
  Tensor x = test::random_tensor({4, 6}, 13);
  Tensor idx = ints({0, -1, 2});
  expect_node_outputs(make_node("Gather", 1), {NodeInput{x}, NodeInput{idx, true}},
                      {test::gather_reference(x, idx, 0)});
  // Shape -> Gather(scalar index): the int64 batch dim, folded on the host.
  auto folded = test::fold_node(
      make_node("Gather"),
      {NodeInput{ints({8, 3, 224, 224}), true}, NodeInput{Tensor::from_vector<int64_t>({}, {-2}), true}});
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_TRUE(test::identical(folded[0], Tensor::from_vector<int64_t>({}, {224})));
}

// Out-of-range indices the host cannot see (computed at run time) are an error in ONNX, as for known ones
// (which the planner rejects, see DataMovementErrors): the run throws it, naming the node, the input, the
// range and one offending value (the run status, runtime/run_status.h). They must not reach outside the data
// either: with Dawn's robustness off nothing else would stop the read. The kernels give zero bits for them,
// which the outputs read after the error show. The expected tensors here are built element by element:
// `source(i)` is the data element output element i copies, or -1 for zero.
Tensor gathered_or_zero(const Tensor& x, const Shape& shape, const std::function<int64_t(int64_t)>& source) {
  Tensor out(x.dtype(), shape);
  const size_t es = dtype_size(x.dtype());
  std::fill(out.bytes().begin(), out.bytes().end(), std::byte{0});
  for (int64_t i = 0; i < out.element_count(); ++i) {
    const int64_t s = source(i);
    if (s >= 0) {
      std::memcpy(out.bytes().data() + static_cast<size_t>(i) * es,
                  x.bytes().data() + static_cast<size_t>(s) * es, es);
    }
  }
  return out;
}

// On the GPU only (host folding rejects these indices, as the planner does when it knows them): the run
// throws the index error of input 1 for an axis of `n`, with one of `wild`'s out-of-range values; the outputs
// read after it (the status was cleared) are `expected`; a second run reports the error again.
void expect_index_error(const ops::NodeInfo& node, const NodeInputs& inputs, int64_t n,
                        const std::vector<int64_t>& wild, const Tensor& expected) {
  runtime::PreparedNode prepared(test::device(), node, inputs);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      prepared.run();
      ADD_FAILURE() << "no error for out-of-range indices";
    } catch (const Error& e) {
      const std::string m = e.what();
      SCOPED_TRACE(m);
      EXPECT_TRUE(contains(m, "node 'dm_under_test' (" + node.op_type)) << m;
      EXPECT_TRUE(contains(m, "input 1 holds index "));
      EXPECT_TRUE(contains(m, "out of range [" + std::to_string(-n) + ", " + std::to_string(n) + ")"));
      const size_t at = m.find("holds index ") + 12;
      const int64_t value = std::stoll(m.substr(at));
      EXPECT_TRUE(value < -n || value >= n) << value;
      EXPECT_NE(std::find(wild.begin(), wild.end(), value), wild.end()) << value;
      const size_t element = std::stoull(m.substr(m.find("at element ") + 11));
      ASSERT_LT(element, inputs[1]->value.element_count());
      EXPECT_EQ(test::int_values(inputs[1]->value)[element], value);
    }
  }
  const std::vector<Tensor> after = prepared.read_outputs();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(test::identical(after[0], expected));
}

// The index values that ONNX makes errors, next to valid ones (negative ones included).
std::vector<int64_t> wild_indices(int64_t n) {
  return {0,         n - 1,     n,         -n,     -n - 1, n + 7,  -1,
          2 * n + 1, INT32_MAX, INT32_MIN, -n + 1, 100000, -99999, INT32_MAX - 5,
          1 - n * 3, n / 2,     3,         n + 1,  -2 * n, 1};
}

TEST(DataMovementGather, RuntimeIndicesOutOfRangeAreAnError) {
  struct Case {
    Shape data;
    int64_t axis;
  };
  // Inner sizes 3 and 1 (scalar kernel) and 4, 8 (vec4 kernel).
  for (const Case& c : {Case{{5, 7, 3}, 1}, Case{{6, 4}, 0}, Case{{3, 9, 8}, -2}, Case{{11}, 0}}) {
    const size_t axis =
        static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis);
    const int64_t n = c.data[axis];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < c.data.size(); ++d) inner *= c.data[d];
    const std::vector<int64_t> wild = wild_indices(n);
    Shape out_shape(c.data.begin(), c.data.begin() + static_cast<std::ptrdiff_t>(axis));
    out_shape.push_back(static_cast<int64_t>(wild.size()));
    out_shape.insert(out_shape.end(), c.data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, c.data.end());
    const int64_t count = static_cast<int64_t>(wild.size());
    for (DType data_type : {DType::Float32, DType::Int64}) {
      Tensor x = test::random_ints(data_type, c.data, 31, 1, 1000);  // never zero, so zeros are the kernel's
      Tensor expected = gathered_or_zero(x, out_shape, [&](int64_t i) -> int64_t {
        const int64_t k = i % inner, j = i / inner % count, o = i / inner / count;
        int64_t index = wild[static_cast<size_t>(j)];
        if (index < 0) index += n;
        return index < 0 || index >= n ? -1 : (o * n + index) * inner + k;
      });
      ops::NodeInfo g = make_node("Gather", 13);
      g.attributes.set("axis", c.axis);
      std::vector<int32_t> wild32(wild.begin(), wild.end());
      for (const Tensor& idx : {ints(wild), Tensor::from_vector<int32_t>({count}, wild32)}) {
        SCOPED_TRACE(std::string(dtype_name(data_type)) + " data, " + std::string(dtype_name(idx.dtype())) +
                     " indices, axis " + std::to_string(c.axis));
        expect_index_error(g, {NodeInput{x}, NodeInput{idx, false}}, n, wild, expected);
      }
    }
  }
}

// ---- GatherElements ----

TEST(DataMovementGatherElements, RuntimeIndicesOutOfRangeAreAnError) {
  // Indices smaller than the data on the other axes, as ONNX allows.
  const Shape data = {4, 6, 5};
  const Shape shape = {3, 5, 4};
  for (int64_t axis : {0, 1, -1}) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    const int64_t n = data[a];
    const std::vector<int64_t> wild = wild_indices(n);
    std::vector<int64_t> values;
    for (int64_t i = 0; i < element_count(shape); ++i)
      values.push_back(wild[static_cast<size_t>(i) % wild.size()]);
    Tensor idx = Tensor::from_vector<int64_t>(shape, values);
    Tensor x = test::random_ints(DType::Float32, data, 32, 1, 1000);
    Tensor expected = gathered_or_zero(x, shape, [&](int64_t i) -> int64_t {
      int64_t index = values[static_cast<size_t>(i)];
      if (index < 0) index += n;
      if (index < 0 || index >= n) return -1;
      int64_t at[3] = {i / (shape[1] * shape[2]), i / shape[2] % shape[1], i % shape[2]};
      at[a] = index;
      return (at[0] * data[1] + at[1]) * data[2] + at[2];
    });
    ops::NodeInfo g = make_node("GatherElements", 13);
    g.attributes.set("axis", axis);
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_index_error(g, {NodeInput{x}, NodeInput{idx, false}}, n, wild, expected);
  }
}

TEST(DataMovementGatherElements, AxesAndNegativeIndices) {
  struct Case {
    Shape data;
    int64_t axis;
    Shape indices;
  };
  for (const Case& c : {Case{{3, 3}, 0, {2, 3}}, Case{{3, 3}, 1, {3, 2}}, Case{{2, 5, 4}, -1, {2, 3, 7}},
                        Case{{4, 5, 6}, 1, {4, 9, 6}}}) {
    const int64_t n =
        c.data[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis)];
    Tensor x = test::random_ints(DType::Float32, c.data, 14);
    Tensor idx = test::random_ints(DType::Int64, c.indices, 15, -n, n);
    ops::NodeInfo g = make_node("GatherElements", 13);
    g.attributes.set("axis", c.axis);
    Tensor expected = test::gather_elements_reference(x, idx, c.axis);
    expect_node_outputs(g, {NodeInput{x}, NodeInput{idx}}, {expected});
    Tensor idx32 = test::random_ints(DType::Int32, c.indices, 16, -n, n);
    Tensor xi = test::random_ints(DType::Int64, c.data, 17);
    expect_node_outputs(g, {NodeInput{xi}, NodeInput{idx32, true}},
                        {test::gather_elements_reference(xi, idx32, c.axis)});
  }
}

// ---- Pad ----

Tensor scalar_like(DType dtype, double v) {
  switch (dtype) {
    case DType::Float32:
      return Tensor::from_vector<float>({}, {static_cast<float>(v)});
    case DType::Int64:
      return Tensor::from_vector<int64_t>({}, {static_cast<int64_t>(v)});
    default:
      return Tensor::from_vector<int32_t>({}, {static_cast<int32_t>(v)});
  }
}

TEST(DataMovementPad, EveryModeOpset11Inputs) {
  struct Case {
    Shape shape;
    std::vector<int64_t> pads;
  };
  for (const Case& c :
       {Case{{1, 3, 4, 5}, {0, 0, 1, 3, 0, 0, 2, 4}}, Case{{2, 3, 4}, {1, 0, 2, 0, 3, 1}}, Case{{7}, {3, 2}},
        Case{{3, 5}, {0, -1, 2, -2}}, Case{{2, 2, 3, 2}, {0, 1, 0, 2, 1, 0, 2, 0}}}) {
    for (const char* mode : {"constant", "edge", "reflect"}) {
      for (DType dtype : {DType::Float32, DType::Int32, DType::Int64}) {
        Tensor x = test::random_ints(dtype, c.shape, 18);
        Tensor value = scalar_like(dtype, 1.25 + 3);
        ops::NodeInfo n = make_node("Pad", 11);
        n.attributes.set("mode", std::string(mode));
        NodeInputs in = {NodeInput{x}, NodeInput{ints(c.pads), true}};
        if (std::string(mode) == "constant") in.push_back(NodeInput{value, true});
        const Tensor fill = std::string(mode) == "constant" ? value : scalar_like(dtype, 0);
        expect_node_outputs(n, in, {test::pad_reference(x, c.pads, mode, fill)});
      }
    }
  }
}

TEST(DataMovementPad, ReflectPastTheEdgeAndWrap) {
  Tensor x = test::random_tensor({3, 4}, 19);
  // Pads longer than the axis reflect again (numpy's behaviour).
  ops::NodeInfo reflect = make_node("Pad", 13);
  reflect.attributes.set("mode", std::string("reflect"));
  const std::vector<int64_t> long_pads = {5, 1, 4, 7};
  expect_node_outputs(reflect, {NodeInput{x}, NodeInput{ints(long_pads), true}},
                      {test::pad_reference(x, long_pads, "reflect", scalar_like(DType::Float32, 0))});
  ops::NodeInfo wrap = make_node("Pad", 19);
  wrap.attributes.set("mode", std::string("wrap"));
  const std::vector<int64_t> pads = {2, 5, 1, 9};
  expect_node_outputs(wrap, {NodeInput{x}, NodeInput{ints(pads), true}},
                      {test::pad_reference(x, pads, "wrap", scalar_like(DType::Float32, 0))});
}

TEST(DataMovementPad, OpsetTwoAttributesAndOpset18Axes) {
  Tensor x = test::random_tensor({2, 3, 4}, 20);
  ops::NodeInfo old = make_node("Pad", 2);
  old.attributes.set("pads", std::vector<int64_t>{0, 1, 2, 1, 0, 3});
  old.attributes.set("value", 0.5f);
  expect_node_outputs(
      old, {NodeInput{x}},
      {test::pad_reference(x, {0, 1, 2, 1, 0, 3}, "constant", scalar_like(DType::Float32, 0.5))});
  Tensor xi = test::random_ints(DType::Int32, {2, 3, 4}, 21);
  ops::NodeInfo edge = make_node("Pad", 10);
  edge.attributes.set("mode", std::string("edge"));
  edge.attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  expect_node_outputs(edge, {NodeInput{xi}},
                      {test::pad_reference(xi, {1, 1, 1, 1, 1, 1}, "edge", scalar_like(DType::Int32, 0))});
  // axes [-1, 0] with pads [w_begin, n_begin, w_end, n_end].
  ops::NodeInfo axes = make_node("Pad", 18);
  expect_node_outputs(
      axes,
      {NodeInput{x}, NodeInput{ints({2, 1, 0, 3}), true}, NodeInput{scalar_like(DType::Float32, -2), true},
       NodeInput{ints({-1, 0}), true}},
      {test::pad_reference(x, {1, 0, 2, 3, 0, 0}, "constant", scalar_like(DType::Float32, -2))});
}

// All-zero pads (windowed attention's pad to a window multiple where the image already fits): the output is
// the input's memory, no launch, in every mode; one non-zero pad still pads.
TEST(DataMovementPad, ZeroPadsAliasTheInput) {
  Tensor x = test::random_tensor({2, 48, 48, 8}, 22);
  const std::vector<int64_t> zeros(8, 0);
  for (const char* mode : {"constant", "edge", "reflect"}) {
    ops::NodeInfo n = make_node("Pad", 13);
    n.attributes.set("mode", std::string(mode));
    const NodeInputs in = {NodeInput{x}, NodeInput{ints(zeros), true}};
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
    EXPECT_TRUE(plan.launches.empty()) << mode;
    EXPECT_EQ(plan.alias_output_to_input, 0) << mode;
    expect_node_outputs(n, in, {x});
  }
  ops::NodeInfo n = make_node("Pad", 13);
  std::vector<int64_t> one = zeros;
  one[6] = 1;  // one column at the end of axis 2
  const NodeInputs in = {NodeInput{x}, NodeInput{ints(one), true}};
  EXPECT_EQ(runtime::plan_node(test::device().capabilities(), n, in).launches.size(), 1u);
  expect_node_outputs(n, in, {test::pad_reference(x, one, "constant", scalar_like(DType::Float32, 0))});
}

// ---- Errors ----

TEST(DataMovementErrors, IndexOpsSayWhatIsWrong) {
  Tensor x = test::random_tensor({4, 5}, 1);
  ops::NodeInfo gather = make_node("Gather");
  gather.attributes.set("axis", int64_t{1});
  std::string msg = test::node_error(gather, {NodeInput{x}, NodeInput{ints({0, 5}), true}});
  EXPECT_TRUE(contains(msg, "has 5 at element 1, outside [-5, 4]")) << msg;
  msg = test::node_error(gather, {NodeInput{x}, NodeInput{ints({-6}), true}});
  EXPECT_TRUE(contains(msg, "has -6 at element 0")) << msg;
  msg = test::node_error(gather, {NodeInput{x}, NodeInput{test::random_tensor({2}, 2)}});
  EXPECT_TRUE(contains(msg, "(indices) has type float32; expected int64 or int32")) << msg;
  gather.attributes.set("axis", int64_t{-3});
  EXPECT_TRUE(contains(test::node_error(gather, {NodeInput{x}, NodeInput{ints({0})}}), "axis is -3"));

  ops::NodeInfo ge = make_node("GatherElements");
  msg = test::node_error(ge, {NodeInput{x}, NodeInput{ints({1, 2})}});
  EXPECT_TRUE(contains(msg, "must have the rank of data")) << msg;

  ops::NodeInfo pad = make_node("Pad", 18);
  pad.attributes.set("mode", std::string("wrap"));
  msg = test::node_error(pad, {NodeInput{x}, NodeInput{ints({1, 1, 1, 1}), true}});
  EXPECT_TRUE(contains(msg, "wrap needs opset 19")) << msg;
  ops::NodeInfo pad13 = make_node("Pad", 13);
  msg = test::node_error(pad13, {NodeInput{x}, NodeInput{ints({1, 1, 1}), true}});
  EXPECT_TRUE(contains(msg, "pads [1, 1, 1] has 3 values; expected 4")) << msg;
  msg = test::node_error(pad13, {NodeInput{x}, NodeInput{ints({1, 1, 1, 1})}});
  EXPECT_TRUE(contains(msg, "input 1 (pads) is computed at run time")) << msg;
  msg = test::node_error(pad13, {NodeInput{x}, NodeInput{ints({0, -3, 0, -3}), true}});
  EXPECT_TRUE(contains(msg, "below zero")) << msg;
  msg = test::node_error(pad13,
                         {NodeInput{x}, NodeInput{ints({1, 1, 1, 1}), true}, NodeInput{ints({1}), true}});
  EXPECT_TRUE(contains(msg, "(constant_value) must be one float32")) << msg;
}

}  // namespace
}  // namespace wgi
