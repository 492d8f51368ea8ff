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

TEST(WgslPreprocessor, InterfacePlacesTheInterfaceDefine) {
  const char* text = "a\n#interface\nb\n";
  EXPECT_EQ(preprocess_wgsl("t", text, {{std::string(kInterfaceDefine), "struct Params {\n}"}}),
            "a\nstruct Params {\n}\nb\n");
  try {
    preprocess_wgsl("k.wgsl", text, {});
    FAIL() << "#interface without an interface passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k.wgsl:2"), std::string::npos) << e.what();
  }
}

TEST(WgslPreprocessor, IncludesEmbeddedFilesOnce) {
  std::string out = preprocess_wgsl(
      "k", "#include \"common/dispatch_grid.wgsl\"\n#include \"common/dispatch_grid.wgsl\"\nmain\n", {});
  size_t first = out.find("fn linear_workgroup_index");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(out.find("fn linear_workgroup_index", first + 1), std::string::npos);
}

TEST(WgslLibrary, EveryEmbeddedFileIsPresent) {
  EXPECT_FALSE(embedded_sources().empty());
  for (const auto& s : embedded_sources()) EXPECT_FALSE(s.text.empty()) << s.path;
}

}  // namespace
}  // namespace wgi::kernels
