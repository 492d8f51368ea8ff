// The WGSL preprocessor and the embedded kernel files.
#include <gtest/gtest.h>

#include "kernels/wgsl_library.h"
#include "wgi/error.h"

namespace wgi::kernels {
namespace {

TEST(WgslPreprocessor, ConditionalsAndSubstitution) {
  const char* text =
      "a {{N}}\n"
      "#if VEC4\n"
      "vec4\n"
      "#if !BIAS\n"
      "nobias\n"
      "#endif\n"
      "#else\n"
      "scalar\n"
      "#endif\n"
      "end\n";
  EXPECT_EQ(preprocess_wgsl("t", text, {{"N", "3"}, {"VEC4", "1"}}), "a 3\nvec4\nnobias\nend\n");
  EXPECT_EQ(preprocess_wgsl("t", text, {{"N", "3"}, {"VEC4", "0"}}), "a 3\nscalar\nend\n");
  EXPECT_EQ(preprocess_wgsl("t", text, {{"N", "3"}, {"VEC4", "1"}, {"BIAS", "1"}}), "a 3\nvec4\nend\n");
}

TEST(WgslPreprocessor, ErrorsNameTheFileAndLine) {
  try {
    preprocess_wgsl("k.wgsl", "ok\nx {{MISSING}}\n", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k.wgsl:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MISSING"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preprocess_wgsl("k", "#if A\n", {}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#endif\n", {}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#pragma once\n", {}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#include \"no/such.wgsl\"\n", {}), Error);
}

TEST(WgslPreprocessor, IncludesEmbeddedFilesOnce) {
  std::string out = preprocess_wgsl(
      "k", "#include \"common/dispatch_grid.wgsl\"\n#include \"common/dispatch_grid.wgsl\"\nmain\n", {});
  size_t first = out.find("fn linear_workgroup_index");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(out.find("fn linear_workgroup_index", first + 1), std::string::npos);
}

TEST(WgslPreprocessor, IncludesWithParametersInstantiateTheFileEachTime) {
  const char* text =
      "#include \"common/workgroup_reduce.wgsl\" NAME=tree_max SLOTS=maxima TYPE={{TYPE}} COMBINE=\"max(a, "
      "b)\"\n"
      "#include \"common/workgroup_reduce.wgsl\" NAME=tree_sum SLOTS=sums TYPE=f32 COMBINE=\"a + b\"\n"
      "after {{TYPE}}\n";
  std::string out = preprocess_wgsl("k", text, {{"TYPE", "i32"}, {"NAME", "outer"}});
  EXPECT_NE(out.find("fn tree_max(value: i32, lid: u32) -> i32 {"), std::string::npos) << out;
  EXPECT_NE(out.find("maxima[lid] = max(a, b);"), std::string::npos) << out;
  EXPECT_NE(out.find("fn tree_sum(value: f32, lid: u32) -> f32 {"), std::string::npos) << out;
  EXPECT_NE(out.find("sums[lid] = a + b;"), std::string::npos) << out;
  // The parameters hold inside the instance only: the includer's text sees the program's defines.
  EXPECT_EQ(out.find("outer"), std::string::npos) << out;
  EXPECT_NE(out.find("after i32\n"), std::string::npos) << out;
}

TEST(WgslPreprocessor, MalformedIncludeParametersAreErrors) {
  const std::string include = "#include \"common/workgroup_reduce.wgsl\"";
  for (const char* parameters : {" NAME", " NAME=", " =x", " NAME=\"unterminated", " NAME=a NAME=b"}) {
    EXPECT_THROW(preprocess_wgsl("k", include + parameters + "\n", {}), Error) << parameters;
  }
  // An instance still needs every {{NAME}} it uses.
  EXPECT_THROW(preprocess_wgsl("k", include + " NAME=tree\n", {}), Error);
}

TEST(WgslLibrary, EveryEmbeddedFileIsPresent) {
  EXPECT_FALSE(embedded_sources().empty());
  for (const auto& s : embedded_sources()) EXPECT_FALSE(s.text.empty()) << s.path;
}

}  // namespace
}  // namespace wgi::kernels
