// GatherND on the GPU against the per-element reference (exact): tuple lengths 1 to the data's rank,
// batch_dims 0-2, negative indices, int32 / int64 indices known when planned or computed at run time,
// float32 / int64 / bool data, out-of-range indices (a plan-time error when known, a run error at run time)
// and the shape errors.
#include <gtest/gtest.h>

#include <random>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_gather_nd.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;

Tensor tuple_indices(DType dtype, const Shape& shape, const std::vector<int64_t>& bounds, uint64_t seed) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const int64_t n = bounds[static_cast<size_t>(i) % bounds.size()];
    const int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * n)) - n;  // [-n, n)
    if (dtype == DType::Int64) {
      t.data<int64_t>()[static_cast<size_t>(i)] = v;
    } else {
      t.data<int32_t>()[static_cast<size_t>(i)] = static_cast<int32_t>(v);
    }
  }
  return t;
}

TEST(GatherND, MatchesReferenceForTupleLengthsAndBatchDims) {
  struct Case {
    Shape data;
    Shape indices;
    int64_t batch_dims;
  };
  for (const Case& c : {Case{{9}, {4, 1}, 0}, Case{{5, 6, 7}, {3, 2}, 0}, Case{{5, 6, 7}, {2, 2, 3}, 0},
                        Case{{5, 6, 7}, {5, 1}, 1}, Case{{5, 6, 7}, {5, 4, 2}, 1},
                        Case{{2, 3, 33, 5}, {2, 3, 7, 1}, 2}, Case{{4, 1031}, {6, 1}, 0}}) {
    const size_t b = static_cast<size_t>(c.batch_dims), q = static_cast<size_t>(c.indices.back());
    const std::vector<int64_t> bounds(c.data.begin() + static_cast<std::ptrdiff_t>(b),
                                      c.data.begin() + static_cast<std::ptrdiff_t>(b + q));
    for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
      for (DType index_type : {DType::Int64, DType::Int32}) {
        SCOPED_TRACE(shape_to_string(c.data) + " indices " + shape_to_string(c.indices) + " batch_dims " +
                     std::to_string(c.batch_dims) + " " + std::string(dtype_name(dtype)));
        const Tensor data =
            dtype == DType::Bool ? test::iota_tensor(dtype, c.data) : test::random_ints(dtype, c.data, 3);
        const Tensor idx = tuple_indices(index_type, c.indices, bounds, 4);
        ops::NodeInfo node = make_node("GatherND", 13);
        node.attributes.set("batch_dims", c.batch_dims);
        const Tensor expected = test::gather_nd_reference(data, idx, c.batch_dims);
        for (bool known : {true, false}) {
          auto out =
              runtime::run_node(test::device(), node, NodeInputs{NodeInput{data}, NodeInput{idx, known}});
          EXPECT_TRUE(test::identical(out[0], expected)) << (known ? "indices known" : "indices at run time");
        }
      }
    }
  }
}

TEST(GatherND, OutOfRangeAndShapeErrors) {
  const Tensor data = test::random_ints(DType::Float32, {4, 3}, 1);
  const Tensor idx = Tensor::from_vector<int64_t>({2, 1}, {1, 4});
  const std::string known =
      test::node_error(make_node("GatherND", 13), NodeInputs{NodeInput{data}, NodeInput{idx, true}});
  EXPECT_NE(known.find("outside [-4, 3]"), std::string::npos) << known;
  // At run time the run reports it (the run status), naming the node, the input and the value; the outputs
  // read after the error have zeros for the out-of-range tuple's slice and the valid one gathered.
  runtime::PreparedNode prepared(test::device(), make_node("GatherND", 13),
                                 NodeInputs{NodeInput{data}, NodeInput{idx}});
  try {
    prepared.run();
    ADD_FAILURE() << "no error for an index out of range at run time";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("node 'dm_under_test' (GatherND, opset 13): input 1 holds index 4 at "
                                   "element 1, out of range [-4, 4)"),
        std::string::npos)
        << e.what();
  }
  auto out = prepared.read_outputs();
  Tensor expected(DType::Float32, {2, 3});
  std::copy_n(data.data<float>().begin() + 3, 3, expected.data<float>().begin());
  EXPECT_TRUE(test::identical(out[0], expected));
  const std::string deep = test::node_error(
      make_node("GatherND", 13),
      NodeInputs{NodeInput{data}, NodeInput{Tensor::from_vector<int64_t>({1, 3}, {0, 0, 0})}});
  EXPECT_NE(deep.find("expected 1 to 2"), std::string::npos) << deep;
  ops::NodeInfo batched = make_node("GatherND", 13);
  batched.attributes.set("batch_dims", int64_t{1});
  const std::string batch = test::node_error(
      batched, NodeInputs{NodeInput{data}, NodeInput{Tensor::from_vector<int64_t>({3, 1}, {0, 1, 2})}});
  EXPECT_NE(batch.find("differ in batch dim 0"), std::string::npos) << batch;
}

}  // namespace
}  // namespace wgi
