#include "onnx/onnx_proto.h"

#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

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

// How a field is read follows from the type of the struct member it lands in (the header's structs mirror
// onnx.proto): one overload per member type.
void read_into(Context& c, const Field& f, std::string& out, const char* name) {
  out = read_string(c, f, name);
}
void read_into(Context& c, const Field& f, std::optional<std::string>& out, const char* name) {
  out = read_string(c, f, name);
}
void read_into(Context& c, const Field& f, int64_t& out, const char* name) {
  out = read_int64(c, f, name);
}
void read_into(Context& c, const Field& f, std::optional<int64_t>& out, const char* name) {
  out = read_int64(c, f, name);
}
void read_into(Context& c, const Field& f, std::optional<int32_t>& out, const char* name) {
  out = read_int32(c, f, name);
}
void read_into(Context& c, const Field& f, std::optional<float>& out, const char* name) {
  out = read_float(c, f, name);
}
void read_into(Context& c, const Field& f, std::optional<Bytes>& out, const char* name) {
  out = read_view(c, f, name);
}
void read_into(Context& c, const Field& f, std::vector<Bytes>& out, const char* name) {
  expect_wire(c, f, kLengthDelimited, name);
  c.charge(sizeof(Bytes), f.at);
  out.push_back(read_view(c, f, name));
}
void read_into(Context& c, const Field& f, std::vector<std::string>& out, const char* name) {
  append_string(c, f, out, name);
}
// Sub-messages the importer only counts or notes the presence of (bool: present; size_t: how many).
void read_into(Context& c, const Field& f, bool& present, const char* name) {
  present = skip_message(c, f, name);
}
void read_into(Context& c, const Field& f, size_t& count, const char* name) {
  count += skip_message(c, f, name);
}
// AttributeProto.g: a GraphProto holds attributes, so the member is a pointer.
void read_into(Context& c, const Field& f, std::unique_ptr<GraphProto>& out, const char* name) {
  expect_wire(c, f, kLengthDelimited, name);
  if (!out) {
    c.charge(sizeof(GraphProto), f.at);
    out = std::make_unique<GraphProto>();
  }
  read_message(c, f, *out, name);
}
template <class T>
requires std::is_arithmetic_v<T>
void read_into(Context& c, const Field& f, std::vector<T>& out, const char* name) {
  append_scalars(c, f, out, name);
}
template <class M>
requires std::is_class_v<M>
void read_into(Context& c, const Field& f, std::vector<M>& out, const char* name) {
  append_message(c, f, out, name);
}
template <class M>
requires std::is_class_v<M>
void read_into(Context& c, const Field& f, std::optional<M>& out, const char* name) {
  if (!out) out.emplace();
  read_message(c, f, *out, name);
}

// The largest value each enum field defines (closed enums: see read_enum).
constexpr int32_t enum_max(DataLocation) {
  return static_cast<int32_t>(DataLocation::External);
}
constexpr int32_t enum_max(AttributeType) {
  return static_cast<int32_t>(AttributeType::TypeProtos);
}
template <class E>
requires std::is_enum_v<E>
void read_into(Context& c, const Field& f, E& out, const char* name) {
  read_enum(c, f, out, enum_max(E{}), name);
}

// One row of a message's table: onnx.proto's field number and name, and how to read it into the struct.
template <class M>
struct FieldRule {
  uint32_t number;
  const char* name;
  void (*read)(Context&, const Field&, M&, const char* name);
};

template <class P>
struct MemberOf;
template <class M, class T>
struct MemberOf<T M::*> {
  using Message = M;
};

// The usual row: the field lands in `Member`, read as its type says.
template <auto Member>
constexpr FieldRule<typename MemberOf<decltype(Member)>::Message> field(uint32_t number, const char* name) {
  using M = typename MemberOf<decltype(Member)>::Message;
  return {number, name,
          [](Context& c, const Field& f, M& out, const char* n) { read_into(c, f, out.*Member, n); }};
}

// Fields the table does not list are unknown fields: skipped (their framing was checked by the Reader).
template <class M, size_t N>
void decode_fields(Reader& r, M& out, const FieldRule<M> (&rules)[N]) {
  for (Field f; r.next(f);) {
    for (const FieldRule<M>& rule : rules) {
      if (rule.number == f.number) {
        rule.read(r.ctx(), f, out, rule.name);
        break;
      }
    }
  }
}

void decode(Reader& r, StringStringEntryProto& out) {
  using M = StringStringEntryProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::key>(1, "key"), field<&M::value>(2, "value")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, OperatorSetIdProto& out) {
  using M = OperatorSetIdProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::domain>(1, "domain"),
                                             field<&M::version>(2, "version")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TensorProto::Segment& out) {
  using M = TensorProto::Segment;
  static constexpr FieldRule<M> kFields[] = {field<&M::begin>(1, "begin"), field<&M::end>(2, "end")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TensorProto& out) {
  using M = TensorProto;
  static constexpr FieldRule<M> kFields[] = {
      field<&M::dims>(1, "dims"),
      field<&M::data_type>(2, "data_type"),
      field<&M::segment>(3, "segment"),
      field<&M::float_data>(4, "float_data"),
      field<&M::int32_data>(5, "int32_data"),
      field<&M::string_data>(6, "string_data"),
      field<&M::int64_data>(7, "int64_data"),
      field<&M::name>(8, "name"),
      field<&M::raw_data>(9, "raw_data"),
      field<&M::double_data>(10, "double_data"),
      field<&M::uint64_data>(11, "uint64_data"),
      field<&M::external_data>(13, "external_data"),
      field<&M::data_location>(14, "data_location"),
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, SparseTensorProto& out) {
  using M = SparseTensorProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::values>(1, "values")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TensorShapeProto::Dimension& out) {
  using M = TensorShapeProto::Dimension;
  // oneof value: setting one member clears the other.
  static constexpr FieldRule<M> kFields[] = {
      {1, "dim_value",
       [](Context& c, const Field& f, M& d, const char* n) {
         d.dim_value = read_int64(c, f, n);
         d.dim_param.reset();
       }},
      {2, "dim_param",
       [](Context& c, const Field& f, M& d, const char* n) {
         d.dim_param = read_string(c, f, n);
         d.dim_value.reset();
       }},
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TensorShapeProto& out) {
  using M = TensorShapeProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::dim>(1, "dim")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TypeProto::Tensor& out) {
  using M = TypeProto::Tensor;
  static constexpr FieldRule<M> kFields[] = {field<&M::elem_type>(1, "elem_type"),
                                             field<&M::shape>(2, "shape")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, TypeProto& out) {
  using M = TypeProto;
  using Case = TypeProto::ValueCase;
  // oneof value: switching members starts the new one empty; the same member again is merged. Only
  // tensor_type's contents are decoded; the other members are noted by their field number.
  static constexpr auto other = [](Context& c, const Field& f, M& t, const char* n) {
    skip_message(c, f, n);
    t.value_case = static_cast<Case>(f.number);
    t.tensor_type = {};
  };
  static constexpr FieldRule<M> kFields[] = {
      {1, "tensor_type",
       [](Context& c, const Field& f, M& t, const char* n) {
         if (t.value_case != Case::TensorType) {
           t.tensor_type = {};
           t.value_case = Case::TensorType;
         }
         read_message(c, f, t.tensor_type, n);
       }},
      {4, "sequence_type", other},
      {5, "map_type", other},
      {7, "opaque_type", other},
      {8, "sparse_tensor_type", other},
      {9, "optional_type", other},
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, ValueInfoProto& out) {
  using M = ValueInfoProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::name>(1, "name"), field<&M::type>(2, "type")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, AttributeProto& out) {
  using M = AttributeProto;
  static constexpr FieldRule<M> kFields[] = {
      field<&M::name>(1, "name"),
      field<&M::ref_attr_name>(21, "ref_attr_name"),
      field<&M::type>(20, "type"),
      field<&M::f>(2, "f"),
      field<&M::i>(3, "i"),
      field<&M::s>(4, "s"),
      field<&M::t>(5, "t"),
      field<&M::g>(6, "g"),
      field<&M::has_sparse_tensor>(22, "sparse_tensor"),
      field<&M::has_tp>(14, "tp"),
      field<&M::floats>(7, "floats"),
      field<&M::ints>(8, "ints"),
      field<&M::strings>(9, "strings"),
      field<&M::tensors>(10, "tensors"),
      field<&M::graphs>(11, "graphs"),
      field<&M::sparse_tensors_count>(23, "sparse_tensors"),
      field<&M::type_protos_count>(15, "type_protos"),
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, NodeProto& out) {
  using M = NodeProto;
  static constexpr FieldRule<M> kFields[] = {
      field<&M::input>(1, "input"),     field<&M::output>(2, "output"), field<&M::name>(3, "name"),
      field<&M::op_type>(4, "op_type"), field<&M::domain>(7, "domain"), field<&M::attribute>(5, "attribute"),
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, GraphProto& out) {
  using M = GraphProto;
  static constexpr FieldRule<M> kFields[] = {
      field<&M::node>(1, "node"),
      field<&M::name>(2, "name"),
      field<&M::initializer>(5, "initializer"),
      field<&M::sparse_initializer>(15, "sparse_initializer"),
      field<&M::input>(11, "input"),
      field<&M::output>(12, "output"),
      field<&M::value_info>(13, "value_info"),
  };
  decode_fields(r, out, kFields);
}

void decode(Reader& r, FunctionProto& out) {
  using M = FunctionProto;
  static constexpr FieldRule<M> kFields[] = {field<&M::name>(1, "name"), field<&M::domain>(10, "domain")};
  decode_fields(r, out, kFields);
}

void decode(Reader& r, ModelProto& out) {
  using M = ModelProto;
  static constexpr FieldRule<M> kFields[] = {
      field<&M::ir_version>(1, "ir_version"),
      field<&M::opset_import>(8, "opset_import"),
      field<&M::producer_name>(2, "producer_name"),
      field<&M::producer_version>(3, "producer_version"),
      field<&M::domain>(4, "domain"),
      field<&M::model_version>(5, "model_version"),
      field<&M::graph>(7, "graph"),
      field<&M::metadata_props>(14, "metadata_props"),
      field<&M::functions>(25, "functions"),
  };
  decode_fields(r, out, kFields);
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
