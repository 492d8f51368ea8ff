#include <gtest/gtest.h>

#include <array>
#include <span>
#include <utility>
#include <vector>

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

// A view reads the caller's memory in place; a copy of it owns its bytes.
TEST(Tensor, ViewsBorrowAndCopiesOwn) {
  std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.5f, 7.0f, -8.5f};
  const Tensor view = Tensor::view<float>({2, 3}, std::span<const float>(values));
  EXPECT_TRUE(view.is_view());
  EXPECT_EQ(view.byte_size(), 24u);
  EXPECT_EQ(view.bytes().data(), reinterpret_cast<const std::byte*>(values.data()));
  const Tensor copy = view;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_FALSE(copy.is_view());
  values[4] = 42.0f;
  EXPECT_EQ(view.data<float>()[4], 42.0f);
  EXPECT_EQ(copy.data<float>()[4], 7.0f);
  Tensor assigned;
  assigned = view;
  EXPECT_FALSE(assigned.is_view());
  EXPECT_EQ(assigned.data<float>()[4], 42.0f);
  Tensor moved = Tensor::view<float>({6}, std::span<const float>(values));
  Tensor target = std::move(moved);
  EXPECT_TRUE(target.is_view());
  EXPECT_EQ(std::as_const(target).data<float>()[0], 1.5f);
}

TEST(Tensor, ViewsCheckSizeAlignmentAndWrites) {
  alignas(8) std::array<std::byte, 40> storage{};
  const std::span<const std::byte> bytes(storage);
  EXPECT_THROW(Tensor::view(DType::Float32, {3}, bytes.first(8)), Error);  // 12 bytes wanted
  try {
    (void)Tensor::view(DType::Float32, {2}, bytes.subspan(2, 8));
    FAIL() << "a misaligned view was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aligned to 4 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor::view(DType::Int64, {2}, bytes.subspan(4, 16)), Error);
  EXPECT_NO_THROW(Tensor::view(DType::UInt8, {3}, bytes.subspan(1, 3)));  // bytes need no alignment
  Tensor view = Tensor::view(DType::Int32, {2, 5}, bytes);
  try {
    (void)view.data<int32_t>();
    FAIL() << "a view gave writable access";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read-only view"), std::string::npos) << e.what();
  }
  EXPECT_THROW(view.bytes(), Error);
  EXPECT_EQ(std::as_const(view).data<int32_t>().size(), 10u);
  const Tensor empty = Tensor::view(DType::Float32, {0, 3}, {});
  EXPECT_EQ(empty.element_count(), 0);
  EXPECT_EQ(empty.byte_size(), 0u);
}

}  // namespace
}  // namespace wgi
