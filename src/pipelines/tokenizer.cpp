#include "pipelines/tokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/json.h"
#include "pipelines/text_normalizer.h"
#include "pipelines/tokenizer_json.h"
#include "pipelines/unicode.h"
#include "pipelines/unigram.h"
#include "wgi/error.h"

namespace wgi::pipelines {

namespace {

using json::Value;

// transformers.js caches words shorter than 256 characters in a 10,000-entry cache; the results do not depend
// on it, only the time does.
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kCacheCapacity = 10000;

using Reader = TokenizerJsonReader;

// GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes stand for themselves,
// the other 68 bytes for U+0100 onwards, in byte order.
struct ByteAlphabet {
  std::array<std::string, 256> byte_to_text;
  std::unordered_map<char32_t, uint8_t> char_to_byte;

  ByteAlphabet() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      unicode::append_utf8(byte_to_text[b], cp);
      char_to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

// transformers.js's clean_up_tokenization: spaces before punctuation and English contractions, in this order.
std::string clean_up_tokenization(std::string text) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) text = unicode::replace_all(text, from, to);
  return text;
}

// Splits text at the longest added token that starts at each position, leftmost first (transformers.js's
// DictionarySplitter).
class AddedTokenSplitter {
 public:
  void add(const std::string& content, size_t token) {
    size_t node = 0;
    for (unsigned char c : content) {
      auto it = nodes_[node].next.find(c);
      if (it == nodes_[node].next.end()) {
        nodes_.emplace_back();
        it = nodes_[node].next.emplace(c, nodes_.size() - 1).first;
      }
      node = it->second;
    }
    nodes_[node].token = token;
  }

  struct Piece {
    std::string_view text;
    std::optional<size_t> token;  // Index into the added tokens, for a matched token.
  };
  std::vector<Piece> split(std::string_view text) const {
    std::vector<Piece> pieces;
    size_t start = 0, i = 0;
    while (i < text.size()) {
      std::optional<size_t> match;
      size_t match_length = 0;
      size_t node = 0;
      for (size_t j = i; j < text.size();) {
        auto it = nodes_[node].next.find(static_cast<unsigned char>(text[j]));
        if (it == nodes_[node].next.end()) break;
        node = it->second;
        ++j;
        if (nodes_[node].token) {
          match = nodes_[node].token;
          match_length = j - i;
        }
      }
      if (!match) {
        ++i;
        continue;
      }
      if (i > start) pieces.push_back({text.substr(start, i - start), std::nullopt});
      pieces.push_back({text.substr(i, match_length), match});
      i += match_length;
      start = i;
    }
    if (start < text.size()) pieces.push_back({text.substr(start), std::nullopt});
    return pieces;
  }

 private:
  struct Node {
    std::unordered_map<unsigned char, size_t> next;
    std::optional<size_t> token;
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
};

// The classes of GPT-2's split: letters, numbers, and what is neither nor whitespace.
bool is_letter(char32_t c) {
  return unicode::is_letter(c);
}
bool is_number(char32_t c) {
  return unicode::is_number(c);
}
bool is_other(char32_t c) {
  return !unicode::is_whitespace(c) && !is_letter(c) && !is_number(c);
}

// GPT-2's pre-tokenizer pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+,
// matched as JavaScript's regular expressions do (first alternative that matches at each position, greedy
// with backtracking): returns the end of the match that starts at `pos` (always > pos). Every character is
// whitespace, a letter, a number or other, so some alternative always matches.
size_t gpt2_match_end(const std::vector<char32_t>& cps, size_t pos) {
  const size_t n = cps.size();
  if (cps[pos] == U'\'') {
    for (std::u32string_view suffix : {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"}) {
      if (pos + 1 + suffix.size() <= n && std::equal(suffix.begin(), suffix.end(), cps.begin() + pos + 1)) {
        return pos + 1 + suffix.size();
      }
    }
  }
  for (bool (*in_class)(char32_t) : {is_letter, is_number, is_other}) {
    // ` ?X+`: the optional space is taken when a run follows it, else the run must start here.
    size_t start = pos;
    if (cps[pos] == U' ' && pos + 1 < n && in_class(cps[pos + 1])) start = pos + 1;
    if (!in_class(cps[start])) continue;
    size_t end = start;
    while (end < n && in_class(cps[end])) ++end;
    return end;
  }
  // `\s+(?!\S)` gives back the last whitespace of a run that a non-space follows; `\s+` takes a lone one.
  size_t end = pos;
  while (end < n && unicode::is_whitespace(cps[end])) ++end;
  return end == n || end - pos == 1 ? end : end - 1;
}

// The decoders of tokenizer.json that wgi applies, in order (a Sequence flattened).
struct DecoderStep {
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip };
  Kind kind = Kind::ByteLevel;
  std::string from, to;  // Metaspace's replacement (from); Replace's pattern and content
  std::string strip_content;
  int64_t strip_start = 0, strip_stop = 0;
};

// "<0xXX>" as ByteFallback reads it (exactly six characters, two hex digits); nullopt otherwise.
std::optional<uint8_t> byte_token(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

}  // namespace

struct Tokenizer::State {
  std::vector<std::optional<std::string>> id_to_token;
  std::vector<std::string> token_bytes;                  // What each token of a byte-level model decodes to.
  std::unordered_map<std::string, int32_t> token_to_id;  // Added tokens over the model's vocabulary.
  std::vector<AddedToken> added;
  // Added tokens by content, and normalized ones also by their normalized content (transformers.js's
  // added_tokens_map).
  std::unordered_map<std::string, size_t> added_by_content;
  std::unordered_set<std::string> special;  // Removed by skip_special_tokens.
  AddedTokenSplitter splitter;              // In the text as given: tokens not normalized.
  AddedTokenSplitter normalized_splitter;   // In the normalized text: the normalized tokens.
  std::optional<int32_t> unk_id;

  TextNormalizer normalizer;
  enum class PreTokenizer { None, ByteLevel, Metaspace };
  PreTokenizer pre_tokenizer = PreTokenizer::ByteLevel;
  std::string metaspace = "\u2581";  // Metaspace's replacement
  enum class Prepend { Always, First, Never };
  Prepend prepend = Prepend::Always;
  bool add_prefix_space = false;
  bool use_regex = true;

  std::optional<UnigramModel> unigram;  // else BPE
  bool byte_level = true;               // BPE over the ByteLevel alphabet, else over code points
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  std::array<int32_t, 256> byte_fallback_ids{};  // "<0xXX>", -1 where absent

  std::vector<int32_t> prefix_ids, suffix_ids;  // The post-processor's tokens around the text.
  std::vector<DecoderStep> decoder;
  bool clean_up_tokenization_spaces = true;

  // BPE over interned symbols: every token string of the vocabulary and the merges has a symbol.
  std::unordered_map<std::string, int32_t> symbol_of;
  std::vector<int32_t> symbol_id;  // The token id of each symbol, -1 for none (it encodes as unk).
  std::array<int32_t, 256> byte_symbol{};
  struct Merge {
    int32_t rank, result;
  };
  std::unordered_map<uint64_t, Merge> merges;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  // Reading tokenizer.json, section by section (Tokenizer::from_json calls them in this order).
  struct ModelVocabulary {
    const Value* bpe_vocab = nullptr;  // the BPE model's vocab object; null for Unigram
    size_t id_limit = 0;               // ids at or above it are a corrupt file, not a reason to allocate
  };
  ModelVocabulary read_model(const Value& model, size_t added_tokens, const Reader& r);
  void read_added_tokens(const Value& added_tokens, size_t id_limit, const Reader& r);
  void read_pre_tokenizer(const Value& pre, const Reader& r);
  void read_bpe_tables(const Value& model, const Value& vocab, const Reader& r);
  void read_decoder_chain(const Value& value, const Reader& r);
  void read_post_processor(const Value& post, const Reader& r);
  void read_tokenizer_config(std::string_view tokenizer_config_json);

  void set_id(const std::string& token, int32_t id) {
    if (id_to_token.size() <= static_cast<size_t>(id)) id_to_token.resize(static_cast<size_t>(id) + 1);
    id_to_token[static_cast<size_t>(id)] = token;
    token_to_id[token] = id;
  }
  int32_t id_of_token(const Reader& r, const std::string& key, const std::string& token) const {
    auto it = token_to_id.find(token);
    if (it == token_to_id.end()) r.fail(key, "names '" + token + "', which is not in the vocabulary");
    return it->second;
  }

  int32_t intern(const std::string& token) {
    auto [it, inserted] = symbol_of.emplace(token, static_cast<int32_t>(symbol_id.size()));
    if (inserted) symbol_id.push_back(-1);
    return it->second;
  }
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  int32_t unknown(const std::string& what) const {
    if (!unk_id) throw Error("tokenizer: " + what + " and the model has no unk_token");
    return *unk_id;
  }

  // The ids of a BPE piece outside the vocabulary (`text`: its characters): its "<0xXX>" bytes under
  // byte_fallback when all are tokens, else the unknown token.
  void unknown_piece(std::string_view text, std::vector<int32_t>& ids) const {
    if (byte_fallback && std::all_of(text.begin(), text.end(), [&](char c) {
          return byte_fallback_ids[static_cast<uint8_t>(c)] >= 0;
        })) {
      for (char c : text) ids.push_back(byte_fallback_ids[static_cast<uint8_t>(c)]);
      return;
    }
    ids.push_back(unknown("a word has a piece outside the vocabulary"));
  }

  // The ids of one pre-tokenized word (its UTF-8 bytes).
  void bpe(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    const bool cacheable = word.size() < kMaxCachedWordBytes;
    if (cacheable) {
      std::lock_guard lock(cache_mutex);
      if (auto it = cache.find(std::string(word)); it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int32_t> ids;
    std::string encoded;
    if (byte_level) {
      for (unsigned char b : word) encoded += byte_alphabet().byte_to_text[b];
    } else {
      encoded = word;
    }
    auto whole = token_to_id.find(encoded);
    if (ignore_merges && whole != token_to_id.end()) {
      ids.push_back(whole->second);
    } else {
      // Merge the lowest-ranked adjacent pair, the leftmost of equal ranks, until none is left; a heap of
      // candidate pairs over a linked list of symbols, stale entries skipped when popped. Each node also
      // spans its characters in `word` (for byte_fallback).
      struct Node {
        int32_t symbol, prev, next;
        size_t begin, end;
      };
      std::vector<Node> nodes;
      if (byte_level) {
        for (size_t i = 0; i < word.size(); ++i) {
          nodes.push_back({byte_symbol[static_cast<unsigned char>(word[i])], static_cast<int32_t>(i) - 1,
                           i + 1 < word.size() ? static_cast<int32_t>(i + 1) : -1, i, i + 1});
        }
      } else {
        const std::vector<char32_t> cps = unicode::decode_utf8(word, "tokenizer: the text");
        size_t begin = 0;
        for (size_t i = 0; i < cps.size(); ++i) {
          const size_t end = begin + unicode::utf8_length(cps[i]);
          auto it = symbol_of.find(std::string(word.substr(begin, end - begin)));
          nodes.push_back({it == symbol_of.end() ? -1 : it->second, static_cast<int32_t>(i) - 1,
                           i + 1 < cps.size() ? static_cast<int32_t>(i + 1) : -1, begin, end});
          begin = end;
        }
      }
      struct Candidate {
        int32_t rank, left, left_symbol, right_symbol;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
      };
      std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
      const auto consider = [&](int32_t left) {
        if (left < 0 || nodes[left].next < 0) return;
        const int32_t a = nodes[left].symbol, b = nodes[nodes[left].next].symbol;
        if (a < 0 || b < 0) return;
        if (auto it = merges.find(pair_key(a, b)); it != merges.end())
          queue.push({it->second.rank, left, a, b});
      };
      for (int32_t i = 0; i + 1 < static_cast<int32_t>(nodes.size()); ++i) consider(i);
      while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Node& left = nodes[c.left];
        if (left.symbol != c.left_symbol || left.next < 0 || nodes[left.next].symbol != c.right_symbol)
          continue;
        const int32_t right = left.next;
        left.symbol = merges.at(pair_key(c.left_symbol, c.right_symbol)).result;
        left.end = nodes[right].end;
        left.next = nodes[right].next;
        if (left.next >= 0) nodes[left.next].prev = c.left;
        nodes[right].symbol = -2;  // Gone: no candidate can name it again.
        consider(left.prev);
        consider(c.left);
      }
      for (int32_t i = 0; i >= 0; i = nodes[i].next) {
        const int32_t symbol = nodes[i].symbol;
        if (symbol >= 0 && symbol_id[symbol] >= 0) {
          ids.push_back(symbol_id[symbol]);
        } else {
          unknown_piece(word.substr(nodes[i].begin, nodes[i].end - nodes[i].begin), ids);
        }
      }
    }
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
      std::lock_guard lock(cache_mutex);
      if (cache.size() >= kCacheCapacity) cache.clear();
      cache.emplace(std::string(word), std::move(ids));
    }
  }

  // The ByteLevel pre-tokenizer and BPE on text that holds no added token.
  void encode_byte_level(std::string_view section, std::vector<int32_t>& out) const {
    std::string prefixed;
    if (add_prefix_space && section.substr(0, 1) != " ") {
      prefixed = " " + std::string(section);
      section = prefixed;
    }
    if (!use_regex) return bpe(section, out);
    const std::vector<char32_t> cps = unicode::decode_utf8(section, "tokenizer: the text");
    std::vector<size_t> offsets(cps.size() + 1, section.size());
    for (size_t pos = 0, i = 0; i < cps.size(); ++i) {
      offsets[i] = pos;
      pos += unicode::utf8_length(cps[i]);
    }
    for (size_t pos = 0; pos < cps.size();) {
      const size_t end = gpt2_match_end(cps, pos);
      bpe(section.substr(offsets[pos], offsets[end] - offsets[pos]), out);
      pos = end;
    }
  }

  // Pre-tokenizer and model on normalized text that holds no added token (`section_index`: its section of
  // the text, for Metaspace's prepend_scheme "first"); fuse_unk fuses runs of the unknown token over the
  // model's whole output, as transformers.js's TokenizerModel does.
  void encode_plain(std::string_view text, size_t section_index, std::vector<int32_t>& out) const {
    const size_t first = out.size();
    if (pre_tokenizer == PreTokenizer::ByteLevel) {
      encode_byte_level(text, out);
    } else {
      std::string word(text);
      if (pre_tokenizer == PreTokenizer::Metaspace) {
        word = unicode::replace_all(word, " ", metaspace);
        if (word.compare(0, metaspace.size(), metaspace) != 0 &&
            (prepend == Prepend::Always || (prepend == Prepend::First && section_index == 0))) {
          word = metaspace + word;
        }
      }
      if (unigram) {
        unigram->encode(word, out);
      } else {
        bpe(word, out);
      }
    }
    if (fuse_unk && unk_id) {
      const auto last = std::unique(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                                    [&](int32_t a, int32_t b) { return a == *unk_id && b == *unk_id; });
      out.erase(last, out.end());
    }
  }

  // One section of text between added tokens, lstrip / rstrip applied: normalized, split at the normalized
  // added tokens, encoded (transformers.js's encode_text).
  void encode_section(std::string_view section, size_t section_index, std::vector<int32_t>& out) const {
    const std::string normalized = normalizer.normalize(section);
    if (normalized.empty()) return;
    std::vector<AddedTokenSplitter::Piece> pieces = normalized_splitter.split(normalized);
    strip_beside_tokens(pieces);
    for (const auto& piece : pieces) {
      if (piece.text.empty()) continue;
      if (auto it = added_by_content.find(std::string(piece.text)); it != added_by_content.end()) {
        out.push_back(added[it->second].id);
      } else {
        encode_plain(piece.text, section_index, out);
      }
    }
  }

  // lstrip / rstrip take the whitespace off the neighbouring pieces, in order, as transformers.js does.
  void strip_beside_tokens(std::vector<AddedTokenSplitter::Piece>& pieces) const {
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i].token) continue;
      const AddedToken& t = added[*pieces[i].token];
      if (t.lstrip && i > 0) pieces[i - 1].text = unicode::trim_end(pieces[i - 1].text);
      if (t.rstrip && i + 1 < pieces.size()) pieces[i + 1].text = unicode::trim_start(pieces[i + 1].text);
    }
  }

  // The decoder chain on token strings (not ByteLevel, which decode() handles on bytes).
  std::string decode_tokens(std::vector<std::string> tokens) const {
    for (const DecoderStep& step : decoder) {
      switch (step.kind) {
        case DecoderStep::Kind::ByteLevel:
          break;  // decode() spells the tokens as bytes instead
        case DecoderStep::Kind::Metaspace:
          for (size_t i = 0; i < tokens.size(); ++i) {
            tokens[i] = unicode::replace_all(tokens[i], step.from, " ");
            if (i == 0 && tokens[i].substr(0, 1) == " ") tokens[i].erase(0, 1);
          }
          break;
        case DecoderStep::Kind::Replace:
          for (std::string& t : tokens) t = unicode::replace_all(t, step.from, step.to);
          break;
        case DecoderStep::Kind::ByteFallback: {
          std::vector<std::string> merged;
          std::string bytes;
          bool pending = false;
          // transformers.js decodes each run with a default TextDecoder, which drops a leading byte order
          // mark (ByteLevel's TextDecoder keeps it: ignoreBOM).
          const auto decode_run = [&] {
            std::string_view run = bytes;
            if (run.substr(0, 3) == "\xEF\xBB\xBF") run.remove_prefix(3);
            merged.push_back(unicode::decode_utf8_lossy(run));
          };
          for (std::string& t : tokens) {
            if (std::optional<uint8_t> b = byte_token(t)) {
              bytes += static_cast<char>(*b);
              pending = true;
              continue;
            }
            if (pending) decode_run();
            bytes.clear();
            pending = false;
            merged.push_back(std::move(t));
          }
          if (pending) decode_run();
          tokens = std::move(merged);
          break;
        }
        case DecoderStep::Kind::Fuse: {
          std::string all;
          for (const std::string& t : tokens) all += t;
          tokens.assign(1, std::move(all));
          break;
        }
        case DecoderStep::Kind::Strip:
          // transformers.js compares UTF-16 units with a one-character content; wgi takes ASCII contents
          // only (from_json), where bytes are the same.
          for (std::string& t : tokens) {
            size_t begin = 0, end = t.size();
            for (int64_t i = 0; i < step.strip_start && begin < t.size() && t[begin] == step.strip_content[0];
                 ++i)
              ++begin;
            for (int64_t i = 0; i < step.strip_stop && end > begin && t[end - 1] == step.strip_content[0];
                 ++i)
              --end;
            t = t.substr(begin, end - begin);
          }
          break;
      }
    }
    std::string out;
    for (const std::string& t : tokens) out += t;
    return out;
  }
};

namespace {

// tokenizer.json's decoder (a Sequence flattened) into `steps`.
void read_decoder(const Value& v, const Reader& r, const std::string& path, std::vector<DecoderStep>& steps) {
  r.typed(v, path, Value::Type::Object);
  const std::string type = r.member(v, path, "type", Value::Type::String).string;
  DecoderStep step;
  if (type == "Sequence") {
    const Value& list = r.member(v, path, "decoders", Value::Type::Array);
    for (size_t i = 0; i < list.array.size(); ++i) {
      read_decoder(list.array[i], r, path + ".decoders[" + std::to_string(i) + "]", steps);
    }
    return;
  } else if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::ByteLevel;
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::Metaspace;
    step.from = r.text(v, path, "replacement", "\u2581");
    if (step.from.empty()) r.fail(path + ".replacement", "is empty");
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::Replace;
    const Value& pattern = r.member(v, path, "pattern", Value::Type::Object);
    const Value* s = pattern.find("String");
    if (!s) r.fail(path + ".pattern", "must have a \"String\" (wgi's decoders take no Regex)");
    step.from = r.typed(*s, path + ".pattern.String", Value::Type::String).string;
    if (step.from.empty()) r.fail(path + ".pattern.String", "is empty");
    step.to = r.text(v, path, "content", "");
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::Fuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::Strip;
    step.strip_content = r.text(v, path, "content", "");
    if (step.strip_content.size() != 1 || static_cast<unsigned char>(step.strip_content[0]) >= 0x80) {
      r.fail(path + ".content", "must be one ASCII character");
    }
    for (auto [key, target] : {std::pair{"start", &step.strip_start}, std::pair{"stop", &step.strip_stop}}) {
      if (const Value* n = v.find(key); n && !n->is(Value::Type::Null)) {
        *target = static_cast<int64_t>(r.id(*n, path + "." + key, 1 << 20));
      }
    }
  } else {
    r.fail(path + ".type", "is \"" + type +
                               "\", which wgi does not decode (it decodes ByteLevel, Metaspace and Sequences "
                               "of Replace, ByteFallback, Fuse and Strip)");
  }
  steps.push_back(std::move(step));
}

}  // namespace

Tokenizer::State::ModelVocabulary Tokenizer::State::read_model(const Value& model, size_t added_tokens,
                                                               const Reader& r) {
  const std::string model_type = r.text(model, "model", "type", "BPE");
  if (model_type != "BPE" && model_type != "Unigram") {
    r.fail("model.type", "must be \"BPE\" or \"Unigram\", found \"" + model_type + "\"");
  }
  ModelVocabulary vocabulary;
  size_t model_tokens = 0;
  if (model_type == "Unigram") {
    unigram.emplace(UnigramModel::from_json(model, r));
    const std::vector<std::string>& pieces = unigram->pieces();
    model_tokens = pieces.size();
    // Later pieces win a repeated string, as transformers.js's tokens_to_ids does.
    for (size_t i = 0; i < pieces.size(); ++i) set_id(pieces[i], static_cast<int32_t>(i));
    unk_id = unigram->unk_id();
  } else {
    // BPE with its vocabulary and merges.
    for (const char* key : {"continuing_subword_prefix", "continuing_subword_suffix", "end_of_word_suffix"}) {
      const Value* v = model.find(key);
      if (v && !v->is(Value::Type::Null) && !(v->is(Value::Type::String) && v->string.empty())) {
        r.fail(std::string("model.") + key, "must be empty or null (wgi's BPE has no subword markers)");
      }
    }
    byte_fallback = r.flag(model, "model", "byte_fallback", false);
    fuse_unk = r.flag(model, "model", "fuse_unk", false);
    if (const Value* v = model.find("dropout"); v && !v->is(Value::Type::Null)) {
      r.fail("model.dropout", "must be null (dropout is for training)");
    }
    ignore_merges = r.flag(model, "model", "ignore_merges", false);
    vocabulary.bpe_vocab = &r.member(model, "model", "vocab", Value::Type::Object);
    if (vocabulary.bpe_vocab->object.empty()) r.fail("model.vocab", "is empty");
    model_tokens = vocabulary.bpe_vocab->object.size();
  }
  // The id table is allocated up to the largest id: ids far beyond the number of tokens are a corrupt file
  // (real ones are dense), not a reason to allocate gigabytes.
  vocabulary.id_limit = 2 * (model_tokens + added_tokens) + 256;
  if (vocabulary.bpe_vocab) {
    for (const json::Member& m : vocabulary.bpe_vocab->object) {
      const int32_t id = r.id(m.value, "model.vocab." + m.key, vocabulary.id_limit);
      if (static_cast<size_t>(id) < id_to_token.size() && id_to_token[static_cast<size_t>(id)]) {
        r.fail("model.vocab." + m.key, "has id " + std::to_string(id) + ", which '" +
                                           *id_to_token[static_cast<size_t>(id)] + "' has too");
      }
      set_id(m.key, id);
    }
  }
  return vocabulary;
}

// Added tokens: matched in text before the model, their ids over the model's. A normalized one (with a
// normalizer) is matched in the normalized text, by its normalized content.
void Tokenizer::State::read_added_tokens(const Value& added_tokens, size_t id_limit, const Reader& r) {
  for (size_t i = 0; i < added_tokens.array.size(); ++i) {
    const std::string key = "added_tokens[" + std::to_string(i) + "]";
    const Value& t = r.typed(added_tokens.array[i], key, Value::Type::Object);
    AddedToken token;
    token.content = r.member(t, key, "content", Value::Type::String).string;
    if (token.content.empty()) r.fail(key + ".content", "is empty");
    unicode::decode_utf8(token.content, "tokenizer.json: '" + key + ".content'");
    token.id = r.id(r.member(t, key, "id"), key + ".id", id_limit);
    token.special = r.flag(t, key, "special", false);
    token.lstrip = r.flag(t, key, "lstrip", false);
    token.rstrip = r.flag(t, key, "rstrip", false);
    token.normalized = r.flag(t, key, "normalized", !token.special);
    set_id(token.content, token.id);
    added_by_content[token.content] = added.size();
    if (token.normalized && !normalizer.empty()) {
      const std::string normalized = normalizer.normalize(token.content);
      if (!normalized.empty()) {
        added_by_content[normalized] = added.size();
        normalized_splitter.add(normalized, added.size());
      }
    } else {
      splitter.add(token.content, added.size());
    }
    if (token.special) special.insert(token.content);
    added.push_back(std::move(token));
  }
}

// Pre-tokenizer: ByteLevel (byte-level BPE), Metaspace or none.
void Tokenizer::State::read_pre_tokenizer(const Value& pre, const Reader& r) {
  std::string pre_type = "null";
  if (!pre.is(Value::Type::Null)) {
    r.typed(pre, "pre_tokenizer", Value::Type::Object);
    pre_type = r.member(pre, "pre_tokenizer", "type", Value::Type::String).string;
  }
  if (pre_type == "ByteLevel") {
    if (unigram) r.fail("pre_tokenizer.type", "is \"ByteLevel\", which wgi takes with a BPE model only");
    pre_tokenizer = PreTokenizer::ByteLevel;
    add_prefix_space = r.flag(pre, "pre_tokenizer", "add_prefix_space", false);
    use_regex = r.flag(pre, "pre_tokenizer", "use_regex", true);
  } else if (pre_type == "Metaspace") {
    pre_tokenizer = PreTokenizer::Metaspace;
    metaspace = r.text(pre, "pre_tokenizer", "replacement", "\u2581");
    if (metaspace.empty()) r.fail("pre_tokenizer.replacement", "is empty");
    if (const Value* rep = pre.find("str_rep"); rep && !rep->is(Value::Type::Null)) {
      if (!rep->is(Value::Type::String) || rep->string != metaspace)
        r.fail("pre_tokenizer.str_rep", "must equal replacement");
    }
    const std::string scheme = r.text(pre, "pre_tokenizer", "prepend_scheme", "always");
    if (scheme == "always") {
      prepend = Prepend::Always;
    } else if (scheme == "first") {
      prepend = Prepend::First;
    } else if (scheme == "never") {
      prepend = Prepend::Never;
    } else {
      r.fail("pre_tokenizer.prepend_scheme",
             "must be \"always\", \"first\" or \"never\", found \"" + scheme + "\"");
    }
    // The tokenizers library splits at each replacement when split is true, transformers.js 4.3 does not:
    // wgi takes only the case where both agree.
    if (r.flag(pre, "pre_tokenizer", "split", false)) {
      r.fail("pre_tokenizer.split",
             "must be false (transformers.js and the tokenizers library split differently when it is true)");
    }
  } else if (pre_type == "null") {
    pre_tokenizer = PreTokenizer::None;
  } else {
    r.fail("pre_tokenizer.type",
           "must be \"ByteLevel\", \"Metaspace\" or the pre_tokenizer null, found \"" + pre_type + "\"");
  }
  byte_level = pre_tokenizer == PreTokenizer::ByteLevel;
}

// A BPE model's tables: each token's bytes (byte-level), the byte-fallback ids, the unknown token, and the
// symbols with the merges between them.
void Tokenizer::State::read_bpe_tables(const Value& model, const Value& vocab, const Reader& r) {
  const ByteAlphabet& alphabet = byte_alphabet();
  if (byte_level) {
    // Every other token must be spelled in the byte alphabet, or decoding it would have no bytes to give.
    token_bytes.resize(id_to_token.size());
    for (const json::Member& m : vocab.object) {
      if (added_by_content.count(m.key)) continue;
      std::string& bytes = token_bytes[static_cast<size_t>(token_to_id.at(m.key))];
      for (char32_t cp : unicode::decode_utf8(m.key, "tokenizer.json: a 'model.vocab' token")) {
        auto it = alphabet.char_to_byte.find(cp);
        if (it == alphabet.char_to_byte.end()) {
          std::ostringstream hex;
          hex << std::hex << std::uppercase << static_cast<uint32_t>(cp);
          r.fail("model.vocab." + m.key,
                 "has a character outside the ByteLevel alphabet (U+" + hex.str() + ")");
        }
        bytes += static_cast<char>(it->second);
      }
    }
  } else {
    for (const json::Member& m : vocab.object)
      unicode::decode_utf8(m.key, "tokenizer.json: a 'model.vocab' token");
  }
  if (byte_fallback && byte_level) {
    r.fail("model.byte_fallback", "must be false with a ByteLevel pre-tokenizer (every byte has a token)");
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = token_to_id.find(name);
    byte_fallback_ids[static_cast<size_t>(b)] = it == token_to_id.end() ? -1 : it->second;
  }

  if (const Value* unk = model.find("unk_token"); unk && !unk->is(Value::Type::Null)) {
    unk_id = id_of_token(r, "model.unk_token", r.typed(*unk, "model.unk_token", Value::Type::String).string);
  }

  // Symbols: the token strings, then the merges between them.
  for (const json::Member& m : vocab.object) intern(m.key);
  const Value& merge_list = r.member(model, "model", "merges", Value::Type::Array);
  for (size_t i = 0; i < merge_list.array.size(); ++i) {
    const std::string key = "model.merges[" + std::to_string(i) + "]";
    const Value& m = merge_list.array[i];
    std::string a, b;
    if (m.is(Value::Type::String)) {
      const size_t space = m.string.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == m.string.size()) {
        r.fail(key, "must be two tokens separated by a space, found \"" + m.string + "\"");
      }
      a = m.string.substr(0, space);
      b = m.string.substr(space + 1);
    } else if (m.is(Value::Type::Array) && m.array.size() == 2 && m.array[0].is(Value::Type::String) &&
               m.array[1].is(Value::Type::String)) {
      a = m.array[0].string;
      b = m.array[1].string;
    } else {
      r.fail(key, "must be a string \"a b\" or an array of two strings");
    }
    const int32_t sa = intern(a), sb = intern(b), merged = intern(a + b);
    // A repeated merge is a malformed file (transformers.js would silently keep its last rank).
    if (!merges.emplace(pair_key(sa, sb), Merge{static_cast<int32_t>(i), merged}).second) {
      r.fail(key, "repeats the merge \"" + a + " " + b + "\"");
    }
  }
  for (const auto& [token, symbol] : symbol_of) {
    if (auto it = token_to_id.find(token); it != token_to_id.end())
      symbol_id[static_cast<size_t>(symbol)] = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = symbol_of.find(alphabet.byte_to_text[static_cast<size_t>(b)]);
    byte_symbol[static_cast<size_t>(b)] = it == symbol_of.end() ? -1 : it->second;
  }
}

// Decoder: ByteLevel for a ByteLevel pre-tokenizer; else a chain on the token strings.
void Tokenizer::State::read_decoder_chain(const Value& value, const Reader& r) {
  if (!value.is(Value::Type::Null)) read_decoder(value, r, "decoder", decoder);
  const bool byte_level_decoder = std::any_of(decoder.begin(), decoder.end(), [](const DecoderStep& d) {
    return d.kind == DecoderStep::Kind::ByteLevel;
  });
  if (byte_level && (decoder.size() != 1 || !byte_level_decoder)) {
    r.fail("decoder", "must be ByteLevel alone for a ByteLevel pre-tokenizer");
  }
  if (!byte_level && byte_level_decoder) {
    r.fail("decoder", "is ByteLevel, which wgi takes with a ByteLevel pre-tokenizer only");
  }
}

// Post-processor: RobertaProcessing's <s> text </s>, TemplateProcessing's single template, or none.
void Tokenizer::State::read_post_processor(const Value& post, const Reader& r) {
  if (post.is(Value::Type::Null)) return;
  r.typed(post, "post_processor", Value::Type::Object);
  const Value& type = r.member(post, "post_processor", "type", Value::Type::String);
  if (type.string == "RobertaProcessing") {
    const auto special_of = [&](const char* key) {
      const Value& v = r.member(post, "post_processor", key, Value::Type::Array);
      const std::string path = std::string("post_processor.") + key;
      if (v.array.size() != 2 || !v.array[0].is(Value::Type::String)) r.fail(path, "must be [token, id]");
      return id_of_token(r, path, v.array[0].string);
    };
    prefix_ids = {special_of("cls")};
    suffix_ids = {special_of("sep")};
  } else if (type.string == "TemplateProcessing") {
    // transformers.js puts each SpecialToken's id (a token string) around the text's tokens.
    const Value& single = r.member(post, "post_processor", "single", Value::Type::Array);
    bool seen_text = false;
    for (size_t i = 0; i < single.array.size(); ++i) {
      const std::string key = "post_processor.single[" + std::to_string(i) + "]";
      const Value& item = r.typed(single.array[i], key, Value::Type::Object);
      if (const Value* special_token = item.find("SpecialToken")) {
        const std::string& token =
            r.member(r.typed(*special_token, key + ".SpecialToken", Value::Type::Object),
                     key + ".SpecialToken", "id", Value::Type::String)
                .string;
        (seen_text ? suffix_ids : prefix_ids).push_back(id_of_token(r, key + ".SpecialToken.id", token));
      } else if (const Value* sequence = item.find("Sequence")) {
        const std::string& id = r.member(r.typed(*sequence, key + ".Sequence", Value::Type::Object),
                                         key + ".Sequence", "id", Value::Type::String)
                                    .string;
        if (id != "A" || seen_text) r.fail(key + ".Sequence.id", "must be \"A\", once (one text is encoded)");
        seen_text = true;
      } else {
        r.fail(key, "must be a SpecialToken or a Sequence");
      }
    }
    if (!seen_text) r.fail("post_processor.single", "has no Sequence \"A\" (where the text goes)");
  } else {
    r.fail("post_processor.type",
           "must be \"RobertaProcessing\", \"TemplateProcessing\" or the post_processor null, found \"" +
               type.string + "\"");
  }
}

void Tokenizer::State::read_tokenizer_config(std::string_view tokenizer_config_json) {
  const Reader c("tokenizer_config.json");
  const Value config = c.parse(tokenizer_config_json);
  c.typed(config, "(the document)", Value::Type::Object);
  clean_up_tokenization_spaces = c.flag(config, "", "clean_up_tokenization_spaces", true);
  // transformers.js would apply these to the text before the model; wgi does not, so it refuses them.
  for (const char* key : {"remove_space", "do_lowercase_and_remove_accent"}) {
    if (c.flag(config, "", key, false))
      c.fail(key, "must be false (wgi does not rewrite the text before BPE)");
  }
  if (const Value* extra = config.find("additional_special_tokens"); extra && !extra->is(Value::Type::Null)) {
    c.typed(*extra, "additional_special_tokens", Value::Type::Array);
    for (size_t i = 0; i < extra->array.size(); ++i) {
      const Value& v = extra->array[i];
      // Written either as strings or as AddedToken objects with a content.
      const std::string key = "additional_special_tokens[" + std::to_string(i) + "]";
      special.insert(v.is(Value::Type::Object) ? c.member(v, key, "content", Value::Type::String).string
                                               : c.typed(v, key, Value::Type::String).string);
    }
  }
}

Tokenizer::Tokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  auto s = std::make_unique<State>();
  const Reader r("tokenizer.json");
  const Value root = r.parse(tokenizer_json);
  r.typed(root, "(the document)", Value::Type::Object);

  const Value& model = r.member(root, "", "model", Value::Type::Object);
  const Value& added = r.member(root, "", "added_tokens", Value::Type::Array);
  const State::ModelVocabulary vocabulary = s->read_model(model, added.array.size(), r);
  s->normalizer = TextNormalizer::from_json(r.member(root, "", "normalizer"), r);
  s->read_added_tokens(added, vocabulary.id_limit, r);
  s->read_pre_tokenizer(r.member(root, "", "pre_tokenizer"), r);
  if (vocabulary.bpe_vocab) s->read_bpe_tables(model, *vocabulary.bpe_vocab, r);
  s->read_decoder_chain(r.member(root, "", "decoder"), r);
  s->read_post_processor(r.member(root, "", "post_processor"), r);
  if (!tokenizer_config_json.empty()) s->read_tokenizer_config(tokenizer_config_json);
  return Tokenizer(std::move(s));
}

Tokenizer Tokenizer::from_folder(const std::filesystem::path& folder) {
  const auto read = [](const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error("cannot read " + file.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::filesystem::path config = folder / "tokenizer_config.json";
  return from_json(read(folder / "tokenizer.json"),
                   std::filesystem::exists(config) ? read(config) : std::string());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  unicode::decode_utf8(text, "tokenizer: the text");
  const State& s = *state_;
  std::vector<AddedTokenSplitter::Piece> pieces = s.splitter.split(text);
  s.strip_beside_tokens(pieces);
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = s.prefix_ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& piece = pieces[i];
    if (piece.text.empty()) continue;
    if (auto it = s.added_by_content.find(std::string(piece.text)); it != s.added_by_content.end()) {
      ids.push_back(s.added[it->second].id);
    } else {
      s.encode_section(piece.text, i, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), s.suffix_ids.begin(), s.suffix_ids.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  const State& s = *state_;
  std::string out;
  if (s.byte_level) {
    std::string bytes;
    const auto flush = [&] {
      out += unicode::decode_utf8_lossy(bytes);
      bytes.clear();
    };
    for (int32_t id : ids) {
      const bool known = id >= 0 && static_cast<size_t>(id) < s.id_to_token.size() && s.id_to_token[id];
      const std::string& token =
          known ? *s.id_to_token[id]
                : *s.id_to_token[s.unknown("token id " + std::to_string(id) + " is outside the vocabulary")];
      if (options.skip_special_tokens && s.special.count(token)) continue;
      if (s.added_by_content.count(token)) {
        // Added tokens are text as they are; the bytes before them are decoded on their own.
        flush();
        out += token;
        continue;
      }
      bytes += s.token_bytes[known ? id : *s.unk_id];
    }
    flush();
  } else {
    std::vector<std::string> tokens;
    for (int32_t id : ids) {
      const bool known = id >= 0 && static_cast<size_t>(id) < s.id_to_token.size() && s.id_to_token[id];
      const std::string& token =
          known ? *s.id_to_token[id]
                : *s.id_to_token[s.unknown("token id " + std::to_string(id) + " is outside the vocabulary")];
      if (options.skip_special_tokens && s.special.count(token)) continue;
      tokens.push_back(token);
    }
    // No decoder: transformers.js joins the tokens with spaces.
    if (s.decoder.empty()) {
      for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    } else {
      out = s.decode_tokens(std::move(tokens));
    }
  }
  if (options.clean_up_tokenization_spaces.value_or(s.clean_up_tokenization_spaces)) {
    out = clean_up_tokenization(std::move(out));
  }
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = state_->token_to_id.find(std::string(token));
  return it == state_->token_to_id.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= state_->id_to_token.size()) return std::nullopt;
  return state_->id_to_token[id];
}

size_t Tokenizer::vocab_size() const {
  return state_->id_to_token.size();
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return state_->added;
}

}  // namespace wgi::pipelines
