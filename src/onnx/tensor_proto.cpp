#include "onnx/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

namespace wgi::onnx::detail {

// ONNX raw_data and external data are little-endian; wgi's hosts (x86-64, arm64, wasm) are too.
static_assert(std::endian::native == std::endian::little, "the ONNX importer assumes a little-endian host");

namespace pb = proto;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxDimsInMessage = 8;

// Only called after tensor_from_proto checked that the type is set.
int32_t data_type_of(const pb::TensorProto& t) {
  return t.data_type.value_or(0);
}

std::string bytes_text(uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

// The element count and byte size of a tensor, checked: no negative dims, no overflow.
struct Layout {
  Shape shape;
  uint64_t count = 0;
  uint64_t bytes = 0;
};

Layout checked_layout(const pb::TensorProto& t, DType dtype, const std::string& what) {
  Layout layout;
  layout.shape.reserve(t.dims.size());
  bool has_zero = false;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    int64_t d = t.dims[i];
    if (d < 0) {
      throw Error(what + " has a negative dimension (" + std::to_string(d) + " at axis " + std::to_string(i) +
                  " of dims " + short_dims(t.dims) + ")");
    }
    has_zero = has_zero || d == 0;
    layout.shape.push_back(d);
  }
  // A zero dim makes the tensor empty however large the other dims are.
  uint64_t count = has_zero ? 0 : 1;
  constexpr auto kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : layout.shape) {
    if (has_zero) break;
    auto ud = static_cast<uint64_t>(d);
    if (count > kMaxCount / ud) {
      throw Error(what + " has dims " + short_dims(t.dims) + " whose element count overflows 64 bits");
    }
    count *= ud;
  }
  uint64_t size = dtype_size(dtype);
  if (count > std::numeric_limits<uint64_t>::max() / size) {
    throw Error(what + " has dims " + short_dims(t.dims) + " whose byte size overflows 64 bits");
  }
  layout.count = count;
  layout.bytes = count * size;
  return layout;
}

// Which typed fields hold values: the encoding of a tensor without raw_data.
std::vector<std::string> typed_fields_in_use(const pb::TensorProto& t) {
  std::vector<std::string> used;
  if (!t.float_data.empty()) used.emplace_back("float_data");
  if (!t.int32_data.empty()) used.emplace_back("int32_data");
  if (!t.string_data.empty()) used.emplace_back("string_data");
  if (!t.int64_data.empty()) used.emplace_back("int64_data");
  if (!t.double_data.empty()) used.emplace_back("double_data");
  if (!t.uint64_data.empty()) used.emplace_back("uint64_data");
  return used;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

void normalise_bools(Tensor& t) {
  for (std::byte& b : t.bytes()) b = b == std::byte{0} ? std::byte{0} : std::byte{1};
}

// Copies int32_data into a narrower type, refusing values that do not fit.
template <class T>
void copy_narrowed(const pb::TensorProto& t, Tensor& out, int64_t lo, int64_t hi, const std::string& what,
                   const char* type_label) {
  std::byte* dst = out.bytes().data();
  for (size_t i = 0; i < t.int32_data.size(); ++i) {
    int32_t v = t.int32_data[i];
    if (v < lo || v > hi) {
      throw Error(what + ": int32_data[" + std::to_string(i) + "] = " + std::to_string(v) + " does not fit " +
                  type_label);
    }
    auto narrowed = static_cast<T>(v);
    std::memcpy(dst + static_cast<size_t>(i) * sizeof(T), &narrowed, sizeof(T));
  }
}

Tensor from_typed_fields(const pb::TensorProto& t, DType dtype, const Layout& layout, const std::string& what,
                         ConstantBudget& budget) {
  const char* expected = "int32_data";
  size_t present = t.int32_data.size();
  switch (dtype) {
    case DType::Float32:
      expected = "float_data";
      present = t.float_data.size();
      break;
    case DType::Int64:
      expected = "int64_data";
      present = t.int64_data.size();
      break;
    case DType::Float16:
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      break;
  }
  std::vector<std::string> used = typed_fields_in_use(t);
  if (used.size() > 1 || (used.size() == 1 && used[0] != expected)) {
    throw Error(what + " (" + onnx_dtype_name(data_type_of(t)) + ") stores its values in " + join(used) +
                "; this type keeps them in " + expected + " or raw_data");
  }
  if (static_cast<uint64_t>(present) != layout.count) {
    if (present == 0) {
      throw Error(what + " (" + onnx_dtype_name(data_type_of(t)) + " " + short_dims(t.dims) +
                  ") has no data: no raw_data, no " + expected + " and no external data");
    }
    throw Error(what + ": " + expected + " holds " + std::to_string(present) + " values, but dims " +
                short_dims(t.dims) + " need " + std::to_string(layout.count));
  }
  budget.take(layout.bytes, what);
  Tensor out(dtype, layout.shape);
  std::byte* dst = out.bytes().data();
  switch (dtype) {
    case DType::Float32:
      if (present) std::memcpy(dst, t.float_data.data(), layout.bytes);
      break;
    case DType::Int64:
      if (present) std::memcpy(dst, t.int64_data.data(), layout.bytes);
      break;
    case DType::Int32:
      if (present) std::memcpy(dst, t.int32_data.data(), layout.bytes);
      break;
    case DType::Float16:  // the IEEE half bits in the low 16 bits of each int32
      copy_narrowed<uint16_t>(t, out, 0, 0xffff, what, "float16 bits");
      break;
    case DType::Int8:
      copy_narrowed<int8_t>(t, out, -128, 127, what, "int8");
      break;
    case DType::UInt8:
      copy_narrowed<uint8_t>(t, out, 0, 255, what, "uint8");
      break;
    case DType::Bool:
      for (size_t i = 0; i < t.int32_data.size(); ++i)
        dst[i] = t.int32_data[i] != 0 ? std::byte{1} : std::byte{0};
      break;
  }
  return out;
}

std::optional<uint64_t> parse_u64(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The external file, checked to lie inside base_dir (no absolute paths, no "..", no symlink out).
fs::path resolve_external_path(const std::string& location, const fs::path& base_dir,
                               const std::string& what) {
  if (location.empty()) throw Error(what + " has external data without a 'location'");
  if (location.find('\0') != std::string::npos) {
    throw Error(what + ": external data location contains a NUL character");
  }
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_path()) {
    throw Error(what + ": external data location '" + location +
                "' is an absolute path; wgi only reads files inside the model's folder");
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      throw Error(what + ": external data location '" + location +
                  "' contains '..'; wgi only reads files inside the model's folder");
    }
  }
  if (base_dir.empty()) {
    throw Error(what + " keeps its data in the external file '" + location +
                "', but the model was loaded from memory without a folder to look in (pass base_dir)");
  }
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  if (ec) {
    throw Error(what + ": the model folder '" + base_dir.string() + "' cannot be opened: " + ec.message());
  }
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) throw Error(what + ": external data file '" + location + "' cannot be resolved: " + ec.message());
  auto [base_end, full_at] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end()) {
    throw Error(what + ": external data file '" + location + "' resolves to '" + full.string() +
                "', outside the model's folder '" + base.string() + "'");
  }
  return full;
}

Tensor from_external(const pb::TensorProto& t, DType dtype, const Layout& layout, const std::string& what,
                     const fs::path& base_dir, ConstantBudget& budget) {
  if (t.raw_data || !typed_fields_in_use(t).empty()) {
    throw Error(what + " has data_location EXTERNAL but also embedded data (raw_data or typed fields)");
  }
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  bool seen_location = false, seen_offset = false;
  for (const pb::StringStringEntryProto& e : t.external_data) {
    const std::string& key = e.key;
    if (key == "location") {
      if (seen_location) throw Error(what + ": external data lists 'location' twice");
      seen_location = true;
      location = e.value;
    } else if (key == "offset" || key == "length") {
      std::optional<uint64_t> v = parse_u64(e.value);
      if (!v) {
        throw Error(what + ": external data '" + key + "' is '" + e.value.substr(0, 40) +
                    "', not a non-negative integer");
      }
      if (key == "offset") {
        if (seen_offset) throw Error(what + ": external data lists 'offset' twice");
        seen_offset = true;
        offset = *v;
      } else {
        if (length) throw Error(what + ": external data lists 'length' twice");
        length = *v;
      }
    }
    // "checksum" and unknown keys carry nothing wgi needs.
  }
  fs::path file = resolve_external_path(location, base_dir, what);
  std::error_code ec;
  fs::file_status status = fs::status(file, ec);
  if (ec || !fs::exists(status)) throw Error(what + ": external data file '" + location + "' does not exist");
  if (!fs::is_regular_file(status)) {
    throw Error(what + ": external data location '" + location + "' is not a regular file");
  }
  uint64_t file_size = fs::file_size(file, ec);
  if (ec) throw Error(what + ": cannot read the size of '" + location + "': " + ec.message());
  if (offset > file_size) {
    throw Error(what + ": external data offset " + std::to_string(offset) + " is past the end of '" +
                location + "' (" + bytes_text(file_size) + ")");
  }
  uint64_t available = file_size - offset;
  if (length) {
    if (*length != layout.bytes) {
      throw Error(what + ": external data length is " + bytes_text(*length) + ", but " +
                  onnx_dtype_name(data_type_of(t)) + " " + short_dims(t.dims) + " needs " +
                  bytes_text(layout.bytes));
    }
    if (*length > available) {
      throw Error(what + ": external data '" + location + "' holds " + bytes_text(available) +
                  " after offset " + std::to_string(offset) + ", fewer than its length " +
                  bytes_text(*length));
    }
  } else if (available != layout.bytes) {
    throw Error(what + ": external data '" + location + "' holds " + bytes_text(available) +
                " after offset " + std::to_string(offset) + ", but " + onnx_dtype_name(data_type_of(t)) +
                " " + short_dims(t.dims) + " needs " + bytes_text(layout.bytes));
  }
  budget.take(layout.bytes, what);
  Tensor out(dtype, layout.shape);
  if (layout.bytes == 0) return out;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(what + ": cannot open external data file '" + location + "'");
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out.bytes().data()), static_cast<std::streamsize>(layout.bytes));
  if (!in || static_cast<uint64_t>(in.gcount()) != layout.bytes) {
    throw Error(what + ": reading " + bytes_text(layout.bytes) + " at offset " + std::to_string(offset) +
                " of '" + location + "' failed");
  }
  if (dtype == DType::Bool) normalise_bools(out);
  return out;
}

}  // namespace

void ConstantBudget::take(uint64_t bytes, const std::string& what) {
  if (bytes > max_bytes_ - used_) {
    throw Error(what + " needs " + bytes_text(bytes) +
                ", which would bring the model's constants to more than " + "the limit of " +
                bytes_text(max_bytes_) + " (ImportOptions::max_model_bytes; " + bytes_text(used_) +
                " already loaded)");
  }
  used_ += bytes;
}

std::optional<DType> dtype_from_onnx(int64_t data_type) {
  if (data_type < 0 || data_type > std::numeric_limits<int32_t>::max()) return std::nullopt;
  switch (static_cast<pb::DataType>(data_type)) {
    case pb::DataType::Float:
      return DType::Float32;
    case pb::DataType::Float16:
      return DType::Float16;
    case pb::DataType::Int64:
      return DType::Int64;
    case pb::DataType::Int32:
      return DType::Int32;
    case pb::DataType::Int8:
      return DType::Int8;
    case pb::DataType::UInt8:
      return DType::UInt8;
    case pb::DataType::Bool:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

std::string onnx_dtype_name(int64_t data_type) {
  // TensorProto.DataType of ONNX 1.17 (IR 10); the protobuf classes of Debian's onnx 1.12 stop at BFLOAT16.
  static constexpr const char* kNames[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
  constexpr auto kCount = static_cast<int64_t>(sizeof(kNames) / sizeof(kNames[0]));
  if (data_type >= 0 && data_type < kCount) return kNames[data_type];
  return "type " + std::to_string(data_type);
}

std::string supported_dtypes() {
  return "float32, float16, int64, int32, int8, uint8, bool";
}

std::string unsupported_dtype_reason(int64_t data_type) {
  if (data_type == static_cast<int64_t>(pb::DataType::Double)) {
    return ": WebGPU has no 64-bit floating-point type, so wgi cannot run float64 (DOUBLE) tensors. Convert "
           "the model to float32 (e.g. export it from PyTorch after model.float(), or cast its DOUBLE "
           "initializers, inputs, outputs and Cast targets to FLOAT) and run that";
  }
  return ", which wgi does not support (supported: " + supported_dtypes() + ")";
}

std::string short_dims(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i == kMaxDimsInMessage) {
      s += ", ... (" + std::to_string(dims.size()) + " dims)";
      break;
    }
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Tensor tensor_from_proto(const pb::TensorProto& proto, const std::string& what, const fs::path& base_dir,
                         ConstantBudget& budget) {
  if (!proto.data_type || *proto.data_type == static_cast<int32_t>(pb::DataType::Undefined)) {
    throw Error(what + " has no data_type");
  }
  std::optional<DType> dtype = dtype_from_onnx(*proto.data_type);
  if (!dtype) {
    throw Error(what + " has element type " + onnx_dtype_name(*proto.data_type) +
                unsupported_dtype_reason(*proto.data_type));
  }
  if (proto.segment) throw Error(what + " is a segment of a larger tensor, which wgi does not support");
  Layout layout = checked_layout(proto, *dtype, what);
  if (proto.data_location == pb::DataLocation::External) {
    return from_external(proto, *dtype, layout, what, base_dir, budget);
  }
  if (!proto.external_data.empty()) {
    throw Error(what + " lists external_data entries, but its data_location is not EXTERNAL");
  }
  if (proto.raw_data) {
    if (!typed_fields_in_use(proto).empty()) {
      throw Error(what + " has both raw_data and " + join(typed_fields_in_use(proto)) + "; ONNX allows one");
    }
    pb::Bytes raw = *proto.raw_data;
    if (raw.size() != layout.bytes) {
      throw Error(what + ": raw_data holds " + bytes_text(raw.size()) + ", but " +
                  onnx_dtype_name(*proto.data_type) + " " + short_dims(proto.dims) + " needs " +
                  bytes_text(layout.bytes) + " (" + std::to_string(layout.count) + " elements of " +
                  std::to_string(dtype_size(*dtype)) + " bytes)");
    }
    budget.take(layout.bytes, what);
    Tensor out(*dtype, layout.shape, raw);
    if (*dtype == DType::Bool) normalise_bools(out);
    return out;
  }
  return from_typed_fields(proto, *dtype, layout, what, budget);
}

}  // namespace wgi::onnx::detail
