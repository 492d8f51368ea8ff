// ONNX's protobuf messages as plain structs, and a decoder of the protobuf wire format into them: exactly the
// parts of onnx.proto (onnx 1.12 with ONNX_ML, IR versions 3-10) the importer reads, with onnx.proto's field
// numbers. wgi decodes the format itself rather than linking libprotobuf so that the same importer builds for
// the browser (Emscripten has no protobuf library), and so that every limit is wgi's own.
//
// The decoder never trusts its input: truncated varints, lengths past the end of the enclosing message, known
// fields with the wrong wire type, invalid wire types, unclosed groups, nesting deeper than
// DecodeOptions::max_depth and decoded structures larger than DecodeOptions::max_decoded_bytes are each a
// wgi::Error naming the problem, the byte offset and the path of fields to it. No allocation is ever sized by
// a length read from the input before that length is checked against the bytes that remain. Lengths are
// 64-bit: there is no 2 GiB ceiling as in libprotobuf.
//
// Semantics follow libprotobuf's parser for proto2, so that a file decodes to the same values: a singular
// scalar seen twice keeps the last value, a singular message seen twice is merged, repeated fields append,
// repeated scalars are read packed or unpacked (and mixed), a oneof keeps the last member set, enum fields
// (closed in proto2) ignore values the enum does not define, unknown fields of every wire type (groups
// included) are skipped. Stricter than libprotobuf: a known field with the wrong wire type is an error
// (libprotobuf keeps it as an unknown field), and a field number of 0 is an error wherever it appears.
// Sub-messages the importer never reads (doc strings, TypeProto.sequence_type contents, sparse tensors in
// attributes, training_info...) are skipped as unknown fields: only their framing is checked.
//
// Byte fields that can be large (TensorProto.raw_data, string_data) are views into the input: keep the input
// alive while the decoded message is used. Everything else is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgi::onnx::proto {

using Bytes = std::span<const std::byte>;

// TensorProto.DataType (ONNX 1.17, IR 10). TensorProto.data_type is an int32 field, so values outside this
// list are kept as they are.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

// AttributeProto.AttributeType: an enum field, so a value outside it reads as if the field were absent.
enum class AttributeType : int32_t {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};
// onnx.proto's name of the value ("TYPE_PROTOS"), "" for values outside the enum.
std::string_view attribute_type_name(AttributeType type);

// TensorProto.DataLocation (an enum field).
enum class DataLocation : int32_t { Default = 0, External = 1 };

struct StringStringEntryProto {
  std::string key;    // 1
  std::string value;  // 2
};

struct OperatorSetIdProto {
  std::string domain;   // 1
  int64_t version = 0;  // 2
};

// TensorProto.Segment, at namespace scope: as a nested struct with member initializers, clang could not use
// it in std::optional inside TensorProto (the initializers are not parsed before the enclosing class ends).
struct TensorSegment {
  int64_t begin = 0;  // 1
  int64_t end = 0;    // 2
};

struct TensorProto {
  using Segment = TensorSegment;
  std::vector<int64_t> dims;                           // 1
  std::optional<int32_t> data_type;                    // 2
  std::optional<Segment> segment;                      // 3
  std::vector<float> float_data;                       // 4
  std::vector<int32_t> int32_data;                     // 5
  std::vector<Bytes> string_data;                      // 6, views into the input
  std::vector<int64_t> int64_data;                     // 7
  std::string name;                                    // 8
  std::optional<Bytes> raw_data;                       // 9, a view into the input
  std::vector<double> double_data;                     // 10
  std::vector<uint64_t> uint64_data;                   // 11
  std::vector<StringStringEntryProto> external_data;   // 13
  DataLocation data_location = DataLocation::Default;  // 14
};

// Only `values` is decoded (indices and dims are not read: wgi refuses sparse initializers).
struct SparseTensorProto {
  std::optional<TensorProto> values;  // 1
};

struct TensorShapeProto {
  struct Dimension {                       // oneof value: at most one of the two is set
    std::optional<int64_t> dim_value;      // 1
    std::optional<std::string> dim_param;  // 2
  };
  std::vector<Dimension> dim;  // 1
};

struct TypeProto {
  struct Tensor {
    std::optional<int32_t> elem_type;       // 1
    std::optional<TensorShapeProto> shape;  // 2
  };
  // Which member of the oneof `value` is set: its field number. Only tensor_type's contents are decoded.
  enum class ValueCase : int32_t {
    NotSet = 0,
    TensorType = 1,
    SequenceType = 4,
    MapType = 5,
    OpaqueType = 7,
    SparseTensorType = 8,
    OptionalType = 9,
  };
  ValueCase value_case = ValueCase::NotSet;
  Tensor tensor_type;  // 1, meaningful when value_case is TensorType
};

struct ValueInfoProto {
  std::string name;               // 1
  std::optional<TypeProto> type;  // 2
};

struct GraphProto;

struct AttributeProto {
  std::string name;                               // 1
  std::string ref_attr_name;                      // 21
  AttributeType type = AttributeType::Undefined;  // 20
  std::optional<float> f;                         // 2
  std::optional<int64_t> i;                       // 3
  std::optional<std::string> s;                   // 4
  std::optional<TensorProto> t;                   // 5
  std::unique_ptr<GraphProto> g;                  // 6
  bool has_sparse_tensor = false;                 // 22, contents not decoded
  bool has_tp = false;                            // 14, contents not decoded
  std::vector<float> floats;                      // 7
  std::vector<int64_t> ints;                      // 8
  std::vector<std::string> strings;               // 9
  std::vector<TensorProto> tensors;               // 10
  std::vector<GraphProto> graphs;                 // 11
  size_t sparse_tensors_count = 0;                // 23, contents not decoded
  size_t type_protos_count = 0;                   // 15, contents not decoded
};

struct NodeProto {
  std::vector<std::string> input;         // 1
  std::vector<std::string> output;        // 2
  std::string name;                       // 3
  std::string op_type;                    // 4
  std::string domain;                     // 7
  std::vector<AttributeProto> attribute;  // 5
};

struct GraphProto {
  std::vector<NodeProto> node;                        // 1
  std::string name;                                   // 2
  std::vector<TensorProto> initializer;               // 5
  std::vector<SparseTensorProto> sparse_initializer;  // 15
  std::vector<ValueInfoProto> input;                  // 11
  std::vector<ValueInfoProto> output;                 // 12
  std::vector<ValueInfoProto> value_info;             // 13
};

// Only the identity of a model-local function is decoded: wgi reports calls to it, it does not inline it.
struct FunctionProto {
  std::string name;    // 1
  std::string domain;  // 10
};

struct ModelProto {
  std::optional<int64_t> ir_version;                   // 1
  std::vector<OperatorSetIdProto> opset_import;        // 8
  std::string producer_name;                           // 2
  std::string producer_version;                        // 3
  std::string domain;                                  // 4
  int64_t model_version = 0;                           // 5
  std::optional<GraphProto> graph;                     // 7
  std::vector<StringStringEntryProto> metadata_props;  // 14
  std::vector<FunctionProto> functions;                // 25
};

struct DecodeOptions {
  // The most memory the decoded structs may take, counted per element as the decoder adds it (struct sizes,
  // copied string bytes, scalars): the protobuf format lets a few input bytes become a much larger struct,
  // and this bound keeps a hostile file from turning that into a huge allocation. Views (raw_data) cost
  // nothing.
  uint64_t max_decoded_bytes = 4ull << 30;
  // Messages (and unknown groups) inside messages, as libprotobuf's default recursion limit.
  int max_depth = 100;
  // The start of format errors, e.g. "not a valid ONNX model".
  std::string_view invalid = "not a valid protobuf message";
  // What max_decoded_bytes is called in the error message.
  std::string_view limit_name = "DecodeOptions::max_decoded_bytes";
};

// Throw wgi::Error on malformed input (see above).
ModelProto decode_model(Bytes bytes, const DecodeOptions& options = {});
TensorProto decode_tensor(Bytes bytes, const DecodeOptions& options = {});

}  // namespace wgi::onnx::proto
