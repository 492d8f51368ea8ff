// wgi's byte-level BPE tokenizer and Florence-2 text processing (src/pipelines/) against transformers.js 4.3,
// the independent reference: tests/pipelines/make_tokenizer.mjs writes a Florence-2-shaped tokenizer from
// GPT-2's real vocabulary, tests/pipelines/reference.mjs runs transformers.js on the same cases (node, with
// scripts/setup's third_party/pipelines), and every result must be identical: ids, text, and box coordinates
// to the last bit (both sides compute (bin + 0.5) / 1000 * size in float64, and JSON carries float64
// exactly). Without node or transformers.js the tests fail: a comparison that compared nothing must not pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/json.h"
#include "pipelines/florence2_text.h"
#include "pipelines/tokenizer.h"
#include "pipelines/unicode.h"
#include "wgi/error.h"

namespace {

namespace fs = std::filesystem;
using wgi::json::Value;
using wgi::pipelines::Tokenizer;
namespace florence2 = wgi::pipelines::florence2;

const fs::path kScripts = fs::path(WGI_TEST_DATA_DIR) / ".." / "pipelines";

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void run(const std::string& command) {
  if (std::system(command.c_str()) != 0) {
    throw wgi::Error("reference command failed (node and scripts/setup's third_party/pipelines needed): " +
                     command);
  }
}

std::string utf8(char32_t cp) {
  std::string s;
  wgi::pipelines::unicode::append_utf8(s, cp);
  return s;
}

// A scratch folder for this process, removed at exit.
struct ScratchFolder {
  fs::path path = fs::temp_directory_path() / ("wgi_pipelines_" + std::to_string(::getpid()));
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

fs::path make_tokenizer(const std::string& name, const std::string& options) {
  static const ScratchFolder scratch;
  const fs::path dir = scratch.path / name;
  fs::create_directories(dir);
  run("node '" + (kScripts / "make_tokenizer.mjs").string() + "' '" + dir.string() + "'" + options);
  return dir;
}

// The Florence-2-shaped tokenizer folder, written once per test binary run.
const fs::path& tokenizer_folder() {
  static const fs::path folder = make_tokenizer("florence2", "");
  return folder;
}

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::from_folder(tokenizer_folder());
  return t;
}

// The same vocabulary with the options Florence-2 does not use (make_tokenizer.mjs --variant).
const fs::path& variant_folder() {
  static const fs::path folder = make_tokenizer("variant", " --variant");
  return folder;
}

std::string quote_all(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + wgi::json::quote(items[i]);
  return out + "]";
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

std::vector<int32_t> ids_of(const Value& v) {
  std::vector<int32_t> ids;
  for (const Value& x : v.array) ids.push_back(static_cast<int32_t>(x.number));
  return ids;
}

struct PostCase {
  std::string text, task;
  double width, height;
};

struct Cases {
  std::vector<std::string> encode;
  std::vector<std::vector<int32_t>> decode;
  std::vector<std::pair<std::string, std::string>> prompts;
  std::vector<PostCase> post;
};

// transformers.js's results for `cases` with the tokenizer in `folder`, through reference.mjs.
Value reference(const Cases& c, const std::string& name, const fs::path& folder = tokenizer_folder()) {
  const fs::path dir = folder.parent_path();
  std::string text =
      "{\"folder\":" + wgi::json::quote(folder.string()) + ",\"encode\":" + quote_all(c.encode);
  text += ",\"decode\":[";
  for (size_t i = 0; i < c.decode.size(); ++i) text += (i ? "," : "") + ids_json(c.decode[i]);
  text += "],\"prompts\":[";
  for (size_t i = 0; i < c.prompts.size(); ++i) {
    text += (i ? ",[" : "[") + wgi::json::quote(c.prompts[i].first) + "," +
            wgi::json::quote(c.prompts[i].second) + "]";
  }
  text += "],\"post\":[";
  for (size_t i = 0; i < c.post.size(); ++i) {
    const PostCase& p = c.post[i];
    text += std::string(i ? "," : "") + "{\"text\":" + wgi::json::quote(p.text) +
            ",\"task\":" + wgi::json::quote(p.task) + ",\"width\":" + wgi::json::number(p.width) +
            ",\"height\":" + wgi::json::number(p.height) + "}";
  }
  text += "]}";
  const fs::path in = dir / (name + "_cases.json"), out = dir / (name + "_reference.json");
  std::ofstream(in, std::ios::binary) << text;
  run("node '" + (kScripts / "reference.mjs").string() + "' '" + in.string() + "' '" + out.string() + "'");
  return wgi::json::parse(read_file(out));
}

// Seeded text from pieces that exercise each part of the tokenizer: every branch of GPT-2's split, scripts
// and categories (CJK, accents precomposed and combining, emoji sequences, numbers of other scripts),
// JavaScript whitespace and its near misses (U+0085, U+200B), contractions, long words, and the added tokens
// inside text.
class TextGenerator {
 public:
  explicit TextGenerator(uint32_t seed) : rng_(seed) {}

  std::string text() {
    std::string s;
    if (chance(0.15)) s += pick({" ", "  ", "\t", "\n", " \n "});
    const int pieces = uniform(0, 12);
    for (int i = 0; i < pieces; ++i) s += piece();
    if (chance(0.15)) s += pick({" ", "   ", "\n", "\t ", "\u3000"});
    return s;
  }

 private:
  std::string piece() {
    switch (uniform(0, 17)) {
      case 0:
        return word(uniform(1, 8));
      case 1:
        return " " + word(uniform(1, 10));
      case 2:
        return pick({" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \t\n", "\u00a0", "\u3000", "\u2028",
                     "\u2009", "\ufeff", "\v", "\f", "\u0085", "\u200b", "\u1680 "});
      case 3:
        return pick({"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", "\u2019s", " 's", "n't", "'"});
      case 4:
        return std::to_string(uniform(0, 1000000)) +
               (chance(0.3) ? "." + std::to_string(uniform(0, 99)) : "");
      case 5:
        return pick({".",  ",", "!", "?",  " .", " ,", "...", "?!", "--", "()",
                     "[]", "{", "}", "\"", "#",  "@",  "$%",  "&*", "+=", "/\\",
                     "|",  "~", "`", "^",  "_",  ";:", " ' ", "<",  ">",  "<<"});
      case 6:
        return pick({"<s>",
                     "</s>",
                     "<pad>",
                     "<unk>",
                     "<mask>",
                     " <mask>",
                     "<mask> ",
                     "<od>",
                     "</od>",
                     "<ocr>",
                     "</ocr>",
                     "<cap>",
                     "</cap>",
                     "<and>",
                     "<sep>",
                     "<poly>",
                     "<region_to_desciption>",
                     "<grounding>",
                     "<|endoftext|>",
                     "<loc_",
                     "<loc_1000>",
                     "<loc_-1>",
                     "<s",
                     "s>",
                     "<<s>>"});
      case 7:
        return "<loc_" + std::to_string(uniform(0, 999)) + ">";
      case 8:
        return pick({"caf\u00e9", "cafe\u0301", "na\u00efve", "\u00fcber", "Stra\u00dfe", "se\u00f1or",
                     "\u0105\u0119\u0142", "\u1ebf", "a\u0300\u0301\u0302", "\u0301"});
      case 9:
        return cjk();
      case 10:
        return emoji();
      case 11:
        return pick({"\u0661\u0662\u0663", "\u00b2", "\u00bd", "\u2167", "\u0969\u096a", "\uff11\uff12",
                     "\u2460", "\U0001D7D9"});
      case 12:
        return pick({"\u041f\u0440\u0438\u0432\u0435\u0442", "\u03b1\u03b2\u03b3", "\u05e9\u05dc\u05d5\u05dd",
                     "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947",
                     "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", " \u0416"});
      case 13:
        return word(uniform(30, 300));
      case 14:
        return any_code_point();
      case 15:
        return pick({"\x01", "\x7f", "\x1b[0m", "\x08"});
      case 16:
        return chance(0.5) ? "HELLO" : "MiXeD" + word(3);
      default:
        return " " + std::to_string(uniform(0, 99)) + word(2);
    }
  }
  std::string word(int length) {
    std::string s;
    for (int i = 0; i < length; ++i)
      s += static_cast<char>(uniform(0, 9) == 0 ? 'A' + uniform(0, 25) : 'a' + uniform(0, 25));
    return s;
  }
  std::string cjk() {
    std::string s;
    const char32_t starts[] = {0x4E00, 0x3041, 0x30A1, 0xAC00, 0x20000};
    const char32_t spans[] = {0x5000, 0x50, 0x50, 0x2B00, 0x100};
    const int script = uniform(0, 4), n = uniform(1, 6);
    for (int i = 0; i < n; ++i)
      s += utf8(starts[script] + static_cast<char32_t>(uniform(0, static_cast<int>(spans[script]) - 1)));
    return s;
  }
  std::string emoji() {
    switch (uniform(0, 4)) {
      case 0:
        return utf8(0x1F600 + static_cast<char32_t>(uniform(0, 0x4F)));
      case 1:
        return "\U0001F468\u200D\U0001F469\u200D\U0001F467";
      case 2:
        return "\U0001F44D" + utf8(0x1F3FB + static_cast<char32_t>(uniform(0, 4)));
      case 3:
        return "\U0001F1EF\U0001F1F5";
      default:
        return "\u2764\uFE0F";
    }
  }
  std::string any_code_point() {
    char32_t cp;
    do {
      cp = chance(0.8) ? static_cast<char32_t>(uniform(0x80, 0xFFFF))
                       : static_cast<char32_t>(uniform(0x10000, 0x10FFFF));
    } while (cp >= 0xD800 && cp <= 0xDFFF);
    return utf8(cp);
  }
  std::string pick(std::initializer_list<const char*> options) {
    return *(options.begin() + uniform(0, static_cast<int>(options.size()) - 1));
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  std::mt19937 rng_;
};

// The texts every tokenizer test compares, and transformers.js's results for them.
struct TokenizerReference {
  Cases cases;
  Value result;
};

const TokenizerReference& tokenizer_reference() {
  static const TokenizerReference ref = [] {
    TokenizerReference r;
    TextGenerator gen(20261201);
    r.cases.encode = {"",
                      " ",
                      "Hello world",
                      " Hello world",
                      "Hello world ",
                      "  leading and trailing  ",
                      "I'm sure it's 'quoted' and they've we'll you'd",
                      "a\n\nb  \t c",
                      "12345678901234567890",
                      "<s>already</s>",
                      "<od>car</od><loc_1><loc_22><loc_333><loc_999>",
                      "What is the text in the image?"};
    for (int i = 0; i < 3000; ++i) r.cases.encode.push_back(gen.text());
    // Random ids: the whole vocabulary, the single-byte tokens (ids 4-259, which make invalid UTF-8 when
    // mixed), the added tokens, and ids outside the vocabulary (the unknown token).
    std::mt19937 rng(7);
    const int vocab = static_cast<int>(tokenizer().vocab_size());
    for (int i = 0; i < 600; ++i) {
      std::vector<int32_t> ids(std::uniform_int_distribution<size_t>(1, 24)(rng));
      for (int32_t& id : ids) {
        switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
          case 0:
            id = std::uniform_int_distribution<int32_t>(vocab, vocab + 5)(rng);
            break;
          case 1:
            id = -1;
            break;
          case 2:
          case 3:
            id = std::uniform_int_distribution<int32_t>(50260, vocab - 1)(rng);
            break;
          case 4:
          case 5:
          case 6:
            id = std::uniform_int_distribution<int32_t>(4, 259)(rng);
            break;
          default:
            id = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
        }
      }
      r.cases.decode.push_back(ids);
    }
    r.result = reference(r.cases, "tokenizer");
    return r;
  }();
  return ref;
}

TEST(Tokenizer, EncodesAsTransformersJs) {
  const TokenizerReference& ref = tokenizer_reference();
  const Value& expected = *ref.result.find("encode");
  ASSERT_EQ(expected.array.size(), ref.cases.encode.size());
  ASSERT_GE(expected.array.size(), 3000u);
  size_t compared = 0, tokens = 0;
  for (size_t i = 0; i < ref.cases.encode.size(); ++i) {
    const std::string& text = ref.cases.encode[i];
    const Value& e = expected.array[i];
    const std::vector<int32_t> ids = tokenizer().encode(text);
    EXPECT_EQ(ids, ids_of(*e.find("ids"))) << "text " << wgi::json::quote(text);
    EXPECT_EQ(tokenizer().encode(text, false), ids_of(*e.find("ids_plain")))
        << "text " << wgi::json::quote(text);
    EXPECT_EQ(tokenizer().decode(ids), e.find("decoded")->string) << "text " << wgi::json::quote(text);
    EXPECT_EQ(
        tokenizer().decode(ids, {.skip_special_tokens = true, .clean_up_tokenization_spaces = std::nullopt}),
        e.find("decoded_skip")->string)
        << "text " << wgi::json::quote(text);
    ++compared;
    tokens += ids.size();
  }
  EXPECT_GT(tokens, 30000u);
  std::cerr << "[ compared " << compared << " texts, " << tokens << " tokens, with transformers.js ]\n";
}

TEST(Tokenizer, DecodesAsTransformersJs) {
  const TokenizerReference& ref = tokenizer_reference();
  const Value& expected = *ref.result.find("decode");
  ASSERT_EQ(expected.array.size(), ref.cases.decode.size());
  ASSERT_GE(expected.array.size(), 600u);
  size_t replaced = 0;
  for (size_t i = 0; i < ref.cases.decode.size(); ++i) {
    const std::vector<int32_t>& ids = ref.cases.decode[i];
    const Value& e = expected.array[i];
    EXPECT_EQ(tokenizer().decode(ids), e.find("text")->string) << "ids " << ids_json(ids);
    EXPECT_EQ(
        tokenizer().decode(ids, {.skip_special_tokens = true, .clean_up_tokenization_spaces = std::nullopt}),
        e.find("skip")->string)
        << "ids " << ids_json(ids);
    EXPECT_EQ(tokenizer().decode(ids, {.clean_up_tokenization_spaces = false}), e.find("raw")->string)
        << "ids " << ids_json(ids);
    replaced += e.find("text")->string.find("\uFFFD") != std::string::npos;
  }
  // The random byte tokens must have exercised the replacement of invalid UTF-8.
  EXPECT_GT(replaced, 50u);
}

TEST(Tokenizer, OtherOptionsAsTransformersJs) {
  // add_prefix_space, [a, b] merges, ignore_merges, no post-processor, no clean-up, rstrip.
  const Tokenizer variant = Tokenizer::from_folder(variant_folder());
  Cases cases;
  TextGenerator gen(99);
  cases.encode = {"",
                  "Hello",
                  " Hello",
                  "<s>Hello</s>",
                  "x <mask> y",
                  "it 's ok . really ?",
                  "a \t<sep>\n b",
                  "<sep> <sep>  <mask>  <sep>"};
  for (int i = 0; i < 800; ++i) cases.encode.push_back(gen.text());
  const Value ref = reference(cases, "variant", variant_folder());
  const Value& expected = *ref.find("encode");
  ASSERT_EQ(expected.array.size(), cases.encode.size());
  size_t tokens = 0;
  for (size_t i = 0; i < cases.encode.size(); ++i) {
    const std::string& text = cases.encode[i];
    const Value& e = expected.array[i];
    const std::vector<int32_t> ids = variant.encode(text);
    EXPECT_EQ(ids, ids_of(*e.find("ids"))) << "text " << wgi::json::quote(text);
    EXPECT_EQ(variant.decode(ids), e.find("decoded")->string) << "text " << wgi::json::quote(text);
    EXPECT_EQ(
        variant.decode(ids, {.skip_special_tokens = true, .clean_up_tokenization_spaces = std::nullopt}),
        e.find("decoded_skip")->string)
        << "text " << wgi::json::quote(text);
    tokens += ids.size();
  }
  EXPECT_GT(tokens, 8000u);
  // No post-processor: nothing added around the text.
  EXPECT_EQ(variant.encode("Hello"), variant.encode("Hello", false));
}

TEST(Tokenizer, LayoutIsFlorence2s) {
  const Tokenizer& t = tokenizer();
  EXPECT_EQ(t.token_to_id("<s>"), 0);
  EXPECT_EQ(t.token_to_id("<pad>"), 1);
  EXPECT_EQ(t.token_to_id("</s>"), 2);
  EXPECT_EQ(t.token_to_id("<unk>"), 3);
  EXPECT_EQ(t.token_to_id("<mask>"), 50260);
  EXPECT_EQ(t.token_to_id("<od>"), 50261);
  EXPECT_EQ(t.token_to_id("<loc_0>"), 50265);
  EXPECT_EQ(t.token_to_id("<loc_999>"), 51264);
  EXPECT_EQ(t.token_to_id("<and>"), 51284);
  EXPECT_EQ(t.vocab_size(), 51285u);
  EXPECT_EQ(t.id_to_token(51264), "<loc_999>");
  EXPECT_EQ(t.id_to_token(51285), std::nullopt);
  EXPECT_EQ(t.added_tokens().size(), 5u + 1024u);
}

// A tokenizer.json small enough to break one key at a time.
std::string tiny_tokenizer(const std::string& model_extra = "", const std::string& root_extra = "") {
  return std::string(
             R"({"added_tokens":[{"id":0,"content":"<s>","special":true},{"id":1,"content":"</s>","special":true}],)") +
         R"("normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},)" +
         R"("post_processor":{"type":"RobertaProcessing","cls":["<s>",0],"sep":["</s>",1]},)" +
         R"("decoder":{"type":"ByteLevel"},)" + root_extra + R"("model":{"type":"BPE",)" + model_extra +
         R"("vocab":{"<s>":0,"</s>":1,"a":2,"b":3,"ab":4,"Ġ":5,".":6},"merges":[["a","b"]]}})";
}

std::string error_of(const std::string& json) {
  try {
    Tokenizer::from_json(json);
  } catch (const wgi::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Tokenizer, SmallFileWithPairMerges) {
  const Tokenizer t = Tokenizer::from_json(tiny_tokenizer());
  EXPECT_EQ(t.encode("abab a"), (std::vector<int32_t>{0, 4, 4, 5, 2, 1}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{0, 4, 5, 3, 1}), "<s>ab b</s>");
  EXPECT_EQ(t.decode(std::vector<int32_t>{}), "");
  // Without an unk_token, a piece outside the vocabulary is an error rather than dropped.
  EXPECT_NE(std::string([&] {
              try {
                t.encode("c");
              } catch (const wgi::Error& e) {
                return std::string(e.what());
              }
              return std::string();
            }())
                .find("no unk_token"),
            std::string::npos);
}

TEST(Tokenizer, MalformedFilesSayWhichKey) {
  const auto expect_error = [](const std::string& json, const std::string& part) {
    const std::string message = error_of(json);
    EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
  };
  expect_error("[1]", "(the document)' must be an object");
  expect_error("{", "tokenizer.json: line 1");
  expect_error(R"({"normalizer":null})", "'model' is missing");
  expect_error(tiny_tokenizer(R"("byte_fallback":true,)"), "'model.byte_fallback' must be false");
  expect_error(tiny_tokenizer(R"("unk_token":"<nope>",)"), "'model.unk_token' names '<nope>'");
  expect_error(tiny_tokenizer(R"("end_of_word_suffix":"</w>",)"), "'model.end_of_word_suffix' must be empty");
  std::string bad = tiny_tokenizer();
  expect_error(std::string(bad).replace(bad.find("\"merges\":[[\"a\",\"b\"]]"), 20, "\"merges\":[\"ab\"]"),
               "'model.merges[0]' must be two tokens");
  expect_error(std::string(bad).replace(bad.find("\"ab\":4"), 6, "\"ab\":2.5"),
               "'model.vocab.ab' must be a token id");
  expect_error(std::string(bad).replace(bad.find("\"ab\":4"), 6, "\"ab\":3"), "has id 3, which 'b' has too");
  expect_error(std::string(bad).replace(bad.find("\"ab\":4"), 6, "\"a\\u4e00\":4"),
               "outside the ByteLevel alphabet (U+4E00)");
  expect_error(
      std::string(bad).replace(bad.find("\"type\":\"ByteLevel\",\"add"), 18, "\"type\":\"Metaspace\""),
      "'decoder' is ByteLevel, which wgi takes with a ByteLevel pre-tokenizer only");
  expect_error(std::string(bad).replace(bad.find("\"normalizer\":null"), 17, "\"normalizer\":{}"),
               "'normalizer.type' is missing");
  expect_error(std::string(bad).replace(bad.find("[\"</s>\",1]"), 10, "[\"<x>\",1]"),
               "'post_processor.sep' names '<x>'");
  expect_error(std::string(bad).replace(bad.find("\"id\":0"), 6, "\"id\":-1"),
               "'added_tokens[0].id' must be a token id");
  expect_error(std::string(bad).replace(bad.find("\"ab\":4"), 6, "\"ab\":1e9"),
               "'model.vocab.ab' must be a token id (an integer in [0, 274)");
  expect_error(std::string(bad).replace(bad.find("\"added_tokens\":["), 16, "\"added_tokens\":{},\"x\":["),
               "'added_tokens' must be an array");
}

TEST(Tokenizer, MutatedFilesFailCleanly) {
  // Random byte edits of a valid file: each loads or throws wgi::Error, and what loads encodes and decodes
  // (or throws wgi::Error) without crashing.
  const std::string good = tiny_tokenizer();
  std::mt19937 rng(17);
  const std::string alphabet = "{}[]\",:0123456789-.eE ntrufalsbBPEyLv\\Ġ\x80\xff";
  size_t loaded = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string json = good;
    const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int e = 0; e < edits; ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, json.size() - 1)(rng);
      const char c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0:
          json[at] = c;
          break;
        case 1:
          json.insert(at, 1, c);
          break;
        default:
          json.erase(at, 1);
      }
    }
    std::optional<Tokenizer> t;
    try {
      t.emplace(Tokenizer::from_json(json));
      ++loaded;
    } catch (const wgi::Error&) {
      ++rejected;
      continue;
    }
    for (const char* text : {"abab a", "<s>b</s>", "", " \t\n"}) {
      try {
        const std::vector<int32_t> ids = t->encode(text);
        t->decode(ids);
        t->decode(ids, {.skip_special_tokens = true, .clean_up_tokenization_spaces = false});
        t->decode(std::vector<int32_t>{-7, 0, 1 << 30});
      } catch (const wgi::Error&) {
      }
    }
  }
  EXPECT_GT(loaded, 100u);
  EXPECT_GT(rejected, 1000u);
}

TEST(Tokenizer, MalformedConfigSaysWhichKey) {
  const auto error_with_config = [](const std::string& config) {
    try {
      Tokenizer::from_json(tiny_tokenizer(), config);
    } catch (const wgi::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_with_config(R"({"clean_up_tokenization_spaces":"yes"})"),
            "tokenizer_config.json: 'clean_up_tokenization_spaces' must be a boolean, found a string");
  EXPECT_EQ(error_with_config(R"({"remove_space":true})"),
            "tokenizer_config.json: 'remove_space' must be false (wgi does not rewrite the text before BPE)");
  EXPECT_EQ(error_with_config(R"({"additional_special_tokens":[3]})"),
            "tokenizer_config.json: 'additional_special_tokens[0]' must be a string, found a number");
  // Without clean-up, " ." stays; with it (the default), the space goes.
  const Tokenizer raw = Tokenizer::from_json(tiny_tokenizer(), R"({"clean_up_tokenization_spaces":false})");
  const std::vector<int32_t> ids = {2, 5, 6};
  EXPECT_EQ(raw.decode(ids), "a .");
  EXPECT_EQ(raw.decode(ids, {.skip_special_tokens = false, .clean_up_tokenization_spaces = true}), "a.");
  EXPECT_EQ(Tokenizer::from_json(tiny_tokenizer()).decode(ids), "a.");
}

TEST(Tokenizer, RejectsInvalidUtf8) {
  for (const std::string& text : {std::string("a\xff"), std::string("\xc0\xaf"), std::string("\xed\xa0\x80"),
                                  std::string("\xe2\x82")}) {
    EXPECT_THROW(tokenizer().encode(text), wgi::Error) << wgi::json::quote(text);
  }
}

// ---- Florence-2's prompts and post-processing ----------------------------------------------------------

std::string loc(int bin) {
  return "<loc_" + std::to_string(bin) + ">";
}

// Generated texts as the model writes them, with the irregularities the parser must survive.
std::string generated_text(std::mt19937& rng, florence2::AnswerType type) {
  const auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  static const char* kLabels[] = {
      "car",           "a red car",       " door ",     "wheel", "caf\u00e9 sign", "\u6c7d\u8f66", "", "  ",
      "traffic light", "person\nwalking", "\U0001F600", "A",     "dog's tail"};
  std::string text = u(0, 3) ? "</s><s>" : "";
  const int items = u(0, 6);
  const int locations = type == florence2::AnswerType::Ocr ? 8 : 4;
  for (int i = 0; i < items; ++i) {
    if (u(0, 4)) text += kLabels[u(0, std::size(kLabels) - 1)];
    const int extra = type == florence2::AnswerType::PhraseGrounding ? u(0, 2) : 0;
    for (int box = 0; box <= extra; ++box) {
      for (int k = 0; k < locations; ++k) {
        switch (u(0, 40)) {
          case 0:
            text += "<loc_" + std::to_string(u(0, 9));
            break;  // Unterminated.
          case 1:
            text += "<loc_x>";
            break;
          case 2:
            text += loc(u(1000, 99999));
            break;  // Beyond the 1000 bins: parsed anyway.
          case 3:
            text += "<loc_007>";
            break;
          default:
            text += loc(u(0, 999));
        }
      }
    }
    if (!u(0, 5)) text += u(0, 1) ? "<" : "\n";
  }
  if (u(0, 1)) text += "</s>";
  if (!u(0, 4)) text += "<pad><pad>";
  return text;
}

TEST(Florence2Text, PromptsAndPostProcessingAsTransformersJs) {
  Cases cases;
  std::mt19937 rng(11);
  TextGenerator gen(5);
  for (const florence2::Task& task : florence2::tasks()) {
    if (!task.takes_input) {
      cases.prompts.emplace_back(task.name, "");
      continue;
    }
    cases.prompts.emplace_back(task.name, "a green car parked in front of a yellow building");
    cases.prompts.emplace_back(task.name, loc(52) + loc(332) + loc(932) + loc(774));
    for (int i = 0; i < 5; ++i) {
      // Random text, but not one that construct_prompt rejects (empty, or holding a task token).
      for (;;) {
        const std::string text = gen.text();
        try {
          florence2::construct_prompt(task.name, text);
        } catch (const wgi::Error&) {
          continue;
        }
        cases.prompts.emplace_back(task.name, text);
        break;
      }
    }
  }
  for (const florence2::Task& task : florence2::tasks()) {
    for (int i = 0; i < 40; ++i) {
      const double width = std::uniform_int_distribution<int>(1, 4000)(rng);
      const double height = i == 0 ? 333.5 : std::uniform_int_distribution<int>(1, 4000)(rng);
      cases.post.push_back({generated_text(rng, task.answer), std::string(task.name), width, height});
    }
  }
  // The prompts are what the tokenizer encodes: compare their ids too.
  std::vector<std::string> prompts;
  for (const auto& [task, text] : cases.prompts) prompts.push_back(florence2::construct_prompt(task, text));
  cases.encode = prompts;
  const Value ref = reference(cases, "florence2");

  const Value& expected_prompts = *ref.find("prompts");
  ASSERT_EQ(expected_prompts.array.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(prompts[i], expected_prompts.array[i].string)
        << cases.prompts[i].first << " " << cases.prompts[i].second;
    EXPECT_EQ(tokenizer().encode(prompts[i]), ids_of(*ref.find("encode")->array[i].find("ids")))
        << prompts[i];
  }

  const Value& expected_post = *ref.find("post");
  ASSERT_EQ(expected_post.array.size(), cases.post.size());
  size_t boxes = 0, quads = 0, texts = 0, errors = 0;
  for (size_t i = 0; i < cases.post.size(); ++i) {
    const PostCase& c = cases.post[i];
    const Value& e = expected_post.array[i];
    const std::string where = c.task + " " + wgi::json::quote(c.text);
    if (e.find("error")) {
      EXPECT_THROW(florence2::post_process_generation(c.text, c.task, {c.width, c.height}), wgi::Error)
          << where;
      ++errors;
      continue;
    }
    const florence2::Answer a = florence2::post_process_generation(c.text, c.task, {c.width, c.height});
    const Value& r = *e.find("result");
    if (r.is(Value::Type::String)) {
      EXPECT_EQ(a.type, florence2::AnswerType::PureText) << where;
      EXPECT_EQ(a.text, r.string) << where;
      ++texts;
      continue;
    }
    std::vector<std::string> labels;
    for (const Value& l : r.find("labels")->array) labels.push_back(l.string);
    EXPECT_EQ(a.labels, labels) << where;
    const bool ocr = a.type == florence2::AnswerType::Ocr;
    const Value& list = *r.find(ocr ? "quad_boxes" : "bboxes");
    ASSERT_EQ(ocr ? a.quad_boxes.size() : a.boxes.size(), list.array.size()) << where;
    for (size_t b = 0; b < list.array.size(); ++b) {
      ASSERT_EQ(list.array[b].array.size(), ocr ? 8u : 4u) << where;
      for (size_t k = 0; k < list.array[b].array.size(); ++k) {
        // Exact: the same float64 operations in the same order on both sides.
        EXPECT_EQ(ocr ? a.quad_boxes[b][k] : a.boxes[b][k], list.array[b].array[k].number)
            << where << " box " << b;
      }
    }
    (ocr ? quads : boxes) += list.array.size();
  }
  EXPECT_GT(boxes, 200u);
  EXPECT_GT(quads, 50u);
  EXPECT_GT(texts, 100u);
  EXPECT_EQ(errors, 3u * 40u);  // The polygon tasks, which neither implements.
  std::cerr << "[ compared " << prompts.size() << " prompts, " << boxes << " boxes, " << quads
            << " quad boxes, " << texts << " texts with transformers.js ]\n";
}

TEST(Florence2Text, RegionInputRoundTrips) {
  std::mt19937 rng(3);
  for (int i = 0; i < 500; ++i) {
    const florence2::ImageSize size{static_cast<double>(std::uniform_int_distribution<int>(1, 5000)(rng)),
                                    std::uniform_real_distribution<double>(0.5, 5000)(rng)};
    std::array<int, 4> bins;
    std::string expected;
    for (int& b : bins) {
      b = std::uniform_int_distribution<int>(0, 999)(rng);
      expected += loc(b);
    }
    // A bin's centre, as post-processing gives it, quantizes back to the bin.
    const florence2::Answer a = florence2::post_process_generation("x" + expected, "<OD>", size);
    ASSERT_EQ(a.boxes.size(), 1u);
    EXPECT_EQ(florence2::region_input(a.boxes[0], size), expected);
  }
  // Outside the image: clamped to the first and last bins.
  EXPECT_EQ(florence2::region_input({-5, -0.1, 640, 1e9}, {640, 480}), loc(0) + loc(0) + loc(999) + loc(999));
  EXPECT_EQ(florence2::region_input({0.63, 0.49, 0.64, 0.48}, {640, 480}), loc(0) + loc(1) + loc(1) + loc(1));
  EXPECT_THROW(florence2::region_input({0, 0, 1, 1}, {0, 480}), wgi::Error);
  EXPECT_THROW(florence2::region_input({0, NAN, 1, 1}, {640, 480}), wgi::Error);
  EXPECT_THROW(florence2::post_process_generation("x", "<OD>", {640, -1}), wgi::Error);
}

TEST(Florence2Text, PromptErrors) {
  const auto message = [](const std::string& task, const std::string& text) {
    try {
      florence2::construct_prompt(task, text);
    } catch (const wgi::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("<DETECT>", "").find("unknown task '<DETECT>' (the tasks are <OCR>, "),
            std::string::npos);
  EXPECT_NE(message("<CAPTION>", "a dog").find("<CAPTION> takes no text input"), std::string::npos);
  EXPECT_NE(message("<REGION_TO_OCR>", "").find("needs a text input (a region"), std::string::npos);
  EXPECT_NE(message("<CAPTION_TO_PHRASE_GROUNDING>", "").find("the caption"), std::string::npos);
  EXPECT_NE(message("<CAPTION_TO_PHRASE_GROUNDING>", "a <OD>").find("holds the task token <OD>"),
            std::string::npos);
  EXPECT_THROW(florence2::post_process_generation("text", "<NOPE>", {10, 10}), wgi::Error);
  EXPECT_EQ(florence2::construct_prompt("<OD>"), "Locate the objects with category name in the image.");
}

}  // namespace
