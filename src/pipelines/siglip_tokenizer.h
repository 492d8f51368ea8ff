// SigLIP's text side: the ids transformers.js 4.3's zero-shot-image-classification pipeline feeds
// (tokenizer(texts, {padding: 'max_length', truncation: true})), from the folder's tokenizer.json when it has
// one (pipelines::Tokenizer: its Unigram model or, for SigLIP 2's Gemma tokenizer, its BPE model; no extra
// library, so the browser build has it too), else from spiece.model through Debian's libsentencepiece with
// Hugging Face's SiglipTokenizer rules around it (native builds only).
//
// The spiece.model path, per text, as transformers.js's encode_text on the equivalent tokenizer.json: the
// text is split on the special pieces ("<pad>", "</s>", "<unk>": SigLIP's added tokens, lstrip and rstrip, so
// the whitespace beside them goes); each other part is normalised (normalize_siglip_text), dropped if that
// leaves it empty, and encoded by SentencePiece (which adds the "\u2581" prefix, as tokenizer.json's
// Metaspace pre-tokenizer does); "</s>" is appended. Both paths then cut the ids to max_length and pad them
// with the pad token. tests/gpu/test_siglip_tokenizer.cpp compares both with transformers.js.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipelines/text_normalizer.h"  // to_lower_js

namespace wgi::pipelines {

// The normaliser of SigLIP's tokenizer.json (tests/models/siglip_folder.py writes it after Hugging Face's
// SiglipTokenizer): "\u2581" -> " ", lowercase, Python's string.punctuation (ASCII) removed, each run of
// Unicode White_Space -> " " (what the tokenizers library's \s+ matches), trimmed (JavaScript's trim).
std::string normalize_siglip_text(std::string_view text);

class SiglipTokenizer {
 public:
  // FOLDER/tokenizer.json, else FOLDER/spiece.model, and, if present, FOLDER/tokenizer_config.json
  // (model_max_length, pad_token, eos_token; SiglipTokenizer's defaults 64, "</s>", "</s>" otherwise). A
  // missing or unreadable file is a wgi::Error naming it.
  static SiglipTokenizer from_folder(const std::filesystem::path& folder);
  SiglipTokenizer(SiglipTokenizer&&) noexcept;
  SiglipTokenizer& operator=(SiglipTokenizer&&) noexcept;
  ~SiglipTokenizer();

  // The ids of `text` with "</s>", neither truncated nor padded.
  std::vector<int64_t> encode(std::string_view text) const;
  // encode(text) cut to max_length() and padded to it with pad_id(): one row of the text tower's input.
  std::vector<int64_t> encode_padded(std::string_view text) const;

  int max_length() const;
  int64_t pad_id() const;
  int64_t eos_id() const;
  size_t vocab_size() const;
  // The file the pieces come from: FOLDER/tokenizer.json or FOLDER/spiece.model.
  const std::filesystem::path& source() const;

 private:
  struct State;
  explicit SiglipTokenizer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace wgi::pipelines
