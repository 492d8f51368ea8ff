// pipelines::SiglipTokenizer (siglip_tokenizer.h) on Debian's libsentencepiece. What each step mirrors in
// transformers.js 4.3 (@huggingface/tokenizers 0.2): encode_text's split on added tokens with their
// lstrip/rstrip, the normalizer Sequence of SigLIP's tokenizer.json, Metaspace + Unigram (here SentencePiece
// itself: the same pieces, scores and unknown-run fusing), TemplateProcessing's "$A </s>", then the
// tokenizer call's truncation (the ids are cut, "</s>" included) and padding to max_length.
#include "pipelines/siglip_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <utility>

#include "core/json.h"
#include "core/npy.h"
#include "pipelines/sentencepiece_model.h"
#include "pipelines/unicode.h"
#include "wgi/error.h"

namespace wgi::pipelines {

namespace {

namespace fs = std::filesystem;

struct CodePointRange {
  char32_t first, last;
};
struct LowercaseMapping {
  char32_t from;
  char32_t to[3];
  uint8_t length;
};

#include "pipelines/lowercase_table.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                    [](char32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

constexpr char32_t kCapitalSigma = 0x03A3, kSmallSigma = 0x03C3, kFinalSigma = 0x03C2;
constexpr char32_t kMetaspace = 0x2581;  // SentencePiece's "\u2581", its marker for a space

bool is_cased(char32_t cp) {
  return in_ranges(kCasedRanges, cp);
}
bool is_case_ignorable(char32_t cp) {
  return in_ranges(kCaseIgnorableRanges, cp);
}

// Unicode's Final_Sigma context of the capital sigma at `i`: a cased letter before it (case-ignorable
// characters between allowed) and none after it.
bool is_final_sigma(const std::vector<char32_t>& cps, size_t i) {
  size_t before = i;
  while (before > 0 && is_case_ignorable(cps[before - 1])) --before;
  if (before == 0 || !is_cased(cps[before - 1])) return false;
  size_t after = i + 1;
  while (after < cps.size() && is_case_ignorable(cps[after])) ++after;
  return after == cps.size() || !is_cased(cps[after]);
}

void append_lower(std::vector<char32_t>& out, const std::vector<char32_t>& cps, size_t i) {
  const char32_t cp = cps[i];
  if (cp == kCapitalSigma) {
    out.push_back(is_final_sigma(cps, i) ? kFinalSigma : kSmallSigma);
    return;
  }
  const auto* it = std::lower_bound(std::begin(kLowercase), std::end(kLowercase), cp,
                                    [](const LowercaseMapping& m, char32_t value) { return m.from < value; });
  if (it == std::end(kLowercase) || it->from != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), it->to, it->to + it->length);
}

std::string to_utf8(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t cp : cps) unicode::append_utf8(out, cp);
  return out;
}

// Unicode's White_Space, which the tokenizers library's regexes mean by \s (it rewrites \s to
// \p{White_Space}): JavaScript's \s without U+FEFF, with U+0085. (Strip, after it, trims JavaScript's set.)
bool is_white_space_property(char32_t cp) {
  return cp == 0x85 || (cp != 0xFEFF && unicode::is_whitespace(cp));
}

// Python's string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
bool is_ascii_punctuation(char32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E);
}

std::string read_text(const fs::path& file) {
  try {
    return npy::read_file(file);
  } catch (const Error& e) {
    throw Error("SigLIP tokenizer: " + file.string() + ": " + e.what());
  }
}

// tokenizer_config.json's token entry: a string or an AddedToken object {"content": ...}.
std::optional<std::string> token_string(const json::Value& config, std::string_view key) {
  const json::Value* v = config.find(key);
  if (!v) return std::nullopt;
  if (v->is(json::Value::Type::String)) return v->string;
  if (v->is(json::Value::Type::Object)) {
    const json::Value* content = v->find("content");
    if (content && content->is(json::Value::Type::String)) return content->string;
  }
  return std::nullopt;
}

}  // namespace

std::string to_lower_js(std::string_view text) {
  const std::vector<char32_t> cps = unicode::decode_utf8(text, "text");
  std::vector<char32_t> out;
  out.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
  return to_utf8(out);
}

std::string normalize_siglip_text(std::string_view text) {
  std::vector<char32_t> cps = unicode::decode_utf8(text, "text");
  std::replace(cps.begin(), cps.end(), kMetaspace, U' ');
  std::vector<char32_t> lower;
  lower.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) append_lower(lower, cps, i);
  // Punctuation goes first, so a run of whitespace it leaves ("a . b" -> "a  b") collapses too.
  std::vector<char32_t> out;
  out.reserve(lower.size());
  for (char32_t cp : lower) {
    if (is_ascii_punctuation(cp)) continue;
    if (is_white_space_property(cp)) {
      if (out.empty() || out.back() != U' ') out.push_back(U' ');
      continue;
    }
    out.push_back(cp);
  }
  return std::string(unicode::trim(to_utf8(out)));
}

struct SiglipTokenizer::State {
  explicit State(SentencePieceModel m) : model(std::move(m)) {}
  SentencePieceModel model;
  std::vector<std::pair<std::string, int64_t>> special;  // control and unknown pieces: matched in the text
  int max_length = 64;
  int64_t pad_id = 1, eos_id = 1;
};

SiglipTokenizer SiglipTokenizer::from_folder(const fs::path& folder) {
  const fs::path model_file = folder / "spiece.model";
  if (!fs::is_regular_file(model_file)) {
    throw Error("SigLIP tokenizer: the folder lacks spiece.model (" + model_file.string() + ")");
  }
  auto state = std::make_unique<State>(
      SentencePieceModel::load(read_text(model_file), "SigLIP tokenizer: " + model_file.string()));
  const auto piece_id = [&](const std::string& piece, const char* what) {
    const std::optional<int64_t> id = state->model.piece_id(piece);
    if (!id) {
      throw Error("SigLIP tokenizer: " + std::string(what) + " '" + piece + "' is not a piece of " +
                  model_file.string());
    }
    return *id;
  };
  std::string pad_token = "</s>", eos_token = "</s>";  // SiglipTokenizer's defaults
  const fs::path config_file = folder / "tokenizer_config.json";
  if (fs::exists(config_file)) {
    json::Value config;
    try {
      config = json::parse(read_text(config_file));
    } catch (const Error& e) {
      throw Error("SigLIP tokenizer: " + config_file.string() + ": " + e.what());
    }
    if (const json::Value* v = config.find("model_max_length"); v && v->is(json::Value::Type::Number)) {
      // Hugging Face writes a huge number when the tokenizer sets no limit; SigLIP's is 64.
      if (v->number != std::floor(v->number) || v->number < 2 || v->number > 1 << 20) {
        throw Error("SigLIP tokenizer: " + config_file.string() +
                    ": model_max_length must be an integer from 2 to 2^20 (SigLIP's is 64)");
      }
      state->max_length = static_cast<int>(v->number);
    }
    pad_token = token_string(config, "pad_token").value_or(pad_token);
    eos_token = token_string(config, "eos_token").value_or(eos_token);
  }
  state->pad_id = piece_id(pad_token, "tokenizer_config.json's pad_token");
  state->eos_id = piece_id(eos_token, "tokenizer_config.json's eos_token");
  for (size_t id = 0; id < state->model.size(); ++id) {
    const auto i = static_cast<int64_t>(id);
    if (state->model.is_special(i)) state->special.emplace_back(state->model.piece(i), i);
  }
  // Longest first, as a regex alternation of the added tokens would try them.
  std::stable_sort(state->special.begin(), state->special.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return SiglipTokenizer(std::move(state));
}

std::vector<int64_t> SiglipTokenizer::encode(std::string_view text) const {
  unicode::decode_utf8(text, "text");  // invalid UTF-8 is an error before any split
  // Sections: text between special pieces, and the pieces themselves (as their id).
  struct Section {
    std::string text;
    int64_t special_id = -1;
  };
  std::vector<Section> sections;
  std::string current;
  for (size_t pos = 0; pos < text.size();) {
    const auto match = std::find_if(state_->special.begin(), state_->special.end(), [&](const auto& s) {
      return !s.first.empty() && text.substr(pos, s.first.size()) == s.first;
    });
    if (match == state_->special.end()) {
      current += text[pos++];
      continue;
    }
    sections.push_back({std::move(current)});
    current.clear();
    sections.push_back({match->first, match->second});
    pos += match->first.size();
  }
  sections.push_back({std::move(current)});
  // SigLIP's added tokens strip the whitespace on both sides (lstrip, rstrip).
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].special_id < 0) continue;
    if (i > 0 && sections[i - 1].special_id < 0) {
      sections[i - 1].text = std::string(unicode::trim_end(sections[i - 1].text));
    }
    if (i + 1 < sections.size() && sections[i + 1].special_id < 0) {
      sections[i + 1].text = std::string(unicode::trim_start(sections[i + 1].text));
    }
  }
  std::vector<int64_t> ids;
  for (const Section& section : sections) {
    if (section.special_id >= 0) {
      ids.push_back(section.special_id);
      continue;
    }
    if (section.text.empty()) continue;
    const std::string normalized = normalize_siglip_text(section.text);
    if (normalized.empty()) continue;
    const std::vector<int64_t> pieces = state_->model.encode(normalized);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
  }
  ids.push_back(state_->eos_id);
  return ids;
}

std::vector<int64_t> SiglipTokenizer::encode_padded(std::string_view text) const {
  std::vector<int64_t> ids = encode(text);
  ids.resize(static_cast<size_t>(state_->max_length), state_->pad_id);
  return ids;
}

int SiglipTokenizer::max_length() const {
  return state_->max_length;
}
int64_t SiglipTokenizer::pad_id() const {
  return state_->pad_id;
}
int64_t SiglipTokenizer::eos_id() const {
  return state_->eos_id;
}
size_t SiglipTokenizer::vocab_size() const {
  return state_->model.size();
}

SiglipTokenizer::SiglipTokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
SiglipTokenizer::~SiglipTokenizer() = default;
SiglipTokenizer::SiglipTokenizer(SiglipTokenizer&&) noexcept = default;
SiglipTokenizer& SiglipTokenizer::operator=(SiglipTokenizer&&) noexcept = default;

}  // namespace wgi::pipelines
