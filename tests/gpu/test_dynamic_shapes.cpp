// Ops whose output size depends on the data, and the runtime's stages around them (docs/dynamic_shapes.md).
//   - NonZero, Compress, Unique, NonMaxSuppression on the GPU against plain CPU references
//     (support/reference_selection.h) at sizes the ONNX node tests do not reach, seeded random inputs with
//     many zeros / repeats / overlaps; every comparison is exact (indices, and copies of elements).
//   - Models through a Session (tests/models/dynamic_shapes.py): nodes after a NonZero planned for the real
//     count, plans reused when a count repeats and made once for a new one, TopK with K computed on the GPU,
//     and NonMaxSuppression followed by a Gather against onnxruntime's CPU provider.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "onnxruntime_reference.h"
#include "ops/float16.h"
#include "runtime/node_runner.h"
#include "support/expect_text.h"
#include "support/reference_data_movement.h"
#include "support/reference_selection.h"
#include "support/reference_topk.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models" / "dynamic_shapes";

// Values of `dtype` from {-3, ..., 3} with about 40% zeros (and -0.0 among the float zeros).
Tensor with_zeros(DType dtype, const Shape& shape, uint64_t seed) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const uint64_t r = rng() % 10;
    const int v = r < 4 ? 0 : (r % 2 ? 1 : -1) * static_cast<int>(1 + r % 3);
    const size_t k = static_cast<size_t>(i);
    switch (dtype) {
      case DType::Float32:
        t.data<float>()[k] = r == 0 ? -0.0f : 0.75f * static_cast<float>(v);
        break;
      case DType::Float16: {
        const uint16_t h = ops::float_to_half(r == 0 ? -0.0f : 1.5f * static_cast<float>(v));
        std::memcpy(t.bytes().data() + 2 * k, &h, 2);
        break;
      }
      case DType::Int64:
        t.data<int64_t>()[k] = v * 100003;
        break;
      case DType::Int32:
        t.data<int32_t>()[k] = v * 7;
        break;
      case DType::Int8:
        t.bytes()[k] = std::byte{static_cast<uint8_t>(static_cast<int8_t>(v * 40))};
        break;
      case DType::UInt8:
        t.bytes()[k] = std::byte{static_cast<uint8_t>(v == 0 ? 0 : (v + 4) * 40)};
        break;
      case DType::Bool:
        t.bytes()[k] = std::byte{v != 0 ? uint8_t{1} : uint8_t{0}};
        break;
    }
  }
  return t;
}

Tensor bools(const std::vector<bool>& values) {
  Tensor t(DType::Bool, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.bytes()[i] = std::byte{values[i] ? uint8_t{1} : uint8_t{0}};
  return t;
}

std::vector<bool> random_condition(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<bool> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = rng() % 3 != 0;
  return out;
}

TEST(NonZero, EveryDtypeAndShape) {
  for (DType dtype :
       {DType::Float32, DType::Float16, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    for (const Shape& shape : {Shape{3, 37, 5}, Shape{4099}, Shape{2, 3, 4, 5, 6}, Shape{}, Shape{0, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_to_string(shape));
      const Tensor x = with_zeros(dtype, shape, 101 + shape.size());
      auto out = runtime::run_node(test::device(), make_node("NonZero", 13), NodeInputs{NodeInput{x}});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(test::identical(out[0], test::nonzero_reference(x)));
    }
  }
}

TEST(NonZero, NothingAndEverything) {
  const Tensor none(DType::Float32, {17, 9});
  auto out = runtime::run_node(test::device(), make_node("NonZero", 13), NodeInputs{NodeInput{none}});
  EXPECT_EQ(out[0].shape(), (Shape{2, 0}));
  const Tensor all = test::random_tensor({5, 70}, 7, 0.5f, 1.0f);
  out = runtime::run_node(test::device(), make_node("NonZero", 13), NodeInputs{NodeInput{all}});
  EXPECT_TRUE(test::identical(out[0], test::nonzero_reference(all)));
}

TEST(Compress, WithAndWithoutAxis) {
  struct Case {
    DType dtype;
    Shape shape;
    std::optional<int64_t> axis;
    size_t condition;
  };
  for (const Case& c :
       {Case{DType::Float32, {4, 300, 3}, 1, 250}, Case{DType::Float32, {4, 300, 3}, -1, 3},
        Case{DType::Int32, {37, 11}, 0, 37}, Case{DType::Float32, {9, 401}, std::nullopt, 3000},
        Case{DType::Int64, {2, 5, 7}, 2, 0}}) {
    SCOPED_TRACE(shape_to_string(c.shape) + " axis " + (c.axis ? std::to_string(*c.axis) : "none"));
    const Tensor x = test::random_ints(c.dtype, c.shape, 211);
    const std::vector<bool> condition = random_condition(c.condition, 223 + c.condition);
    ops::NodeInfo node = make_node("Compress", 11);
    if (c.axis) node.attributes.set("axis", *c.axis);
    auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}, NodeInput{bools(condition)}});
    EXPECT_TRUE(test::identical(out[0], test::compress_reference(x, condition, c.axis)));
  }
  const std::string longer = test::node_error(
      make_node("Compress", 11),
      NodeInputs{NodeInput{test::random_tensor({3}, 1)}, NodeInput{bools({true, false, true, true})}});
  EXPECT_HAS(longer, "more than the 3 slices of input 0");
}

TEST(Unique, SortedAndNotWithAndWithoutAxisAllOutputs) {
  struct Case {
    DType dtype;
    Shape shape;
    std::optional<int64_t> axis;
    int64_t levels;
  };
  for (const Case& c : {Case{DType::Float32, {3001}, std::nullopt, 40}, Case{DType::Int64, {400, 3}, 0, 3},
                        Case{DType::Float32, {2, 301, 2}, 1, 2}, Case{DType::Int32, {5, 7, 9}, -1, 1},
                        Case{DType::Float32, {6, 50}, std::nullopt, 100000}}) {
    for (bool sorted : {true, false}) {
      SCOPED_TRACE(shape_to_string(c.shape) + " axis " + (c.axis ? std::to_string(*c.axis) : "none") +
                   (sorted ? " sorted" : " unsorted"));
      Tensor x = test::random_ints(c.dtype == DType::Float32 ? DType::Int32 : c.dtype, c.shape, 307,
                                   -c.levels, c.levels + 1);
      if (c.dtype == DType::Float32) {
        Tensor f(DType::Float32, c.shape);
        for (int64_t i = 0; i < f.element_count(); ++i)
          f.data<float>()[static_cast<size_t>(i)] =
              0.5f * static_cast<float>(x.data<int32_t>()[static_cast<size_t>(i)]);
        x = f;
      }
      ops::NodeInfo node = make_node("Unique", 11, 4);
      if (c.axis) node.attributes.set("axis", *c.axis);
      node.attributes.set("sorted", int64_t{sorted});
      auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}});
      const test::UniqueOutputs want = test::unique_reference(x, c.axis, sorted);
      ASSERT_EQ(out.size(), 4u);
      EXPECT_TRUE(test::identical(out[0], want.y)) << "Y";
      EXPECT_TRUE(test::identical(out[1], want.indices)) << "indices";
      EXPECT_TRUE(test::identical(out[2], want.inverse_indices)) << "inverse_indices";
      EXPECT_TRUE(test::identical(out[3], want.counts)) << "counts";
    }
  }
}

// Boxes with centres in [0, 100)^2 and sides in [2, 22): many overlaps among ~1000 boxes.
Tensor random_boxes(int64_t batches, int64_t n, uint64_t seed, bool center_point_box) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> centre(0, 100), side(2, 22);
  Tensor t(DType::Float32, {batches, n, 4});
  float* p = t.data<float>().data();
  for (int64_t i = 0; i < batches * n; ++i, p += 4) {
    const float cx = centre(rng), cy = centre(rng), w = side(rng), h = side(rng);
    if (center_point_box) {
      p[0] = cx, p[1] = cy, p[2] = w, p[3] = h;
    } else if (rng() % 2) {
      p[0] = cy - h / 2, p[1] = cx - w / 2, p[2] = cy + h / 2, p[3] = cx + w / 2;
    } else {  // the other diagonal
      p[0] = cy + h / 2, p[1] = cx + w / 2, p[2] = cy - h / 2, p[3] = cx - w / 2;
    }
  }
  return t;
}

TEST(NonMaxSuppression, AThousandBoxesBothFormatsClassesAndThresholds) {
  struct Case {
    int64_t batches, boxes, classes, max_per_class;
    float iou;
    std::optional<float> score_threshold;
    bool center_point_box;
  };
  for (const Case& c :
       {Case{2, 1000, 3, 1000, 0.5f, std::nullopt, false}, Case{1, 1000, 2, 40, 0.3f, 0.25f, true},
        Case{3, 77, 5, 6, 0.0f, 0.5f, false}, Case{1, 200, 1, 0, 0.5f, std::nullopt, true}}) {
    SCOPED_TRACE(std::to_string(c.batches) + "x" + std::to_string(c.boxes) + " boxes, " +
                 std::to_string(c.classes) + " classes, max " + std::to_string(c.max_per_class) + ", iou " +
                 std::to_string(c.iou) + (c.center_point_box ? ", centre format" : ", corner format"));
    const Tensor boxes = random_boxes(c.batches, c.boxes, 433 + c.boxes, c.center_point_box);
    const Tensor scores = test::random_tensor({c.batches, c.classes, c.boxes}, 409 + c.classes, 0.0f, 1.0f);
    const test::NmsOutputs want =
        test::nms_reference(boxes, scores, c.max_per_class, c.iou, c.score_threshold, c.center_point_box);
    // Pairs this close to the threshold could go either way in float32; these seeds have none.
    ASSERT_EQ(want.near_threshold_pairs, 0);
    ops::NodeInfo node = make_node("NonMaxSuppression", 11);
    node.attributes.set("center_point_box", int64_t{c.center_point_box});
    NodeInputs inputs{NodeInput{boxes}, NodeInput{scores}, NodeInput{test::ints({c.max_per_class}), true},
                      NodeInput{Tensor::from_vector<float>({1}, {c.iou}), true}};
    if (c.score_threshold)
      inputs.push_back(NodeInput{Tensor::from_vector<float>({1}, {*c.score_threshold}), true});
    auto out = runtime::run_node(test::device(), node, inputs);
    EXPECT_TRUE(test::identical(out[0], want.selected));
    if (c.max_per_class > 0) {
      EXPECT_GT(want.selected.shape()[0], c.classes) << "a test that selects little";
    }
  }
}

TEST(NonMaxSuppression, ThresholdsMustBeKnown) {
  const std::string error =
      test::node_error(make_node("NonMaxSuppression", 11),
                       NodeInputs{NodeInput{random_boxes(1, 4, 1, false)},
                                  NodeInput{test::random_tensor({1, 1, 4}, 2)}, NodeInput{test::ints({3})}});
  EXPECT_HAS(error, "input 2 (max_output_boxes_per_class) must be known when planning");
}

// ---- Through a Session: the stages ----

TEST(DynamicShapes, NodesAfterNonZeroArePlannedForTheRealCount) {
  Session session = Session::from_file(kModels / "nonzero_gather.onnx");
  auto check = [&](const Tensor& x) {
    auto out = session.run({{"x", x}});
    const Tensor positive = [&] {
      Tensor p(DType::Bool, x.shape());
      for (int64_t i = 0; i < x.element_count(); ++i)
        p.bytes()[static_cast<size_t>(i)] =
            std::byte{x.data<float>()[static_cast<size_t>(i)] > 0 ? uint8_t{1} : uint8_t{0}};
      return p;
    }();
    const Tensor coords = test::nonzero_reference(positive);
    EXPECT_TRUE(test::identical(out.at("coords"), coords));
    const int64_t count = coords.shape()[1];
    std::vector<float> doubled;
    for (int64_t c = 0; c < count; ++c) {
      const int64_t r = coords.data<int64_t>()[static_cast<size_t>(c)];
      const int64_t col = coords.data<int64_t>()[static_cast<size_t>(count + c)];
      doubled.push_back(2 * x.data<float>()[static_cast<size_t>(r * x.shape()[1] + col)]);  // exact
    }
    EXPECT_TRUE(test::identical(out.at("doubled"), Tensor::from_vector<float>({count}, doubled)));
    EXPECT_TRUE(test::identical(out.at("count"), test::ints({count})));
    return count;
  };
  const Tensor x = test::random_tensor({3, 50}, 501);
  const int64_t count = check(x);
  const size_t plans = session.stats().plans.made;
  check(x);
  EXPECT_EQ(session.stats().plans.made, plans) << "the same count must reuse the stage plans";
  // Other values with the same count: the plans are keyed by sizes, not values.
  Tensor shuffled = x;
  std::reverse(shuffled.data<float>().begin(), shuffled.data<float>().end());
  EXPECT_EQ(check(shuffled), count);
  EXPECT_EQ(session.stats().plans.made, plans);
  // Another count plans the stage after the NonZero once.
  const Tensor y = test::random_tensor({3, 50}, 503, -1.0f, 0.2f);
  EXPECT_NE(check(y), count);
  EXPECT_EQ(session.stats().plans.made, plans + 1);
  check(y);
  EXPECT_EQ(session.stats().plans.made, plans + 1);
  // A batch of another size: a new signature.
  check(test::random_tensor({5, 41}, 505));
  // Staged runs return their outputs on the host.
  try {
    RunOptions options;
    options.device_outputs = {"doubled"};
    session.run({{"x", Value(x)}}, options);
    ADD_FAILURE() << "a device output of a staged run was accepted";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(),
               "output 'doubled' was asked for on the device, but this model's shapes depend on the data");
  }
}

TEST(DynamicShapes, TopKWithKComputedOnTheGpu) {
  Session session = Session::from_file(kModels / "topk_computed_k.onnx");
  for (uint64_t seed : {601, 602}) {
    // 300 elements: not given to the planner by value, so K (how many exceed 0.5) is computed on the GPU.
    const Tensor x = test::random_tensor({1, 300}, seed);
    int64_t k = 0;
    for (float v : x.data<float>()) k += v > 0.5f ? 1 : 0;
    auto out = session.run({{"x", x}});
    auto [values, indices] = test::topk_reference(x, k, 1, true);
    EXPECT_TRUE(test::identical(out.at("values"), values));
    EXPECT_TRUE(test::identical(out.at("indices"), indices));
    EXPECT_GT(k, 10);
  }
}

TEST(DynamicShapes, NonMaxSuppressionThenGatherMatchesOnnxruntime) {
  const fs::path model = kModels / "nms_gather.onnx";
  Session session = Session::from_file(model);
  const Tensor boxes = random_boxes(1, 300, 701, false);
  const Tensor scores = test::random_tensor({1, 4, 300}, 703, 0.0f, 1.0f);
  const test::NmsOutputs reference = test::nms_reference(boxes, scores, 7, 0.45, 0.2, false);
  ASSERT_EQ(reference.near_threshold_pairs, 0);  // no pair that float32 could decide otherwise
  auto out = session.run({{"boxes", boxes}, {"scores", scores}});
  auto ort = test::run_onnxruntime(model, {{"boxes", boxes}, {"scores", scores}}, {"selected", "kept_boxes"});
  // Scores are distinct, so there is no tie whose order could differ: exact, in order.
  EXPECT_TRUE(test::identical(out.at("selected"), ort.at("selected")));
  EXPECT_TRUE(test::identical(out.at("kept_boxes"), ort.at("kept_boxes")));
  EXPECT_TRUE(test::identical(out.at("selected"), reference.selected));
  EXPECT_GE(out.at("selected").shape()[0], 8) << "a test that selects little";
}

// torchvision's SSDlite (tests/models/torchvision_detection.py: seeded weights, 160 x 160, 3 classes)
// against onnxruntime's CPU provider. Its post-processing runs NonZero (scores above the threshold), TopK
// with K from that count, and NonMaxSuppression, so the run has several stages. The seeded network gives
// distinct scores (checked), so there is no tie whose order could differ: detections are compared in order.
// Tolerances: float32 rounding through a network of this depth (measured 3e-7 and 3e-5 on both CPU
// adapters), 1e-5 absolute on scores in [0, 1] and 2e-3
// on box coordinates in pixels of [0, 160].
TEST(DynamicShapes, TorchvisionSsdliteMatchesOnnxruntime) {
  const fs::path dir = fs::path(WGI_TEST_DATA_DIR) / "models" / "torchvision_detection";
  const fs::path model = dir / "ssdlite_tiny.onnx";
  const Tensor image = npy::load(dir / "image.npy");
  Session session = Session::from_file(model);
  auto out = session.run({{"image", image}});
  auto ort = test::run_onnxruntime(model, {{"image", image}}, {"boxes", "scores", "labels"});
  const Tensor& want_scores = ort.at("scores");
  std::vector<float> sorted(want_scores.data<float>().begin(), want_scores.data<float>().end());
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "tied scores";
  ASSERT_GT(want_scores.element_count(), 10) << "a test that detects little";
  EXPECT_TRUE(test::identical(out.at("labels"), ort.at("labels")));
  ASSERT_EQ(out.at("scores").shape(), want_scores.shape());
  ASSERT_EQ(out.at("boxes").shape(), ort.at("boxes").shape());
  double score_error = 0, box_error = 0;
  for (int64_t i = 0; i < want_scores.element_count(); ++i) {
    const size_t k = static_cast<size_t>(i);
    score_error = std::max(
        score_error, std::abs(double{out.at("scores").data<float>()[k]} - want_scores.data<float>()[k]));
    for (size_t c = 0; c < 4; ++c) {
      box_error = std::max(box_error, std::abs(double{out.at("boxes").data<float>()[4 * k + c]} -
                                               ort.at("boxes").data<float>()[4 * k + c]));
    }
  }
  EXPECT_LE(score_error, 1e-5);
  EXPECT_LE(box_error, 2e-3);
  std::printf("[ssdlite] %lld detections, max score error %.3g, max box error %.3g px\n",
              static_cast<long long>(want_scores.element_count()), score_error, box_error);
}

}  // namespace
}  // namespace wgi
