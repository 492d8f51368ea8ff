// pipelines::best_unbanned (src/pipelines/token_candidates.cpp): a row's GPU candidates stand for the whole
// row only when they hold the n best unbanned tokens, all finite. Checked against the whole row's answer
// (banned tokens at -inf, the first n maxima in order) for seeded rows with ties, and each case that must
// fall back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "pipelines/token_candidates.h"

namespace wgi {
namespace {

using Best = std::vector<std::pair<int64_t, double>>;

struct Row {
  std::vector<float> logits;
  std::vector<float> values;
  std::vector<int64_t> tokens;
  double log_sum_exp = 0;
  pipelines::CandidateRow view() const { return {values, tokens, log_sum_exp}; }
};

// The row's k best (value descending, lower token first on ties) and its log-sum-exp, as the GPU gives them.
Row candidates_of(std::vector<float> logits, size_t k) {
  Row r;
  r.logits = std::move(logits);
  std::vector<int64_t> order(r.logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&r](int64_t a, int64_t b) {
    return r.logits[static_cast<size_t>(a)] > r.logits[static_cast<size_t>(b)];
  });
  for (size_t j = 0; j < k; ++j) {
    r.tokens.push_back(order[j]);
    r.values.push_back(r.logits[static_cast<size_t>(order[j])]);
  }
  double max = -INFINITY, sum = 0;
  for (float v : r.logits) max = std::max(max, static_cast<double>(v));
  for (float v : r.logits) sum += std::exp(v - max);
  r.log_sum_exp = max + std::log(sum);
  return r;
}

// The whole row's answer: banned at -inf, then the first n maxima one after another.
Best whole_row(const Row& r, const std::vector<int64_t>& banned, size_t n) {
  std::vector<double> scores(r.logits.begin(), r.logits.end());
  for (int64_t t : banned) scores[static_cast<size_t>(t)] = -INFINITY;
  Best out;
  for (size_t i = 0; i < n; ++i) {
    const size_t best = static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    out.emplace_back(static_cast<int64_t>(best), r.logits[best] - r.log_sum_exp);
    scores[best] = -INFINITY;
  }
  return out;
}

TEST(BestUnbanned, TheCandidatesGiveTheWholeRowsBestUnbannedTokens) {
  std::mt19937 rng(61);
  std::uniform_int_distribution<int> level(-12, 12);  // few levels: many ties
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(300);
    for (float& v : logits) v = 0.5f * static_cast<float>(level(rng));
    const Row r = candidates_of(logits, 16);
    std::vector<int64_t> banned;
    for (int b = 0; b < trial % 9; ++b) banned.push_back(r.tokens[static_cast<size_t>(rng() % 16)]);
    banned.push_back(299);  // a banned token outside the candidates changes nothing
    for (size_t n : {size_t{1}, size_t{6}}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " n " + std::to_string(n));
      const auto got = pipelines::best_unbanned(r.view(), banned, n);
      std::vector<int64_t> unique = banned;
      std::sort(unique.begin(), unique.end());
      unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
      size_t banned_candidates = 0;
      for (int64_t t : unique) banned_candidates += std::count(r.tokens.begin(), r.tokens.end(), t);
      if (16 - banned_candidates < n) {
        EXPECT_FALSE(got.has_value());
        continue;
      }
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(*got, whole_row(r, banned, n));
    }
  }
}

TEST(BestUnbanned, ShortOrNonFiniteCandidatesAskForTheWholeRow) {
  const Row r = candidates_of({3, 1, 4, 1.5f, 9, 2.5f, 6}, 3);  // candidates 9 (4), 6 (6), 4 (2)
  ASSERT_EQ(r.tokens, (std::vector<int64_t>{4, 6, 2}));
  EXPECT_EQ(*pipelines::best_unbanned(r.view(), std::vector<int64_t>{4}, 2), whole_row(r, {4}, 2));
  EXPECT_FALSE(pipelines::best_unbanned(r.view(), std::vector<int64_t>{4, 2}, 2).has_value());
  EXPECT_FALSE(pipelines::best_unbanned(r.view(), {}, 4).has_value());
  Row minus_inf = r;
  minus_inf.values[1] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(pipelines::best_unbanned(minus_inf.view(), {}, 2).has_value());
  EXPECT_TRUE(pipelines::best_unbanned(minus_inf.view(), {}, 1).has_value());  // the -inf one not reached
  Row nan_sum = r;
  nan_sum.log_sum_exp = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(pipelines::best_unbanned(nan_sum.view(), {}, 1).has_value());
}

}  // namespace
}  // namespace wgi
