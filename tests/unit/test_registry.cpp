// The op registry: lookups by opset range, and duplicate registrations fail naming both sites.
#include <gtest/gtest.h>

#include "ops/registry.h"

namespace wgi::ops {
namespace {

OpHandler dummy_handler() {
  OpHandler h;
  h.plan = [](const PlanContext&) { return OpPlan{}; };
  return h;
}

TEST(OpRegistry, FindsByDomainOpAndOpset) {
  OpRegistry r;
  r.add("", "Relu", 6, 13, dummy_handler());
  r.add("ai.onnx", "Relu", 14, kLatestOpset, dummy_handler());
  EXPECT_EQ(r.find("", "Relu", 5), nullptr);
  ASSERT_NE(r.find("", "Relu", 6), nullptr);
  EXPECT_EQ(r.find("ai.onnx", "Relu", 13)->until_version, 13);
  EXPECT_EQ(r.find("", "Relu", 21)->since_version, 14);
  EXPECT_EQ(r.find("com.microsoft", "Relu", 14), nullptr);
}

TEST(OpRegistry, ExplainsWhyAnOpIsUnsupported) {
  OpRegistry r;
  r.add("", "Relu", 6, 13, dummy_handler());
  EXPECT_FALSE(r.unsupported_reason("", "Relu", 7).has_value());
  auto missing = r.unsupported_reason("", "NonMaxSuppression", 11);
  ASSERT_TRUE(missing.has_value());
  EXPECT_NE(missing->find("op missing"), std::string::npos) << *missing;
  auto opset = r.unsupported_reason("", "Relu", 14);
  ASSERT_TRUE(opset.has_value());
  EXPECT_NE(opset->find("opsets 6-13"), std::string::npos) << *opset;
}

TEST(OpRegistry, DuplicateRegistrationNamesBothSites) {
  OpRegistry r;
  r.add("", "Conv", 1, 10, dummy_handler());  // first site
  int first_line = __LINE__ - 1;
  int second_line = __LINE__ + 2;
  try {
    r.add("ai.onnx", "Conv", 10, kLatestOpset, dummy_handler());  // overlaps at opset 10
    FAIL() << "expected a duplicate-registration error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("registered twice"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_registry.cpp:" + std::to_string(first_line)), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_registry.cpp:" + std::to_string(second_line)), std::string::npos) << msg;
  }
  // Adjacent, non-overlapping ranges are fine.
  EXPECT_NO_THROW(r.add("", "Conv", 11, 12, dummy_handler()));
}

TEST(OpRegistry, RejectsBadRanges) {
  OpRegistry r;
  EXPECT_THROW(r.add("", "Add", 7, 6, dummy_handler()), Error);
  EXPECT_THROW(r.add("", "Add", 0, 6, dummy_handler()), Error);
  EXPECT_THROW(r.add("", "Add", 7, 8, OpHandler{}), Error);
}

TEST(OpRegistry, BuiltinRegistryHasNoDuplicates) {
  // Building it runs every family's registration; a duplicate would throw here.
  EXPECT_NO_THROW(builtin_registry());
}

}  // namespace
}  // namespace wgi::ops
