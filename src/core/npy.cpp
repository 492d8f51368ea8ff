#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

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
  throw Error(what + ": unsupported .npy dtype '" + descr +
              "' (wgi reads float32, float16, int64, int32, int8, uint8, bool; little-endian)");
}

// The value of 'key' in the header dict, as raw text up to the next top-level comma or closing brace.
std::string dict_value(const std::string& header, const std::string& key, const std::string& what) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(what + ": .npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(what + ": malformed .npy header");
  size_t start = header.find_first_not_of(' ', colon + 1);
  int depth = 0;
  size_t end = start;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(start, end - start);
}

}  // namespace

ArrayHeader parse_header(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error(what + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(what + ": truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    throw Error(what + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) throw Error(what + ": truncated .npy header");
  std::string header = bytes.substr(header_start, header_len);
  ArrayHeader out;
  out.descr = dict_value(header, "descr", what);
  if (out.descr.size() < 2) throw Error(what + ": malformed dtype in .npy header");
  out.descr = out.descr.substr(1, out.descr.size() - 2);  // strip quotes
  if (dict_value(header, "fortran_order", what) != "False") {
    throw Error(what + ": Fortran-ordered .npy arrays are not supported (save with np.ascontiguousarray)");
  }
  std::string digits;
  for (char c : dict_value(header, "shape", what)) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (!digits.empty()) {
      out.shape.push_back(std::stoll(digits));
      digits.clear();
    }
  }
  out.data_offset = header_start + header_len;
  return out;
}

Tensor parse(const std::string& bytes, const std::string& what) {
  ArrayHeader header = parse_header(bytes, what);
  DType dtype = dtype_of_descr(header.descr, what);
  const size_t payload = bytes.size() - header.data_offset;
  const int64_t count = element_count(header.shape);
  const size_t expected = static_cast<size_t>(count) * dtype_size(dtype);
  if (payload < expected) {
    throw Error(what + ": .npy payload has " + std::to_string(payload) + " bytes, " +
                shape_to_string(header.shape) + " " + std::string(dtype_name(dtype)) + " needs " +
                std::to_string(expected));
  }
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data() + header.data_offset);
  return Tensor(dtype, header.shape, std::span<const std::byte>(data, expected));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path.string() + "'");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Tensor load(const std::filesystem::path& path) {
  return parse(read_file(path), "'" + path.string() + "'");
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
  if (!out) throw Error("cannot write '" + path.string() + "'");
  std::string bytes = serialize(tensor);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error("writing '" + path.string() + "' failed");
}

}  // namespace wgi::npy
