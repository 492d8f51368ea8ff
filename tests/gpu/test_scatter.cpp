// ScatterND, ScatterElements and Scatter on the GPU against the in-order references (exact): every
// reduction, duplicate indices (none: the last update wins; reductions: all applied in order), negative
// indices, int32 / int64 indices known when planned or computed at run time, unaligned shapes with batch
// dims, float32 / int64 / int32 / int8 / uint8 / bool data (8-bit reductions wrap), out-of-range indices (a
// plan-time error when known, a run error when computed at run time) and the shape errors.
#include <gtest/gtest.h>

#include <random>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_scatter.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;

// Index values in [-n, n) per position, with repeats (few distinct values), as `dtype`.
Tensor random_indices(DType dtype, const Shape& shape, uint64_t seed, const std::vector<int64_t>& bounds) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const int64_t n = bounds[static_cast<size_t>(i) % bounds.size()];
    const int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * n)) - n;
    if (dtype == DType::Int64) {
      t.data<int64_t>()[static_cast<size_t>(i)] = v;
    } else {
      t.data<int32_t>()[static_cast<size_t>(i)] = static_cast<int32_t>(v);
    }
  }
  return t;
}

// Small values so products and sums of repeated updates stay exact in every type.
Tensor small_values(DType dtype, const Shape& shape, uint64_t seed) {
  if (dtype == DType::Float32) {
    Tensor t = test::random_ints(DType::Int32, shape, seed, -4, 5);
    Tensor f(DType::Float32, shape);
    for (int64_t i = 0; i < t.element_count(); ++i) {
      f.data<float>()[static_cast<size_t>(i)] =
          0.5f * static_cast<float>(t.data<int32_t>()[static_cast<size_t>(i)]);
    }
    return f;
  }
  if (dtype == DType::Bool) return test::iota_tensor(dtype, shape);
  return test::random_ints(dtype, shape, seed, dtype == DType::UInt8 ? 0 : -4, 5);
}

std::vector<Tensor> run(const ops::NodeInfo& node, const NodeInputs& inputs) {
  return runtime::run_node(test::device(), node, inputs);
}

const char* const kReductions[] = {"none", "add", "mul", "max", "min"};

TEST(ScatterND, MatchesReferenceForReductionsDuplicatesAndTypes) {
  struct Case {
    Shape data;
    Shape indices;  // last dim: q
  };
  for (const Case& c : {Case{{9}, {5, 1}}, Case{{4, 5, 6}, {3, 2}}, Case{{4, 5, 6}, {2, 3, 1}},
                        Case{{4, 5, 6}, {7, 3}}, Case{{2, 3, 33, 5}, {4, 2}}, Case{{6, 7}, {20, 2}}}) {
    const size_t q = static_cast<size_t>(c.indices.back());
    Shape updates(c.indices.begin(), c.indices.end() - 1);
    updates.insert(updates.end(), c.data.begin() + static_cast<std::ptrdiff_t>(q), c.data.end());
    const std::vector<int64_t> bounds(c.data.begin(), c.data.begin() + static_cast<std::ptrdiff_t>(q));
    for (const char* reduction : kReductions) {
      for (DType dtype : {DType::Float32, DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
        for (DType index_type : {DType::Int64, DType::Int32}) {
          SCOPED_TRACE(shape_to_string(c.data) + " indices " + shape_to_string(c.indices) + " " + reduction +
                       " " + std::string(dtype_name(dtype)) + " " + std::string(dtype_name(index_type)));
          Tensor data = small_values(dtype, c.data, 1 + q);
          Tensor idx = random_indices(index_type, c.indices, 2 + q, bounds);
          Tensor upd = small_values(dtype, updates, 3 + q);
          ops::NodeInfo node = make_node("ScatterND", 18);
          node.attributes.set("reduction", std::string(reduction));
          const Tensor expected = test::scatter_nd_reference(data, idx, upd, reduction);
          for (bool known : {true, false}) {
            auto out = run(node, NodeInputs{NodeInput{data}, NodeInput{idx, known}, NodeInput{upd}});
            EXPECT_TRUE(test::identical(out[0], expected))
                << (known ? "indices known" : "indices at run time");
          }
        }
      }
    }
  }
}

TEST(ScatterND, SwinStyleMaskSlicesAndBool) {
  // Slices of a [1, 14, 14, 1] mask set region by region, as window-attention mask building exports it.
  Tensor data(DType::Float32, {1, 14, 14, 1});
  std::vector<int64_t> tuples;
  for (int64_t h = 7; h < 14; ++h) {
    for (int64_t w = 0; w < 14; ++w) tuples.insert(tuples.end(), {0, h, w});
  }
  Tensor idx = Tensor::from_vector<int64_t>({7, 14, 3}, tuples);
  Tensor upd = small_values(DType::Float32, {7, 14, 1}, 5);
  auto out =
      run(make_node("ScatterND", 13), NodeInputs{NodeInput{data}, NodeInput{idx, true}, NodeInput{upd}});
  EXPECT_TRUE(test::identical(out[0], test::scatter_nd_reference(data, idx, upd, "none")));
  Tensor flags = test::iota_tensor(DType::Bool, {5, 3});
  Tensor rows = Tensor::from_vector<int64_t>({2, 1}, {4, -5});
  Tensor new_rows = test::iota_tensor(DType::Bool, {2, 3});
  out = run(make_node("ScatterND", 16), NodeInputs{NodeInput{flags}, NodeInput{rows}, NodeInput{new_rows}});
  EXPECT_TRUE(test::identical(out[0], test::scatter_nd_reference(flags, rows, new_rows, "none")));
}

TEST(ScatterND, OutOfRangeIndices) {
  Tensor data = small_values(DType::Float32, {4, 3}, 1);
  Tensor upd = small_values(DType::Float32, {3, 3}, 2);
  Tensor idx = Tensor::from_vector<int64_t>({3, 1}, {1, 4, -5});
  const std::string error = test::node_error(
      make_node("ScatterND", 13), NodeInputs{NodeInput{data}, NodeInput{idx, true}, NodeInput{upd}});
  EXPECT_NE(error.find("outside [-4, 3]"), std::string::npos) << error;
  // Computed at run time: the run reports one of them (the run status); the outputs read after the error have
  // the out-of-range tuples dropped, the valid one applied.
  runtime::PreparedNode prepared(test::device(), make_node("ScatterND", 13),
                                 NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{upd}});
  try {
    prepared.run();
    ADD_FAILURE() << "no error for indices out of range at run time";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(
        m.find("node 'dm_under_test' (ScatterND, opset 13): input 1 holds index 4 at element 1, out of "
               "range [-4, 4)") != std::string::npos ||
        m.find("node 'dm_under_test' (ScatterND, opset 13): input 1 holds index -5 at element 2, out of "
               "range [-4, 4)") != std::string::npos)
        << m;
  }
  auto out = prepared.read_outputs();
  Tensor valid_idx = Tensor::from_vector<int64_t>({1, 1}, {1});
  Tensor valid_upd(DType::Float32, {1, 3}, upd.bytes().subspan(0, 12));
  EXPECT_TRUE(test::identical(out[0], test::scatter_nd_reference(data, valid_idx, valid_upd, "none")));
}

TEST(ScatterND, ShapeAndAttributeErrors) {
  Tensor data = small_values(DType::Float32, {4, 3}, 1);
  Tensor idx = Tensor::from_vector<int64_t>({2, 1}, {0, 1});
  const std::string wrong_updates = test::node_error(
      make_node("ScatterND", 13),
      NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{small_values(DType::Float32, {2, 4}, 2)}});
  EXPECT_NE(wrong_updates.find("must have shape"), std::string::npos) << wrong_updates;
  ops::NodeInfo add13 = make_node("ScatterND", 13);
  add13.attributes.set("reduction", std::string("add"));
  const std::string old_opset = test::node_error(
      add13, NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{small_values(DType::Float32, {2, 3}, 2)}});
  EXPECT_NE(old_opset.find("from opset 16"), std::string::npos) << old_opset;
  ops::NodeInfo max16 = make_node("ScatterND", 16);
  max16.attributes.set("reduction", std::string("max"));
  const std::string max_old = test::node_error(
      max16, NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{small_values(DType::Float32, {2, 3}, 2)}});
  EXPECT_NE(max_old.find("from opset 18"), std::string::npos) << max_old;
  const std::string deep =
      test::node_error(make_node("ScatterND", 13),
                       NodeInputs{NodeInput{data}, NodeInput{Tensor::from_vector<int64_t>({1, 3}, {0, 0, 0})},
                                  NodeInput{small_values(DType::Float32, {1}, 2)}});
  EXPECT_NE(deep.find("expected 1 to data's rank 2"), std::string::npos) << deep;
}

TEST(ScatterElements, MatchesReferenceForAxesReductionsDuplicatesAndTypes) {
  struct Case {
    Shape data;
    Shape updates;
    int64_t axis;
  };
  for (const Case& c : {Case{{9}, {14}, 0}, Case{{5, 6}, {7, 4}, 0}, Case{{5, 6}, {3, 9}, 1},
                        Case{{3, 4, 17}, {2, 4, 5}, -1}, Case{{2, 3, 5, 7}, {2, 2, 11, 3}, 2}}) {
    const size_t axis =
        static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis);
    for (const char* reduction : kReductions) {
      for (DType dtype : {DType::Float32, DType::Int64, DType::UInt8}) {
        for (DType index_type : {DType::Int64, DType::Int32}) {
          SCOPED_TRACE(shape_to_string(c.data) + " updates " + shape_to_string(c.updates) + " axis " +
                       std::to_string(c.axis) + " " + reduction + " " + std::string(dtype_name(dtype)));
          Tensor data = small_values(dtype, c.data, 11);
          Tensor idx = random_indices(index_type, c.updates, 12, {c.data[axis]});
          Tensor upd = small_values(dtype, c.updates, 13);
          ops::NodeInfo node = make_node("ScatterElements", 18);
          node.attributes.set("axis", c.axis);
          node.attributes.set("reduction", std::string(reduction));
          const Tensor expected = test::scatter_elements_reference(data, idx, upd, c.axis, reduction);
          for (bool known : {true, false}) {
            auto out = run(node, NodeInputs{NodeInput{data}, NodeInput{idx, known}, NodeInput{upd}});
            EXPECT_TRUE(test::identical(out[0], expected))
                << (known ? "indices known" : "indices at run time");
          }
        }
      }
    }
  }
}

TEST(ScatterElements, OpsetNineScatterAndErrors) {
  Tensor data = small_values(DType::Float32, {4, 5}, 1);
  Tensor idx = random_indices(DType::Int64, {4, 2}, 2, {5});
  Tensor upd = small_values(DType::Float32, {4, 2}, 3);
  ops::NodeInfo scatter = make_node("Scatter", 9);
  scatter.attributes.set("axis", int64_t{1});
  auto out = run(scatter, NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{upd}});
  EXPECT_TRUE(test::identical(out[0], test::scatter_elements_reference(data, idx, upd, 1, "none")));

  ops::NodeInfo node = make_node("ScatterElements", 13);
  const std::string mismatch = test::node_error(
      node, NodeInputs{NodeInput{data}, NodeInput{idx}, NodeInput{small_values(DType::Float32, {4, 3}, 3)}});
  EXPECT_NE(mismatch.find("same shape"), std::string::npos) << mismatch;
  const std::string too_large = test::node_error(
      node, NodeInputs{NodeInput{data}, NodeInput{random_indices(DType::Int64, {2, 6}, 2, {4})},
                       NodeInput{small_values(DType::Float32, {2, 6}, 3)}});
  EXPECT_NE(too_large.find("larger than data"), std::string::npos) << too_large;
  const std::string out_of_range = test::node_error(
      node, NodeInputs{NodeInput{data}, NodeInput{Tensor::from_vector<int64_t>({1, 1}, {4}), true},
                       NodeInput{small_values(DType::Float32, {1, 1}, 3)}});
  EXPECT_NE(out_of_range.find("outside [-4, 3]"), std::string::npos) << out_of_range;
  // The same computed at run time: reported by the run (the run status), negative indices in range valid.
  const std::string at_run_time = test::node_error(
      node, NodeInputs{NodeInput{data}, NodeInput{Tensor::from_vector<int64_t>({1, 2}, {-4, 4})},
                       NodeInput{small_values(DType::Float32, {1, 2}, 3)}});
  EXPECT_NE(at_run_time.find("node 'dm_under_test' (ScatterElements, opset 13): input 1 holds index 4 at "
                             "element 1, out of range [-4, 4)"),
            std::string::npos)
      << at_run_time;
  ops::NodeInfo bool_add = make_node("ScatterElements", 16);
  bool_add.attributes.set("reduction", std::string("add"));
  const std::string bool_error = test::node_error(
      bool_add, NodeInputs{NodeInput{test::iota_tensor(DType::Bool, {3})}, NodeInput{test::ints({0})},
                           NodeInput{test::iota_tensor(DType::Bool, {1})}});
  EXPECT_NE(bool_error.find("not defined for bool"), std::string::npos) << bool_error;
}

}  // namespace
}  // namespace wgi
