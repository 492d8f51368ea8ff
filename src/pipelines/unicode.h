// The few Unicode facts the text pipelines need, as JavaScript (transformers.js, the reference) sees them:
// \p{L} and \p{N} from a generated range table (unicode_ranges.inc, Node's Unicode version), JavaScript's \s
// (which is also what String.prototype.trim strips), and UTF-8 both ways.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgi::pipelines::unicode {

bool is_letter(char32_t cp);      // \p{L}: general category Lu, Ll, Lt, Lm or Lo.
bool is_number(char32_t cp);      // \p{N}: Nd, Nl or No.
bool is_whitespace(char32_t cp);  // JavaScript's \s: WhiteSpace and LineTerminator, U+FEFF included.
// A character JavaScript's `.` does not match without the s flag.
bool is_line_terminator(char32_t cp);

// The code points of valid UTF-8; wgi::Error naming `what` and the byte offset otherwise (overlong forms,
// surrogates and values above U+10FFFF are invalid).
std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what);
void append_utf8(std::string& out, char32_t cp);
inline size_t utf8_length(char32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// Bytes to text as the WHATWG decoder does without `fatal` (TextDecoder, which transformers.js uses): each
// maximal invalid subsequence becomes U+FFFD.
std::string decode_utf8_lossy(std::string_view bytes);

// `text` with every occurrence of `from` (non-empty) replaced by `to`, left to right, as
// String.prototype.replaceAll does.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

// `text` without JavaScript whitespace at its start / end (String.prototype.trimStart / trimEnd).
std::string_view trim_start(std::string_view text);
std::string_view trim_end(std::string_view text);
inline std::string_view trim(std::string_view text) {
  return trim_end(trim_start(text));
}

}  // namespace wgi::pipelines::unicode
