// pipelines::Tokenizer on SigLIP's tokenizer.json files against transformers.js 4.3.1, the independent
// reference: the Unigram model of tests/data/pipelines/siglip_tiny (src/pipelines/unigram.cpp; Xenova's
// layout: the normalizer Sequence of text_normalizer.cpp, Metaspace, TemplateProcessing's "</s>"), a variant
// of it with other options, and SigLIP 2's Gemma-style BPE with byte_fallback of siglip2_tiny (no
// pre-tokenizer, Replace ' ' -> '\u2581', "<eos>"), on a few thousand seeded strings (tests/support/
// tokenizer_strings.h). tests/pipelines/siglip_transformersjs.mjs --encode runs transformers.js on the same
// strings (node, scripts/setup's third_party/pipelines); ids and decoded text must be identical. Without node
// or transformers.js the tests fail: a comparison that compared nothing must not pass. The comparison with
// libsentencepiece on the same pieces is tests/gpu/test_siglip_tokenizer.cpp (libsentencepiece cannot load in
// this binary, which links Debian's libprotobuf).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "pipelines/tokenizer.h"
#include "support/tokenizer_strings.h"
#include "wgi/error.h"

namespace {

namespace fs = std::filesystem;
using wgi::json::Value;
using wgi::pipelines::Tokenizer;

const fs::path kTiny = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip_tiny";
const fs::path kTiny2 = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip2_tiny";
const fs::path kScript = fs::path(WGI_TEST_DATA_DIR) / ".." / "pipelines" / "siglip_transformersjs.mjs";

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Scratch {
  fs::path path = fs::temp_directory_path() / ("wgi_unigram_" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(path); }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};
const Scratch& scratch() {
  static const Scratch s;
  return s;
}

// transformers.js's {ids, decoded, decoded_skip} for `strings` with the tokenizer folder `folder`.
Value reference(const fs::path& folder, const std::vector<std::string>& strings, const std::string& name) {
  std::string text = "[";
  for (size_t i = 0; i < strings.size(); ++i) text += (i ? "," : "") + wgi::json::quote(strings[i]);
  const fs::path in = scratch().path / (name + "_strings.json"), out = scratch().path / (name + "_ref.json");
  std::ofstream(in, std::ios::binary) << text << "]";
  const std::string command = "node '" + kScript.string() + "' --encode '" + folder.string() + "' '" +
                              in.string() + "' > '" + out.string() + "'";
  if (std::system(command.c_str()) != 0) {
    throw wgi::Error("reference command failed (node and scripts/setup's third_party/pipelines needed): " +
                     command);
  }
  return wgi::json::parse(read_file(out));
}

// The strings: the shared set plus the vocabulary's pieces (without "\u2581") as words.
std::vector<std::string> strings_for(const Tokenizer& t, size_t count, uint32_t seed) {
  std::vector<std::string> words;
  for (int32_t id = 0; static_cast<size_t>(id) < t.vocab_size(); ++id) {
    std::string piece = t.id_to_token(id).value_or("");
    if (piece.rfind("\u2581", 0) == 0) piece.erase(0, 3);
    if (!piece.empty()) words.push_back(piece);
  }
  return wgi::test::tokenizer_strings(count, words, seed);
}

// `is_fallback(id)`: an id the strings must reach often (the unknown piece, or byte-fallback pieces).
template <class IsFallback>
void expect_as_transformers_js(const fs::path& folder, size_t count, uint32_t seed, const std::string& name,
                               IsFallback is_fallback) {
  const Tokenizer t = Tokenizer::from_folder(folder);
  const std::vector<std::string> strings = strings_for(t, count, seed);
  const Value ref = reference(folder, strings, name);
  const auto& ids = ref.find("ids")->array;
  const auto& decoded = ref.find("decoded")->array;
  const auto& decoded_skip = ref.find("decoded_skip")->array;
  ASSERT_EQ(ids.size(), strings.size());
  ASSERT_GE(strings.size(), count);  // a comparison of nothing must fail
  size_t unknown_runs = 0, long_texts = 0, mismatches = 0;
  for (size_t i = 0; i < strings.size() && mismatches < 20; ++i) {
    std::vector<int32_t> want;
    for (const Value& v : ids[i].array) want.push_back(static_cast<int32_t>(v.number));
    const std::vector<int32_t> got = t.encode(strings[i]);
    EXPECT_EQ(got, want) << "string " << i << ": " << wgi::json::quote(strings[i]);
    mismatches += got != want;
    EXPECT_EQ(t.decode(got), decoded[i].string) << "string " << i << ": " << wgi::json::quote(strings[i]);
    EXPECT_EQ(t.decode(got, {.skip_special_tokens = true, .clean_up_tokenization_spaces = std::nullopt}),
              decoded_skip[i].string)
        << "string " << i << ": " << wgi::json::quote(strings[i]);
    unknown_runs += std::any_of(want.begin(), want.end(), is_fallback);
    long_texts += want.size() > 64;
  }
  EXPECT_GT(unknown_runs, count / 20);  // the strings cover text that no piece covers...
  EXPECT_GT(long_texts, 10u);           // ...and texts past SigLIP's 64 ids
}

TEST(UnigramTokenizer, SiglipEncodesAsTransformersJs) {
  expect_as_transformers_js(kTiny, 3000, 20261201, "siglip", [](int32_t id) { return id == 2; });  // <unk>
}

// Gemma's BPE (SigLIP 2): code points merged without a pre-tokenizer, pieces outside the vocabulary as their
// UTF-8 bytes ("<0x00>" .. "<0xFF>" are ids 4 .. 259), decoded by ByteFallback + Fuse.
TEST(GemmaBpeTokenizer, Siglip2EncodesAsTransformersJs) {
  expect_as_transformers_js(kTiny2, 3000, 20261203, "siglip2",
                            [](int32_t id) { return id >= 4 && id < 260; });
}

// SigLIP's pieces with other options: a normalizer without Lowercase (capitals become unknown runs), a
// character class with \s and escapes, Strip on the left only, Metaspace's prepend_scheme "first", and a
// normalized added token (matched in the normalized text).
TEST(UnigramTokenizer, OtherOptionsAsTransformersJs) {
  std::string json = read_file(kTiny / "tokenizer.json");
  const size_t begin = json.find("\"normalizer\":"), end = json.find("\"pre_tokenizer\":");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  json.replace(begin, end - begin, R"("normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Replace", "pattern": {"Regex": "[\\s\\-\\]]+"}, "content": " "},
    {"type": "Replace", "pattern": {"String": "."}, "content": ""},
    {"type": "Strip", "strip_left": true, "strip_right": false}]},
 )");
  const size_t scheme = json.find("\"prepend_scheme\": \"always\"");
  ASSERT_NE(scheme, std::string::npos);
  json.replace(scheme, 26, "\"prepend_scheme\": \"first\"");
  const size_t added = json.find("\"added_tokens\": [");
  ASSERT_NE(added, std::string::npos);
  json.insert(added + 17, R"({"id": 320, "content": "photo of", "single_word": false, "lstrip": false,
    "rstrip": true, "normalized": true, "special": false},)");
  const fs::path folder = scratch().path / "variant";
  fs::create_directories(folder);
  std::ofstream(folder / "tokenizer.json", std::ios::binary) << json;
  fs::copy_file(kTiny / "tokenizer_config.json", folder / "tokenizer_config.json");
  expect_as_transformers_js(folder, 1000, 7, "variant", [](int32_t id) { return id == 2; });
}

// A vocabulary small enough to work out by hand.
std::string small_unigram(const std::string& model_extra = "", const std::string& root_extra = "") {
  return R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}], "normalizer": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": false},
    "post_processor": null, "decoder": {"type": "Metaspace", "replacement": "\u2581"},)" +
         root_extra + R"("model": {"type": "Unigram", "unk_id": 0, )" + model_extra +
         R"("vocab": [["<unk>", 0], ["a", -1], ["b", -1], ["ab", -2], ["c", -3], ["abc", -4],
                      ["<0x78>", -1], ["<0xC3>", -1], ["<0xA9>", -1]]}})";
}

TEST(UnigramTokenizer, ViterbiByHand) {
  const Tokenizer t = Tokenizer::from_json(small_unigram());
  // "ab" scores -2 as one piece and -2 as a + b: equal, so the path whose last piece starts first wins.
  EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{3}));
  // "abc": abc -4 beats ab + c (-5) and a + b + c (-5).
  EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{5}));
  // Unknown characters score min(-4) - 10 each and fuse into one <unk> per run.
  EXPECT_EQ(t.encode("axyb"), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(t.encode("xé"), (std::vector<int32_t>{0}));
  EXPECT_EQ(t.encode(""), (std::vector<int32_t>{}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, 0, 2}), "a<unk>b");
  // byte_fallback: the run's UTF-8 bytes when each has a piece ("x" = 0x78, "é" = C3 A9), else <unk>.
  const Tokenizer bytes = Tokenizer::from_json(small_unigram(R"("byte_fallback": true, )"));
  EXPECT_EQ(bytes.encode("axé"), (std::vector<int32_t>{1, 6, 7, 8}));
  EXPECT_EQ(bytes.encode("ay"), (std::vector<int32_t>{1, 0}));
}

std::string error_of(const std::string& json) {
  try {
    Tokenizer::from_json(json);
  } catch (const wgi::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(UnigramTokenizer, RefusedFilesSayWhy) {
  const auto expect_error = [](const std::string& json, const std::string& part) {
    const std::string message = error_of(json);
    EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
  };
  const std::string good = small_unigram();
  EXPECT_EQ(error_of(good), "no error");
  const auto with_normalizer = [&](const std::string& normalizer) {
    std::string json = good;
    return json.replace(json.find("\"normalizer\": null"), 18, "\"normalizer\": " + normalizer);
  };
  expect_error(with_normalizer(R"({"type": "Replace", "pattern": {"Regex": "\\p{P}"}, "content": ""})"),
               "'normalizer.pattern.Regex' is /\\p{P}/, which wgi does not take");
  expect_error(with_normalizer(R"({"type": "Replace", "pattern": {"Regex": "[^a]"}, "content": ""})"),
               "is /[^a]/, which wgi does not take");
  expect_error(with_normalizer(R"({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})"),
               "is / {2,}/, which wgi does not take");
  expect_error(with_normalizer(R"({"type": "Sequence", "normalizers": [{"type": "NFKC"}]})"),
               "'normalizer.normalizers[0].type' is \"NFKC\", which wgi does not apply");
  expect_error(with_normalizer(R"({"type": "Replace", "pattern": {}, "content": ""})"),
               "'normalizer.pattern' must have a \"String\" or a \"Regex\"");
  std::string split = good;
  split.replace(split.find("\"split\": false"), 14, "\"split\": true");
  expect_error(split, "'pre_tokenizer.split' must be false");
  std::string no_unk = good;
  no_unk.replace(no_unk.find("\"unk_id\": 0, "), 13, "");
  expect_error(no_unk, "'model.unk_id' is missing");
  std::string bad_entry = good;
  bad_entry.replace(bad_entry.find("[\"c\", -3]"), 9, "[\"c\"]");
  expect_error(bad_entry, "'model.vocab[4]' must be [piece, score]");
  std::string byte_level = good;
  byte_level.replace(byte_level.find("\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"prepend"), 19,
                     "\"type\": \"ByteLevel\"");
  expect_error(byte_level, "is \"ByteLevel\", which wgi takes with a BPE model only");
  std::string decoder = good;
  decoder.replace(decoder.find("\"decoder\": {\"type\": \"Metaspace\""), 31,
                  "\"decoder\": {\"type\": \"CTC\"");
  expect_error(decoder, "'decoder.type' is \"CTC\", which wgi does not decode");
}

}  // namespace
