// Next-token candidates as outputs of a decoder's graph (SessionOptions::token_candidates, docs/decoding.md):
// a generation loop then reads a few numbers per row instead of the whole logits, and a greedy loop can feed
// the best token back as the next input_ids without reading anything.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace wgi::graph {

// The largest K that token candidates take: TopK selects up to it (ops/topk.cpp), one or two launches; larger
// K would sort the whole vocabulary each step.
inline constexpr int64_t kMaxTokenCandidates = 16;

struct TokenCandidateOutputs {
  std::string values;       // "<logits>.top_k_values"   [batch, top_k] float32, best first
  std::string indices;      // "<logits>.top_k_indices"  [batch, top_k] int64 (equal values: lower index)
  std::string log_sum_exp;  // "<logits>.log_sum_exp"    [batch, 1] float32; empty unless asked
};

// Adds, over the last position of `logits` (a float32 graph output [batch, tokens, vocab]), the outputs
// above: Slice of the last position (no copy for one token), TopK, and ReduceLogSumExp if asked. Throws
// wgi::Error naming what is wrong with the output or K.
TokenCandidateOutputs add_token_candidates(Graph& graph, const std::string& logits, int64_t top_k,
                                           bool log_sum_exp);

}  // namespace wgi::graph
