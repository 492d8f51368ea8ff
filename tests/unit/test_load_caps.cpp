// The importer's caps on a graph's shape (src/onnx/importer.cpp check_graph_size): a node's inputs cost a few
// bytes in the file but kilobytes in planning, so a huge fan-in must be refused at load with a message naming
// the node, while the largest fan-in allowed still loads. Also: the model's names reach messages escaped.
#include <gtest/gtest.h>

#include <string>

#include "onnx/importer.h"
#include "onnx/onnx_pb.h"

namespace wgi::onnx {
namespace {

namespace pb = ::onnx;

// x [4] -> Sum(x, x, ..., x) with `fan_in` inputs -> y.
std::string sum_model(size_t fan_in, const std::string& node_name = "wide") {
  pb::ModelProto m;
  m.set_ir_version(8);
  pb::OperatorSetIdProto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  pb::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  for (const char* name : {"x", "y"}) {
    pb::ValueInfoProto* v = name[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(pb::TensorProto::FLOAT);
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  }
  pb::NodeProto* n = g->add_node();
  n->set_op_type("Sum");
  n->set_name(node_name);
  for (size_t i = 0; i < fan_in; ++i) n->add_input("x");
  n->add_output("y");
  return m.SerializeAsString();
}

graph::Graph import(const std::string& bytes) {
  return import_model(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), {});
}

TEST(LoadCaps, RefusesAHugeFanInAtLoadAndNamesTheNode) {
  try {
    import(sum_model(4097));
    FAIL() << "a Sum of 4097 inputs loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 0 ('wide', Sum) has 4097 inputs"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 4096"), std::string::npos) << e.what();
  }
  graph::Graph g = import(sum_model(4096));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs.size(), 4096u);
}

// The Sum model's graph as the then-branch of an If on a bool input c (else: Identity of x): the caps hold
// inside subgraphs too.
std::string sum_in_if_branch(size_t fan_in) {
  pb::ModelProto sum;
  sum.ParseFromString(sum_model(fan_in));
  pb::ModelProto m = sum;
  pb::GraphProto* g = m.mutable_graph();
  g->clear_node();
  pb::ValueInfoProto* c = g->add_input();
  c->set_name("c");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(pb::TensorProto::BOOL);
  pb::NodeProto* node = g->add_node();
  node->set_op_type("If");
  node->set_name("branchy");
  node->add_input("c");
  node->add_output("y");
  pb::GraphProto then_branch = sum.graph();
  then_branch.clear_input();
  pb::GraphProto else_branch = then_branch;
  else_branch.clear_node();
  pb::NodeProto* identity = else_branch.add_node();
  identity->set_op_type("Identity");
  identity->add_input("x");
  identity->add_output("y");
  for (auto [name, body] : {std::pair{"then_branch", &then_branch}, std::pair{"else_branch", &else_branch}}) {
    pb::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::GRAPH);
    *a->mutable_g() = *body;
  }
  return m.SerializeAsString();
}

TEST(LoadCaps, HoldInsideSubgraphs) {
  try {
    import(sum_in_if_branch(4097));
    FAIL() << "a Sum of 4097 inputs inside an If branch loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 4097 inputs"), std::string::npos) << e.what();
  }
  graph::Graph g = import(sum_in_if_branch(4096));
  ASSERT_EQ(g.nodes.size(), 1u);
  ASSERT_EQ(g.nodes[0].subgraphs.size(), 2u);
}

TEST(LoadCaps, ImporterMessagesEscapeTheModelsNames) {
  // A node reading a value nothing produces: the importer's message quotes the node's name.
  pb::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(sum_model(2, std::string("evil\x1b[31m\0name", 14))));
  m.mutable_graph()->mutable_node(0)->set_input(1, "missing");
  try {
    import(m.SerializeAsString());
    FAIL() << "a dangling input loaded";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
    EXPECT_NE(message.find("evil\\x1B[31m\\x00name"), std::string::npos) << message;
    EXPECT_NE(message.find("'missing'"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace wgi::onnx
