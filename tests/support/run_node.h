// Running one node, or a session, in a test: nodes to run (named, so that error messages can be checked for
// the name) and the message of the wgi::Error a run throws.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"
#include "runtime/node_runner.h"
#include "wgi/session.h"
#include "wgi/tensor.h"

namespace wgi::test {

using NodeInputs = std::vector<std::optional<runtime::NodeInput>>;

// Makes nodes of the default domain named `name`, at `default_opset` unless the call gives one:
//   const test::NodeMaker node{"linear_under_test"};  ...  node("Gemm"), node("Gemm", 11), node("Pad", 13,
//   attrs)
struct NodeMaker {
  std::string name;
  int default_opset = 13;
  ops::NodeInfo operator()(const std::string& op_type, std::optional<int> opset = {},
                           ops::Attributes attributes = {}) const;
};

// A node "dm_under_test" of the default domain with `outputs` named outputs (Split and Dropout count them).
ops::NodeInfo make_node(const std::string& op, int opset = 13, size_t outputs = 1);

// The message of the wgi::Error that running the node on test::device() throws, or "no error".
std::string run_error(const ops::NodeInfo& node, const NodeInputs& inputs);
// The message of the wgi::Error that session.run(inputs) throws, or "no error".
std::string run_error(Session& session, const std::map<std::string, Tensor>& inputs);
// run_error(node, inputs) under the name the data-movement tests call it by.
inline std::string node_error(const ops::NodeInfo& node, const NodeInputs& inputs) {
  return run_error(node, inputs);
}

}  // namespace wgi::test
