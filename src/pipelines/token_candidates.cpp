#include "pipelines/token_candidates.h"

#include <algorithm>
#include <cmath>

namespace wgi::pipelines {

std::optional<std::vector<std::pair<int64_t, double>>> best_unbanned(const CandidateRow& row,
                                                                     std::span<const int64_t> banned,
                                                                     size_t n) {
  if (!std::isfinite(row.log_sum_exp)) return std::nullopt;
  std::vector<std::pair<int64_t, double>> out;
  for (size_t j = 0; j < row.values.size() && j < row.tokens.size() && out.size() < n; ++j) {
    const int64_t token = row.tokens[j];
    if (std::find(banned.begin(), banned.end(), token) != banned.end()) continue;
    const double value = row.values[j];
    if (!std::isfinite(value)) return std::nullopt;
    out.emplace_back(token, value - row.log_sum_exp);
  }
  if (out.size() < n) return std::nullopt;
  return out;
}

}  // namespace wgi::pipelines
