// A tokenizer read from a Hugging Face tokenizer.json, encoding and decoding exactly as transformers.js 4.3
// (@huggingface/tokenizers 0.2) does: byte-level BPE (GPT-2, RoBERTa, BART, Florence-2), SentencePiece's
// Unigram (SigLIP, unigram.h) and BPE over code points with byte fallback (Gemma, SigLIP 2). The tests
// compare it with transformers.js on thousands of strings (tests/unit/test_tokenizer.cpp, test_unigram.cpp;
// docs/tokenizers.md).
//
// What it takes from tokenizer.json: added_tokens (content, id, special, lstrip, rstrip, normalized), the
// normalizer (text_normalizer.h: Sequence, Replace, Lowercase, Strip, or null), a ByteLevel (GPT-2's split,
// add_prefix_space, use_regex), Metaspace or null pre-tokenizer, a BPE (vocab, merges as "a b" strings or
// [a, b] pairs, unk_token, ignore_merges, byte_fallback, fuse_unk) or Unigram model, a RobertaProcessing,
// TemplateProcessing or null post-processor, and a ByteLevel, Metaspace or Sequence (Replace, ByteFallback,
// Fuse, Strip) decoder. Anything else is a wgi::Error naming the key, rather than a tokenizer that silently
// differs. tokenizer_config.json (optional) gives clean_up_tokenization_spaces and
// additional_special_tokens.
//
// Text is UTF-8; invalid UTF-8 is an error (transformers.js never sees any: its strings are UTF-16).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgi::pipelines {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false;  // Strips the whitespace before the token when it is matched in text.
  bool rstrip = false;  // Strips the whitespace after it.
  // With a normalizer, the token is matched in the normalized text (by its normalized content), as
  // transformers.js does (which also ignores single_word).
  bool normalized = false;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
  // Unset: tokenizer_config.json's clean_up_tokenization_spaces (true when it does not say).
  std::optional<bool> clean_up_tokenization_spaces;
};

class Tokenizer {
 public:
  // `tokenizer_config_json` may be empty (no tokenizer_config.json).
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json = {});
  // FOLDER/tokenizer.json and, if present, FOLDER/tokenizer_config.json.
  static Tokenizer from_folder(const std::filesystem::path& folder);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // The ids of `text`, with the post-processor's tokens (<s> ... </s>, ... </s>) when add_special_tokens.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Ids outside the vocabulary decode as the unknown token (an error when the model has none).
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Empty for an id outside the vocabulary.
  std::optional<std::string> id_to_token(int32_t id) const;
  // One past the largest id (added tokens included).
  size_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;

 private:
  struct State;
  explicit Tokenizer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace wgi::pipelines
