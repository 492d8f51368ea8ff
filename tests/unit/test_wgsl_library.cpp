// The WGSL preprocessor and the embedded kernel files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <string>

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
  EXPECT_EQ(preprocess_wgsl("t", text, {{"N", "3"}, {"VEC4", "1"}, {"BIAS", "0"}}),
            "a 3\nvec4\nnobias\nend\n");
  EXPECT_EQ(preprocess_wgsl("t", text, {{"N", "3"}, {"VEC4", "0"}, {"BIAS", "0"}}), "a 3\nscalar\nend\n");
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
  EXPECT_THROW(preprocess_wgsl("k", "#if A\n", {{"A", "1"}}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#endif\n", {}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#pragma once\n", {}), Error);
  EXPECT_THROW(preprocess_wgsl("k", "#include \"no/such.wgsl\"\n", {}), Error);
}

// A name an #if tests must be defined, even where the branch is not taken: an undefined name is a forgotten
// or misspelled define, not "off".
TEST(WgslPreprocessor, IfOnAnUndefinedNameIsAnError) {
  const char* text = "a\n#if OUTER\n#if !INNER\nx\n#endif\n#endif\n";
  EXPECT_EQ(preprocess_wgsl("t", text, {{"OUTER", "1"}, {"INNER", "0"}}), "a\nx\n");
  EXPECT_EQ(preprocess_wgsl("t", text, {{"OUTER", "0"}, {"INNER", "0"}}), "a\n");
  try {
    preprocess_wgsl("k.wgsl", text, {{"OUTER", "0"}});
    FAIL() << "an #if on an undefined name passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k.wgsl:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("INNER"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preprocess_wgsl("k", text, {{"INNER", "1"}}), Error);
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

// The names a file's #if lines test and the {{NAME}}s it substitutes, with those of every file it includes
// (in any branch).
struct FileNames {
  std::set<std::string> tested;
  std::set<std::string> substituted;
};

std::string_view embedded_text(std::string_view path) {
  for (const auto& s : embedded_sources()) {
    if (s.path == path) return s.text;
  }
  ADD_FAILURE() << "no embedded " << path;
  return {};
}

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The names of `#if NAME` / `#if !NAME` lines, the files of `#include "file"` lines (followed) and the
// `{{NAME}}` substitutions of a file and what it includes. Plain string parsing: GCC 12's std::regex trips
// -Wmaybe-uninitialized in the sanitizer build.
void collect_names(std::string_view path, std::set<std::string>& visited, FileNames& names) {
  if (!visited.insert(std::string(path)).second) return;
  std::istringstream in{std::string(embedded_text(path))};
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view t = trim_spaces(line);
    if (t.rfind("#if", 0) == 0 && t.size() > 3 && std::isspace(static_cast<unsigned char>(t[3]))) {
      std::string_view name = trim_spaces(t.substr(3));
      if (!name.empty() && name.front() == '!') name = trim_spaces(name.substr(1));
      if (!name.empty() && std::all_of(name.begin(), name.end(), is_word))
        names.tested.insert(std::string(name));
    }
    if (t.rfind("#include", 0) == 0) {
      const size_t q1 = t.find('"');
      const size_t q2 = q1 == std::string_view::npos ? q1 : t.find('"', q1 + 1);
      if (q2 != std::string_view::npos) collect_names(t.substr(q1 + 1, q2 - q1 - 1), visited, names);
    }
    for (size_t open = line.find("{{"); open != std::string::npos; open = line.find("{{", open + 2)) {
      const size_t close = line.find("}}", open + 2);
      if (close == std::string::npos) break;
      const std::string_view name = trim_spaces(std::string_view(line).substr(open + 2, close - open - 2));
      if (!name.empty() && std::all_of(name.begin(), name.end(), is_word))
        names.substituted.insert(std::string(name));
    }
  }
}

// Every embedded file preprocesses with exactly the names it tests defined (all 0, then all 1, which between
// them take every #if and #else branch, and so every #include) and its substitutions given: its directives
// are well formed, and the names found here are all a caller has to define, which is what the launch sites
// are checked against.
TEST(WgslLibrary, EveryFileRunsWithTheNamesItTests) {
  for (const auto& s : embedded_sources()) {
    std::set<std::string> visited;
    FileNames names;
    collect_names(s.path, visited, names);
    auto defines_all = [&](const char* value) {
      Defines defines;
      for (const std::string& name : names.tested) defines[name] = value;
      for (const std::string& name : names.substituted) defines.emplace(name, "1");
      defines.emplace(std::string(kInterfaceDefine), "");
      return defines;
    };
    auto throws_without = [&](const char* value, const std::string& name) {
      Defines defines = defines_all(value);
      defines.erase(name);
      try {
        preprocess_wgsl(s.path, s.text, defines);
        return false;
      } catch (const Error&) {
        return true;
      }
    };
    for (const char* value : {"0", "1"}) {
      EXPECT_NO_THROW(preprocess_wgsl(s.path, s.text, defines_all(value)))
          << s.path << " with every name " << value;
    }
    for (const std::string& name : names.tested) {
      EXPECT_TRUE(throws_without("0", name) || throws_without("1", name))
          << s.path << " runs without " << name;
    }
  }
}

}  // namespace
}  // namespace wgi::kernels
