#include "pipelines/tokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <mutex>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/json.h"
#include "pipelines/unicode.h"
#include "wgi/error.h"

namespace wgi::pipelines {

namespace {

using json::Value;

// transformers.js caches words shorter than 256 characters in a 10,000-entry cache; the results do not depend
// on it, only the time does.
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kCacheCapacity = 10000;

const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Null:
      return "null";
    case Value::Type::Bool:
      return "a boolean";
    case Value::Type::Number:
      return "a number";
    case Value::Type::String:
      return "a string";
    case Value::Type::Array:
      return "an array";
    case Value::Type::Object:
      return "an object";
  }
  return "?";
}

// Reads tokenizer.json / tokenizer_config.json with errors that name the file and the key.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(file_ + ": '" + key + "' " + what);
  }
  const Value& member(const Value& object, std::string_view parent, std::string_view key) const {
    const Value* v = object.find(key);
    if (!v) fail(join(parent, key), "is missing");
    return *v;
  }
  const Value& typed(const Value& v, const std::string& key, Value::Type type) const {
    if (!v.is(type)) fail(key, std::string("must be ") + type_name(type) + ", found " + type_name(v.type));
    return v;
  }
  const Value& member(const Value& object, std::string_view parent, std::string_view key,
                      Value::Type type) const {
    return typed(member(object, parent, key), join(parent, key), type);
  }
  // An optional boolean (absent or null: `fallback`).
  bool flag(const Value& object, std::string_view parent, std::string_view key, bool fallback) const {
    const Value* v = object.find(key);
    if (!v || v->is(Value::Type::Null)) return fallback;
    return typed(*v, join(parent, key), Value::Type::Bool).boolean;
  }
  // A token id below `limit`.
  int32_t id(const Value& v, const std::string& key, size_t limit) const {
    typed(v, key, Value::Type::Number);
    if (v.number < 0 || v.number >= static_cast<double>(limit) || std::floor(v.number) != v.number) {
      fail(key, "must be a token id (an integer in [0, " + std::to_string(limit) +
                    "), twice the tokens the file "
                    "defines), found " +
                    json::number(v.number));
    }
    return static_cast<int32_t>(v.number);
  }
  static std::string join(std::string_view parent, std::string_view key) {
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
  }

 private:
  std::string file_;
};

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

}  // namespace

struct Tokenizer::State {
  std::vector<std::optional<std::string>> id_to_token;
  std::vector<std::string> token_bytes;  // What each token of the model decodes to (empty for added tokens).
  std::unordered_map<std::string, int32_t> token_to_id;  // Added tokens over the model's vocabulary.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, size_t> added_by_content;
  std::unordered_set<std::string> special;  // Removed by skip_special_tokens.
  AddedTokenSplitter splitter;
  std::optional<int32_t> unk_id;

  bool add_prefix_space = false;
  bool use_regex = true;
  bool ignore_merges = false;
  std::optional<int32_t> bos_id, eos_id;  // RobertaProcessing's cls and sep.
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
    for (unsigned char b : word) encoded += byte_alphabet().byte_to_text[b];
    auto whole = token_to_id.find(encoded);
    if (ignore_merges && whole != token_to_id.end()) {
      ids.push_back(whole->second);
    } else {
      // Merge the lowest-ranked adjacent pair, the leftmost of equal ranks, until none is left; a heap of
      // candidate pairs over a linked list of symbols, stale entries skipped when popped.
      struct Node {
        int32_t symbol, prev, next;
      };
      std::vector<Node> nodes(word.size());
      for (size_t i = 0; i < word.size(); ++i) {
        nodes[i] = {byte_symbol[static_cast<unsigned char>(word[i])], static_cast<int32_t>(i) - 1,
                    i + 1 < word.size() ? static_cast<int32_t>(i + 1) : -1};
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
        left.next = nodes[right].next;
        if (left.next >= 0) nodes[left.next].prev = c.left;
        nodes[right].symbol = -2;  // Gone: no candidate can name it again.
        consider(left.prev);
        consider(c.left);
      }
      for (int32_t i = 0; i >= 0; i = nodes[i].next) {
        const int32_t symbol = nodes[i].symbol;
        ids.push_back(symbol >= 0 && symbol_id[symbol] >= 0
                          ? symbol_id[symbol]
                          : unknown("a word has a piece outside the vocabulary"));
      }
    }
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
      std::lock_guard lock(cache_mutex);
      if (cache.size() >= kCacheCapacity) cache.clear();
      cache.emplace(std::string(word), std::move(ids));
    }
  }

  // Pre-tokenizes and encodes text that holds no added token.
  void encode_plain(std::string_view section, std::vector<int32_t>& out) const {
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
};

Tokenizer::Tokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  auto s = std::make_unique<State>();
  const Reader r("tokenizer.json");
  const Value root = [&] {
    try {
      return json::parse(tokenizer_json);
    } catch (const Error& e) {
      throw Error(std::string("tokenizer.json: ") + e.what());
    }
  }();
  r.typed(root, "(the document)", Value::Type::Object);

  const Value& normalizer = r.member(root, "", "normalizer");
  if (!normalizer.is(Value::Type::Null))
    r.fail("normalizer", "must be null (wgi's byte-level BPE has no normalizer)");

  // The model: BPE with its vocabulary and merges.
  const Value& model = r.member(root, "", "model", Value::Type::Object);
  if (const Value* type = model.find("type");
      type && !(type->is(Value::Type::String) && type->string == "BPE")) {
    r.fail("model.type", "must be \"BPE\"");
  }
  for (const char* key : {"continuing_subword_prefix", "continuing_subword_suffix", "end_of_word_suffix"}) {
    const Value* v = model.find(key);
    if (v && !v->is(Value::Type::Null) && !(v->is(Value::Type::String) && v->string.empty())) {
      r.fail(std::string("model.") + key, "must be empty or null (byte-level BPE has no subword markers)");
    }
  }
  if (r.flag(model, "model", "byte_fallback", false)) r.fail("model.byte_fallback", "must be false");
  if (r.flag(model, "model", "fuse_unk", false)) r.fail("model.fuse_unk", "must be false");
  if (const Value* v = model.find("dropout"); v && !v->is(Value::Type::Null)) {
    r.fail("model.dropout", "must be null (dropout is for training)");
  }
  s->ignore_merges = r.flag(model, "model", "ignore_merges", false);

  const ByteAlphabet& alphabet = byte_alphabet();
  const Value& vocab = r.member(model, "model", "vocab", Value::Type::Object);
  if (vocab.object.empty()) r.fail("model.vocab", "is empty");
  const Value& added = r.member(root, "", "added_tokens", Value::Type::Array);
  // The id table is allocated up to the largest id: ids far beyond the number of tokens are a corrupt file
  // (real ones are dense), not a reason to allocate gigabytes.
  const size_t id_limit = 2 * (vocab.object.size() + added.array.size()) + 256;
  const auto set_id = [&](const std::string& token, int32_t id) {
    if (s->id_to_token.size() <= static_cast<size_t>(id)) s->id_to_token.resize(static_cast<size_t>(id) + 1);
    s->id_to_token[id] = token;
    s->token_to_id[token] = id;
  };
  for (const json::Member& m : vocab.object) {
    const int32_t id = r.id(m.value, "model.vocab." + m.key, id_limit);
    if (static_cast<size_t>(id) < s->id_to_token.size() && s->id_to_token[id]) {
      r.fail("model.vocab." + m.key,
             "has id " + std::to_string(id) + ", which '" + *s->id_to_token[id] + "' has too");
    }
    set_id(m.key, id);
  }

  // Added tokens: matched in text before BPE, their ids over the model's.
  for (size_t i = 0; i < added.array.size(); ++i) {
    const std::string key = "added_tokens[" + std::to_string(i) + "]";
    const Value& t = r.typed(added.array[i], key, Value::Type::Object);
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
    s->added_by_content[token.content] = s->added.size();
    s->splitter.add(token.content, s->added.size());
    if (token.special) s->special.insert(token.content);
    s->added.push_back(std::move(token));
  }

  // Every other token must be spelled in the byte alphabet, or decoding it would have no bytes to give.
  s->token_bytes.resize(s->id_to_token.size());
  for (const json::Member& m : vocab.object) {
    if (s->added_by_content.count(m.key)) continue;
    std::string& bytes = s->token_bytes[s->token_to_id.at(m.key)];
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

  if (const Value* unk = model.find("unk_token"); unk && !unk->is(Value::Type::Null)) {
    const std::string& name = r.typed(*unk, "model.unk_token", Value::Type::String).string;
    auto it = s->token_to_id.find(name);
    if (it == s->token_to_id.end())
      r.fail("model.unk_token", "names '" + name + "', which is not in the vocabulary");
    s->unk_id = it->second;
  }

  // Symbols: the token strings, then the merges between them.
  for (const json::Member& m : vocab.object) s->intern(m.key);
  const Value& merges = r.member(model, "model", "merges", Value::Type::Array);
  for (size_t i = 0; i < merges.array.size(); ++i) {
    const std::string key = "model.merges[" + std::to_string(i) + "]";
    const Value& m = merges.array[i];
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
    const int32_t sa = s->intern(a), sb = s->intern(b), merged = s->intern(a + b);
    // A repeated merge is a malformed file (transformers.js would silently keep its last rank).
    if (!s->merges.emplace(State::pair_key(sa, sb), State::Merge{static_cast<int32_t>(i), merged}).second) {
      r.fail(key, "repeats the merge \"" + a + " " + b + "\"");
    }
  }
  for (const auto& [token, symbol] : s->symbol_of) {
    if (auto it = s->token_to_id.find(token); it != s->token_to_id.end()) s->symbol_id[symbol] = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = s->symbol_of.find(alphabet.byte_to_text[b]);
    s->byte_symbol[b] = it == s->symbol_of.end() ? -1 : it->second;
  }

  // Pre-tokenizer and decoder: ByteLevel.
  const Value& pre = r.member(root, "", "pre_tokenizer", Value::Type::Object);
  const Value& pre_type = r.member(pre, "pre_tokenizer", "type", Value::Type::String);
  if (pre_type.string != "ByteLevel")
    r.fail("pre_tokenizer.type", "must be \"ByteLevel\", found \"" + pre_type.string + "\"");
  s->add_prefix_space = r.flag(pre, "pre_tokenizer", "add_prefix_space", false);
  s->use_regex = r.flag(pre, "pre_tokenizer", "use_regex", true);
  const Value& decoder = r.member(root, "", "decoder", Value::Type::Object);
  const Value& decoder_type = r.member(decoder, "decoder", "type", Value::Type::String);
  if (decoder_type.string != "ByteLevel")
    r.fail("decoder.type", "must be \"ByteLevel\", found \"" + decoder_type.string + "\"");

  // Post-processor: RobertaProcessing's <s> text </s>, or none.
  const Value& post = r.member(root, "", "post_processor");
  if (!post.is(Value::Type::Null)) {
    r.typed(post, "post_processor", Value::Type::Object);
    const Value& type = r.member(post, "post_processor", "type", Value::Type::String);
    if (type.string != "RobertaProcessing") {
      r.fail("post_processor.type",
             "must be \"RobertaProcessing\" or the post_processor null, found \"" + type.string + "\"");
    }
    const auto special_of = [&](const char* key) {
      const Value& v = r.member(post, "post_processor", key, Value::Type::Array);
      const std::string path = std::string("post_processor.") + key;
      if (v.array.size() != 2 || !v.array[0].is(Value::Type::String)) r.fail(path, "must be [token, id]");
      auto it = s->token_to_id.find(v.array[0].string);
      if (it == s->token_to_id.end())
        r.fail(path, "names '" + v.array[0].string + "', which is not in the vocabulary");
      return it->second;
    };
    s->bos_id = special_of("cls");
    s->eos_id = special_of("sep");
  }

  if (!tokenizer_config_json.empty()) {
    const Reader c("tokenizer_config.json");
    const Value config = [&] {
      try {
        return json::parse(tokenizer_config_json);
      } catch (const Error& e) {
        throw Error(std::string("tokenizer_config.json: ") + e.what());
      }
    }();
    c.typed(config, "(the document)", Value::Type::Object);
    s->clean_up_tokenization_spaces = c.flag(config, "", "clean_up_tokenization_spaces", true);
    // transformers.js would apply these to the text before BPE; wgi does not, so it refuses them.
    for (const char* key : {"remove_space", "do_lowercase_and_remove_accent"}) {
      if (c.flag(config, "", key, false))
        c.fail(key, "must be false (wgi does not rewrite the text before BPE)");
    }
    if (const Value* extra = config.find("additional_special_tokens");
        extra && !extra->is(Value::Type::Null)) {
      c.typed(*extra, "additional_special_tokens", Value::Type::Array);
      for (size_t i = 0; i < extra->array.size(); ++i) {
        const Value& v = extra->array[i];
        // Written either as strings or as AddedToken objects with a content.
        const std::string key = "additional_special_tokens[" + std::to_string(i) + "]";
        s->special.insert(v.is(Value::Type::Object) ? c.member(v, key, "content", Value::Type::String).string
                                                    : c.typed(v, key, Value::Type::String).string);
      }
    }
  }
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
  // lstrip / rstrip take the whitespace off the neighbouring pieces, in order, as transformers.js does.
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].token) continue;
    const AddedToken& t = s.added[*pieces[i].token];
    if (t.lstrip && i > 0) pieces[i - 1].text = unicode::trim_end(pieces[i - 1].text);
    if (t.rstrip && i + 1 < pieces.size()) pieces[i + 1].text = unicode::trim_start(pieces[i + 1].text);
  }
  std::vector<int32_t> ids;
  if (add_special_tokens && s.bos_id) ids.push_back(*s.bos_id);
  for (const auto& piece : pieces) {
    if (piece.text.empty()) continue;
    if (auto it = s.added_by_content.find(std::string(piece.text)); it != s.added_by_content.end()) {
      ids.push_back(s.added[it->second].id);
    } else {
      s.encode_plain(piece.text, ids);
    }
  }
  if (add_special_tokens && s.eos_id) ids.push_back(*s.eos_id);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  const State& s = *state_;
  std::string out, bytes;
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
