#include <gtest/gtest.h>

#include "wgi/tensor.h"

namespace wgi {
namespace {

TEST(Tensor, HoldsTypedData) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.element_count(), 6);
  EXPECT_EQ(t.byte_size(), 24u);
  EXPECT_EQ(t.data<float>()[4], 5.0f);
  EXPECT_THROW(t.data<int64_t>(), Error);
}

TEST(Tensor, RejectsWrongByteCountsAndBadShapes) {
  std::vector<std::byte> bytes(10);
  EXPECT_THROW(Tensor(DType::Float32, {3}, bytes), Error);
  EXPECT_THROW(Tensor(DType::Float32, {-1, 2}), Error);
  EXPECT_THROW(element_count({1ll << 40, 1ll << 40}), Error);
  EXPECT_EQ(element_count({}), 1);
  EXPECT_EQ(element_count({4, 0}), 0);
  EXPECT_EQ(shape_to_string({2, 3}), "[2, 3]");
}

}  // namespace
}  // namespace wgi
