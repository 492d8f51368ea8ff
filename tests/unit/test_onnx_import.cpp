// The ONNX importer: every initializer encoding, Constant forms, attributes, shapes, ordering, the errors a
// broken or hostile file must produce (checked by message), find_unsupported, and real files from Debian's
// libonnx-testdata. Models are built here with the onnx protobuf classes or come from tests/data/onnx/.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "support/expect_text.h"

namespace wgi::onnx {
namespace {

namespace pb = ::onnx;
namespace fs = std::filesystem;

const fs::path kTestData = WGI_TEST_DATA_DIR;
const fs::path kOnnxTestData = "/usr/share/libonnx-testdata/data";

// A fresh empty folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::mt19937_64 rng(std::random_device{}());
    path_ = fs::temp_directory_path() / ("wgi_onnx_test_" + std::to_string(rng()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream out(path_ / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  fs::path path_;
};

pb::ModelProto make_model(int64_t opset = 13, int64_t ir_version = 8) {
  pb::ModelProto m;
  m.set_ir_version(ir_version);
  m.set_producer_name("wgi-tests");
  pb::OperatorSetIdProto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

using DimSpec = std::variant<int64_t, std::string, std::monostate>;

pb::ValueInfoProto* add_value_info(google::protobuf::RepeatedPtrField<pb::ValueInfoProto>* list,
                                   const std::string& name, int32_t elem_type,
                                   std::optional<std::vector<DimSpec>> dims) {
  pb::ValueInfoProto* v = list->Add();
  v->set_name(name);
  pb::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  if (dims) {
    pb::TensorShapeProto* shape = t->mutable_shape();
    for (const DimSpec& d : *dims) {
      pb::TensorShapeProto::Dimension* dim = shape->add_dim();
      if (const int64_t* v64 = std::get_if<int64_t>(&d)) dim->set_dim_value(*v64);
      if (const std::string* s = std::get_if<std::string>(&d)) dim->set_dim_param(*s);
    }
  }
  return v;
}

pb::ValueInfoProto* add_input(pb::ModelProto& m, const std::string& name,
                              std::optional<std::vector<DimSpec>> dims = std::vector<DimSpec>{int64_t{4}},
                              int32_t elem_type = pb::TensorProto::FLOAT) {
  return add_value_info(m.mutable_graph()->mutable_input(), name, elem_type, std::move(dims));
}

pb::ValueInfoProto* add_output(pb::ModelProto& m, const std::string& name,
                               int32_t elem_type = pb::TensorProto::FLOAT) {
  return add_value_info(m.mutable_graph()->mutable_output(), name, elem_type, std::nullopt);
}

pb::NodeProto* add_node(pb::ModelProto& m, const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
  pb::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + outputs.at(0) : name);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return n;
}

pb::TensorProto raw_tensor(const std::string& name, int32_t data_type, std::vector<int64_t> dims,
                           const std::string& raw) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(raw);
  return t;
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

pb::TensorProto* add_initializer(pb::ModelProto& m, const pb::TensorProto& t) {
  pb::TensorProto* out = m.mutable_graph()->add_initializer();
  *out = t;
  return out;
}

std::string serialize(const pb::ModelProto& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

graph::Graph import_bytes(const std::string& bytes, const fs::path& base_dir = {},
                          const ImportOptions& o = {}) {
  return import_model(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), base_dir, o);
}

graph::Graph import(const pb::ModelProto& m, const fs::path& base_dir = {}, const ImportOptions& o = {}) {
  return import_bytes(serialize(m), base_dir, o);
}

// The import's error message; fails the test if the import succeeds.
std::string import_error(const pb::ModelProto& m, const fs::path& base_dir = {},
                         const ImportOptions& o = {}) {
  try {
    import(m, base_dir, o);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the import succeeded, an error was expected";
  return "";
}

// A one-node model y = Relu(x) to extend.
pb::ModelProto relu_model() {
  pb::ModelProto m = make_model();
  add_input(m, "x");
  add_node(m, "Relu", {"x"}, {"y"}, "relu");
  add_output(m, "y");
  return m;
}

const graph::Value& value_named(const graph::Graph& g, const std::string& name) {
  graph::ValueId id = g.find(name);
  if (id == graph::kNoValue) throw Error("test: no value '" + name + "'");
  return g.value(id);
}

template <class T>
std::vector<T> constant_values(const graph::Graph& g, const std::string& name) {
  const graph::Value& v = value_named(g, name);
  if (!v.constant) throw Error("test: value '" + name + "' is not a constant");
  auto span = v.constant->data<T>();
  return {span.begin(), span.end()};
}

std::vector<uint8_t> constant_bytes(const graph::Graph& g, const std::string& name) {
  const graph::Value& v = value_named(g, name);
  if (!v.constant) throw Error("test: value '" + name + "' is not a constant");
  std::vector<uint8_t> out(v.constant->byte_size());
  if (!out.empty()) std::memcpy(out.data(), v.constant->bytes().data(), out.size());
  return out;
}

// --- structure ---------------------------------------------------------------------------------------------

TEST(OnnxImport, InputsOutputsShapesAndNode) {
  pb::ModelProto m = make_model(17, 9);
  add_input(m, "x", std::vector<DimSpec>{std::string("batch"), int64_t{3}, std::monostate{}, int64_t{224}});
  add_input(m, "no_shape", std::nullopt, pb::TensorProto::INT64);
  add_node(m, "Relu", {"x"}, {"y"}, "relu");
  add_output(m, "y");
  graph::Graph g = import(m);
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.ir_version, 9);
  EXPECT_EQ(g.opsets.at(""), 17);
  ASSERT_EQ(g.inputs.size(), 2u);
  const graph::Value& x = g.value(g.inputs[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, DType::Float32);
  EXPECT_EQ(x.shape.to_string(), "[batch, 3, ?, 224]");
  EXPECT_EQ(x.shape.dims[0].symbol, "batch");
  EXPECT_FALSE(x.shape.dims[2].is_known());
  const graph::Value& ns = g.value(g.inputs[1]);
  EXPECT_EQ(ns.dtype, DType::Int64);
  EXPECT_FALSE(ns.shape.rank_known);
  ASSERT_EQ(g.nodes.size(), 1u);
  const graph::Node& n = g.nodes[0];
  EXPECT_EQ(n.info.name, "relu");
  EXPECT_EQ(n.info.op_type, "Relu");
  EXPECT_EQ(n.info.domain, "");
  EXPECT_EQ(n.info.opset, 17);
  EXPECT_EQ(n.info.input_names, std::vector<std::string>{"x"});
  EXPECT_EQ(n.info.output_names, std::vector<std::string>{"y"});
  ASSERT_EQ(n.inputs.size(), 1u);
  EXPECT_EQ(n.inputs[0], g.inputs[0]);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0], n.outputs[0]);
  EXPECT_EQ(g.value(g.outputs[0]).producer, 0);
}

TEST(OnnxImport, DeclaredTypesOfIntermediateValues) {
  pb::ModelProto m = relu_model();
  add_node(m, "Neg", {"y"}, {"z"}, "neg");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  add_value_info(m.mutable_graph()->mutable_value_info(), "y", pb::TensorProto::FLOAT16,
                 std::vector<DimSpec>{std::string("n")});
  graph::Graph g = import(m);
  EXPECT_EQ(value_named(g, "y").dtype, DType::Float16);
  EXPECT_EQ(value_named(g, "y").shape.to_string(), "[n]");
  // Without a declared type a value's shape is unknown.
  EXPECT_FALSE(value_named(g, "z").shape.rank_known);
}

TEST(OnnxImport, InitializerListedAsInputIsAConstant) {
  pb::ModelProto m = make_model(7, 3);
  add_input(m, "x");
  add_input(m, "w");  // IR 3 exporters list every initializer among the inputs
  add_initializer(m, raw_tensor("w", pb::TensorProto::FLOAT, {4}, bytes_of<float>({1, 2, 3, 4})));
  add_node(m, "Add", {"x", "w"}, {"y"}, "add");
  add_output(m, "y");
  graph::Graph g = import(m);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  const graph::Value& w = value_named(g, "w");
  ASSERT_TRUE(w.constant.has_value());
  EXPECT_EQ(w.shape.to_string(), "[4]");
  EXPECT_EQ(constant_values<float>(g, "w"), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OnnxImport, NodesAreSortedTopologically) {
  pb::ModelProto m = make_model();
  add_input(m, "x");
  add_node(m, "Neg", {"b"}, {"y"}, "third");
  add_node(m, "Relu", {"a"}, {"b"}, "second");
  add_node(m, "Abs", {"x"}, {"a"}, "first");
  add_output(m, "y");
  graph::Graph g = import(m);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].info.name, "first");
  EXPECT_EQ(g.nodes[1].info.name, "second");
  EXPECT_EQ(g.nodes[2].info.name, "third");
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    EXPECT_EQ(g.value(g.nodes[n].outputs[0]).producer, static_cast<int32_t>(n));
  }
}

TEST(OnnxImport, OptionalInputsAndOutputsAndUnnamedNodes) {
  pb::ModelProto m = make_model();
  add_input(m, "x");
  pb::NodeProto* clip = add_node(m, "Clip", {"x", "", "hi"}, {"y"}, "clip");
  (void)clip;
  add_initializer(m, raw_tensor("hi", pb::TensorProto::FLOAT, {}, bytes_of<float>({6})));
  pb::NodeProto* drop = add_node(m, "Dropout", {"y"}, {"z", ""});
  drop->clear_name();
  add_output(m, "z");
  graph::Graph g = import(m);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].inputs[1], graph::kNoValue);
  EXPECT_NE(g.nodes[0].inputs[2], graph::kNoValue);
  EXPECT_EQ(g.nodes[1].outputs[1], graph::kNoValue);
  EXPECT_EQ(g.nodes[1].info.name, "<unnamed #1>");
}

TEST(OnnxImport, OpsetPerDomain) {
  pb::ModelProto m = make_model(15);
  pb::OperatorSetIdProto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  pb::OperatorSetIdProto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  add_input(m, "x");
  add_node(m, "Relu", {"x"}, {"a"}, "relu")->set_domain("ai.onnx");
  add_node(m, "FastGelu", {"a"}, {"b"}, "gelu")->set_domain("com.microsoft");
  add_node(m, "Normalizer", {"b"}, {"y"}, "norm")->set_domain("ai.onnx.ml");
  add_output(m, "y");
  graph::Graph g = import(m);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].info.domain, "");  // "ai.onnx" and "" are the same domain
  EXPECT_EQ(g.nodes[0].info.opset, 15);
  EXPECT_EQ(g.nodes[1].info.domain, "com.microsoft");
  EXPECT_EQ(g.nodes[1].info.opset, 1);
  EXPECT_EQ(g.nodes[2].info.opset, 3);
  EXPECT_EQ(g.opsets.size(), 3u);

  // A domain the model does not import is an error naming the node.
  add_node(m, "Thing", {"y"}, {"w"}, "thing")->set_domain("org.unknown");
  std::string msg = import_error(m);
  EXPECT_HAS(msg, "node 'thing' (Thing)");
  EXPECT_HAS(msg, "org.unknown");
  EXPECT_HAS(msg, "opset_import");
}

TEST(OnnxImport, OpsetImportAiOnnxAlias) {
  pb::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  graph::Graph g = import(m);
  EXPECT_EQ(g.opsets.at(""), 13);
  EXPECT_EQ(g.nodes[0].info.opset, 13);
}

// --- initializers ------------------------------------------------------------------------------------------

TEST(OnnxImport, InitializerRawData) {
  pb::ModelProto m = relu_model();
  add_initializer(m, raw_tensor("f32", pb::TensorProto::FLOAT, {2, 2}, bytes_of<float>({1.5f, -2, 0, 4})));
  add_initializer(m, raw_tensor("i64", pb::TensorProto::INT64, {3}, bytes_of<int64_t>({-1, 1LL << 40, 7})));
  add_initializer(m, raw_tensor("f16", pb::TensorProto::FLOAT16, {2}, bytes_of<uint16_t>({0x3c00, 0xc000})));
  add_initializer(m, raw_tensor("b", pb::TensorProto::BOOL, {3}, std::string("\x00\x01\x05", 3)));
  add_initializer(m, raw_tensor("scalar", pb::TensorProto::INT32, {}, bytes_of<int32_t>({42})));
  add_initializer(m, raw_tensor("empty", pb::TensorProto::FLOAT, {0, 5}, ""));
  graph::Graph g = import(m);
  EXPECT_EQ(constant_values<float>(g, "f32"), (std::vector<float>{1.5f, -2, 0, 4}));
  EXPECT_EQ(value_named(g, "f32").shape.to_string(), "[2, 2]");
  EXPECT_EQ(constant_values<int64_t>(g, "i64"), (std::vector<int64_t>{-1, 1LL << 40, 7}));
  EXPECT_EQ(value_named(g, "f16").dtype, DType::Float16);
  EXPECT_EQ(constant_bytes(g, "f16"), (std::vector<uint8_t>{0x00, 0x3c, 0x00, 0xc0}));
  EXPECT_EQ(constant_bytes(g, "b"), (std::vector<uint8_t>{0, 1, 1}));  // bools normalised to 0/1
  EXPECT_EQ(value_named(g, "scalar").shape.to_string(), "[]");
  EXPECT_EQ(constant_values<int32_t>(g, "scalar"), (std::vector<int32_t>{42}));
  EXPECT_EQ(value_named(g, "empty").constant->element_count(), 0);
}

TEST(OnnxImport, InitializerTypedFields) {
  pb::ModelProto m = relu_model();
  auto typed = [&](const std::string& name, int32_t type, std::vector<int64_t> dims) {
    pb::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  };
  pb::TensorProto* f = typed("f", pb::TensorProto::FLOAT, {3});
  for (float v : {0.5f, 1.0f, -3.0f}) f->add_float_data(v);
  pb::TensorProto* i64 = typed("i64", pb::TensorProto::INT64, {2});
  i64->add_int64_data(-5);
  i64->add_int64_data(1LL << 50);
  pb::TensorProto* i32 = typed("i32", pb::TensorProto::INT32, {1});
  i32->add_int32_data(-70000);
  pb::TensorProto* i8 = typed("i8", pb::TensorProto::INT8, {2});
  i8->add_int32_data(-128);
  i8->add_int32_data(127);
  pb::TensorProto* u8 = typed("u8", pb::TensorProto::UINT8, {2});
  u8->add_int32_data(0);
  u8->add_int32_data(255);
  pb::TensorProto* b = typed("b", pb::TensorProto::BOOL, {3});
  for (int v : {1, 0, 256}) b->add_int32_data(v);
  pb::TensorProto* h = typed("h", pb::TensorProto::FLOAT16, {1});
  h->add_int32_data(0x3e00);  // 1.5
  graph::Graph g = import(m);
  EXPECT_EQ(constant_values<float>(g, "f"), (std::vector<float>{0.5f, 1.0f, -3.0f}));
  EXPECT_EQ(constant_values<int64_t>(g, "i64"), (std::vector<int64_t>{-5, 1LL << 50}));
  EXPECT_EQ(constant_values<int32_t>(g, "i32"), (std::vector<int32_t>{-70000}));
  EXPECT_EQ(constant_values<int8_t>(g, "i8"), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(constant_values<uint8_t>(g, "u8"), (std::vector<uint8_t>{0, 255}));
  EXPECT_EQ(constant_bytes(g, "b"), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(constant_bytes(g, "h"), (std::vector<uint8_t>{0x00, 0x3e}));

  // A value that does not fit the narrow type is refused, naming the tensor.
  i8->set_int32_data(1, 128);
  std::string msg = import_error(m);
  EXPECT_HAS(msg, "initializer 'i8'");
  EXPECT_HAS(msg, "int32_data[1] = 128");
}

TEST(OnnxImport, InitializerErrors) {
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("w", pb::TensorProto::FLOAT, {2, 3}, bytes_of<float>({1, 2, 3})));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'w'");
    EXPECT_HAS(msg, "raw_data holds 12 bytes");
    EXPECT_HAS(msg, "needs 24 bytes");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("d", pb::TensorProto::DOUBLE, {1}, bytes_of<double>({1.0})));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'd'");
    EXPECT_HAS(msg, "DOUBLE");
    // float64 is refused with the reason and the remedy (docs/float64.md), not the list of supported types.
    EXPECT_HAS(msg, "WebGPU has no 64-bit floating-point type");
    EXPECT_HAS(msg, "Convert the model to float32");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("s", pb::TensorProto::STRING, {1}, ""));
    EXPECT_HAS(import_error(m), "element type STRING");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("neg", pb::TensorProto::FLOAT, {2, -1}, ""));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'neg' has a negative dimension");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("huge", pb::TensorProto::FLOAT, {1LL << 40, 1LL << 40}, ""));
    EXPECT_HAS(import_error(m),
               "initializer 'huge' has dims [1099511627776, 1099511627776] whose element count "
               "overflows");
  }
  {
    // A declared size far beyond the data must fail on the size check, before any allocation.
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("big", pb::TensorProto::INT64, {1LL << 28, 1LL << 30}, "abc"));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'big'");
    EXPECT_HAS(msg, "raw_data holds 3 bytes");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t = raw_tensor("mixed", pb::TensorProto::FLOAT, {1}, bytes_of<float>({1}));
    t.add_float_data(1);
    add_initializer(m, t);
    EXPECT_HAS(import_error(m), "has both raw_data and float_data");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t;
    t.set_name("wrong_field");
    t.set_data_type(pb::TensorProto::FLOAT);
    t.add_dims(1);
    t.add_int64_data(3);
    add_initializer(m, t);
    EXPECT_HAS(import_error(m), "initializer 'wrong_field' (FLOAT) stores its values in int64_data");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t;
    t.set_name("short");
    t.set_data_type(pb::TensorProto::INT64);
    t.add_dims(3);
    t.add_int64_data(3);
    add_initializer(m, t);
    EXPECT_HAS(import_error(m), "initializer 'short': int64_data holds 1 values, but dims [3] need 3");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t;
    t.set_name("no_type");
    t.add_dims(1);
    add_initializer(m, t);
    EXPECT_HAS(import_error(m), "initializer 'no_type' has no data_type");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("x", pb::TensorProto::FLOAT, {1}, bytes_of<float>({1})));
    add_initializer(m, raw_tensor("x", pb::TensorProto::FLOAT, {1}, bytes_of<float>({1})));
    EXPECT_HAS(import_error(m), "value 'x' is defined twice");
  }
}

// float16 weights (the _fp16 exports, docs/float16.md) with the wrong amount of data: float32 bytes written
// for float16 dims, an odd byte count, too few int32_data entries, or a value beyond 16 bits.
TEST(OnnxImport, Float16InitializerErrorsNameTheTensor) {
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("w16", pb::TensorProto::FLOAT16, {2, 2}, bytes_of<float>({1, 2, 3, 4})));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'w16'");
    EXPECT_HAS(msg, "raw_data holds 16 bytes");
    EXPECT_HAS(msg, "needs 8 bytes");
  }
  {
    pb::ModelProto m = relu_model();
    add_initializer(m, raw_tensor("odd", pb::TensorProto::FLOAT16, {3}, std::string(5, '\x3c')));
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'odd'");
    EXPECT_HAS(msg, "raw_data holds 5 bytes");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t;
    t.set_name("short16");
    t.set_data_type(pb::TensorProto::FLOAT16);
    t.add_dims(3);
    t.add_int32_data(0x3c00);
    t.add_int32_data(0x4000);
    add_initializer(m, t);
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'short16'");
    EXPECT_HAS(msg, "int32_data holds 2 values");
  }
  {
    pb::ModelProto m = relu_model();
    pb::TensorProto t;
    t.set_name("wide16");
    t.set_data_type(pb::TensorProto::FLOAT16);
    t.add_dims(1);
    t.add_int32_data(0x10000);
    add_initializer(m, t);
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "initializer 'wide16'");
    EXPECT_HAS(msg, "float16 bits");
  }
}

TEST(OnnxImport, ModelsBeyondTheLimitAreRefused) {
  pb::ModelProto m = relu_model();
  add_initializer(m, raw_tensor("a", pb::TensorProto::FLOAT, {64}, std::string(256, '\0')));
  ImportOptions small;
  small.max_model_bytes = 1024;
  EXPECT_NO_THROW(import(m, {}, small));
  small.max_model_bytes = 100;
  std::string msg = import_error(m, {}, small);
  EXPECT_HAS(msg, "more than the limit of 100 bytes");
  EXPECT_HAS(msg, "max_model_bytes");
}

// --- external data -----------------------------------------------------------------------------------------

pb::TensorProto external_tensor(const std::string& name, int32_t type, std::vector<int64_t> dims,
                                std::vector<std::pair<std::string, std::string>> entries) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_location(pb::TensorProto::EXTERNAL);
  for (auto& [k, v] : entries) {
    pb::StringStringEntryProto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  return t;
}

TEST(OnnxImport, ExternalData) {
  TempDir dir;
  fs::create_directories(dir.path() / "weights");
  std::string file = bytes_of<float>({9, 9, 1, 2, 3, 4});  // two floats of padding, then the tensor
  dir.write("weights/w.bin", file);
  dir.write("tail.bin", bytes_of<int64_t>({5, 6}));
  pb::ModelProto m = relu_model();
  add_initializer(m, external_tensor("w", pb::TensorProto::FLOAT, {2, 2},
                                     {{"location", "weights/w.bin"}, {"offset", "8"}, {"length", "16"}}));
  add_initializer(m, external_tensor("t", pb::TensorProto::INT64, {2}, {{"location", "tail.bin"}}));
  graph::Graph g = import(m, dir.path());
  EXPECT_EQ(constant_values<float>(g, "w"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(constant_values<int64_t>(g, "t"), (std::vector<int64_t>{5, 6}));

  // Without a folder (a model from memory) external data cannot be found.
  EXPECT_HAS(import_error(m), "pass base_dir");
  // The limit counts external data: refused before it is read.
  dir.write("big.bin", std::string(4096, '\0'));
  add_initializer(m, external_tensor("big", pb::TensorProto::FLOAT, {1024}, {{"location", "big.bin"}}));
  ImportOptions small;
  small.max_model_bytes = serialize(m).size() + 100;
  std::string msg = import_error(m, dir.path(), small);
  EXPECT_HAS(msg, "initializer 'big' needs 4096 bytes");
  EXPECT_HAS(msg, "(ImportOptions::max_model_bytes; 32 bytes already loaded)");
}

TEST(OnnxImport, ExternalDataErrors) {
  TempDir outer;
  fs::path model_dir = outer.path() / "model";
  fs::create_directories(model_dir);
  outer.write("secret.bin", bytes_of<float>({1, 2}));
  outer.write("model/w.bin", bytes_of<float>({1, 2}));
  auto error_for = [&](std::vector<std::pair<std::string, std::string>> entries,
                       std::vector<int64_t> dims = {2}) {
    pb::ModelProto m = relu_model();
    add_initializer(m, external_tensor("w", pb::TensorProto::FLOAT, std::move(dims), std::move(entries)));
    return import_error(m, model_dir);
  };
  std::string msg = error_for({{"location", "../secret.bin"}});
  EXPECT_HAS(msg, "initializer 'w'");
  EXPECT_HAS(msg, "'../secret.bin' contains '..'");
  EXPECT_HAS(error_for({{"location", "sub/../../secret.bin"}}), "contains '..'");
  EXPECT_HAS(error_for({{"location", (outer.path() / "secret.bin").string()}}), "is an absolute path");
  EXPECT_HAS(error_for({{"location", "/etc/passwd"}}), "is an absolute path");
  // A symlink inside the folder that points out of it.
  fs::create_symlink(outer.path() / "secret.bin", model_dir / "link.bin");
  EXPECT_HAS(error_for({{"location", "link.bin"}}), "outside the model's folder");
  EXPECT_HAS(error_for({{"location", "missing.bin"}}), "'missing.bin' does not exist");
  EXPECT_HAS(error_for({{"offset", "0"}}), "without a 'location'");
  fs::create_directories(model_dir / "dir");
  EXPECT_HAS(error_for({{"location", "dir"}}), "is not a regular file");
  EXPECT_HAS(error_for({{"location", "w.bin"}, {"offset", "-4"}}),
             "'offset' is '-4', not a non-negative integer");
  EXPECT_HAS(error_for({{"location", "w.bin"}, {"length", "12x"}}), "not a non-negative integer");
  EXPECT_HAS(error_for({{"location", "w.bin"}, {"offset", "100"}}), "offset 100 is past the end");
  EXPECT_HAS(error_for({{"location", "w.bin"}, {"length", "4"}}),
             "length is 4 bytes, but FLOAT [2] needs 8 bytes");
  EXPECT_HAS(error_for({{"location", "w.bin"}}, {3}), "holds 8 bytes after offset 0, but FLOAT [3] needs 12");
  EXPECT_HAS(error_for({{"location", "w.bin"}, {"offset", "4"}, {"length", "8"}}),
             "holds 4 bytes after offset 4, fewer than its length 8 bytes");
  EXPECT_HAS(error_for({{"location", "w.bin"}}, {1LL << 62}), "byte size overflows");
  // Every check passes with the right numbers.
  pb::ModelProto ok = relu_model();
  add_initializer(ok, external_tensor("w", pb::TensorProto::FLOAT, {2}, {{"location", "w.bin"}}));
  EXPECT_EQ(constant_values<float>(import(ok, model_dir), "w"), (std::vector<float>{1, 2}));
}

TEST(OnnxImport, ExternalDataWrittenByOnnxPython) {
  graph::Graph g = import_model_file(kTestData / "onnx" / "external_data" / "model.onnx");
  EXPECT_EQ(constant_values<float>(g, "w"), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(value_named(g, "w").shape.to_string(), "[2, 3]");
  EXPECT_EQ(constant_values<int64_t>(g, "b"), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(g.nodes.size(), 3u);
  ASSERT_EQ(g.inputs.size(), 1u);

  try {
    import_model_file(kTestData / "onnx" / "external_escape" / "model.onnx");
    FAIL() << "a location with '..' must be refused";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "model.onnx: initializer 'w'");
    EXPECT_HAS(e.what(), "contains '..'");
  }
}

// --- Constant nodes and attributes -------------------------------------------------------------------------

pb::AttributeProto* add_attribute(pb::NodeProto* n, const std::string& name,
                                  pb::AttributeProto::AttributeType type) {
  pb::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

TEST(OnnxImport, ConstantNodeForms) {
  pb::ModelProto m = make_model();
  add_input(m, "x");
  auto constant = [&](const std::string& out) {
    pb::NodeProto* n = add_node(m, "Constant", {}, {out});
    add_node(m, "Identity", {out}, {out + "_id"});
    add_output(m, out + "_id");
    return n;
  };
  *add_attribute(constant("t"), "value", pb::AttributeProto::TENSOR)->mutable_t() =
      raw_tensor("", pb::TensorProto::INT32, {2}, bytes_of<int32_t>({3, 4}));
  add_attribute(constant("f"), "value_float", pb::AttributeProto::FLOAT)->set_f(2.5f);
  pb::AttributeProto* fs_attr = add_attribute(constant("fs"), "value_floats", pb::AttributeProto::FLOATS);
  fs_attr->add_floats(1);
  fs_attr->add_floats(2);
  add_attribute(constant("i"), "value_int", pb::AttributeProto::INT)->set_i(-7);
  pb::AttributeProto* is_attr = add_attribute(constant("is"), "value_ints", pb::AttributeProto::INTS);
  for (int64_t v : {5, 6, 7}) is_attr->add_ints(v);
  graph::Graph g = import(m);
  EXPECT_EQ(g.nodes.size(), 5u);  // the Identity nodes only: Constant nodes become constant values
  for (const graph::Node& n : g.nodes) EXPECT_EQ(n.info.op_type, "Identity");
  EXPECT_EQ(constant_values<int32_t>(g, "t"), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(value_named(g, "f").shape.to_string(), "[]");
  EXPECT_EQ(constant_values<float>(g, "f"), std::vector<float>{2.5f});
  EXPECT_EQ(constant_values<float>(g, "fs"), (std::vector<float>{1, 2}));
  EXPECT_EQ(value_named(g, "fs").shape.to_string(), "[2]");
  EXPECT_EQ(constant_values<int64_t>(g, "i"), std::vector<int64_t>{-7});
  EXPECT_EQ(constant_values<int64_t>(g, "is"), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(value_named(g, "is").producer, -1);
}

TEST(OnnxImport, ConstantNodeErrors) {
  auto error_for = [](const std::function<void(pb::NodeProto*)>& edit) {
    pb::ModelProto m = make_model();
    add_input(m, "x");
    pb::NodeProto* c = add_node(m, "Constant", {}, {"c"}, "const");
    edit(c);
    add_node(m, "Add", {"x", "c"}, {"y"}, "add");
    add_output(m, "y");
    return import_error(m);
  };
  std::string msg =
      error_for([](pb::NodeProto* c) { add_attribute(c, "value_string", pb::AttributeProto::STRING); });
  EXPECT_HAS(msg, "node 'const' (Constant)");
  EXPECT_HAS(msg, "strings");
  EXPECT_HAS(error_for([](pb::NodeProto* c) {
               add_attribute(c, "sparse_value", pb::AttributeProto::SPARSE_TENSOR);
             }),
             "sparse");
  EXPECT_HAS(error_for([](pb::NodeProto*) {}), "must have exactly one of the attributes value");
  EXPECT_HAS(error_for([](pb::NodeProto* c) {
               *add_attribute(c, "value", pb::AttributeProto::TENSOR)->mutable_t() =
                   raw_tensor("", pb::TensorProto::DOUBLE, {1}, bytes_of<double>({1}));
             }),
             "attribute 'value' of node 'const' (Constant) has element type DOUBLE");
  EXPECT_HAS(error_for([](pb::NodeProto* c) {
               *add_attribute(c, "value", pb::AttributeProto::TENSOR)->mutable_t() =
                   raw_tensor("", pb::TensorProto::FLOAT, {2}, bytes_of<float>({1}));
             }),
             "raw_data holds 4 bytes");
}

TEST(OnnxImport, AttributeKinds) {
  pb::ModelProto m = relu_model();
  pb::NodeProto* n = m.mutable_graph()->mutable_node(0);
  add_attribute(n, "i", pb::AttributeProto::INT)->set_i(-3);
  add_attribute(n, "f", pb::AttributeProto::FLOAT)->set_f(0.25f);
  add_attribute(n, "s", pb::AttributeProto::STRING)->set_s("SAME_UPPER");
  pb::AttributeProto* ints = add_attribute(n, "ints", pb::AttributeProto::INTS);
  ints->add_ints(1);
  ints->add_ints(2);
  pb::AttributeProto* floats = add_attribute(n, "floats", pb::AttributeProto::FLOATS);
  floats->add_floats(0.5f);
  pb::AttributeProto* strings = add_attribute(n, "strings", pb::AttributeProto::STRINGS);
  strings->add_strings("a");
  strings->add_strings("b");
  *add_attribute(n, "t", pb::AttributeProto::TENSOR)->mutable_t() =
      raw_tensor("", pb::TensorProto::FLOAT, {1}, bytes_of<float>({7}));
  add_attribute(n, "empty_ints", pb::AttributeProto::INTS);
  // Files from very old exporters leave `type` unset: the kind comes from the field that is set.
  add_attribute(n, "untyped", pb::AttributeProto::UNDEFINED)->set_i(11);
  graph::Graph g = import(m);
  const ops::Attributes& a = g.nodes[0].info.attributes;
  EXPECT_EQ(a.get_int("i", 0), -3);
  EXPECT_EQ(a.get_float("f", 0), 0.25f);
  EXPECT_EQ(a.get_string("s", ""), "SAME_UPPER");
  EXPECT_EQ(a.get_ints("ints", {}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.get_floats("floats", {}), std::vector<float>{0.5f});
  EXPECT_EQ(std::get<std::vector<std::string>>(a.all().at("strings")), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(a.get_tensor("t"), nullptr);
  EXPECT_EQ(a.get_tensor("t")->data<float>()[0], 7.0f);
  EXPECT_TRUE(a.get_ints("empty_ints", {9}).empty());
  EXPECT_EQ(a.get_int("untyped", 0), 11);
  EXPECT_EQ(a.all().size(), 9u);

  add_attribute(n, "i", pb::AttributeProto::INT)->set_i(1);
  EXPECT_HAS(import_error(m), "node 'relu' (Relu, opset 13) has the attribute 'i' twice");
  n->mutable_attribute()->RemoveLast();
  add_attribute(n, "nothing", pb::AttributeProto::UNDEFINED);
  EXPECT_HAS(import_error(m),
             "attribute 'nothing' of node 'relu' (Relu, opset 13) has neither a type nor a value");
  n->mutable_attribute()->RemoveLast();
  add_attribute(n, "ref", pb::AttributeProto::INT)->set_ref_attr_name("alpha");
  EXPECT_HAS(import_error(m), "only valid inside a function body");
}

// --- graph errors ------------------------------------------------------------------------------------------

TEST(OnnxImport, GraphErrorsNameWhatIsWrong) {
  {
    pb::ModelProto m = relu_model();
    add_node(m, "Add", {"y", "nowhere"}, {"z"}, "add");
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "node 'add' (Add, opset 13) reads 'nowhere' as input 1");
    EXPECT_HAS(msg, "no graph input, initializer or node output");
  }
  {
    pb::ModelProto m = make_model();
    add_input(m, "x");
    add_node(m, "Add", {"x", "b"}, {"a"}, "first");
    add_node(m, "Relu", {"a"}, {"b"}, "second");
    add_node(m, "Relu", {"a"}, {"y"}, "out");
    add_output(m, "y");
    EXPECT_HAS(import_error(m), "cycle through node");
  }
  {
    pb::ModelProto m = relu_model();
    add_node(m, "Neg", {"x"}, {"y"}, "neg");
    std::string msg = import_error(m);
    EXPECT_HAS(msg, "value 'y' is defined twice");
    EXPECT_HAS(msg, "node 'relu' (Relu, opset 13)");
    EXPECT_HAS(msg, "node 'neg' (Neg, opset 13)");
  }
  {
    pb::ModelProto m = relu_model();
    add_node(m, "Neg", {"y"}, {"x"}, "neg");
    EXPECT_HAS(import_error(m),
               "value 'x' is defined twice: as graph input 'x' and as output 0 of node 'neg'");
  }
  {
    pb::ModelProto m = relu_model();
    add_output(m, "ghost");
    EXPECT_HAS(import_error(m), "graph output 'ghost' is not a graph input");
  }
  {
    pb::ModelProto m = relu_model();
    add_input(m, "d", std::vector<DimSpec>{int64_t{2}}, pb::TensorProto::DOUBLE);
    EXPECT_HAS(import_error(m), "graph input 'd' has element type DOUBLE: WebGPU has no 64-bit");
  }
  {
    pb::ModelProto m = relu_model();
    pb::ValueInfoProto* seq = m.mutable_graph()->add_input();
    seq->set_name("seq");
    seq->mutable_type()->mutable_sequence_type();
    EXPECT_HAS(import_error(m), "graph input 'seq' is a sequence; wgi supports tensors only");
  }
  {
    pb::ModelProto m = relu_model();
    m.mutable_graph()->mutable_node(0)->clear_op_type();
    EXPECT_HAS(import_error(m), "node 'relu' has no op_type");
  }
}

TEST(OnnxImport, ModelLevelErrors) {
  {
    pb::ModelProto m = relu_model();
    m.set_ir_version(2);
    EXPECT_HAS(import_error(m), "IR version 2; wgi reads IR versions 3 to 10");
    m.set_ir_version(11);
    EXPECT_HAS(import_error(m), "IR version 11");
    m.clear_ir_version();
    EXPECT_HAS(import_error(m), "no ir_version");
  }
  {
    pb::ModelProto m = relu_model();
    m.clear_opset_import();
    EXPECT_HAS(import_error(m), "no opset_import");
  }
  {
    pb::ModelProto m = relu_model();
    m.mutable_opset_import(0)->set_version(0);
    EXPECT_HAS(import_error(m), "not a valid opset version");
  }
  {
    pb::ModelProto m = relu_model();
    m.clear_graph();
    EXPECT_HAS(import_error(m), "no graph");
  }
  auto bytes_error = [](const std::string& bytes) {
    try {
      import_bytes(bytes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_HAS(bytes_error("this is not a protobuf at all"), "not a valid ONNX model");
  std::string good = serialize(relu_model());
  EXPECT_HAS(bytes_error(good.substr(0, good.size() - 3)), "not a valid ONNX model");
  EXPECT_HAS(bytes_error(""), "no ir_version");
  // Deep nesting (a graph in an attribute in a node in a graph...) stops at protobuf's recursion limit.
  pb::ModelProto deep = relu_model();
  pb::GraphProto* g = deep.mutable_graph();
  for (int i = 0; i < 120; ++i) {
    pb::NodeProto* n = g->add_node();
    n->set_op_type("If");
    pb::AttributeProto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(pb::AttributeProto::GRAPH);
    g = a->mutable_g();
  }
  EXPECT_HAS(bytes_error(serialize(deep)), "nesting deeper than");
  ImportOptions tiny;
  tiny.max_model_bytes = 10;
  try {
    import_bytes(good, {}, tiny);
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "more than the limit of 10 bytes");
  }
}

TEST(OnnxImport, ModelFileErrors) {
  TempDir dir;
  try {
    import_model_file(dir.path() / "absent.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "absent.onnx' does not exist");
  }
  try {
    import_model_file(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "is not a regular file");
  }
  dir.write("bad.onnx", "garbage!");
  try {
    import_model_file(dir.path() / "bad.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "bad.onnx: not a valid ONNX model");
  }
}

// --- find_unsupported --------------------------------------------------------------------------------------

ops::OpRegistry registry_with_relu() {
  ops::OpRegistry r;
  ops::OpHandler h;
  h.plan = [](const ops::PlanContext&) { return ops::OpPlan{}; };
  r.add("", "Relu", 6, 13, h);
  r.add("", "Cast", 6, ops::kLatestOpset, h);
  return r;
}

pb::GraphProto identity_branch() {
  pb::GraphProto g;
  g.set_name("branch");
  pb::NodeProto* n = g.add_node();
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("z");
  g.add_output()->set_name("z");
  return g;
}

TEST(OnnxImport, FindUnsupportedListsNodesWithReasons) {
  pb::ModelProto m = relu_model();
  add_input(m, "cond", std::vector<DimSpec>{}, pb::TensorProto::BOOL);
  add_node(m, "FooBar", {"y"}, {"f1"}, "foo_1");
  add_node(m, "FooBar", {"f1"}, {"f2"}, "foo_2");
  pb::NodeProto* iff = add_node(m, "If", {"cond"}, {"i"}, "branchy");
  *add_attribute(iff, "then_branch", pb::AttributeProto::GRAPH)->mutable_g() = identity_branch();
  *add_attribute(iff, "else_branch", pb::AttributeProto::GRAPH)->mutable_g() = identity_branch();
  add_attribute(add_node(m, "Cast", {"f2"}, {"c"}, "to_double"), "to", pb::AttributeProto::INT)
      ->set_i(pb::TensorProto::DOUBLE);
  add_output(m, "i");
  add_output(m, "c");
  graph::Graph g = import(m);  // unsupported nodes do not fail the import: they are reported
  ops::OpRegistry registry = registry_with_relu();
  std::vector<UnsupportedNode> bad = find_unsupported(g, registry);
  ASSERT_EQ(bad.size(), 6u);  // and the Identity of each branch, with its path
  std::map<std::string, UnsupportedNode> by_name;
  for (const UnsupportedNode& n : bad) by_name[n.scope + n.node_name] = n;
  ASSERT_TRUE(by_name.count("foo_1"));
  EXPECT_EQ(by_name["foo_1"].op_type, "FooBar");
  EXPECT_EQ(by_name["foo_1"].domain, "");
  EXPECT_EQ(by_name["foo_1"].opset, 13);
  EXPECT_HAS(by_name["foo_1"].reason, "op missing");
  ASSERT_TRUE(by_name.count("branchy"));
  EXPECT_EQ(by_name["branchy"].op_type, "If");
  EXPECT_HAS(by_name["branchy"].reason, "op missing");
  ASSERT_TRUE(by_name.count("If 'branchy' / else_branch<unnamed #0>"));
  EXPECT_EQ(by_name["If 'branchy' / else_branch<unnamed #0>"].op_type, "Identity");
  ASSERT_TRUE(by_name.count("to_double"));
  EXPECT_HAS(by_name["to_double"].reason, "dtype unsupported: attribute 'to' asks for DOUBLE");
  EXPECT_FALSE(by_name.count("relu"));

  std::string text = format_unsupported(bad);
  EXPECT_HAS(text, "6 nodes are not supported by wgi:");
  EXPECT_HAS(text, "FooBar (ai.onnx opset 13): op missing");
  EXPECT_HAS(text, "2 nodes: 'foo_1', 'foo_2'");
  EXPECT_HAS(text,
             "If (ai.onnx opset 13): op missing: wgi has no If in domain ai.onnx\n      1 node: 'branchy'");
  EXPECT_HAS(text,
             "Identity (ai.onnx opset 13): op missing: wgi has no Identity in domain ai.onnx\n      2 nodes: "
             "If 'branchy' / then_branch / node "
             "'<unnamed #0>', If 'branchy' / else_branch / node '<unnamed #0>'");
  EXPECT_EQ(format_unsupported({}), "");

  // The registry's opset ranges and wgi's opset range.
  m.mutable_opset_import(0)->set_version(14);
  std::vector<UnsupportedNode> at14 = find_unsupported(import(m), registry);
  bool relu_reported = false;
  for (const UnsupportedNode& n : at14) {
    if (n.node_name == "relu") {
      relu_reported = true;
      EXPECT_HAS(n.reason, "opset 14 unsupported");
      EXPECT_HAS(n.reason, "6-13");
    }
  }
  EXPECT_TRUE(relu_reported);
  pb::ModelProto opset6 = relu_model();
  opset6.mutable_opset_import(0)->set_version(6);
  std::vector<UnsupportedNode> old = find_unsupported(import(opset6), registry);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_HAS(old[0].reason, "wgi supports ai.onnx opsets 7 to 21");
}

TEST(OnnxImport, FormatUnsupportedGroupsAndShortensLongLists) {
  std::vector<UnsupportedNode> nodes;
  for (int i = 0; i < 10; ++i)
    nodes.push_back({"ln" + std::to_string(i), "LayerNorm", "", 17, "op missing", ""});
  nodes.push_back({"g", "Gelu", "com.microsoft", 1, "op missing", ""});
  std::string text = format_unsupported(nodes);
  EXPECT_HAS(text, "11 nodes are not supported by wgi:\n");
  EXPECT_HAS(text, "  LayerNorm (ai.onnx opset 17): op missing\n      10 nodes: 'ln0', 'ln1'");
  EXPECT_HAS(text, "'ln7' and 2 more\n");
  EXPECT_HAS(text, "  Gelu (com.microsoft opset 1): op missing\n      1 node: 'g'\n");
}

// --- subgraphs (graph-valued attributes) ------------------------------------------------------------------

using NodeSpec = std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>;

// A branch: nodes (op, inputs, outputs) named after their first output, outputs declared of `elem_type`.
pb::GraphProto branch_graph(const std::string& name, const std::vector<NodeSpec>& nodes,
                            const std::vector<std::string>& outputs,
                            int32_t elem_type = pb::TensorProto::FLOAT) {
  pb::GraphProto g;
  g.set_name(name);
  for (const auto& [op, inputs, outs] : nodes) {
    pb::NodeProto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(name + "_" + op + "_" + outs.at(0));
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outs) n->add_output(o);
  }
  for (const std::string& o : outputs) add_value_info(g.mutable_output(), o, elem_type, std::nullopt);
  return g;
}

pb::NodeProto* add_if(pb::ModelProto& m, const std::string& name, const std::string& cond,
                      std::vector<std::string> outputs, const pb::GraphProto& then_branch,
                      const pb::GraphProto& else_branch) {
  pb::NodeProto* n = add_node(m, "If", {cond}, std::move(outputs), name);
  *add_attribute(n, "then_branch", pb::AttributeProto::GRAPH)->mutable_g() = then_branch;
  *add_attribute(n, "else_branch", pb::AttributeProto::GRAPH)->mutable_g() = else_branch;
  return n;
}

const graph::Node& only_node(const std::vector<graph::Node>& nodes, const std::string& op) {
  const graph::Node* found = nullptr;
  for (const graph::Node& n : nodes) {
    if (n.info.op_type == op) {
      EXPECT_EQ(found, nullptr) << "two " << op << " nodes";
      found = &n;
    }
  }
  if (!found) throw Error("no " + op + " node");
  return *found;
}

// y = If(cond): then x + s (s the branch's own initializer, shadowing the outer s) times the outer w, named y
// like the If's output (as optimum's merged decoders name them); else another If on cond: relu(x) or x - w.
pb::ModelProto nested_if_model() {
  pb::ModelProto m = make_model(16);
  add_input(m, "cond", std::vector<DimSpec>{}, pb::TensorProto::BOOL);
  add_input(m, "x");
  add_initializer(m, raw_tensor("w", pb::TensorProto::FLOAT, {4}, bytes_of<float>({1, 2, 3, 4})));
  add_initializer(m, raw_tensor("s", pb::TensorProto::FLOAT, {4}, bytes_of<float>({5, 6, 7, 8})));
  pb::GraphProto then_branch =
      branch_graph("then", {{"Add", {"x", "s"}, {"t"}}, {"Mul", {"t", "w"}, {"y"}}}, {"y"});
  *then_branch.add_initializer() =
      raw_tensor("s", pb::TensorProto::FLOAT, {4}, bytes_of<float>({-1, -2, -3, -4}));
  pb::GraphProto else_branch = branch_graph("else", {}, {"z"});
  pb::NodeProto* inner = else_branch.add_node();
  inner->set_op_type("If");
  inner->set_name("inner");
  inner->add_input("cond");
  inner->add_output("z");
  *add_attribute(inner, "then_branch", pb::AttributeProto::GRAPH)->mutable_g() =
      branch_graph("inner_then", {{"Relu", {"x"}, {"r"}}}, {"r"});
  *add_attribute(inner, "else_branch", pb::AttributeProto::GRAPH)->mutable_g() =
      branch_graph("inner_else", {{"Sub", {"x", "w"}, {"d"}}}, {"d"});
  add_if(m, "if_0", "cond", {"y"}, then_branch, else_branch);
  add_output(m, "y");
  return m;
}

TEST(OnnxSubgraphs, BranchesReadEnclosingScopesByIdAndShadow) {
  graph::Graph g = import(nested_if_model());
  const graph::ValueId x = g.find("x"), w = g.find("w"), s = g.find("s"), cond = g.find("cond");
  ASSERT_EQ(g.nodes.size(), 1u);
  const graph::Node& iff = g.nodes[0];
  ASSERT_EQ(iff.subgraphs.size(), 2u);
  EXPECT_EQ(iff.subgraphs[0].attribute, "then_branch");
  EXPECT_EQ(iff.subgraphs[1].attribute, "else_branch");
  EXPECT_EQ(iff.subgraphs[0].name, "then");
  // The op's input, then the one non-constant outer value the branches read (constants need no ordering).
  EXPECT_EQ(iff.inputs, (std::vector<graph::ValueId>{cond, x}));
  EXPECT_EQ(iff.outer_reads, 1u);
  EXPECT_EQ(iff.op_input_count(), 1u);

  const graph::Subgraph& then_branch = iff.subgraphs[0];
  const graph::Node& add = only_node(then_branch.nodes, "Add");
  EXPECT_EQ(add.inputs[0], x);
  const graph::ValueId inner_s = add.inputs[1];
  EXPECT_NE(inner_s, s);  // the branch's own s shadows the outer one
  ASSERT_TRUE(g.value(inner_s).constant);
  EXPECT_EQ(g.value(inner_s).constant->data<float>()[0], -1.0f);
  EXPECT_EQ(g.find("s"), s);  // subgraph values are not found by name in the main graph
  const graph::Node& mul = only_node(then_branch.nodes, "Mul");
  EXPECT_EQ(mul.inputs[0], add.outputs[0]);  // the Add comes first: the branch is sorted
  EXPECT_EQ(mul.inputs[1], w);
  ASSERT_EQ(then_branch.outputs.size(), 1u);
  EXPECT_EQ(then_branch.outputs[0], mul.outputs[0]);
  EXPECT_NE(then_branch.outputs[0], iff.outputs[0]);  // the branch's y is not the If's y

  const graph::Node& inner = only_node(iff.subgraphs[1].nodes, "If");
  EXPECT_EQ(inner.inputs, (std::vector<graph::ValueId>{cond, x}));
  EXPECT_EQ(only_node(inner.subgraphs[1].nodes, "Sub").inputs, (std::vector<graph::ValueId>{x, w}));
  EXPECT_EQ(graph::outer_reads_of(g, inner.subgraphs[0]), (std::vector<graph::ValueId>{x}));
}

TEST(OnnxSubgraphs, AValueInNoEnclosingScopeNamesNodeAttributeAndValue) {
  pb::ModelProto m = nested_if_model();
  pb::GraphProto* then_branch = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_branch->mutable_node(1)->set_input(1, "nowhere");
  std::string e = import_error(m);
  EXPECT_HAS(e, "If 'if_0' / then_branch: node 'then_Mul_y' (Mul, opset 16) reads 'nowhere' as input 1");
  EXPECT_HAS(e, "no graph input, initializer or node output of this subgraph or an enclosing graph");

  // Nested: the whole path. A sibling branch's values are not visible either.
  m = nested_if_model();
  pb::NodeProto* inner =
      m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0);
  inner->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_input(0, "r");
  e = import_error(m);
  EXPECT_HAS(e,
             "If 'if_0' / else_branch / If 'inner' / else_branch: node 'inner_else_Sub_d' (Sub, opset 16) "
             "reads 'r' as input 0");

  // A subgraph output that is nowhere.
  m = nested_if_model();
  m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_output(0)->set_name("gone");
  EXPECT_HAS(import_error(m), "If 'if_0' / then_branch: subgraph output 'gone' is no value of this subgraph");
}

TEST(OnnxSubgraphs, IfBranchesMustMatchTheNode) {
  pb::ModelProto m = make_model(16);
  add_input(m, "cond", std::vector<DimSpec>{}, pb::TensorProto::BOOL);
  add_input(m, "x");
  pb::GraphProto relu = branch_graph("relu", {{"Relu", {"x"}, {"r"}}}, {"r"});
  pb::GraphProto two = branch_graph("two", {{"Relu", {"x"}, {"r"}}, {"Neg", {"x"}, {"n"}}}, {"r", "n"});
  pb::GraphProto ints = branch_graph("ints", {{"Cast", {"x"}, {"c"}}}, {"c"}, pb::TensorProto::INT64);
  add_output(m, "y");
  pb::ModelProto counts = m;
  add_if(counts, "if_0", "cond", {"y"}, relu, two);
  EXPECT_HAS(import_error(counts),
             "node 'if_0' (If, opset 16): else_branch has 2 outputs, but the node has 1");
  pb::ModelProto types = m;
  add_if(types, "if_0", "cond", {"y"}, relu, ints);
  EXPECT_HAS(
      import_error(types),
      "node 'if_0' (If, opset 16): output 0 is FLOAT in then_branch ('r') but INT64 in else_branch ('c')");
  pb::ModelProto declared = m;  // y is declared FLOAT
  add_if(declared, "if_0", "cond", {"y"}, ints, ints);
  EXPECT_HAS(import_error(declared),
             "node 'if_0' (If, opset 16): output 0 'y' is declared FLOAT, but its branches give INT64");
  pb::ModelProto missing = m;
  add_attribute(add_node(missing, "If", {"cond"}, {"y"}, "if_0"), "then_branch", pb::AttributeProto::GRAPH)
      ->mutable_g()
      ->CopyFrom(relu);
  EXPECT_HAS(import_error(missing), "needs both graph attributes then_branch and else_branch");
  pb::ModelProto empty = m;
  add_attribute(add_node(empty, "If", {"cond"}, {"y"}, "if_0"), "then_branch", pb::AttributeProto::GRAPH);
  EXPECT_HAS(import_error(empty),
             "attribute 'then_branch' of node 'if_0' (If, opset 16) is of type GRAPH but holds no graph");
}

TEST(OnnxSubgraphs, UnsupportedNodesInsideAreReportedWithTheirPath) {
  pb::ModelProto m = nested_if_model();
  pb::NodeProto* inner =
      m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0);
  inner->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_op_type("Foo");
  std::vector<UnsupportedNode> bad = find_unsupported(import(m), ops::builtin_registry());
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].scope, "If 'if_0' / else_branch / If 'inner' / then_branch");
  EXPECT_EQ(bad[0].node_name, "inner_then_Relu_r");
  EXPECT_HAS(format_unsupported(bad),
             "Foo (ai.onnx opset 16): op missing: wgi has no Foo in domain ai.onnx\n      1 node: If 'if_0' "
             "/ else_branch / "
             "If 'inner' / then_branch / node 'inner_then_Relu_r'\n");
}

// Graph passes see a value read inside a subgraph as read, rewire reads inside, and run inside branches.
TEST(OnnxSubgraphs, PassesCountReadsInsideSubgraphsAndRunInsideBranches) {
  pb::ModelProto m = make_model(16);
  add_input(m, "cond", std::vector<DimSpec>{}, pb::TensorProto::BOOL);
  add_input(m, "x", std::vector<DimSpec>{int64_t{2}, int64_t{4}});
  add_initializer(
      m, raw_tensor("W", pb::TensorProto::FLOAT, {4, 4}, bytes_of<float>(std::vector<float>(16, 0.5f))));
  add_initializer(m, raw_tensor("b", pb::TensorProto::FLOAT, {4}, bytes_of<float>({1, 2, 3, 4})));
  add_node(m, "MatMul", {"x", "W"}, {"mm"}, "outer_matmul");
  add_node(m, "Add", {"mm", "b"}, {"a"}, "outer_add");  // not fused: mm is read in then_branch too
  add_node(m, "Neg", {"x"}, {"only_inside"}, "neg");    // read only inside else_branch: alive
  add_node(m, "Neg", {"x"}, {"dead"}, "dead_neg");      // read nowhere: removed
  add_node(m, "Identity", {"a"}, {"ia"}, "outer_identity");
  // then: relu(mm) + ia; else: Identity(only_inside) -> MatMul(., W) + b (fused inside the branch).
  pb::GraphProto then_branch =
      branch_graph("then", {{"Relu", {"mm"}, {"r"}}, {"Add", {"r", "ia"}, {"y1"}}}, {"y1"});
  pb::GraphProto else_branch = branch_graph(
      "else",
      {{"Identity", {"only_inside"}, {"i"}}, {"MatMul", {"i", "W"}, {"p"}}, {"Add", {"p", "b"}, {"y2"}}},
      {"y2"});
  add_if(m, "if_0", "cond", {"y"}, then_branch, else_branch);
  add_output(m, "y");
  graph::Graph g = import(m);
  graph::PassReport report = graph::optimize(g, ops::builtin_registry());

  EXPECT_EQ(report.count("eliminate_identities"), 2);  // one outside, one inside
  EXPECT_EQ(report.count("fuse_bias_adds"), 1);        // inside only
  std::set<std::string> names;
  for (const graph::Node& n : g.nodes) names.insert(n.info.name);
  EXPECT_EQ(names, (std::set<std::string>{"outer_matmul", "outer_add", "neg", "if_0"}));
  const graph::Node& iff = only_node(g.nodes, "If");
  // The outer Identity is gone: then_branch's Add reads the outer Add's output directly.
  const graph::Node& then_add = only_node(iff.subgraphs[0].nodes, "Add");
  EXPECT_EQ(then_add.inputs[1], g.find("a"));
  // Inside else_branch: no Identity, MatMul with the bias fused, reading the outer Neg's output.
  const std::vector<graph::Node>& else_nodes = iff.subgraphs[1].nodes;
  ASSERT_EQ(else_nodes.size(), 1u);
  EXPECT_EQ(else_nodes[0].info.op_type, "MatMul");
  EXPECT_EQ(else_nodes[0].inputs[0], g.find("only_inside"));
  EXPECT_EQ(else_nodes[0].inputs.size(), 3u);
  EXPECT_EQ(else_nodes[0].outputs[0], iff.subgraphs[1].outputs[0]);
  // The If's reads from outside after the passes: mm, a and only_inside (in order of first read).
  EXPECT_EQ(iff.inputs,
            (std::vector<graph::ValueId>{g.find("cond"), g.find("mm"), g.find("a"), g.find("only_inside")}));
}

TEST(OnnxImport, FindUnsupportedReportsUnsupportedElementTypesAndKinds) {
  pb::ModelProto m = relu_model();
  add_value_info(m.mutable_graph()->mutable_value_info(), "y", pb::TensorProto::DOUBLE, std::nullopt);
  pb::NodeProto* cos = add_node(m, "ConstantOfShape", {"x"}, {"z"}, "cos");
  *add_attribute(cos, "value", pb::AttributeProto::TENSOR)->mutable_t() =
      raw_tensor("", pb::TensorProto::DOUBLE, {1}, bytes_of<double>({1}));
  pb::NodeProto* odd = add_node(m, "Odd", {"x"}, {"o"}, "odd");
  add_attribute(odd, "types", pb::AttributeProto::TYPE_PROTOS);
  add_output(m, "z");
  add_output(m, "o");
  std::vector<UnsupportedNode> bad = find_unsupported(import(m), registry_with_relu());
  std::map<std::string, std::string> reasons;
  for (const UnsupportedNode& n : bad) reasons[n.node_name] = n.reason;
  EXPECT_HAS(reasons["relu"], "dtype unsupported: value_info entry 'y' has element type DOUBLE");
  EXPECT_HAS(reasons["cos"], "dtype unsupported: attribute 'value' holds a DOUBLE tensor");
  EXPECT_HAS(reasons["odd"], "attribute 'types' is of kind TYPE_PROTOS");
}

TEST(OnnxImport, ModelLocalFunctionsAreReported) {
  pb::ModelProto m = relu_model();
  pb::OperatorSetIdProto* op = m.add_opset_import();
  op->set_domain("local");
  op->set_version(1);
  pb::FunctionProto* f = m.add_functions();
  f->set_name("MyGelu");
  f->set_domain("local");
  add_node(m, "MyGelu", {"y"}, {"z"}, "gelu")->set_domain("local");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  std::vector<UnsupportedNode> bad = find_unsupported(import(m), registry_with_relu());
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_HAS(bad[0].reason, "model-local function local:MyGelu");
}

// --- real files --------------------------------------------------------------------------------------------

TEST(OnnxImport, LibonnxTestdataConv) {
  fs::path path = kOnnxTestData / "node" / "test_conv_with_strides_padding" / "model.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << "Debian's libonnx-testdata is not installed (scripts/setup)";
  graph::Graph g = import_model_file(path);
  EXPECT_EQ(g.opsets.at(""), 11);
  ASSERT_EQ(g.inputs.size(), 2u);  // x and W: this test feeds the weights as inputs
  EXPECT_EQ(g.value(g.inputs[0]).shape.to_string(), "[1, 1, 7, 5]");
  ASSERT_EQ(g.nodes.size(), 1u);
  const ops::NodeInfo& conv = g.nodes[0].info;
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.attributes.get_ints("strides", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(conv.attributes.get_ints("pads", {}), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(conv.attributes.get_ints("kernel_shape", {}), (std::vector<int64_t>{3, 3}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).shape.to_string(), "[1, 1, 4, 3]");
}

TEST(OnnxImport, LibonnxTestdataPytorchConverted) {
  fs::path dir = kOnnxTestData / "pytorch-converted";
  if (!fs::exists(dir)) GTEST_SKIP() << "Debian's libonnx-testdata is not installed (scripts/setup)";
  {
    graph::Graph g = import_model_file(dir / "test_Conv2d" / "model.onnx");
    EXPECT_EQ(g.ir_version, 3);
    ASSERT_EQ(g.inputs.size(), 1u);  // weight and bias are initializers listed as inputs too
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].info.op_type, "Conv");
    int constants = 0;
    for (const graph::Value& v : g.values) constants += v.constant.has_value();
    EXPECT_EQ(constants, 2);
    const graph::Value& w = g.value(g.nodes[0].inputs[1]);
    ASSERT_TRUE(w.constant.has_value());
    EXPECT_EQ(w.constant->element_count(), element_count(w.constant->shape()));
    EXPECT_EQ(w.shape.dims.size(), 4u);
  }
  {
    graph::Graph g = import_model_file(dir / "test_PixelShuffle" / "model.onnx");
    EXPECT_EQ(g.nodes.size(), 3u);  // Reshape, Transpose, Reshape; the two Constants became values
    EXPECT_EQ(g.nodes[0].info.op_type, "Reshape");
    ASSERT_TRUE(g.value(g.nodes[0].inputs[1]).constant.has_value());
    EXPECT_EQ(g.value(g.nodes[0].inputs[1]).dtype, DType::Int64);
  }
  {
    graph::Graph g = import_model_file(dir / "test_BatchNorm2d_eval" / "model.onnx");
    EXPECT_EQ(g.inputs.size(), 1u);
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].inputs.size(), 5u);
  }
}

// The fuzzer's seeds are valid models (tests/data/onnx/generate.py writes them): each imports, except the one
// whose external file is deliberately absent.
TEST(OnnxImport, FuzzSeedCorpusImports) {
  fs::path corpus = kTestData / ".." / "fuzz" / "corpus";
  int seeds = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(corpus)) {
    ++seeds;
    if (e.path().stem() == "external_reference") {
      try {
        import_model_file(e.path());
        ADD_FAILURE() << "weights.bin is not shipped with the corpus";
      } catch (const Error& err) {
        EXPECT_HAS(err.what(), "'weights.bin' does not exist");
      }
      continue;
    }
    EXPECT_NO_THROW(import_model_file(e.path())) << e.path();
  }
  EXPECT_GE(seeds, 5);
}

// Every model Debian ships imports or fails with a wgi::Error: no crash, no other exception.
TEST(OnnxImport, LibonnxTestdataSweep) {
  if (!fs::exists(kOnnxTestData))
    GTEST_SKIP() << "Debian's libonnx-testdata is not installed (scripts/setup)";
  int imported = 0, refused = 0;
  std::map<std::string, int> reasons;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kOnnxTestData)) {
    if (e.path().filename() != "model.onnx") continue;
    try {
      import_model_file(e.path());
      ++imported;
    } catch (const Error& err) {
      ++refused;
      std::string msg = err.what();
      reasons[msg.substr(msg.find(':') + 2, 40)]++;
    }
  }
  std::string summary;
  for (auto& [r, n] : reasons) summary += std::to_string(n) + " x " + r + "\n";
  EXPECT_GT(imported, 900) << summary;
  if (std::getenv("WGI_PRINT_SWEEP")) std::cout << imported << " imported\n" << summary;
  EXPECT_LT(refused, imported / 5) << summary;
}

}  // namespace
}  // namespace wgi::onnx
