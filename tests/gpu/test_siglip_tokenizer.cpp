// wgi's SigLIP tokenizer (src/pipelines/siglip_tokenizer.cpp: libsentencepiece on spiece.model plus
// SiglipTokenizer's normalisation) against transformers.js 4.3.1 on the equivalent tokenizer.json of
// tests/data/pipelines/siglip_tiny: expected_token_ids.json holds 400 strings (case, ASCII and Unicode
// punctuation, every kind of JavaScript whitespace, characters outside the vocabulary, special pieces inside
// the text, Greek sigmas, texts past 64 ids) and the ids transformers.js's pipeline feeds for each
// (tokenizer(texts, {padding: 'max_length', truncation: true})), written by tests/models/siglip_folder.py.
// Every id must be equal.
//
// In wgi_gpu_tests although it needs no GPU: wgi_unit_tests links Debian's libprotobuf 3.21 (for ONNX's
// classes), whose symbols take the place of the protobuf-lite 3.14 that libsentencepiece bundles, and its
// version check then refuses to parse spiece.model (docs/siglip.md).
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
#include "pipelines/siglip_tokenizer.h"
#include "wgi/error.h"

namespace {

namespace fs = std::filesystem;
using wgi::pipelines::SiglipTokenizer;
const fs::path kTiny = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip_tiny";

TEST(SiglipTokenizer, IdsEqualTransformersJs) {
  const SiglipTokenizer tokenizer = SiglipTokenizer::from_folder(kTiny);
  EXPECT_EQ(tokenizer.max_length(), 64);
  EXPECT_EQ(tokenizer.pad_id(), 1);
  EXPECT_EQ(tokenizer.eos_id(), 1);
  const wgi::json::Value expected = wgi::json::parse(wgi::npy::read_file(kTiny / "expected_token_ids.json"));
  const auto& strings = expected.find("strings")->array;
  const auto& ids = expected.find("input_ids")->array;
  ASSERT_EQ(strings.size(), ids.size());
  ASSERT_GE(strings.size(), 300u);  // a comparison of nothing must fail
  size_t truncated = 0, with_unknown = 0, compared = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::vector<int64_t> want;
    for (const auto& v : ids[i].array) want.push_back(static_cast<int64_t>(v.number));
    const std::vector<int64_t> got = tokenizer.encode_padded(strings[i].string);
    EXPECT_EQ(got, want) << "string " << i << ": '" << strings[i].string << "'";
    truncated += tokenizer.encode(strings[i].string).size() > 64;
    with_unknown += std::find(want.begin(), want.end(), 2) != want.end();
    ++compared;
  }
  EXPECT_EQ(compared, strings.size());
  EXPECT_GT(truncated, 0u);     // the cases cover truncation...
  EXPECT_GT(with_unknown, 0u);  // ...and characters outside the vocabulary
}

TEST(SiglipTokenizer, Normalization) {
  using wgi::pipelines::normalize_siglip_text;
  EXPECT_EQ(normalize_siglip_text("  This is, a PHOTO\tof\u3000cat. "), "this is a photo of cat");
  EXPECT_EQ(normalize_siglip_text("a . b"), "a b");
  EXPECT_EQ(normalize_siglip_text("\u2581x"), "x");
  // Final_Sigma: the apostrophe is case-ignorable, so the first sigma of ΑΣ'Σ is not final, the last is.
  EXPECT_EQ(wgi::pipelines::to_lower_js("ΟΔΟΣ ΑΣ'Σ"), "οδος ασ'ς");
  EXPECT_EQ(wgi::pipelines::to_lower_js("İ"), "i\u0307");
}

TEST(SiglipTokenizer, Errors) {
  const fs::path dir = fs::temp_directory_path() / ("wgi_siglip_tok_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  try {
    SiglipTokenizer::from_folder(dir);
    ADD_FAILURE() << "no spiece.model: no error";
  } catch (const wgi::Error& e) {
    EXPECT_NE(std::string(e.what()).find("lacks spiece.model"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "spiece.model") << "not a model";
  try {
    SiglipTokenizer::from_folder(dir);
    ADD_FAILURE() << "a bad spiece.model: no error";
  } catch (const wgi::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a SentencePiece model"), std::string::npos) << e.what();
  }
  fs::copy_file(kTiny / "spiece.model", dir / "spiece.model", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"pad_token": "<nope>"})";
  try {
    SiglipTokenizer::from_folder(dir);
    ADD_FAILURE() << "an unknown pad token: no error";
  } catch (const wgi::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'<nope>' is not a piece"), std::string::npos) << e.what();
  }
  fs::remove(dir / "tokenizer_config.json");
  const SiglipTokenizer tokenizer = SiglipTokenizer::from_folder(dir);
  EXPECT_THROW(tokenizer.encode("bad \xff utf-8"), wgi::Error);
  fs::remove_all(dir);
}

}  // namespace
