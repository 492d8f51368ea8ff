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
#include "pipelines/text_normalizer.h"
#include "pipelines/tokenizer.h"
#include "pipelines/unicode.h"
#include "wgi/error.h"

namespace wgi::pipelines {

namespace {

namespace fs = std::filesystem;

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

// SiglipTokenizer's normalisation as the tokenizer.json of tests/models/siglip_folder.py (after Xenova's
// exports) spells it, so that both paths run the same normaliser.
constexpr std::string_view kSiglipNormalizer = R"({"type": "Sequence", "normalizers": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "Lowercase"},
    {"type": "Replace", "pattern": {"Regex": "[!-/:-@\\[-`{-~]"}, "content": ""},
    {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
    {"type": "Strip", "strip_left": true, "strip_right": true}]})";

}  // namespace

std::string normalize_siglip_text(std::string_view text) {
  static const TextNormalizer normalizer = [] {
    const TokenizerJsonReader reader("SigLIP's normalizer");
    return TextNormalizer::from_json(reader.parse(kSiglipNormalizer), reader);
  }();
  unicode::decode_utf8(text, "text");
  return normalizer.normalize(text);
}

struct SiglipTokenizer::State {
  std::optional<Tokenizer> tokenizer;       // from tokenizer.json
  std::optional<SentencePieceModel> model;  // from spiece.model, when the folder has no tokenizer.json
  std::vector<std::pair<std::string, int64_t>> special;  // control and unknown pieces: matched in the text
  fs::path file;                                         // the file the pieces come from, for messages
  int max_length = 64;
  int64_t pad_id = 1, eos_id = 1;

  std::optional<int64_t> id_of(const std::string& piece) const {
    if (tokenizer) {
      const std::optional<int32_t> id = tokenizer->token_to_id(piece);
      return id ? std::optional<int64_t>(*id) : std::nullopt;
    }
    return model->piece_id(piece);
  }
};

SiglipTokenizer SiglipTokenizer::from_folder(const fs::path& folder) {
  auto state = std::make_unique<State>();
  const fs::path json_file = folder / "tokenizer.json", model_file = folder / "spiece.model";
  if (fs::is_regular_file(json_file)) {
    state->file = json_file;
    const fs::path config = folder / "tokenizer_config.json";
    try {
      state->tokenizer.emplace(
          Tokenizer::from_json(read_text(json_file), fs::exists(config) ? read_text(config) : std::string()));
    } catch (const Error& e) {
      throw Error("SigLIP tokenizer: " + folder.string() + ": " + e.what());
    }
  } else if (fs::is_regular_file(model_file)) {
    state->file = model_file;
    state->model.emplace(
        SentencePieceModel::load(read_text(model_file), "SigLIP tokenizer: " + model_file.string()));
  } else {
    throw Error("SigLIP tokenizer: the folder lacks tokenizer.json and spiece.model (" + json_file.string() +
                ", " + model_file.string() + ")");
  }
  const auto piece_id = [&](const std::string& piece, const char* what) {
    const std::optional<int64_t> id = state->id_of(piece);
    if (!id) {
      throw Error("SigLIP tokenizer: " + std::string(what) + " '" + piece + "' is not a piece of " +
                  state->file.string());
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
  if (state->model) {
    for (size_t id = 0; id < state->model->size(); ++id) {
      const auto i = static_cast<int64_t>(id);
      if (state->model->is_special(i)) state->special.emplace_back(state->model->piece(i), i);
    }
    // Longest first, as a regex alternation of the added tokens would try them.
    std::stable_sort(state->special.begin(), state->special.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
  return SiglipTokenizer(std::move(state));
}

std::vector<int64_t> SiglipTokenizer::encode(std::string_view text) const {
  if (state_->tokenizer) {
    // tokenizer.json's own added tokens, normalizer, pre-tokenizer, model and post-processor ("</s>").
    const std::vector<int32_t> ids = state_->tokenizer->encode(text);
    return std::vector<int64_t>(ids.begin(), ids.end());
  }
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
    const std::vector<int64_t> pieces = state_->model->encode(normalized);
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
  return state_->tokenizer ? state_->tokenizer->vocab_size() : state_->model->size();
}

const std::filesystem::path& SiglipTokenizer::source() const {
  return state_->file;
}

SiglipTokenizer::SiglipTokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
SiglipTokenizer::~SiglipTokenizer() = default;
SiglipTokenizer::SiglipTokenizer(SiglipTokenizer&&) noexcept = default;
SiglipTokenizer& SiglipTokenizer::operator=(SiglipTokenizer&&) noexcept = default;

}  // namespace wgi::pipelines
