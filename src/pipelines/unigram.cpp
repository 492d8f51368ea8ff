#include "pipelines/unigram.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "pipelines/unicode.h"

namespace wgi::pipelines {

namespace {

using json::Value;

// The unknown piece's penalty below the lowest score (SentencePiece's kUnkPenalty, which transformers.js and
// the tokenizers library copy).
constexpr double kUnknownPenalty = 10.0;

}  // namespace

struct UnigramModel::State {
  std::vector<std::string> pieces;
  std::vector<double> scores;  // the unknown piece's replaced by min - kUnknownPenalty
  std::unordered_map<std::string, int32_t> id_of;
  int32_t unk_id = 0;
  double unknown_score = 0;
  bool byte_fallback = false;
  std::vector<int32_t> byte_ids;  // "<0xXX>" per byte, -1 where the vocabulary lacks it

  // A trie of the pieces over code points: node -> (code point -> node), each node's piece id or -1.
  std::unordered_map<uint64_t, int32_t> edges;
  std::vector<int32_t> node_piece = std::vector<int32_t>(1, -1);
  static uint64_t edge_key(int32_t node, char32_t cp) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 21) | cp;
  }
  void add_to_trie(std::string_view piece, int32_t id) {
    int32_t node = 0;
    for (char32_t cp : unicode::decode_utf8(piece, "a piece")) {
      auto [it, inserted] = edges.emplace(edge_key(node, cp), static_cast<int32_t>(node_piece.size()));
      if (inserted) node_piece.push_back(-1);
      node = it->second;
    }
    node_piece[node] = id;  // a repeated piece keeps its last id, as transformers.js's Map does
  }
};

UnigramModel::UnigramModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
UnigramModel::UnigramModel(UnigramModel&&) noexcept = default;
UnigramModel& UnigramModel::operator=(UnigramModel&&) noexcept = default;
UnigramModel::~UnigramModel() = default;

UnigramModel UnigramModel::from_json(const Value& model, const TokenizerJsonReader& r) {
  auto s = std::make_unique<State>();
  const Value& vocab = r.member(model, "model", "vocab", Value::Type::Array);
  if (vocab.array.empty()) r.fail("model.vocab", "is empty");
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab.array.size(); ++i) {
    const std::string key = "model.vocab[" + std::to_string(i) + "]";
    const Value& entry = vocab.array[i];
    if (!entry.is(Value::Type::Array) || entry.array.size() != 2 || !entry.array[0].is(Value::Type::String) ||
        !entry.array[1].is(Value::Type::Number)) {
      r.fail(key, "must be [piece, score]");
    }
    const std::string& piece = entry.array[0].string;
    unicode::decode_utf8(piece, "tokenizer.json: '" + key + "'");
    s->pieces.push_back(piece);
    s->scores.push_back(entry.array[1].number);
    s->id_of[piece] = static_cast<int32_t>(i);
    min_score = std::min(min_score, entry.array[1].number);
  }
  const Value* unk = model.find("unk_id");
  if (!unk || unk->is(Value::Type::Null)) {
    r.fail("model.unk_id", "is missing (wgi needs an unknown piece for text that no piece covers)");
  }
  s->unk_id = r.id(*unk, "model.unk_id", s->pieces.size());
  s->unknown_score = min_score - kUnknownPenalty;
  s->scores[s->unk_id] = s->unknown_score;
  s->byte_fallback = r.flag(model, "model", "byte_fallback", false);
  s->byte_ids.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (auto it = s->id_of.find(name); it != s->id_of.end()) s->byte_ids[b] = it->second;
  }
  for (size_t i = 0; i < s->pieces.size(); ++i) {
    if (!s->pieces[i].empty()) s->add_to_trie(s->pieces[i], static_cast<int32_t>(i));
  }
  return UnigramModel(std::move(s));
}

void UnigramModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  const State& s = *state_;
  const std::vector<char32_t> cps = unicode::decode_utf8(piece, "tokenizer: the text");
  const size_t n = cps.size();
  if (n == 0) return;
  std::vector<size_t> offsets(n + 1, piece.size());
  for (size_t pos = 0, i = 0; i < n; ++i) {
    offsets[i] = pos;
    pos += unicode::utf8_length(cps[i]);
  }
  // best[end]: the best path over cps[0, end): its score, where its last piece starts, and that piece.
  struct Best {
    double score = 0;
    int64_t start = -1;
    int32_t id = -1;
  };
  std::vector<Best> best(n + 1);
  best[0].start = 0;
  const auto consider = [&](size_t start, size_t end, int32_t id) {
    const double score = best[start].score + s.scores[id];
    // Strictly better only: of equal scores, the earlier start (seen first) stays.
    if (best[end].start < 0 || score > best[end].score) best[end] = {score, static_cast<int64_t>(start), id};
  };
  for (size_t start = 0; start < n; ++start) {
    bool has_single = false;
    int32_t node = 0;
    for (size_t end = start; end < n;) {
      auto it = s.edges.find(State::edge_key(node, cps[end]));
      if (it == s.edges.end()) break;
      node = it->second;
      ++end;
      if (const int32_t id = s.node_piece[node]; id >= 0) {
        consider(start, end, id);
        has_single |= end == start + 1;
      }
    }
    if (!has_single) consider(start, start + 1, s.unk_id);
  }
  // Back from the end, then the pieces in order with runs of unknown pieces fused.
  std::vector<std::pair<size_t, int32_t>> path;  // (start, id)
  for (size_t end = n; end > 0; end = static_cast<size_t>(best[end].start)) {
    path.emplace_back(static_cast<size_t>(best[end].start), best[end].id);
  }
  std::reverse(path.begin(), path.end());
  for (size_t i = 0; i < path.size();) {
    const size_t start = path[i].first;
    if (path[i].second != s.unk_id) {
      out.push_back(path[i].second);
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < path.size() && path[j].second == s.unk_id) ++j;
    const size_t end = j < path.size() ? path[j].first : n;
    const std::string_view text = piece.substr(offsets[start], offsets[end] - offsets[start]);
    i = j;
    if (auto it = s.id_of.find(std::string(text)); it != s.id_of.end()) {
      out.push_back(it->second);
      continue;
    }
    if (s.byte_fallback && std::all_of(text.begin(), text.end(),
                                       [&](char c) { return s.byte_ids[static_cast<uint8_t>(c)] >= 0; })) {
      for (char c : text) out.push_back(s.byte_ids[static_cast<uint8_t>(c)]);
      continue;
    }
    out.push_back(s.unk_id);
  }
}

const std::vector<std::string>& UnigramModel::pieces() const {
  return state_->pieces;
}

int32_t UnigramModel::unk_id() const {
  return state_->unk_id;
}

}  // namespace wgi::pipelines
