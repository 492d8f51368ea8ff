#include "core/json.h"

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <locale>
#include <sstream>
#include <utility>

#include "wgi/error.h"

namespace wgi::json {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value parse_document() {
    skip_space();
    Value v = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("expected a value");
    pos_ += word.size();
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Value v;
    switch (peek()) {
      case '{':
        v.type = Value::Type::Object;
        parse_object(v, depth);
        break;
      case '[':
        v.type = Value::Type::Array;
        parse_array(v, depth);
        break;
      case '"':
        v.type = Value::Type::String;
        v.string = parse_string();
        break;
      case 't':
        expect_word("true");
        v.type = Value::Type::Bool;
        v.boolean = true;
        break;
      case 'f':
        expect_word("false");
        v.type = Value::Type::Bool;
        break;
      case 'n':
        expect_word("null");
        break;
      default:
        v.type = Value::Type::Number;
        v.number = parse_number();
        break;
    }
    return v;
  }

  void parse_object(Value& v, int depth) {
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail("expected a member name in quotes");
      std::string key = parse_string();
      skip_space();
      if (peek() != ':') fail("expected ':' after a member name");
      ++pos_;
      skip_space();
      v.object.push_back(Member{std::move(key), parse_value(depth + 1)});
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return;
      }
      fail("expected ',' or '}' in an object");
    }
  }

  void parse_array(Value& v, int depth) {
    ++pos_;  // '['
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      v.array.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return;
      }
      fail("expected ',' or ']' in an array");
    }
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("incomplete \\u escape");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("bad hex digit in a \\u escape");
      }
    }
    return code;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code = parse_hex4();
          if (code >= 0xd800 && code < 0xdc00) {
            if (text_.substr(pos_, 2) != "\\u") fail("a high surrogate without its low surrogate");
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xdc00 || low >= 0xe000) fail("a high surrogate without its low surrogate");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          } else if (code >= 0xdc00 && code < 0xe000) {
            fail("a lone low surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default:
          fail(std::string("unknown escape \\") + e);
      }
    }
  }

  double parse_number() {
    // The JSON grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const size_t start = pos_;
    auto digits = [this] {
      const size_t from = pos_;
      while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      pos_ = start;
      fail("expected a value");
    }
    if (peek() == '.') {
      ++pos_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) fail("expected digits in the exponent");
    }
    // Through a stream in the classic locale: std::strtod follows the global C locale (a decimal comma in
    // some), and Emscripten's libc++ has no floating-point std::from_chars.
    std::istringstream in(std::string(text_.substr(start, pos_ - start)));
    in.imbue(std::locale::classic());
    double v = 0;
    in >> v;
    if (in.fail() || !std::isfinite(v)) fail("number out of range");
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  if (type != Type::Object) return nullptr;
  for (auto it = object.rbegin(); it != object.rend(); ++it) {
    if (it->key == key) return &it->value;
  }
  return nullptr;
}

Value parse(std::string_view text) {
  return Parser(text).parse_document();
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* const kHex = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no infinities or NaNs
  std::ostringstream out;
  out.imbue(std::locale::classic());
  if (std::fabs(v) < 0x1p53 && std::floor(v) == v) {
    out << std::fixed << std::setprecision(0) << v;  // integers exactly
  } else {
    out << std::setprecision(9) << v;
  }
  return out.str();
}

}  // namespace wgi::json
