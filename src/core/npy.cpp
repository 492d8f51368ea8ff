#include "core/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "wgi/printable.h"

namespace wgi::npy {

namespace {

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "<f4";
    case DType::Float16:
      return "<f2";
    case DType::Int64:
      return "<i8";
    case DType::Int32:
      return "<i4";
    case DType::Int8:
      return "|i1";
    case DType::UInt8:
      return "|u1";
    case DType::Bool:
      return "|b1";
  }
  return "?";
}

DType dtype_of_descr(const std::string& descr, const std::string& what) {
  for (DType d :
       {DType::Float32, DType::Float16, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    std::string known = descr_of(d);
    // '<' little-endian, '|' not applicable, '=' native (little-endian on every machine wgi runs on).
    if (descr == known || (descr.size() == 3 && known.substr(1) == descr.substr(1) &&
                           (descr[0] == '=' || descr[0] == '|' || descr[0] == '<'))) {
      return d;
    }
  }
  throw Error(what + ": unsupported .npy dtype '" + printable(descr) +
              "' (wgi reads float32, float16, int64, int32, int8, uint8, bool; little-endian)");
}

// The longest header wgi reads: numpy writes a few hundred bytes, and np.load itself refuses more than 10000
// by default (max_header_size). The cap keeps a hostile version-2 header from claiming gigabytes.
constexpr size_t kMaxHeaderBytes = 1 << 16;

// A strict parser of the header's Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }: exactly the three keys, each once; a shape of non-negative integers that fit in int64.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  ArrayHeader parse() {
    ArrayHeader out;
    bool has_descr = false, has_order = false, has_shape = false;
    skip_space();
    expect('{');
    for (skip_space(); !at('}'); skip_space()) {
      const std::string key = quoted("a key");
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        once(has_descr, key);
        if (at('[')) fail("structured dtypes (a descr list) are not supported");
        out.descr = quoted("the descr string");
      } else if (key == "fortran_order") {
        once(has_order, key);
        if (word("True"))
          fail("Fortran-ordered .npy arrays are not supported (save with np.ascontiguousarray)");
        if (!word("False")) fail("fortran_order must be True or False");
      } else if (key == "shape") {
        once(has_shape, key);
        out.shape = shape();
      } else {
        fail("unexpected key '" + printable(key) + "'");
      }
      skip_space();
      if (at(',')) {
        ++pos_;
      } else if (!at('}')) {
        fail("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!has_descr || !has_order || !has_shape) {
      fail(std::string("no '") + (!has_descr ? "descr" : !has_order ? "fortran_order" : "shape") + "'");
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(what_ + ": malformed .npy header: " + problem + " (at byte " + std::to_string(pos_) +
                " of the header)");
  }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (!at(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail("'" + key + "' appears twice");
    seen = true;
  }
  std::string quoted(const char* what) {
    if (!at('\'') && !at('"')) fail(std::string("expected ") + what + " in quotes");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail(std::string(what) + " has no closing quote");
    std::string s(text_.substr(pos_, end - pos_));
    if (s.find('\\') != std::string::npos) fail(std::string(what) + " contains a backslash");
    pos_ = end + 1;
    return s;
  }
  int64_t dim() {
    if (at('-')) fail("a negative dimension");
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      fail("expected a dimension (a non-negative integer)");
    }
    int64_t v = 0;
    for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_) {
      const int digit = text_[pos_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("a dimension larger than 2^63 - 1");
      v = v * 10 + digit;
    }
    if (at('L')) ++pos_;  // Python 2's long literals, in files numpy wrote under Python 2
    return v;
  }
  // "()", "(4,)", "(2, 3)", "(2, 3,)": a tuple; "(4)" is not one (Python reads it as the integer 4).
  Shape shape() {
    expect('(');
    Shape out;
    bool trailing_comma = false;
    for (skip_space(); !at(')'); skip_space()) {
      out.push_back(dim());
      skip_space();
      trailing_comma = at(',');
      if (trailing_comma) {
        ++pos_;
      } else if (!at(')')) {
        fail("expected ',' or ')' in the shape");
      }
    }
    if (out.size() == 1 && !trailing_comma) fail("the shape (N) is not a tuple; write (N,)");
    ++pos_;
    return out;
  }

  std::string_view text_;
  const std::string& what_;
  size_t pos_ = 0;
};

// Bytes before the header dict: magic, version, header length. 0 when `prefix` is too short to tell.
size_t preamble_bytes(const std::string& prefix, const std::string& what) {
  if (prefix.size() < 8 || prefix.compare(0, 6, "\x93NUMPY") != 0) throw Error(what + ": not a .npy file");
  const int major = static_cast<unsigned char>(prefix[6]);
  if (major == 1) return 10;
  if (major == 2 || major == 3) return 12;
  throw Error(what + ": unsupported .npy format version " + std::to_string(major));
}

// element_count(shape) * item size, or a wgi::Error when it does not fit in size_t.
size_t payload_bytes(const ArrayHeader& header, DType dtype, const std::string& what) {
  const int64_t count = element_count(header.shape);  // throws on overflow of int64
  const size_t item = dtype_size(dtype);
  if (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / item) {
    throw Error(what + ": .npy shape " + shape_to_string(header.shape) + " of " +
                std::string(dtype_name(dtype)) + " has more bytes than fit in memory");
  }
  return static_cast<size_t>(count) * item;
}

void check_payload(size_t payload, size_t expected, const ArrayHeader& header, DType dtype,
                   const std::string& what) {
  if (payload != expected) {
    throw Error(what + ": .npy payload has " + std::to_string(payload) + " bytes, " +
                shape_to_string(header.shape) + " " + std::string(dtype_name(dtype)) + " needs exactly " +
                std::to_string(expected));
  }
}

}  // namespace

ArrayHeader parse_header(const std::string& bytes, const std::string& what) {
  const size_t header_start = preamble_bytes(bytes, what);
  if (bytes.size() < header_start) throw Error(what + ": truncated .npy header");
  size_t header_len = 0;
  for (size_t i = 8; i < header_start; ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[i])) << (8 * (i - 8));
  if (header_len > kMaxHeaderBytes) {
    throw Error(what + ": .npy header claims " + std::to_string(header_len) + " bytes, more than the " +
                std::to_string(kMaxHeaderBytes) + " wgi reads");
  }
  if (header_start + header_len > bytes.size()) throw Error(what + ": truncated .npy header");
  ArrayHeader out = HeaderParser(std::string_view(bytes).substr(header_start, header_len), what).parse();
  out.data_offset = header_start + header_len;
  return out;
}

Tensor parse(const std::string& bytes, const std::string& what) {
  ArrayHeader header = parse_header(bytes, what);
  DType dtype = dtype_of_descr(header.descr, what);
  const size_t expected = payload_bytes(header, dtype, what);
  check_payload(bytes.size() - header.data_offset, expected, header, dtype, what);
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data() + header.data_offset);
  return Tensor(dtype, header.shape, std::span<const std::byte>(data, expected));
}

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("'" + printable(path.string()) + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + printable(path.string()) + "'");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Tensor load(const std::filesystem::path& path) {
  const std::string what = "'" + printable(path.string()) + "'";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw Error(what + " is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + what);
  // The header first, then exactly as many data bytes as it states: a huge or endless file (/dev/zero) is
  // refused after a few bytes, never read whole.
  auto read_up_to = [&in](std::string& into, size_t bytes) {
    const size_t before = into.size();
    into.resize(before + bytes);
    in.read(into.data() + before, static_cast<std::streamsize>(bytes));
    into.resize(before + static_cast<size_t>(in.gcount()));
  };
  std::string head;
  read_up_to(head, 12);
  const size_t preamble = preamble_bytes(head, what);
  if (head.size() < preamble) throw Error(what + ": truncated .npy header");
  size_t header_len = 0;
  for (size_t i = 8; i < preamble; ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(head[i])) << (8 * (i - 8));
  if (header_len <= kMaxHeaderBytes) read_up_to(head, preamble + header_len - head.size());
  const ArrayHeader header = parse_header(head, what);
  const DType dtype = dtype_of_descr(header.descr, what);
  const size_t expected = payload_bytes(header, dtype, what);
  if (std::filesystem::is_regular_file(status)) {
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("cannot read the size of " + what + ": " + ec.message());
    check_payload(static_cast<size_t>(size - std::min<uint64_t>(size, header.data_offset)), expected, header,
                  dtype, what);
    Tensor t(dtype, header.shape);
    in.read(reinterpret_cast<char*>(t.bytes().data()), static_cast<std::streamsize>(expected));
    if (static_cast<size_t>(in.gcount()) != expected) throw Error("reading " + what + " failed");
    return t;
  }
  // A pipe or device: read in bounded chunks, so that a header claiming more than arrives allocates no more
  // than arrived.
  std::string data;
  const size_t chunk = 64u << 20;
  while (data.size() <= expected && in) read_up_to(data, std::min(chunk, expected + 1 - data.size()));
  check_payload(data.size(), expected, header, dtype, what);
  return Tensor(dtype, header.shape, std::as_bytes(std::span<const char>(data.data(), data.size())));
}

std::string serialize(const Tensor& tensor) {
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    shape += std::to_string(tensor.shape()[i]);
    shape += tensor.shape().size() == 1 ? "," : (i + 1 < tensor.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string header = std::string("{'descr': '") + descr_of(tensor.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the header ends with a newline.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.bytes().data()), tensor.byte_size());
  return out;
}

void save(const std::filesystem::path& path, const Tensor& tensor) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write '" + printable(path.string()) + "'");
  std::string bytes = serialize(tensor);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error("writing '" + printable(path.string()) + "' failed");
}

}  // namespace wgi::npy
