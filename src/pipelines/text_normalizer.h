// The normalizers of a Hugging Face tokenizer.json that wgi's tokenizers apply (tokenizer.h), each as
// transformers.js 4.3 (@huggingface/tokenizers 0.2) applies it: Sequence, Replace with a String pattern or
// one of the Regex patterns below, Lowercase (String.prototype.toLowerCase) and Strip (trim). SigLIP's
// tokenizer.json uses all of them, Gemma's (SigLIP 2) a Replace ' ' -> '\u2581'. Any other normalizer, and
// any other Regex, is a wgi::Error naming it rather than a tokenizer that silently differs.
//
// Regex patterns: the Oniguruma syntax of the tokenizers library, of which wgi takes one character class
// ("[...]" of characters, ranges, backslash escapes and \s; not negated) or \s, each optionally followed by
// "+" (a run): SigLIP's "[!-/:-@\[-`{-~]" (Python's string.punctuation) and "\s+". \s is Unicode's
// White_Space, as the library rewrites it for JavaScript.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipelines/tokenizer_json.h"

namespace wgi::pipelines {

// String.prototype.toLowerCase of UTF-8 `text` (full Unicode mappings of Node's version, Final_Sigma
// included; lowercase_table.inc). Invalid UTF-8 is a wgi::Error.
std::string to_lower_js(std::string_view text);

class TextNormalizer {
 public:
  TextNormalizer();  // none: normalize returns the text as it is
  // tokenizer.json's "normalizer" value at `key` (null: none).
  static TextNormalizer from_json(const json::Value& normalizer, const TokenizerJsonReader& reader,
                                  const std::string& key = "normalizer");
  TextNormalizer(TextNormalizer&&) noexcept;
  TextNormalizer& operator=(TextNormalizer&&) noexcept;
  ~TextNormalizer();

  // `text` (valid UTF-8) through each step in order.
  std::string normalize(std::string_view text) const;
  bool empty() const;

 private:
  struct Step;
  std::vector<Step> steps_;
};

}  // namespace wgi::pipelines
