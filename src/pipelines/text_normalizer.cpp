#include "pipelines/text_normalizer.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "pipelines/unicode.h"

namespace wgi::pipelines {

namespace {

using json::Value;

struct CodePointRange {
  char32_t first, last;
};
struct LowercaseMapping {
  char32_t from;
  char32_t to[3];
  uint8_t length;
};

#include "pipelines/lowercase_table.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                    [](char32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

constexpr char32_t kCapitalSigma = 0x03A3, kSmallSigma = 0x03C3, kFinalSigma = 0x03C2;

bool is_cased(char32_t cp) {
  return in_ranges(kCasedRanges, cp);
}
bool is_case_ignorable(char32_t cp) {
  return in_ranges(kCaseIgnorableRanges, cp);
}

// Unicode's Final_Sigma context of the capital sigma at `i`: a cased letter before it (case-ignorable
// characters between allowed) and none after it.
bool is_final_sigma(const std::vector<char32_t>& cps, size_t i) {
  size_t before = i;
  while (before > 0 && is_case_ignorable(cps[before - 1])) --before;
  if (before == 0 || !is_cased(cps[before - 1])) return false;
  size_t after = i + 1;
  while (after < cps.size() && is_case_ignorable(cps[after])) ++after;
  return after == cps.size() || !is_cased(cps[after]);
}

void append_lower(std::vector<char32_t>& out, const std::vector<char32_t>& cps, size_t i) {
  const char32_t cp = cps[i];
  if (cp == kCapitalSigma) {
    out.push_back(is_final_sigma(cps, i) ? kFinalSigma : kSmallSigma);
    return;
  }
  const auto* it = std::lower_bound(std::begin(kLowercase), std::end(kLowercase), cp,
                                    [](const LowercaseMapping& m, char32_t value) { return m.from < value; });
  if (it == std::end(kLowercase) || it->from != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), it->to, it->to + it->length);
}

std::string to_utf8(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t cp : cps) unicode::append_utf8(out, cp);
  return out;
}

// Unicode's White_Space, which the tokenizers library's regexes mean by \s (it rewrites \s to
// \p{White_Space}): JavaScript's \s without U+FEFF, with U+0085. (Strip trims JavaScript's set.)
bool is_white_space_property(char32_t cp) {
  return cp == 0x85 || (cp != 0xFEFF && unicode::is_whitespace(cp));
}

// The Regex patterns wgi takes (text_normalizer.h): a set of code points, matched one at a time or as runs.
struct CharacterSet {
  std::vector<CodePointRange> ranges;
  bool white_space = false;  // \s
  bool run = false;          // followed by "+"
  bool contains(char32_t cp) const {
    if (white_space && is_white_space_property(cp)) return true;
    return std::any_of(ranges.begin(), ranges.end(),
                       [&](const CodePointRange& r) { return r.first <= cp && cp <= r.last; });
  }
};

// Parses `pattern` as one character class or \s, optionally followed by "+"; nullopt for anything else.
std::optional<CharacterSet> parse_character_set(std::string_view pattern) {
  std::vector<char32_t> cps;
  try {
    cps = unicode::decode_utf8(pattern, "pattern");
  } catch (const Error&) {
    return std::nullopt;
  }
  CharacterSet set;
  size_t i = 0;
  const auto escape_is_literal = [](char32_t c) {
    return c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
  };
  if (cps.size() >= 2 && cps[0] == U'\\' && cps[1] == U's') {
    set.white_space = true;
    i = 2;
  } else if (!cps.empty() && cps[0] == U'[') {
    i = 1;
    if (i < cps.size() && cps[i] == U'^') return std::nullopt;  // negated
    // One member: a literal, an escaped punctuation character, \t \n \r; \s is flagged (returns nullopt).
    const auto member = [&](char32_t& out) -> bool {
      if (i >= cps.size()) return false;
      if (cps[i] != U'\\') {
        if (cps[i] == U'[') return false;  // nested classes and POSIX brackets
        out = cps[i++];
        return true;
      }
      if (i + 1 >= cps.size()) return false;
      const char32_t c = cps[i + 1];
      i += 2;
      if (c == U't' || c == U'n' || c == U'r') {
        out = c == U't' ? U'\t' : c == U'n' ? U'\n' : U'\r';
        return true;
      }
      if (!escape_is_literal(c)) return false;
      out = c;
      return true;
    };
    bool closed = false;
    while (i < cps.size()) {
      if (cps[i] == U']' && (!set.ranges.empty() || set.white_space)) {
        ++i;
        closed = true;
        break;
      }
      if (cps[i] == U'\\' && i + 1 < cps.size() && cps[i + 1] == U's') {
        set.white_space = true;
        i += 2;
        continue;
      }
      char32_t first = 0;
      if (!member(first)) return std::nullopt;
      char32_t last = first;
      if (i + 1 < cps.size() && cps[i] == U'-' && cps[i + 1] != U']') {
        ++i;
        if (!member(last) || last < first) return std::nullopt;
      }
      set.ranges.push_back({first, last});
    }
    if (!closed) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (i < cps.size() && cps[i] == U'+') {
    set.run = true;
    ++i;
  }
  if (i != cps.size()) return std::nullopt;
  return set;
}

}  // namespace

std::string to_lower_js(std::string_view text) {
  const std::vector<char32_t> cps = unicode::decode_utf8(text, "text");
  std::vector<char32_t> out;
  out.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
  return to_utf8(out);
}

struct TextNormalizer::Step {
  enum class Kind { ReplaceString, ReplaceSet, Lowercase, Strip };
  Kind kind = Kind::Lowercase;
  std::string from, to;  // ReplaceString (from non-empty); `to` also for ReplaceSet
  CharacterSet set;
  bool strip_left = false, strip_right = false;

  std::string apply(std::string text) const {
    switch (kind) {
      case Kind::ReplaceString:
        return unicode::replace_all(text, from, to);
      case Kind::ReplaceSet: {
        const std::vector<char32_t> cps = unicode::decode_utf8(text, "text");
        std::string out;
        for (size_t i = 0; i < cps.size();) {
          if (!set.contains(cps[i])) {
            unicode::append_utf8(out, cps[i++]);
            continue;
          }
          ++i;
          if (set.run) {
            while (i < cps.size() && set.contains(cps[i])) ++i;
          }
          out += to;
        }
        return out;
      }
      case Kind::Lowercase:
        return to_lower_js(text);
      case Kind::Strip: {
        std::string_view v = text;
        if (strip_left) v = unicode::trim_start(v);
        if (strip_right) v = unicode::trim_end(v);
        return std::string(v);
      }
    }
    return text;
  }
};

TextNormalizer::TextNormalizer() = default;
TextNormalizer::TextNormalizer(TextNormalizer&&) noexcept = default;
TextNormalizer& TextNormalizer::operator=(TextNormalizer&&) noexcept = default;
TextNormalizer::~TextNormalizer() = default;

TextNormalizer TextNormalizer::from_json(const Value& normalizer, const TokenizerJsonReader& r,
                                         const std::string& key) {
  TextNormalizer n;
  if (normalizer.is(Value::Type::Null)) return n;
  // Sequences flatten: applying the steps in order is what a Sequence does.
  const auto read = [&](const auto& self, const Value& v, const std::string& path) -> void {
    r.typed(v, path, Value::Type::Object);
    const std::string type = r.member(v, path, "type", Value::Type::String).string;
    Step step;
    if (type == "Sequence") {
      const Value& list = r.member(v, path, "normalizers", Value::Type::Array);
      for (size_t i = 0; i < list.array.size(); ++i) {
        self(self, list.array[i], path + ".normalizers[" + std::to_string(i) + "]");
      }
      return;
    } else if (type == "Lowercase") {
      step.kind = Step::Kind::Lowercase;
    } else if (type == "Strip") {
      step.kind = Step::Kind::Strip;
      step.strip_left = r.flag(v, path, "strip_left", false);
      step.strip_right = r.flag(v, path, "strip_right", false);
    } else if (type == "Replace") {
      const Value& pattern = r.member(v, path, "pattern", Value::Type::Object);
      step.to = r.text(v, path, "content", "");
      unicode::decode_utf8(step.to, "tokenizer.json: '" + path + ".content'");
      if (const Value* s = pattern.find("String")) {
        step.kind = Step::Kind::ReplaceString;
        step.from = r.typed(*s, path + ".pattern.String", Value::Type::String).string;
        unicode::decode_utf8(step.from, "tokenizer.json: '" + path + ".pattern.String'");
        // An empty pattern matches everywhere in JavaScript; no tokenizer writes one.
        if (step.from.empty()) r.fail(path + ".pattern.String", "is empty");
      } else if (const Value* re = pattern.find("Regex")) {
        const std::string& source = r.typed(*re, path + ".pattern.Regex", Value::Type::String).string;
        std::optional<CharacterSet> set = parse_character_set(source);
        if (!set) {
          r.fail(path + ".pattern.Regex",
                 "is /" + source +
                     "/, which wgi does not take: it takes one character class ([...] of characters, ranges "
                     "and \\s) or \\s, optionally followed by + (SigLIP's patterns)");
        }
        step.kind = Step::Kind::ReplaceSet;
        step.set = std::move(*set);
      } else {
        r.fail(path + ".pattern", "must have a \"String\" or a \"Regex\"");
      }
    } else {
      r.fail(path + ".type", "is \"" + type +
                                 "\", which wgi does not apply (it applies Sequence, Replace, Lowercase and "
                                 "Strip)");
    }
    n.steps_.push_back(std::move(step));
  };
  read(read, normalizer, key);
  return n;
}

std::string TextNormalizer::normalize(std::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) out = step.apply(std::move(out));
  return out;
}

bool TextNormalizer::empty() const {
  return steps_.empty();
}

}  // namespace wgi::pipelines
