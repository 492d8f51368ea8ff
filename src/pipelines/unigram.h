// The Unigram model of a Hugging Face tokenizer.json (SentencePiece's unigram language model: SigLIP, T5,
// ALBERT, XLM-R): a vocabulary of [piece, score] pairs and the best-scoring segmentation of each
// pre-tokenized piece (Viterbi), as transformers.js 4.3 and the tokenizers library compute it:
//   - every position tries each vocabulary piece that starts there (code points, not bytes); a position
//     where no one-character piece starts also gets the unknown piece, scored min(scores) - 10;
//   - the path of highest summed score (float64) wins; of equal scores, the one whose last piece starts
//     first (the longer last piece), as both implementations break ties;
//   - runs of unknown pieces fuse into one, whose text maps to its id if it is a piece (never, in practice)
//     and to unk_id otherwise;
//   - byte_fallback: a fused unknown run becomes the "<0xXX>" pieces of its UTF-8 bytes when all of them are
//     in the vocabulary (the tokenizers library and SentencePiece do this; transformers.js 4.3 ignores
//     byte_fallback for Unigram and gives unk_id, so wgi follows the library, and SigLIP's files have it
//     false).
// tests/unit/test_unigram.cpp compares it with transformers.js and libsentencepiece.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipelines/tokenizer_json.h"

namespace wgi::pipelines {

class UnigramModel {
 public:
  // tokenizer.json's "model" object (type "Unigram"): vocab, unk_id (required: wgi needs somewhere to put
  // what no piece covers), byte_fallback.
  static UnigramModel from_json(const json::Value& model, const TokenizerJsonReader& reader);
  UnigramModel(UnigramModel&&) noexcept;
  UnigramModel& operator=(UnigramModel&&) noexcept;
  ~UnigramModel();

  // Appends the ids of one pre-tokenized piece (valid UTF-8; empty gives none).
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  // The vocabulary in id order.
  const std::vector<std::string>& pieces() const;
  int32_t unk_id() const;

 private:
  struct State;
  explicit UnigramModel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace wgi::pipelines
