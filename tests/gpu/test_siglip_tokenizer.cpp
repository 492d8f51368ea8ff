// wgi's SigLIP tokenizer (src/pipelines/siglip_tokenizer.cpp) from each of its sources, tokenizer.json
// (pipelines::Tokenizer's Unigram model) and spiece.model (libsentencepiece plus SiglipTokenizer's
// normalisation), against transformers.js 4.3.1 on tests/data/pipelines/siglip_tiny's tokenizer.json:
// expected_token_ids.json holds 400 strings (case, ASCII and Unicode
// punctuation, every kind of JavaScript whitespace, characters outside the vocabulary, special pieces inside
// the text, Greek sigmas, texts past 64 ids) and the ids transformers.js's pipeline feeds for each
// (tokenizer(texts, {padding: 'max_length', truncation: true})), written by tests/models/siglip_folder.py.
// Every id must be equal. Then the Unigram model against libsentencepiece itself on a few thousand seeded
// strings (tests/support/tokenizer_strings.h), normalised first, as the same pieces and scores: every id
// must be equal (the wider comparison with transformers.js is tests/unit/test_unigram.cpp).
//
// In wgi_gpu_tests although it needs no GPU: wgi_unit_tests links Debian's libprotobuf 3.21 (for ONNX's
// classes), whose symbols take the place of the protobuf-lite 3.14 that libsentencepiece bundles, and its
// version check then refuses to parse spiece.model (docs/siglip.md).
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
#include "pipelines/sentencepiece_model.h"
#include "pipelines/siglip_tokenizer.h"
#include "pipelines/tokenizer.h"
#include "support/tokenizer_strings.h"
#include "wgi/error.h"

namespace {

namespace fs = std::filesystem;
using wgi::pipelines::SiglipTokenizer;
const fs::path kTiny = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip_tiny";

// A scratch copy of the tiny folder's tokenizer files without `skipped`.
struct TokenizerFolder {
  fs::path path;
  explicit TokenizerFolder(const std::string& skipped) {
    path = fs::temp_directory_path() / ("wgi_siglip_tok_only_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
    for (const char* file : {"spiece.model", "tokenizer.json", "tokenizer_config.json"}) {
      if (file != skipped) fs::copy_file(kTiny / file, path / file);
    }
  }
  ~TokenizerFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// `reference`: the folder whose expected_token_ids.json holds transformers.js's ids; ids in
// [first_fallback, end_fallback): what text outside the vocabulary becomes (<unk>, or the byte pieces), which
// the cases must reach.
void expect_ids_of_transformers_js(const fs::path& folder, const fs::path& reference = kTiny,
                                   int64_t pad_id = 1, int64_t first_fallback = 2, int64_t end_fallback = 3) {
  const SiglipTokenizer tokenizer = SiglipTokenizer::from_folder(folder);
  EXPECT_EQ(tokenizer.max_length(), 64);
  EXPECT_EQ(tokenizer.pad_id(), pad_id);
  EXPECT_EQ(tokenizer.eos_id(), 1);
  const wgi::json::Value expected =
      wgi::json::parse(wgi::npy::read_file(reference / "expected_token_ids.json"));
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
    with_unknown += std::any_of(want.begin(), want.end(),
                                [&](int64_t id) { return id >= first_fallback && id < end_fallback; });
    ++compared;
  }
  EXPECT_EQ(compared, strings.size());
  EXPECT_GT(truncated, 0u);     // the cases cover truncation...
  EXPECT_GT(with_unknown, 0u);  // ...and characters outside the vocabulary
}

TEST(SiglipTokenizer, IdsEqualTransformersJs) {
  {
    SCOPED_TRACE("tokenizer.json");
    const SiglipTokenizer tokenizer = SiglipTokenizer::from_folder(kTiny);
    EXPECT_EQ(tokenizer.source(), kTiny / "tokenizer.json");  // chosen over spiece.model
    expect_ids_of_transformers_js(kTiny);
  }
  {
    SCOPED_TRACE("spiece.model alone");
    const TokenizerFolder folder("tokenizer.json");
    EXPECT_EQ(SiglipTokenizer::from_folder(folder.path).source(), folder.path / "spiece.model");
    expect_ids_of_transformers_js(folder.path);
  }
  {
    SCOPED_TRACE("SigLIP 2's Gemma tokenizer.json (BPE, byte_fallback)");
    const fs::path tiny2 = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip2_tiny";
    expect_ids_of_transformers_js(tiny2, tiny2, /*pad_id=*/0, /*first_fallback=*/4, /*end_fallback=*/260);
  }
}

// The Unigram model (tokenizer.json) against libsentencepiece (spiece.model) on normalised text, where both
// see the same pieces: the Viterbi search and unknown runs. One known difference: on an exact tie of two
// segmentations (the same pieces in another order, e.g. "111" = "1" + "11" = "11" + "1"), transformers.js and
// the tokenizers library keep the path whose last piece starts first ("1" + "11") and libsentencepiece the
// other. wgi follows transformers.js (what the pipeline's reference feeds), so a difference passes only when
// both segmentations score the same; every other string must give the same ids.
TEST(SiglipTokenizer, UnigramEqualsLibsentencepiece) {
  const wgi::pipelines::Tokenizer unigram = wgi::pipelines::Tokenizer::from_folder(kTiny);
  const auto spm =
      wgi::pipelines::SentencePieceModel::load(wgi::npy::read_file(kTiny / "spiece.model"), "spiece.model");
  // The pieces' scores as tokenizer.json has them (the unknown piece's: min - 10, as both models score it).
  // The parsed document is held here: a range-for over a member of the temporary would read freed memory.
  const wgi::json::Value tokenizer_json = wgi::json::parse(wgi::npy::read_file(kTiny / "tokenizer.json"));
  std::vector<double> scores;
  for (const auto& entry : tokenizer_json.find("model")->find("vocab")->array) {
    scores.push_back(entry.array[1].number);
  }
  ASSERT_EQ(scores.size(), spm.size());
  scores[2] = *std::min_element(scores.begin(), scores.end()) - 10;
  const auto score_of = [&](const auto& ids) {
    double sum = 0;
    for (auto id : ids) sum += scores.at(static_cast<size_t>(id));
    return sum;
  };
  std::vector<std::string> pieces;
  for (size_t id = 3; id < spm.size(); ++id) {
    std::string piece = spm.piece(static_cast<int64_t>(id));
    if (piece.rfind("\u2581", 0) == 0) piece.erase(0, 3);
    if (!piece.empty()) pieces.push_back(piece);
  }
  std::vector<std::string> strings = wgi::test::tokenizer_strings(3000, pieces, 20261202);
  // Pieces glued without spaces: many segmentations to choose from.
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    std::string glued;
    for (size_t n = 1 + rng() % 8; n > 0; --n) glued += pieces[rng() % pieces.size()];
    strings.push_back(glued);
  }
  size_t compared = 0, with_unknown = 0, ties = 0;
  for (const std::string& s : strings) {
    const std::string normalized = wgi::pipelines::normalize_siglip_text(s);
    if (normalized.empty()) continue;
    const std::vector<int64_t> want = spm.encode(normalized);
    const std::vector<int32_t> got32 = unigram.encode(normalized, /*add_special_tokens=*/false);
    const std::vector<int64_t> got(got32.begin(), got32.end());
    if (got != want) {
      // A tie: the same total score (the same scores summed in another order: 1e-9 covers the rounding).
      EXPECT_NEAR(score_of(got), score_of(want), 1e-9) << wgi::json::quote(normalized);
      ++ties;
    }
    with_unknown += std::find(want.begin(), want.end(), 2) != want.end();
    ++compared;
  }
  EXPECT_GT(compared, 3500u);  // a comparison of nothing must fail
  EXPECT_GT(with_unknown, 100u);
  EXPECT_LT(ties, compared / 20);  // ties are the exception, not what the comparison measures
  std::cout << "[ " << compared << " strings: " << compared - ties << " with libsentencepiece's ids, " << ties
            << " exact ties segmented the other way ]\n";
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
    EXPECT_NE(std::string(e.what()).find("lacks tokenizer.json and spiece.model"), std::string::npos)
        << e.what();
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
