#include "pipelines/unicode.h"

#include <algorithm>
#include <iterator>

#include "wgi/error.h"

namespace wgi::pipelines::unicode {

namespace {

struct CodePointRange {
  char32_t first, last;
};

#include "pipelines/unicode_ranges.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                    [](char32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

constexpr char32_t kReplacement = 0xFFFD;

// The code point that starts at text[pos] of valid UTF-8, and its length in bytes.
char32_t code_point_at(std::string_view text, size_t pos, size_t& length) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    length = 1;
    return lead;
  }
  length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  char32_t cp = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (byte(i) & 0x3F);
  return cp;
}

}  // namespace

bool is_letter(char32_t cp) {
  return in_ranges(kLetterRanges, cp);
}
bool is_number(char32_t cp) {
  return in_ranges(kNumberRanges, cp);
}

bool is_whitespace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_line_terminator(char32_t cp) {
  return cp == 0x0A || cp == 0x0D || cp == 0x2028 || cp == 0x2029;
}

std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    size_t length = lead < 0x80                    ? 1
                    : lead >= 0xC2 && lead <= 0xDF ? 2
                    : lead >= 0xE0 && lead <= 0xEF ? 3
                    : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                   : 0;
    bool valid = length != 0 && pos + length <= text.size();
    for (size_t i = 1; valid && i < length; ++i)
      valid = (static_cast<unsigned char>(text[pos + i]) & 0xC0) == 0x80;
    char32_t cp = 0;
    if (valid) {
      cp = code_point_at(text, pos, length);
      const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = cp >= smallest[length] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (!valid) throw Error(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(pos));
    out.push_back(cp);
    pos += length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string decode_utf8_lossy(std::string_view bytes) {
  // The WHATWG Encoding Standard's UTF-8 decoder, step by step.
  std::string out;
  out.reserve(bytes.size());
  char32_t cp = 0;
  int needed = 0, seen = 0;
  unsigned char lower = 0x80, upper = 0xBF;
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (needed == 0) {
      ++i;
      if (b < 0x80) {
        out += static_cast<char>(b);
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed = 1;
        cp = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower = 0xA0;
        if (b == 0xED) upper = 0x9F;
        needed = 2;
        cp = b & 0xF;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower = 0x90;
        if (b == 0xF4) upper = 0x8F;
        needed = 3;
        cp = b & 0x7;
      } else {
        append_utf8(out, kReplacement);
      }
      continue;
    }
    if (b < lower || b > upper) {
      // The byte is not consumed: it starts over after the replacement.
      cp = 0;
      needed = seen = 0;
      lower = 0x80;
      upper = 0xBF;
      append_utf8(out, kReplacement);
      continue;
    }
    ++i;
    lower = 0x80;
    upper = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
    if (++seen == needed) {
      append_utf8(out, cp);
      cp = 0;
      needed = seen = 0;
    }
  }
  if (needed != 0) append_utf8(out, kReplacement);
  return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out += to;
  }
  out.append(text, pos);
  return out;
}

std::string_view trim_start(std::string_view text) {
  size_t pos = 0, length = 0;
  while (pos < text.size() && is_whitespace(code_point_at(text, pos, length))) pos += length;
  return text.substr(pos);
}

std::string_view trim_end(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t length = 0;
    if (!is_whitespace(code_point_at(text, start, length))) break;
    end = start;
  }
  return text.substr(0, end);
}

}  // namespace wgi::pipelines::unicode
