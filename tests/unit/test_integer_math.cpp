#include "core/integer_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace wgi {
namespace {

TEST(IntegerMath, CeilDivRoundsUpInTheFirstOperandsType) {
  EXPECT_EQ(ceil_div(0u, 4), 0u);
  EXPECT_EQ(ceil_div(1u, 4), 1u);
  EXPECT_EQ(ceil_div(8u, 4), 2u);
  EXPECT_EQ(ceil_div(9u, 4), 3u);
  EXPECT_EQ(ceil_div(int64_t{51289}, 32), int64_t{1603});
  // 64-bit operands past the 32-bit range keep their width.
  const uint64_t big = uint64_t{1} << 40;
  EXPECT_EQ(ceil_div(big + 1, uint64_t{1} << 20), (uint64_t{1} << 20) + 1);
  static_assert(std::is_same_v<decltype(ceil_div(uint32_t{7}, 2)), uint32_t>);
  static_assert(std::is_same_v<decltype(ceil_div(int64_t{7}, 2)), int64_t>);
  static_assert(ceil_div(7, 7) == 1 && ceil_div(std::numeric_limits<int32_t>::max() - 8, 8) == 268435455);
}

}  // namespace
}  // namespace wgi
