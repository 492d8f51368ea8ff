// Names that come from a model or a user (node, value and op names, file names) made safe to put in a
// message: a model is untrusted input, and its strings must not drive the terminal (escape sequences), cut a
// message short (NUL) or make it huge.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wgi {

// `text` with every byte that is not printable escaped as \xNN: C0 and C1 control characters (ESC, NUL,
// newline...), DEL, bytes that are not valid UTF-8, and the Unicode bidirectional overrides (shown as
// \u{202E}). Valid printable UTF-8 stays as it is. Text longer than `max_bytes` is cut at a character
// boundary and ends with "...(N more bytes)".
std::string printable(std::string_view text, size_t max_bytes = 200);

// A whole message made safe: as printable(), but newlines and tabs are kept and each line is cut at
// `max_line_bytes`. For messages built from many parts (the CLI's last line of defence).
std::string printable_message(std::string_view message, size_t max_line_bytes = 2000);

}  // namespace wgi
