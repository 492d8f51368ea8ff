#include "wgi/printable.h"

#include <cstdint>
#include <cstdio>

namespace wgi {

namespace {

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 when it is not one (overlong,
// surrogate, past U+10FFFF, truncated).
size_t utf8_sequence(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, code_point = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, code_point = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, code_point = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

bool is_bidi_control(uint32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

std::string escaped(std::string_view text, size_t max_bytes, bool keep_newlines) {
  std::string out;
  size_t i = 0;
  size_t line_start = 0;  // in `out`
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (keep_newlines && c == '\n') {
      out += '\n';
      line_start = out.size();
      ++i;
      continue;
    }
    if (out.size() - line_start >= max_bytes) {
      size_t end = keep_newlines ? text.find('\n', i) : std::string_view::npos;
      if (end == std::string_view::npos) end = text.size();
      out += "...(" + std::to_string(end - i) + " more bytes)";
      i = end;
      continue;
    }
    char buf[16];
    if ((c >= 0x20 && c < 0x7F) || (keep_newlines && c == '\t')) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    uint32_t code_point = 0;
    const size_t length = c >= 0x80 ? utf8_sequence(text, i, code_point) : 0;
    if (length && code_point >= 0xA0 && !is_bidi_control(code_point)) {
      out.append(text.substr(i, length));
      i += length;
    } else if (length) {
      std::snprintf(buf, sizeof buf, "\\u{%X}", code_point);
      out += buf;
      i += length;
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
  return escaped(text, max_bytes, false);
}

std::string printable_message(std::string_view message, size_t max_line_bytes) {
  return escaped(message, max_line_bytes, true);
}

}  // namespace wgi
