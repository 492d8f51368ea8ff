// wgi's protobuf decoder (src/onnx/onnx_proto.h) against libprotobuf with Debian's onnx classes: a rich model
// serialized by libprotobuf decodes to the same values field by field; hand-written encodings (packed and
// unpacked repeated scalars, unknown fields of every wire type, repeated singular fields, oneofs, enum values
// outside the enum) decode as libprotobuf parses them; every prefix of a model is accepted by both or by
// neither; random mutations never crash and, where both accept, agree; malformed inputs fail with messages
// that say what is wrong and where.
#include <google/protobuf/io/coded_stream.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_proto.h"
#include "support/expect_text.h"

namespace wgi::onnx {
namespace {

namespace pb = ::onnx;

proto::Bytes as_input(const std::string& bytes) {
  return std::as_bytes(std::span<const char>(bytes.data(), bytes.size()));
}

// libprotobuf's parse as the importer did before it had its own decoder: the same nesting limit, the whole
// input consumed.
template <class M>
bool protobuf_parse(const std::string& bytes, M& out) {
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  stream.SetRecursionLimit(100);
  return out.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

std::optional<proto::ModelProto> try_decode_model(const std::string& bytes) {
  try {
    return proto::decode_model(as_input(bytes));
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string decode_error(const std::string& bytes, const proto::DecodeOptions& options = {}) {
  try {
    proto::decode_model(as_input(bytes), options);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string tensor_error(const std::string& bytes) {
  try {
    proto::decode_tensor(as_input(bytes));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// --- field-by-field comparison with libprotobuf's classes --------------------------------------------------

// Collects differences as "path: libprotobuf X, wgi Y".
class Diffs {
 public:
  template <class A, class B>
  void eq(const std::string& path, const A& expected, const B& actual) {
    if (!(expected == actual)) add(path, printable(expected), printable(actual));
  }
  // Bitwise: NaNs and signed zeros must survive as they are.
  void eq_float(const std::string& path, float expected, float actual) {
    if (std::bit_cast<uint32_t>(expected) != std::bit_cast<uint32_t>(actual))
      add(path, std::to_string(expected), std::to_string(actual));
  }
  void eq_double(const std::string& path, double expected, double actual) {
    if (std::bit_cast<uint64_t>(expected) != std::bit_cast<uint64_t>(actual))
      add(path, std::to_string(expected), std::to_string(actual));
  }
  void eq_bytes(const std::string& path, const std::string& expected, proto::Bytes actual) {
    eq(path, expected, std::string(reinterpret_cast<const char*>(actual.data()), actual.size()));
  }
  bool same_size(const std::string& path, size_t expected, size_t actual) {
    eq(path + ".size", expected, actual);
    return expected == actual;
  }
  const std::vector<std::string>& all() const { return diffs_; }
  std::string text() const {
    std::string s;
    for (size_t i = 0; i < diffs_.size() && i < 20; ++i) s += diffs_[i] + "\n";
    return s;
  }

 private:
  template <class T>
  static std::string printable(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return "'" + v.substr(0, 60) + "'";
    } else if constexpr (std::is_same_v<T, bool>) {
      return v ? "true" : "false";
    } else {
      return std::to_string(v);
    }
  }
  void add(const std::string& path, const std::string& expected, const std::string& actual) {
    diffs_.push_back(path + ": libprotobuf " + expected + ", wgi " + actual);
  }
  std::vector<std::string> diffs_;
};

template <class R, class T>
void compare_scalars(Diffs& d, const std::string& path, const R& expected, const std::vector<T>& actual) {
  if (!d.same_size(path, static_cast<size_t>(expected.size()), actual.size())) return;
  for (size_t i = 0; i < actual.size(); ++i) {
    std::string at = path + "[" + std::to_string(i) + "]";
    if constexpr (std::is_same_v<T, float>) {
      d.eq_float(at, expected[static_cast<int>(i)], actual[i]);
    } else if constexpr (std::is_same_v<T, double>) {
      d.eq_double(at, expected[static_cast<int>(i)], actual[i]);
    } else {
      d.eq(at, static_cast<T>(expected[static_cast<int>(i)]), actual[i]);
    }
  }
}

template <class R>
void compare_strings(Diffs& d, const std::string& path, const R& expected,
                     const std::vector<std::string>& actual) {
  if (!d.same_size(path, static_cast<size_t>(expected.size()), actual.size())) return;
  for (size_t i = 0; i < actual.size(); ++i) {
    d.eq(path + "[" + std::to_string(i) + "]", expected[static_cast<int>(i)], actual[i]);
  }
}

// compare(d, path, libprotobuf message, wgi struct) for each message; declared first so that
// compare_messages finds them all.
void compare(Diffs& d, const std::string& path, const pb::StringStringEntryProto& e,
             const proto::StringStringEntryProto& a);
void compare(Diffs& d, const std::string& path, const pb::OperatorSetIdProto& e,
             const proto::OperatorSetIdProto& a);
void compare(Diffs& d, const std::string& path, const pb::TensorProto& e, const proto::TensorProto& a);
void compare(Diffs& d, const std::string& path, const pb::SparseTensorProto& e,
             const proto::SparseTensorProto& a);
void compare(Diffs& d, const std::string& path, const pb::TensorShapeProto_Dimension& e,
             const proto::TensorShapeProto::Dimension& a);
void compare(Diffs& d, const std::string& path, const pb::ValueInfoProto& e, const proto::ValueInfoProto& a);
void compare(Diffs& d, const std::string& path, const pb::AttributeProto& e, const proto::AttributeProto& a);
void compare(Diffs& d, const std::string& path, const pb::NodeProto& e, const proto::NodeProto& a);
void compare(Diffs& d, const std::string& path, const pb::GraphProto& e, const proto::GraphProto& a);
void compare(Diffs& d, const std::string& path, const pb::FunctionProto& e, const proto::FunctionProto& a);

template <class R, class T>
void compare_messages(Diffs& d, const std::string& path, const R& expected, const std::vector<T>& actual) {
  if (!d.same_size(path, static_cast<size_t>(expected.size()), actual.size())) return;
  for (size_t i = 0; i < actual.size(); ++i) {
    compare(d, path + "[" + std::to_string(i) + "]", expected[static_cast<int>(i)], actual[i]);
  }
}

void compare(Diffs& d, const std::string& path, const pb::StringStringEntryProto& e,
             const proto::StringStringEntryProto& a) {
  d.eq(path + ".key", e.key(), a.key);
  d.eq(path + ".value", e.value(), a.value);
}

void compare(Diffs& d, const std::string& path, const pb::OperatorSetIdProto& e,
             const proto::OperatorSetIdProto& a) {
  d.eq(path + ".domain", e.domain(), a.domain);
  d.eq(path + ".version", e.version(), a.version);
}

void compare(Diffs& d, const std::string& path, const pb::TensorProto& e, const proto::TensorProto& a) {
  compare_scalars(d, path + ".dims", e.dims(), a.dims);
  d.eq(path + ".has_data_type", e.has_data_type(), a.data_type.has_value());
  if (a.data_type) d.eq(path + ".data_type", e.data_type(), *a.data_type);
  d.eq(path + ".has_segment", e.has_segment(), a.segment.has_value());
  if (a.segment) {
    d.eq(path + ".segment.begin", e.segment().begin(), a.segment->begin);
    d.eq(path + ".segment.end", e.segment().end(), a.segment->end);
  }
  compare_scalars(d, path + ".float_data", e.float_data(), a.float_data);
  compare_scalars(d, path + ".int32_data", e.int32_data(), a.int32_data);
  if (d.same_size(path + ".string_data", static_cast<size_t>(e.string_data_size()), a.string_data.size())) {
    for (size_t i = 0; i < a.string_data.size(); ++i) {
      d.eq_bytes(path + ".string_data[" + std::to_string(i) + "]", e.string_data(static_cast<int>(i)),
                 a.string_data[i]);
    }
  }
  compare_scalars(d, path + ".int64_data", e.int64_data(), a.int64_data);
  d.eq(path + ".name", e.name(), a.name);
  d.eq(path + ".has_raw_data", e.has_raw_data(), a.raw_data.has_value());
  if (a.raw_data) d.eq_bytes(path + ".raw_data", e.raw_data(), *a.raw_data);
  compare_scalars(d, path + ".double_data", e.double_data(), a.double_data);
  compare_scalars(d, path + ".uint64_data", e.uint64_data(), a.uint64_data);
  compare_messages(d, path + ".external_data", e.external_data(), a.external_data);
  d.eq(path + ".data_location", static_cast<int>(e.data_location()), static_cast<int>(a.data_location));
}

void compare(Diffs& d, const std::string& path, const pb::SparseTensorProto& e,
             const proto::SparseTensorProto& a) {
  d.eq(path + ".has_values", e.has_values(), a.values.has_value());
  if (a.values) compare(d, path + ".values", e.values(), *a.values);
}

void compare(Diffs& d, const std::string& path, const pb::TensorShapeProto_Dimension& e,
             const proto::TensorShapeProto::Dimension& a) {
  d.eq(path + ".has_dim_value", e.has_dim_value(), a.dim_value.has_value());
  if (a.dim_value) d.eq(path + ".dim_value", e.dim_value(), *a.dim_value);
  d.eq(path + ".has_dim_param", e.has_dim_param(), a.dim_param.has_value());
  if (a.dim_param) d.eq(path + ".dim_param", e.dim_param(), *a.dim_param);
}

void compare(Diffs& d, const std::string& path, const pb::TypeProto& e, const proto::TypeProto& a) {
  d.eq(path + ".value_case", static_cast<int>(e.value_case()), static_cast<int>(a.value_case));
  if (a.value_case != proto::TypeProto::ValueCase::TensorType) return;
  const pb::TypeProto::Tensor& et = e.tensor_type();
  const proto::TypeProto::Tensor& at = a.tensor_type;
  d.eq(path + ".tensor_type.has_elem_type", et.has_elem_type(), at.elem_type.has_value());
  if (at.elem_type) d.eq(path + ".tensor_type.elem_type", et.elem_type(), *at.elem_type);
  d.eq(path + ".tensor_type.has_shape", et.has_shape(), at.shape.has_value());
  if (at.shape) compare_messages(d, path + ".tensor_type.shape.dim", et.shape().dim(), at.shape->dim);
}

void compare(Diffs& d, const std::string& path, const pb::ValueInfoProto& e, const proto::ValueInfoProto& a) {
  d.eq(path + ".name", e.name(), a.name);
  d.eq(path + ".has_type", e.has_type(), a.type.has_value());
  if (a.type) compare(d, path + ".type", e.type(), *a.type);
}

void compare(Diffs& d, const std::string& path, const pb::AttributeProto& e, const proto::AttributeProto& a) {
  d.eq(path + ".name", e.name(), a.name);
  d.eq(path + ".ref_attr_name", e.ref_attr_name(), a.ref_attr_name);
  d.eq(path + ".type", static_cast<int>(e.type()), static_cast<int>(a.type));
  d.eq(path + ".has_f", e.has_f(), a.f.has_value());
  if (a.f) d.eq_float(path + ".f", e.f(), *a.f);
  d.eq(path + ".has_i", e.has_i(), a.i.has_value());
  if (a.i) d.eq(path + ".i", e.i(), *a.i);
  d.eq(path + ".has_s", e.has_s(), a.s.has_value());
  if (a.s) d.eq(path + ".s", e.s(), *a.s);
  d.eq(path + ".has_t", e.has_t(), a.t.has_value());
  if (a.t) compare(d, path + ".t", e.t(), *a.t);
  d.eq(path + ".has_g", e.has_g(), a.g != nullptr);
  if (a.g) compare(d, path + ".g", e.g(), *a.g);
  d.eq(path + ".has_sparse_tensor", e.has_sparse_tensor(), a.has_sparse_tensor);
  d.eq(path + ".has_tp", e.has_tp(), a.has_tp);
  compare_scalars(d, path + ".floats", e.floats(), a.floats);
  compare_scalars(d, path + ".ints", e.ints(), a.ints);
  compare_strings(d, path + ".strings", e.strings(), a.strings);
  compare_messages(d, path + ".tensors", e.tensors(), a.tensors);
  compare_messages(d, path + ".graphs", e.graphs(), a.graphs);
  d.eq(path + ".sparse_tensors.size", static_cast<size_t>(e.sparse_tensors_size()), a.sparse_tensors_count);
  d.eq(path + ".type_protos.size", static_cast<size_t>(e.type_protos_size()), a.type_protos_count);
}

void compare(Diffs& d, const std::string& path, const pb::NodeProto& e, const proto::NodeProto& a) {
  compare_strings(d, path + ".input", e.input(), a.input);
  compare_strings(d, path + ".output", e.output(), a.output);
  d.eq(path + ".name", e.name(), a.name);
  d.eq(path + ".op_type", e.op_type(), a.op_type);
  d.eq(path + ".domain", e.domain(), a.domain);
  compare_messages(d, path + ".attribute", e.attribute(), a.attribute);
}

void compare(Diffs& d, const std::string& path, const pb::GraphProto& e, const proto::GraphProto& a) {
  compare_messages(d, path + ".node", e.node(), a.node);
  d.eq(path + ".name", e.name(), a.name);
  compare_messages(d, path + ".initializer", e.initializer(), a.initializer);
  compare_messages(d, path + ".sparse_initializer", e.sparse_initializer(), a.sparse_initializer);
  compare_messages(d, path + ".input", e.input(), a.input);
  compare_messages(d, path + ".output", e.output(), a.output);
  compare_messages(d, path + ".value_info", e.value_info(), a.value_info);
}

void compare(Diffs& d, const std::string& path, const pb::FunctionProto& e, const proto::FunctionProto& a) {
  d.eq(path + ".name", e.name(), a.name);
  d.eq(path + ".domain", e.domain(), a.domain);
}

void compare(Diffs& d, const std::string& path, const pb::ModelProto& e, const proto::ModelProto& a) {
  d.eq(path + ".has_ir_version", e.has_ir_version(), a.ir_version.has_value());
  if (a.ir_version) d.eq(path + ".ir_version", e.ir_version(), *a.ir_version);
  compare_messages(d, path + ".opset_import", e.opset_import(), a.opset_import);
  d.eq(path + ".producer_name", e.producer_name(), a.producer_name);
  d.eq(path + ".producer_version", e.producer_version(), a.producer_version);
  d.eq(path + ".domain", e.domain(), a.domain);
  d.eq(path + ".model_version", e.model_version(), a.model_version);
  d.eq(path + ".has_graph", e.has_graph(), a.graph.has_value());
  if (a.graph) compare(d, path + ".graph", e.graph(), *a.graph);
  compare_messages(d, path + ".metadata_props", e.metadata_props(), a.metadata_props);
  compare_messages(d, path + ".functions", e.functions(), a.functions);
}

template <class PbMessage, class Message>
std::vector<std::string> differences(const PbMessage& expected, const Message& actual) {
  Diffs d;
  compare(d, "model", expected, actual);
  return d.all();
}

// --- a model that uses every field the decoder reads, and many it skips ------------------------------------

pb::TensorProto rich_tensor(const std::string& name, int variant) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_doc_string("skipped doc string");
  for (int64_t d : {int64_t{2}, int64_t{0}, int64_t{1} << 40, int64_t{-1}}) t.add_dims(d + variant);
  t.set_data_type(variant % 2 ? pb::TensorProto::FLOAT : -7);  // a negative int32: a 10-byte varint
  t.mutable_segment()->set_begin(-3);
  t.mutable_segment()->set_end(int64_t{1} << 62);
  for (float f : {1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity(), 1e-45f}) {
    t.add_float_data(f + static_cast<float>(variant));
  }
  for (int32_t v : {0, -1, INT32_MIN, INT32_MAX, 300}) t.add_int32_data(v);
  t.add_string_data("first");
  t.add_string_data(std::string("\0\xff binary", 9));
  for (int64_t v : {int64_t{0}, int64_t{-1}, INT64_MIN, INT64_MAX, int64_t{1} << 35}) t.add_int64_data(v);
  t.set_raw_data(std::string("\x00\x01\x02\x80\xff", 5));
  for (double v : {0.1, -2.5e300, std::numeric_limits<double>::denorm_min()}) t.add_double_data(v);
  for (uint64_t v : {uint64_t{0}, UINT64_MAX, uint64_t{1} << 63}) t.add_uint64_data(v);
  pb::StringStringEntryProto* e = t.add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  e = t.add_external_data();
  e->set_key("offset");
  t.set_data_location(pb::TensorProto::EXTERNAL);
  return t;
}

pb::ValueInfoProto* rich_value(google::protobuf::RepeatedPtrField<pb::ValueInfoProto>* list,
                               const std::string& name) {
  pb::ValueInfoProto* v = list->Add();
  v->set_name(name);
  v->set_doc_string("skipped");
  pb::TypeProto* type = v->mutable_type();
  type->set_denotation("IMAGE");
  pb::TypeProto::Tensor* t = type->mutable_tensor_type();
  t->set_elem_type(pb::TensorProto::FLOAT16);
  pb::TensorShapeProto::Dimension* d = t->mutable_shape()->add_dim();
  d->set_dim_value(7);
  d->set_denotation("DATA_BATCH");
  t->mutable_shape()->add_dim()->set_dim_param("seq");
  t->mutable_shape()->add_dim();  // neither
  t->mutable_shape()->add_dim()->set_dim_value(-1);
  return v;
}

pb::GraphProto rich_graph(int depth, int levels);

// levels: how deep subgraphs nest below this graph.
void add_rich_nodes(pb::GraphProto& g, int depth, int levels) {
  pb::NodeProto* n = g.add_node();
  n->add_input("x");
  n->add_input("");
  n->add_input("w");
  n->add_output("y");
  n->add_output("");
  n->set_name("node_" + std::to_string(depth));
  n->set_op_type("Conv");
  n->set_domain("ai.onnx");
  n->set_doc_string("skipped");
  auto attr = [&](const std::string& name, pb::AttributeProto::AttributeType type) {
    pb::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(type);
    a->set_doc_string("skipped");
    return a;
  };
  attr("f", pb::AttributeProto::FLOAT)->set_f(-0.25f);
  attr("i", pb::AttributeProto::INT)->set_i(INT64_MIN);
  attr("s", pb::AttributeProto::STRING)->set_s(std::string("a\0b", 3));
  *attr("t", pb::AttributeProto::TENSOR)->mutable_t() = rich_tensor("attr_t", depth);
  pb::AttributeProto* floats = attr("floats", pb::AttributeProto::FLOATS);
  for (float f : {1.0f, 2.0f, -3.5f}) floats->add_floats(f);
  pb::AttributeProto* ints = attr("ints", pb::AttributeProto::INTS);
  for (int64_t v : {int64_t{1}, int64_t{-2}, int64_t{1} << 50}) ints->add_ints(v);
  pb::AttributeProto* strings = attr("strings", pb::AttributeProto::STRINGS);
  strings->add_strings("x");
  strings->add_strings("");
  pb::AttributeProto* tensors = attr("tensors", pb::AttributeProto::TENSORS);
  *tensors->add_tensors() = rich_tensor("t0", depth + 1);
  *tensors->add_tensors() = pb::TensorProto();
  pb::AttributeProto* sparse = attr("sparse", pb::AttributeProto::SPARSE_TENSOR);
  *sparse->mutable_sparse_tensor()->mutable_values() = rich_tensor("sv", 1);
  sparse->mutable_sparse_tensor()->add_dims(4);
  attr("sparse_list", pb::AttributeProto::SPARSE_TENSORS)->add_sparse_tensors()->add_dims(3);
  attr("tp", pb::AttributeProto::TYPE_PROTO)->mutable_tp()->mutable_sequence_type();
  pb::AttributeProto* tps = attr("tps", pb::AttributeProto::TYPE_PROTOS);
  tps->add_type_protos()->mutable_map_type()->set_key_type(7);
  tps->add_type_protos();
  attr("ref", pb::AttributeProto::FLOAT)->set_ref_attr_name("alpha");
  attr("untyped", pb::AttributeProto::UNDEFINED)->set_i(5);
  if (depth < levels) {
    *attr("g", pb::AttributeProto::GRAPH)->mutable_g() = rich_graph(depth + 1, levels);
    pb::AttributeProto* graphs = attr("graphs", pb::AttributeProto::GRAPHS);
    *graphs->add_graphs() = rich_graph(depth + 1, levels);
    graphs->add_graphs();
  }
  g.add_node()->set_op_type("Relu");  // mostly empty
}

pb::GraphProto rich_graph(int depth, int levels) {
  pb::GraphProto g;
  g.set_name("graph_" + std::to_string(depth));
  g.set_doc_string("skipped");
  add_rich_nodes(g, depth, levels);
  *g.add_initializer() = rich_tensor("w", depth);
  *g.add_initializer() = rich_tensor("w2", depth + 1);
  pb::SparseTensorProto* sp = g.add_sparse_initializer();
  *sp->mutable_values() = rich_tensor("sparse_values", depth);
  *sp->mutable_indices() = rich_tensor("sparse_indices", depth);
  sp->add_dims(10);
  g.add_sparse_initializer();
  rich_value(g.mutable_input(), "x");
  rich_value(g.mutable_output(), "y");
  rich_value(g.mutable_value_info(), "mid");
  pb::ValueInfoProto* seq = g.add_value_info();
  seq->set_name("seq");
  seq->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
  g.add_value_info()->mutable_type()->mutable_map_type()->set_key_type(8);
  g.add_value_info()->mutable_type()->mutable_optional_type();
  g.add_value_info()->mutable_type()->mutable_sparse_tensor_type()->set_elem_type(1);
  g.add_value_info()->mutable_type()->mutable_opaque_type()->set_domain("d");
  g.add_value_info()->mutable_type();  // a type with no member set
  g.add_value_info()->set_name("untyped");
  pb::TensorAnnotation* qa = g.add_quantization_annotation();
  qa->set_tensor_name("w");
  return g;
}

pb::ModelProto rich_model(int subgraph_levels = 2) {
  pb::ModelProto m;
  m.set_ir_version(10);
  for (auto [domain, version] :
       {std::pair<const char*, int64_t>{"", 21}, {"com.microsoft", 1}, {"ai.onnx.ml", 3}}) {
    pb::OperatorSetIdProto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  m.set_producer_name("wgi-tests");
  m.set_producer_version("1.0");
  m.set_domain("org.wgi");
  m.set_model_version(-42);
  m.set_doc_string("skipped");
  *m.mutable_graph() = rich_graph(0, subgraph_levels);
  pb::StringStringEntryProto* meta = m.add_metadata_props();
  meta->set_key("author");
  meta->set_value("tests");
  m.add_training_info()->mutable_algorithm()->set_name("skipped");
  pb::FunctionProto* f = m.add_functions();
  f->set_name("MyGelu");
  f->set_domain("local");
  f->add_input("x");
  f->add_node()->set_op_type("Tanh");
  f->add_opset_import()->set_version(18);
  m.add_functions()->set_name("Other");
  return m;
}

std::string serialize(const google::protobuf::MessageLite& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

// --- a small writer of the wire format, for encodings libprotobuf's serializer does not produce ------------

class Wire {
 public:
  Wire& varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes_ += static_cast<char>(v);
    return *this;
  }
  Wire& tag(uint32_t field, uint32_t wire) { return varint((uint64_t{field} << 3) | wire); }
  Wire& int_field(uint32_t field, uint64_t v) { return tag(field, 0).varint(v); }
  Wire& fixed32_field(uint32_t field, uint32_t bits) {
    tag(field, 5);
    bytes_.append(reinterpret_cast<const char*>(&bits), 4);
    return *this;
  }
  Wire& float_field(uint32_t field, float v) { return fixed32_field(field, std::bit_cast<uint32_t>(v)); }
  Wire& fixed64_field(uint32_t field, uint64_t bits) {
    tag(field, 1);
    bytes_.append(reinterpret_cast<const char*>(&bits), 8);
    return *this;
  }
  Wire& bytes_field(uint32_t field, const std::string& payload) {
    tag(field, 2).varint(payload.size());
    bytes_ += payload;
    return *this;
  }
  Wire& message(uint32_t field, const Wire& m) { return bytes_field(field, m.str()); }
  Wire& raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  const std::string& str() const { return bytes_; }

 private:
  std::string bytes_;
};

std::string packed_varints(std::initializer_list<uint64_t> values) {
  Wire w;
  for (uint64_t v : values) w.varint(v);
  return w.str();
}

template <class T>
std::string packed_fixed(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

// Decodes `bytes` with wgi and libprotobuf; both must accept it and agree on every field.
void expect_same_tensor(const std::string& bytes) {
  pb::TensorProto expected;
  ASSERT_TRUE(protobuf_parse(bytes, expected));
  proto::TensorProto actual = proto::decode_tensor(as_input(bytes));
  std::vector<std::string> d = differences(expected, actual);
  EXPECT_TRUE(d.empty()) << d.front();
}

void expect_same_model(const std::string& bytes) {
  pb::ModelProto expected;
  ASSERT_TRUE(protobuf_parse(bytes, expected));
  proto::ModelProto actual = proto::decode_model(as_input(bytes));
  Diffs d;
  compare(d, "model", expected, actual);
  EXPECT_TRUE(d.all().empty()) << d.text();
}

// --- round trips -------------------------------------------------------------------------------------------

TEST(OnnxProto, RichModelDecodesLikeProtobuf) {
  pb::ModelProto m = rich_model();
  std::string bytes = serialize(m);
  proto::ModelProto decoded = proto::decode_model(as_input(bytes));
  Diffs d;
  compare(d, "model", m, decoded);
  EXPECT_TRUE(d.all().empty()) << d.text();
  // The comparison is not vacuous: the structure is all there.
  ASSERT_TRUE(decoded.graph.has_value());
  ASSERT_EQ(decoded.graph->node.size(), 2u);
  const proto::NodeProto& conv = decoded.graph->node[0];
  EXPECT_EQ(conv.attribute.size(), 16u);
  ASSERT_NE(conv.attribute[14].g, nullptr);
  EXPECT_EQ(conv.attribute[14].g->name, "graph_1");
  EXPECT_EQ(conv.attribute[14].g->node[0].attribute[14].g->name, "graph_2");
  EXPECT_EQ(decoded.graph->initializer[0].int64_data[2], INT64_MIN);
  EXPECT_EQ(decoded.graph->initializer[0].data_type, -7);
  EXPECT_EQ(decoded.graph->value_info[1].type->value_case, proto::TypeProto::ValueCase::SequenceType);
  EXPECT_EQ(decoded.functions.size(), 2u);

  // raw_data is a view into the input, not a copy.
  const proto::Bytes raw = *decoded.graph->initializer[0].raw_data;
  const auto* input = reinterpret_cast<const std::byte*>(bytes.data());
  EXPECT_GE(raw.data(), input);
  EXPECT_LE(raw.data() + raw.size(), input + bytes.size());
}

TEST(OnnxProto, TensorDecodesLikeProtobuf) {
  expect_same_tensor(serialize(rich_tensor("t", 3)));
  expect_same_tensor(serialize(pb::TensorProto()));
  expect_same_tensor("");
  pb::TensorProto empty_raw;
  empty_raw.set_raw_data("");  // present but empty: proto2 keeps the difference
  expect_same_tensor(serialize(empty_raw));
  EXPECT_TRUE(proto::decode_tensor(as_input(serialize(empty_raw))).raw_data.has_value());
}

TEST(OnnxProto, LibonnxTestdataModelsDecodeLikeProtobuf) {
  const std::filesystem::path root = "/usr/share/libonnx-testdata/data";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "Debian's libonnx-testdata is not installed";
  int models = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".onnx" && e.path().extension() != ".pb") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Diffs d;
    if (e.path().extension() == ".onnx") {
      pb::ModelProto expected;
      ASSERT_TRUE(protobuf_parse(bytes, expected)) << e.path();
      compare(d, e.path().string(), expected, proto::decode_model(as_input(bytes)));
      ++models;
    } else {
      pb::TensorProto expected;
      if (!protobuf_parse(bytes, expected)) continue;  // a few .pb files hold sequences or maps
      compare(d, e.path().string(), expected, proto::decode_tensor(as_input(bytes)));
    }
    ASSERT_TRUE(d.all().empty()) << d.text();
  }
  EXPECT_GT(models, 1000);
}

// --- encodings ---------------------------------------------------------------------------------------------

TEST(OnnxProto, PackedAndUnpackedRepeatedScalars) {
  // TensorProto: dims (1) unpacked and packed, float_data (4) unpacked, int32_data (5) both, int64_data (7)
  // unpacked, double_data (10) unpacked, uint64_data (11) packed after unpacked.
  Wire w;
  w.int_field(1, 2).bytes_field(1, packed_varints({3, 1ull << 40})).int_field(1, static_cast<uint64_t>(-1));
  w.float_field(4, 1.5f).float_field(4, -2.0f);
  w.int_field(5, static_cast<uint64_t>(int64_t{-5})).bytes_field(5, packed_varints({7, 0xffffffffull}));
  w.int_field(7, static_cast<uint64_t>(INT64_MIN)).int_field(7, 9);
  w.fixed64_field(10, std::bit_cast<uint64_t>(0.5)).bytes_field(10, packed_fixed<double>({1.25, -8.0}));
  w.int_field(11, 1).bytes_field(11, packed_varints({UINT64_MAX, 2}));
  w.bytes_field(4, packed_fixed<float>({3.0f, 4.0f}));
  w.bytes_field(4, "");  // an empty packed run
  expect_same_tensor(w.str());
  proto::TensorProto t = proto::decode_tensor(as_input(w.str()));
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3, 1ll << 40, -1}));
  EXPECT_EQ(t.float_data, (std::vector<float>{1.5f, -2.0f, 3.0f, 4.0f}));
  EXPECT_EQ(t.int32_data, (std::vector<int32_t>{-5, 7, -1}));  // the low 32 bits, as libprotobuf keeps
  EXPECT_EQ(t.int64_data, (std::vector<int64_t>{INT64_MIN, 9}));
  EXPECT_EQ(t.double_data, (std::vector<double>{0.5, 1.25, -8.0}));
  EXPECT_EQ(t.uint64_data, (std::vector<uint64_t>{1, UINT64_MAX, 2}));

  // Attribute floats (7) and ints (8), declared unpacked in onnx.proto, read packed too.
  Wire attr;
  attr.bytes_field(1, "a").bytes_field(7, packed_fixed<float>({0.5f, 0.25f})).float_field(7, 8.0f);
  attr.bytes_field(8, packed_varints({1, 2, 3})).int_field(8, 4);
  Wire node, graph, model;
  node.bytes_field(4, "Op").message(5, attr);
  graph.message(1, node);
  model.int_field(1, 8).message(7, graph);
  expect_same_model(model.str());
  proto::ModelProto m = proto::decode_model(as_input(model.str()));
  EXPECT_EQ(m.graph->node[0].attribute[0].floats, (std::vector<float>{0.5f, 0.25f, 8.0f}));
  EXPECT_EQ(m.graph->node[0].attribute[0].ints, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(OnnxProto, UnknownFieldsOfEveryWireTypeAreSkipped) {
  Wire unknown;
  unknown.int_field(1000, 12345)
      .fixed64_field(1001, 0x0123456789abcdefull)
      .fixed32_field(1002, 0xdeadbeef)
      .bytes_field(1003, std::string("\x08\x01garbage that is never parsed", 30))
      .tag(536870911, 3)  // a group (the largest field number), holding fields and a nested group
      .int_field(1, 1)
      .tag(2, 3)
      .bytes_field(3, "x")
      .tag(2, 4)
      .tag(536870911, 4);
  // The same model with unknown fields at the start, middle and end of several messages.
  auto model = [&](bool with_unknown) {
    const std::string u = with_unknown ? unknown.str() : "";
    Wire dim, shape, tensor_type, type, value, init, node, graph, m;
    dim.raw(u).int_field(1, 5).raw(u);
    shape.message(1, dim).raw(u);
    tensor_type.int_field(1, 1).raw(u).message(2, shape);
    type.raw(u).message(1, tensor_type);
    value.bytes_field(1, "x").raw(u).message(2, type);
    init.int_field(1, 2).int_field(2, 1).raw(u).bytes_field(8, "w").bytes_field(9, std::string(8, '\1'));
    node.raw(u).bytes_field(1, "x").bytes_field(2, "y").bytes_field(4, "Relu").raw(u);
    graph.message(1, node).raw(u).message(5, init).message(11, value).raw(u);
    m.raw(u).int_field(1, 8).raw(u).message(7, graph).raw(u);
    return m.str();
  };
  expect_same_model(model(true));
  Diffs d;
  compare(
      d, "model",
      [&] {
        pb::ModelProto plain;
        EXPECT_TRUE(protobuf_parse(model(false), plain));
        return plain;
      }(),
      proto::decode_model(as_input(model(true))));
  EXPECT_TRUE(d.all().empty()) << d.text();
}

TEST(OnnxProto, RepeatedSingularFieldsOneofsAndEnumsFollowProtobuf) {
  // A singular scalar seen twice keeps the last value; a singular message seen twice is merged.
  Wire graph_a, graph_b, model;
  graph_a.bytes_field(2, "first").message(1, Wire().bytes_field(4, "A"));
  graph_b.message(1, Wire().bytes_field(4, "B")).bytes_field(2, "second");
  model.int_field(1, 7).message(7, graph_a).int_field(1, 9).message(7, graph_b);
  expect_same_model(model.str());
  proto::ModelProto m = proto::decode_model(as_input(model.str()));
  EXPECT_EQ(*m.ir_version, 9);
  EXPECT_EQ(m.graph->name, "second");
  ASSERT_EQ(m.graph->node.size(), 2u);

  // oneof Dimension.value: the last member set wins and clears the other.
  Wire shape;
  shape.message(1, Wire().int_field(1, 3).bytes_field(2, "n"));
  shape.message(1, Wire().bytes_field(2, "n").int_field(1, 4));
  // oneof TypeProto.value: tensor_type, then sequence_type, then tensor_type again (starting empty).
  Wire type;
  type.message(1, Wire().int_field(1, 1).message(2, shape))
      .bytes_field(4, "")
      .message(1, Wire().int_field(1, 7));
  Wire value;
  value.bytes_field(1, "v").message(2, type);
  // Enum values outside the enum leave the field as it was: AttributeProto.type (20), data_location (14).
  Wire attr;
  attr.bytes_field(1, "a").int_field(20, 2).int_field(20, 99).int_field(3, 1);
  attr.message(5, Wire().int_field(14, 1).int_field(14, 5).int_field(14, static_cast<uint64_t>(-1)));
  Wire node;
  node.bytes_field(4, "Op").message(5, attr);
  Wire model2;
  model2.int_field(1, 8).message(7, Wire().message(13, value).message(1, node));
  expect_same_model(model2.str());
  proto::ModelProto m2 = proto::decode_model(as_input(model2.str()));
  const proto::TypeProto& t = *m2.graph->value_info[0].type;
  EXPECT_EQ(t.value_case, proto::TypeProto::ValueCase::TensorType);
  EXPECT_EQ(t.tensor_type.elem_type, 7);
  EXPECT_FALSE(t.tensor_type.shape.has_value());
  const proto::AttributeProto& a = m2.graph->node[0].attribute[0];
  EXPECT_EQ(a.type, proto::AttributeType::Int);
  EXPECT_EQ(a.t->data_location, proto::DataLocation::External);

  // Dimension oneof on its own, compared as wgi sees it.
  proto::ModelProto m3 = proto::decode_model(as_input(
      Wire()
          .message(7, Wire().message(11, Wire().message(2, Wire().message(1, Wire().message(2, shape)))))
          .str()));
  const auto& dims = m3.graph->input[0].type->tensor_type.shape->dim;
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[0].dim_param, "n");
  EXPECT_FALSE(dims[0].dim_value.has_value());
  EXPECT_EQ(dims[1].dim_value, 4);
  EXPECT_FALSE(dims[1].dim_param.has_value());
}

// --- malformed input ---------------------------------------------------------------------------------------

TEST(OnnxProto, MalformedInputsNameTheProblemAndWhere) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::string graph_with_bad_node =
      Wire()
          .int_field(1, 8)
          .message(7, Wire().bytes_field(2, "g").bytes_field(1, std::string("\x22\x09Re", 4)))
          .str();
  std::vector<Case> cases = {
      {"\x08", "truncated varint at byte 1 (in ModelProto)"},
      {std::string("\x08\x80\x80", 3), "truncated varint at byte 1"},
      {"\x08" + std::string(10, '\xff') + "\x01", "varint longer than 10 bytes at byte 1"},
      {"\x3a\x05"
       "ab",
       "field 7 has length 5, past the end of its message (2 bytes left) at byte 0"},
      {Wire().tag(7, 2).varint(1ull << 40).str(), "has length 1099511627776, past the end"},
      {"\x38\x01", "field 7 (graph) has wire type 0 (varint); expected 2 (length-delimited) at byte 0"},
      {std::string("\x0a\x00", 2),
       "field 1 (ir_version) has wire type 2 (length-delimited); expected 0 (varint)"},
      {"\x0e", "invalid wire type 6 (field 1)"},
      {"\x0f", "invalid wire type 7 (field 1)"},
      {std::string("\x00", 1), "field number 0 at byte 0"},
      {"\x0c", "end-group tag (field 1) outside a group at byte 0"},
      {"\x0b\x08\x01", "the group of field 1 is not closed at byte 0"},
      {"\x0b\x14", "end-group tag of field 2 closes the group of field 1 at byte 1"},
      {std::string("\x88\x80\x80\x80\x80\x00\x01", 7), "a malformed field tag at byte 0"},
      {std::string("\x80\x80\x80\x80\x10", 5), "a malformed field tag"},
      {"\x09"
       "1234567",
       "truncated 64-bit field 1"},
      {graph_with_bad_node,
       "field 4 has length 9, past the end of its message (2 bytes left) at byte 9 (in "
       "ModelProto.graph.node[0])"},
  };
  for (const Case& c : cases) {
    std::string msg = decode_error(c.bytes);
    EXPECT_HAS(msg, "not a valid protobuf message: ");
    EXPECT_HAS(msg, c.message);
  }
  // Packed runs must hold whole elements.
  EXPECT_HAS(tensor_error(Wire().bytes_field(4, "12345").str()),
             "packed field 4 (float_data) has 5 bytes, not a multiple of 4 at byte 0 (in TensorProto)");
  EXPECT_HAS(tensor_error(Wire().bytes_field(10, "1234").str()), "not a multiple of 8");
  EXPECT_HAS(tensor_error(Wire().bytes_field(7, std::string("\x01\x80", 2)).str()),
             "packed field 7 (int64_data) ends inside a varint");
  EXPECT_HAS(tensor_error(Wire().fixed64_field(4, 0).str()),
             "field 4 (float_data) has wire type 1 (64-bit); expected 5 (32-bit) or 2 (packed)");
  EXPECT_HAS(tensor_error(Wire().fixed32_field(1, 0).str()), "expected 0 (varint) or 2 (packed)");
  EXPECT_HAS(tensor_error(Wire().int_field(9, 0).str()), "field 9 (raw_data) has wire type 0");
  // The importer reports them as invalid models.
  try {
    import_model(as_input(graph_with_bad_node), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "not a valid ONNX model: field 4 has length 9");
    EXPECT_HAS(e.what(), "(in ModelProto.graph.node[0])");
  }
}

TEST(OnnxProto, NestingIsLimited) {
  // Unknown groups count as nesting, as in libprotobuf: 100 levels are accepted, 101 refused.
  auto groups = [](int depth) {
    Wire w;
    for (int i = 0; i < depth; ++i) w.tag(100, 3);
    for (int i = 0; i < depth; ++i) w.tag(100, 4);
    return w.str();
  };
  pb::TensorProto check;
  EXPECT_NO_THROW(proto::decode_tensor(as_input(groups(100))));
  EXPECT_TRUE(protobuf_parse(groups(100), check));
  EXPECT_HAS(tensor_error(groups(101)), "nesting deeper than 100 levels of messages");
  EXPECT_FALSE(protobuf_parse(groups(101), check));

  // Subgraphs: a graph in an attribute in a node in a graph ..., the path shortened in the message.
  auto nested = [](int levels) {
    Wire g;
    for (int i = 0; i < levels; ++i) {
      Wire attr;
      attr.bytes_field(1, "body").int_field(20, 5).message(6, g);
      g = Wire().message(1, Wire().bytes_field(4, "Loop").message(5, attr));
    }
    return Wire().int_field(1, 8).message(7, g).str();
  };
  EXPECT_NO_THROW(proto::decode_model(as_input(nested(33))));  // 1 + 3 * 33 = 100 levels
  pb::ModelProto m;
  EXPECT_TRUE(protobuf_parse(nested(33), m));
  std::string msg = decode_error(nested(34));
  EXPECT_HAS(msg, "nesting deeper than 100 levels of messages");
  EXPECT_HAS(msg, "(in ModelProto.graph.node[0].attribute[0].g ... g.node[0].attribute[0].g.node[0])");
  EXPECT_FALSE(protobuf_parse(nested(34), m));
  proto::DecodeOptions deeper;
  deeper.max_depth = 200;
  EXPECT_NO_THROW(proto::decode_model(as_input(nested(60)), deeper));
}

TEST(OnnxProto, DecodedMemoryIsBoundedBeforeAllocation) {
  std::string bytes = serialize(rich_model());
  proto::DecodeOptions small;
  small.max_decoded_bytes = 4096;
  small.limit_name = "the test's limit";
  std::string msg = decode_error(bytes, small);
  EXPECT_HAS(msg, "decoding needs more than 4096 bytes of memory");
  EXPECT_HAS(msg, "(the test's limit)");

  // A packed run of 1-byte varints grows eightfold into int64s: refused from its length alone.
  std::string zeros(1 << 20, '\0');
  proto::DecodeOptions one_mib;
  one_mib.max_decoded_bytes = 1 << 20;
  try {
    proto::decode_tensor(as_input(Wire().bytes_field(7, zeros).str()), one_mib);
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "decoding needs more than 1048576 bytes");
    EXPECT_HAS(e.what(), "stopped at byte 0 (in TensorProto)");
  }
  one_mib.max_decoded_bytes = 8 << 20;
  EXPECT_EQ(proto::decode_tensor(as_input(Wire().bytes_field(7, zeros).str()), one_mib).int64_data.size(),
            zeros.size());
  // Empty messages cost their struct size each: 2 input bytes per node.
  std::string many_nodes;
  for (int i = 0; i < 100000; ++i) many_nodes += Wire().bytes_field(1, "").str();
  std::string model = Wire().message(7, Wire().raw(many_nodes)).str();
  proto::DecodeOptions limited;
  limited.max_decoded_bytes = model.size() * 4;
  EXPECT_HAS(decode_error(model, limited), "decoding needs more than");
  limited.max_decoded_bytes = 1ull << 30;
  EXPECT_EQ(proto::decode_model(as_input(model), limited).graph->node.size(), 100000u);

  // The importer holds the decoded structure to max_model_bytes, but to no less than 64 MiB.
  ImportOptions tight;
  tight.max_model_bytes = bytes.size();
  try {
    import_model(as_input(bytes), {}, tight);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("decoding needs"), std::string::npos) << e.what();
  }
}

// --- agreement with libprotobuf on damaged files -----------------------------------------------------------

TEST(OnnxProto, EveryPrefixIsAcceptedByBothOrNeither) {
  // One level of subgraphs keeps the quadratic sweep quick.
  std::string bytes = serialize(rich_model(1));
  int accepted = 0;
  for (size_t n = 0; n <= bytes.size(); ++n) {
    std::string prefix = bytes.substr(0, n);
    pb::ModelProto expected;
    bool protobuf_ok = protobuf_parse(prefix, expected);
    std::optional<proto::ModelProto> actual = try_decode_model(prefix);
    ASSERT_EQ(protobuf_ok, actual.has_value()) << "prefix of " << n << " bytes: " << decode_error(prefix);
    if (actual) {
      ++accepted;
      Diffs d;
      compare(d, "model", expected, *actual);
      ASSERT_TRUE(d.all().empty()) << "prefix of " << n << " bytes: " << d.text();
    }
  }
  EXPECT_GE(accepted, 5);  // the cuts between top-level fields
}

TEST(OnnxProto, RandomMutationsNeverCrashAndAgreeWhereBothAccept) {
  const std::string original = serialize(rich_model());
  std::mt19937_64 rng(20240611);
  int both = 0, wgi_only = 0, protobuf_only = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string bytes = original;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
          break;
        case 2:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
        default:
          bytes.erase(at, 1 + rng() % 3);
          break;
      }
    }
    pb::ModelProto expected;
    bool protobuf_ok = protobuf_parse(bytes, expected);
    std::optional<proto::ModelProto> actual = try_decode_model(bytes);
    if (protobuf_ok && actual) {
      ++both;
      Diffs d;
      compare(d, "model", expected, *actual);
      ASSERT_TRUE(d.all().empty()) << "iteration " << iteration << ": " << d.text();
    } else if (actual) {
      ++wgi_only;  // damage inside a sub-message wgi skips (libprotobuf parses doc strings' neighbours too)
    } else if (protobuf_ok) {
      ++protobuf_only;  // wgi is stricter about known fields with the wrong wire type
    }
  }
  RecordProperty("accepted_by_both", both);
  RecordProperty("accepted_by_wgi_only", wgi_only);
  RecordProperty("accepted_by_protobuf_only", protobuf_only);
  EXPECT_GT(both, 300) << wgi_only << " accepted by wgi only, " << protobuf_only << " by libprotobuf only";
}

}  // namespace
}  // namespace wgi::onnx
