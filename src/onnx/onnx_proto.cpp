#include "onnx/onnx_proto.h"

#include <bit>
#include <cstring>
#include <limits>

#include "wgi/error.h"

namespace wgi::onnx::proto {

// Fixed-width fields and packed floats are little-endian on the wire; wgi's hosts (x86-64, arm64, wasm) are
// too, so they are copied as they are.
static_assert(std::endian::native == std::endian::little,
              "the protobuf decoder assumes a little-endian host");

std::string_view attribute_type_name(AttributeType type) {
  static constexpr std::string_view kNames[] = {
      "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
      "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  auto v = static_cast<int32_t>(type);
  if (v < 0 || v >= static_cast<int32_t>(std::size(kNames))) return "";
  return kNames[v];
}

namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

const char* wire_type_name(uint32_t wire) {
  switch (wire) {
    case kVarint:
      return "0 (varint)";
    case kFixed64:
      return "1 (64-bit)";
    case kLengthDelimited:
      return "2 (length-delimited)";
    case kStartGroup:
      return "3 (start group)";
    case kEndGroup:
      return "4 (end group)";
    case kFixed32:
      return "5 (32-bit)";
    default:
      return "invalid";
  }
}

// Where the decoder is, for messages: field names from the root, with the index into repeated fields.
struct PathEntry {
  const char* name;
  size_t index;
  bool repeated;
};

constexpr size_t kMaxPathEntriesShown = 10;

// State shared by every message of one decode: the input (for byte offsets), limits, memory used, depth.
class Context {
 public:
  Context(Bytes input, const DecodeOptions& options, const char* root)
      : base_(reinterpret_cast<const uint8_t*>(input.data())), options_(options) {
    path_.push_back({root, 0, false});
  }

  [[noreturn]] void fail(const std::string& problem, const uint8_t* at) const {
    throw Error(std::string(options_.invalid) + ": " + problem + " at byte " + std::to_string(at - base_) +
                " (in " + path_text() + ")");
  }

  // Accounts memory the decoded structs are about to take.
  void charge(uint64_t bytes, const uint8_t* at) {
    if (bytes > options_.max_decoded_bytes - used_) {
      throw Error("decoding needs more than " + std::to_string(options_.max_decoded_bytes) +
                  " bytes of memory for the message's names, nodes and values (" +
                  std::string(options_.limit_name) + "); stopped at byte " + std::to_string(at - base_) +
                  " (in " + path_text() + ")");
    }
    used_ += bytes;
  }

  // Entering a message or group; the matching leave() must follow (errors end the whole decode).
  void enter(const char* name, size_t index, bool repeated, const uint8_t* at) {
    path_.push_back({name, index, repeated});
    if (++depth_ > options_.max_depth) {
      fail("nesting deeper than " + std::to_string(options_.max_depth) + " levels of messages", at);
    }
  }
  void leave() {
    --depth_;
    path_.pop_back();
  }

 private:
  std::string path_text() const {
    std::string s;
    for (size_t i = 0; i < path_.size(); ++i) {
      // Deep paths (nested subgraphs) keep their start and end.
      if (path_.size() > kMaxPathEntriesShown && i == kMaxPathEntriesShown / 2) {
        s += " ... ";
        i = path_.size() - kMaxPathEntriesShown / 2;
      } else if (i) {
        s += ".";
      }
      s += path_[i].name;
      if (path_[i].repeated) s += "[" + std::to_string(path_[i].index) + "]";
    }
    return s;
  }

  const uint8_t* base_;
  const DecodeOptions& options_;
  uint64_t used_ = 0;
  int depth_ = 0;
  std::vector<PathEntry> path_;
};

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;             // varint, or the bits of a fixed-width field
  const uint8_t* data = nullptr;  // length-delimited payload
  size_t size = 0;
  const uint8_t* at = nullptr;  // the tag
};

// Reads varint `p` within [p, end); advances p. libprotobuf's rules: at most 10 bytes, bits past 64 dropped.
uint64_t read_varint(Context& ctx, const uint8_t*& p, const uint8_t* end) {
  const uint8_t* start = p;
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (p == end) ctx.fail("truncated varint", start);
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) return v;
  }
  ctx.fail("varint longer than 10 bytes", start);
}

// The fields of one message (or group) in [begin, end).
class Reader {
 public:
  Reader(Context& ctx, const uint8_t* begin, const uint8_t* end) : ctx_(ctx), p_(begin), end_(end) {}

  Context& ctx() { return ctx_; }

  // The next field, fully read (a group skipped); false at the end of the message.
  bool next(Field& f) {
    if (p_ == end_) return false;
    if (read_field(f))
      ctx_.fail("end-group tag (field " + std::to_string(f.number) + ") outside a group", f.at);
    return true;
  }

 private:
  // Returns true for an end-group tag (f.number says which group), false for any other field.
  bool read_field(Field& f) {
    f.at = p_;
    uint64_t tag = read_varint(ctx_, p_, end_);
    // A tag is a 32-bit varint: at most 5 bytes, as libprotobuf reads it.
    if (tag > std::numeric_limits<uint32_t>::max() || p_ - f.at > 5) ctx_.fail("a malformed field tag", f.at);
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    if (f.number == 0) ctx_.fail("field number 0", f.at);
    switch (f.wire) {
      case kVarint:
        f.value = read_varint(ctx_, p_, end_);
        return false;
      case kFixed64:
        f.value = fixed(8, f);
        return false;
      case kFixed32:
        f.value = fixed(4, f);
        return false;
      case kLengthDelimited: {
        uint64_t length = read_varint(ctx_, p_, end_);
        auto left = static_cast<uint64_t>(end_ - p_);
        if (length > left) {
          ctx_.fail("field " + std::to_string(f.number) + " has length " + std::to_string(length) +
                        ", past the end of its message (" + std::to_string(left) + " bytes left)",
                    f.at);
        }
        f.data = p_;
        f.size = static_cast<size_t>(length);
        p_ += f.size;
        return false;
      }
      case kStartGroup:
        skip_group(f);
        return false;
      case kEndGroup:
        return true;
      default:
        ctx_.fail("invalid wire type " + std::to_string(f.wire) + " (field " + std::to_string(f.number) + ")",
                  f.at);
    }
  }

  uint64_t fixed(size_t width, const Field& f) {
    if (static_cast<size_t>(end_ - p_) < width) {
      ctx_.fail("truncated " + std::to_string(width * 8) + "-bit field " + std::to_string(f.number), f.at);
    }
    uint64_t v = 0;
    std::memcpy(&v, p_, width);
    p_ += width;
    return v;
  }

  // Unknown groups (a proto2 encoding ONNX never uses) are skipped up to their end-group tag.
  void skip_group(const Field& group) {
    ctx_.enter("<group>", 0, false, group.at);
    Field f;
    for (;;) {
      if (p_ == end_)
        ctx_.fail("the group of field " + std::to_string(group.number) + " is not closed", group.at);
      if (read_field(f)) {
        if (f.number != group.number) {
          ctx_.fail("end-group tag of field " + std::to_string(f.number) + " closes the group of field " +
                        std::to_string(group.number),
                    f.at);
        }
        break;
      }
    }
    ctx_.leave();
  }

  Context& ctx_;
  const uint8_t* p_;
  const uint8_t* end_;
};

[[noreturn]] void wrong_wire_type(Context& ctx, const Field& f, const char* name, const char* expected) {
  ctx.fail("field " + std::to_string(f.number) + " (" + name + ") has wire type " + wire_type_name(f.wire) +
               "; expected " + expected,
           f.at);
}

void expect_wire(Context& ctx, const Field& f, uint32_t wire, const char* name) {
  if (f.wire != wire) wrong_wire_type(ctx, f, name, wire_type_name(wire));
}

int64_t read_int64(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kVarint, name);
  return static_cast<int64_t>(f.value);
}

// int32 fields are varints of the sign-extended value; libprotobuf keeps the low 32 bits.
int32_t read_int32(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kVarint, name);
  return static_cast<int32_t>(static_cast<uint32_t>(f.value));
}

float read_float(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kFixed32, name);
  auto bits = static_cast<uint32_t>(f.value);
  return std::bit_cast<float>(bits);
}

Bytes read_view(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kLengthDelimited, name);
  return std::as_bytes(std::span<const uint8_t>(f.data, f.size));
}

std::string read_string(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kLengthDelimited, name);
  ctx.charge(f.size, f.at);
  return std::string(reinterpret_cast<const char*>(f.data), f.size);
}

void append_string(Context& ctx, const Field& f, std::vector<std::string>& out, const char* name) {
  expect_wire(ctx, f, kLengthDelimited, name);
  ctx.charge(sizeof(std::string), f.at);
  out.push_back(read_string(ctx, f, name));
}

// A length-delimited field the importer only needs to know is there; returns whether it is.
bool skip_message(Context& ctx, const Field& f, const char* name) {
  expect_wire(ctx, f, kLengthDelimited, name);
  return true;
}

// Closed (proto2) enums: a value the enum does not define leaves the field as it was.
template <class E>
void read_enum(Context& ctx, const Field& f, E& out, int32_t max_value, const char* name) {
  int32_t v = read_int32(ctx, f, name);
  if (v >= 0 && v <= max_value) out = static_cast<E>(v);
}

enum class Scalar { Varint, Fixed32, Fixed64 };

template <class T>
constexpr Scalar scalar_kind() {
  if constexpr (std::is_same_v<T, float>) return Scalar::Fixed32;
  if constexpr (std::is_same_v<T, double>) return Scalar::Fixed64;
  return Scalar::Varint;
}

template <class T>
T scalar_from_bits(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(bits);
  } else {
    // int64 / uint64 as they are, int32 truncated as libprotobuf does.
    return static_cast<T>(bits);
  }
}

// A repeated scalar field: one element (unpacked) or a packed run. Both encodings may be mixed.
template <class T>
void append_scalars(Context& ctx, const Field& f, std::vector<T>& out, const char* name) {
  constexpr Scalar kind = scalar_kind<T>();
  constexpr uint32_t element_wire = kind == Scalar::Fixed32   ? kFixed32
                                    : kind == Scalar::Fixed64 ? kFixed64
                                                              : kVarint;
  if (f.wire == element_wire) {
    ctx.charge(sizeof(T), f.at);
    out.push_back(scalar_from_bits<T>(f.value));
    return;
  }
  if (f.wire != kLengthDelimited) {
    wrong_wire_type(ctx, f, name,
                    kind == Scalar::Fixed32   ? "5 (32-bit) or 2 (packed)"
                    : kind == Scalar::Fixed64 ? "1 (64-bit) or 2 (packed)"
                                              : "0 (varint) or 2 (packed)");
  }
  const uint8_t* p = f.data;
  const uint8_t* end = f.data + f.size;
  if constexpr (kind == Scalar::Varint) {
    // One value per byte without the continuation bit: the exact count, before anything is allocated.
    size_t count = 0;
    for (const uint8_t* q = p; q != end; ++q) count += *q < 0x80;
    if (f.size && end[-1] >= 0x80) {
      ctx.fail("packed field " + std::to_string(f.number) + " (" + name + ") ends inside a varint", f.at);
    }
    ctx.charge(static_cast<uint64_t>(count) * sizeof(T), f.at);
    out.reserve(out.size() + count);
    while (p != end) out.push_back(scalar_from_bits<T>(read_varint(ctx, p, end)));
  } else {
    constexpr size_t width = sizeof(T);
    if (f.size % width) {
      ctx.fail("packed field " + std::to_string(f.number) + " (" + name + ") has " + std::to_string(f.size) +
                   " bytes, not a multiple of " + std::to_string(width),
               f.at);
    }
    size_t count = f.size / width;
    ctx.charge(static_cast<uint64_t>(count) * sizeof(T), f.at);
    size_t old = out.size();
    out.resize(old + count);
    if (count) std::memcpy(out.data() + old, p, f.size);
  }
}

// Every message the decoder knows; declared first so that read_message finds them all.
void decode(Reader& r, StringStringEntryProto& out);
void decode(Reader& r, OperatorSetIdProto& out);
void decode(Reader& r, TensorProto::Segment& out);
void decode(Reader& r, TensorProto& out);
void decode(Reader& r, SparseTensorProto& out);
void decode(Reader& r, TensorShapeProto::Dimension& out);
void decode(Reader& r, TensorShapeProto& out);
void decode(Reader& r, TypeProto::Tensor& out);
void decode(Reader& r, TypeProto& out);
void decode(Reader& r, ValueInfoProto& out);
void decode(Reader& r, AttributeProto& out);
void decode(Reader& r, NodeProto& out);
void decode(Reader& r, GraphProto& out);
void decode(Reader& r, FunctionProto& out);
void decode(Reader& r, ModelProto& out);

// A sub-message field: decoded into `out`, which merges a repeated occurrence of a singular field.
template <class M>
void read_message(Context& ctx, const Field& f, M& out, const char* name, size_t index = 0,
                  bool repeated = false) {
  expect_wire(ctx, f, kLengthDelimited, name);
  ctx.enter(name, index, repeated, f.at);
  Reader sub(ctx, f.data, f.data + f.size);
  decode(sub, out);
  ctx.leave();
}

template <class M>
void append_message(Context& ctx, const Field& f, std::vector<M>& out, const char* name) {
  expect_wire(ctx, f, kLengthDelimited, name);
  ctx.charge(sizeof(M), f.at);
  out.emplace_back();
  read_message(ctx, f, out.back(), name, out.size() - 1, true);
}

template <class M>
M& singular(std::optional<M>& field) {
  if (!field) field.emplace();
  return *field;
}

void decode(Reader& r, StringStringEntryProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.key = read_string(c, f, "key");
        break;
      case 2:
        out.value = read_string(c, f, "value");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, OperatorSetIdProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.domain = read_string(c, f, "domain");
        break;
      case 2:
        out.version = read_int64(c, f, "version");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, TensorProto::Segment& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.begin = read_int64(c, f, "begin");
        break;
      case 2:
        out.end = read_int64(c, f, "end");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, TensorProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        append_scalars(c, f, out.dims, "dims");
        break;
      case 2:
        out.data_type = read_int32(c, f, "data_type");
        break;
      case 3:
        read_message(c, f, singular(out.segment), "segment");
        break;
      case 4:
        append_scalars(c, f, out.float_data, "float_data");
        break;
      case 5:
        append_scalars(c, f, out.int32_data, "int32_data");
        break;
      case 6:
        expect_wire(c, f, kLengthDelimited, "string_data");
        c.charge(sizeof(Bytes), f.at);
        out.string_data.push_back(read_view(c, f, "string_data"));
        break;
      case 7:
        append_scalars(c, f, out.int64_data, "int64_data");
        break;
      case 8:
        out.name = read_string(c, f, "name");
        break;
      case 9:
        out.raw_data = read_view(c, f, "raw_data");
        break;
      case 10:
        append_scalars(c, f, out.double_data, "double_data");
        break;
      case 11:
        append_scalars(c, f, out.uint64_data, "uint64_data");
        break;
      case 13:
        append_message(c, f, out.external_data, "external_data");
        break;
      case 14:
        read_enum(c, f, out.data_location, 1, "data_location");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, SparseTensorProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    if (f.number == 1) read_message(c, f, singular(out.values), "values");
  }
}

void decode(Reader& r, TensorShapeProto::Dimension& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:  // oneof value: setting one member clears the other
        out.dim_value = read_int64(c, f, "dim_value");
        out.dim_param.reset();
        break;
      case 2:
        out.dim_param = read_string(c, f, "dim_param");
        out.dim_value.reset();
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, TensorShapeProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    if (f.number == 1) append_message(c, f, out.dim, "dim");
  }
}

void decode(Reader& r, TypeProto::Tensor& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.elem_type = read_int32(c, f, "elem_type");
        break;
      case 2:
        read_message(c, f, singular(out.shape), "shape");
        break;
      default:
        break;
    }
  }
}

const char* other_type_name(uint32_t number) {
  switch (number) {
    case 4:
      return "sequence_type";
    case 5:
      return "map_type";
    case 7:
      return "opaque_type";
    case 8:
      return "sparse_tensor_type";
    default:
      return "optional_type";
  }
}

void decode(Reader& r, TypeProto& out) {
  using Case = TypeProto::ValueCase;
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        // oneof value: switching members starts the new one empty; the same member again is merged.
        if (out.value_case != Case::TensorType) {
          out.tensor_type = {};
          out.value_case = Case::TensorType;
        }
        read_message(c, f, out.tensor_type, "tensor_type");
        break;
      case 4:
      case 5:
      case 7:
      case 8:
      case 9:
        skip_message(c, f, other_type_name(f.number));
        out.value_case = static_cast<Case>(f.number);
        out.tensor_type = {};
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, ValueInfoProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.name = read_string(c, f, "name");
        break;
      case 2:
        read_message(c, f, singular(out.type), "type");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, AttributeProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.name = read_string(c, f, "name");
        break;
      case 21:
        out.ref_attr_name = read_string(c, f, "ref_attr_name");
        break;
      case 20:
        read_enum(c, f, out.type, static_cast<int32_t>(AttributeType::TypeProtos), "type");
        break;
      case 2:
        out.f = read_float(c, f, "f");
        break;
      case 3:
        out.i = read_int64(c, f, "i");
        break;
      case 4:
        out.s = read_string(c, f, "s");
        break;
      case 5:
        read_message(c, f, singular(out.t), "t");
        break;
      case 6:
        expect_wire(c, f, kLengthDelimited, "g");
        if (!out.g) {
          c.charge(sizeof(GraphProto), f.at);
          out.g = std::make_unique<GraphProto>();
        }
        read_message(c, f, *out.g, "g");
        break;
      case 22:
        out.has_sparse_tensor = skip_message(c, f, "sparse_tensor");
        break;
      case 14:
        out.has_tp = skip_message(c, f, "tp");
        break;
      case 7:
        append_scalars(c, f, out.floats, "floats");
        break;
      case 8:
        append_scalars(c, f, out.ints, "ints");
        break;
      case 9:
        append_string(c, f, out.strings, "strings");
        break;
      case 10:
        append_message(c, f, out.tensors, "tensors");
        break;
      case 11:
        append_message(c, f, out.graphs, "graphs");
        break;
      case 23:
        out.sparse_tensors_count += skip_message(c, f, "sparse_tensors");
        break;
      case 15:
        out.type_protos_count += skip_message(c, f, "type_protos");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, NodeProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        append_string(c, f, out.input, "input");
        break;
      case 2:
        append_string(c, f, out.output, "output");
        break;
      case 3:
        out.name = read_string(c, f, "name");
        break;
      case 4:
        out.op_type = read_string(c, f, "op_type");
        break;
      case 7:
        out.domain = read_string(c, f, "domain");
        break;
      case 5:
        append_message(c, f, out.attribute, "attribute");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, GraphProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        append_message(c, f, out.node, "node");
        break;
      case 2:
        out.name = read_string(c, f, "name");
        break;
      case 5:
        append_message(c, f, out.initializer, "initializer");
        break;
      case 15:
        append_message(c, f, out.sparse_initializer, "sparse_initializer");
        break;
      case 11:
        append_message(c, f, out.input, "input");
        break;
      case 12:
        append_message(c, f, out.output, "output");
        break;
      case 13:
        append_message(c, f, out.value_info, "value_info");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, FunctionProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.name = read_string(c, f, "name");
        break;
      case 10:
        out.domain = read_string(c, f, "domain");
        break;
      default:
        break;
    }
  }
}

void decode(Reader& r, ModelProto& out) {
  Context& c = r.ctx();
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1:
        out.ir_version = read_int64(c, f, "ir_version");
        break;
      case 8:
        append_message(c, f, out.opset_import, "opset_import");
        break;
      case 2:
        out.producer_name = read_string(c, f, "producer_name");
        break;
      case 3:
        out.producer_version = read_string(c, f, "producer_version");
        break;
      case 4:
        out.domain = read_string(c, f, "domain");
        break;
      case 5:
        out.model_version = read_int64(c, f, "model_version");
        break;
      case 7:
        read_message(c, f, singular(out.graph), "graph");
        break;
      case 14:
        append_message(c, f, out.metadata_props, "metadata_props");
        break;
      case 25:
        append_message(c, f, out.functions, "functions");
        break;
      default:
        break;
    }
  }
}

template <class M>
M decode_root(Bytes bytes, const DecodeOptions& options, const char* root) {
  Context ctx(bytes, options, root);
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  Reader reader(ctx, begin, begin + bytes.size());
  M out;
  decode(reader, out);
  return out;
}

}  // namespace

ModelProto decode_model(Bytes bytes, const DecodeOptions& options) {
  return decode_root<ModelProto>(bytes, options, "ModelProto");
}

TensorProto decode_tensor(Bytes bytes, const DecodeOptions& options) {
  return decode_root<TensorProto>(bytes, options, "TensorProto");
}

}  // namespace wgi::onnx::proto
