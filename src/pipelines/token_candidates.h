// The search's side of token candidates (SessionOptions::token_candidates): a decoder step's best logits per
// row, computed on the GPU, stand for the whole row when they hold every token the search can pick.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace wgi::pipelines {

// One row's candidates: its best logits best first (equal values by lower token), their tokens, and the
// log-sum-exp of the whole row.
struct CandidateRow {
  std::span<const float> values;
  std::span<const int64_t> tokens;
  double log_sum_exp = 0;
};

// The n best log-probabilities (token, logit - log_sum_exp) of the row with its `banned` tokens left out,
// best first, equal ones by lower token: what the first n maxima over the whole row, banned tokens at -inf,
// would be. nullopt when the candidates cannot tell: fewer than n of them are not banned, or one of those or
// the log-sum-exp is not finite (-inf ties with every banned token, NaN orders nothing), so the caller reads
// the whole row.
std::optional<std::vector<std::pair<int64_t, double>>> best_unbanned(const CandidateRow& row,
                                                                     std::span<const int64_t> banned,
                                                                     size_t n);

}  // namespace wgi::pipelines
