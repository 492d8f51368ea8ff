#include "support/run_node.h"

#include "support/test_device.h"
#include "wgi/error.h"

namespace wgi::test {

ops::NodeInfo NodeMaker::operator()(const std::string& op_type, std::optional<int> opset,
                                    ops::Attributes attributes) const {
  return ops::NodeInfo{name, op_type, "", opset.value_or(default_opset), std::move(attributes), {}, {}};
}

ops::NodeInfo make_node(const std::string& op, int opset, size_t outputs) {
  ops::NodeInfo n{"dm_under_test", op, "", opset, {}, {}, {}};
  for (size_t i = 0; i < outputs; ++i) n.output_names.push_back("y" + std::to_string(i));
  return n;
}

std::string run_error(const ops::NodeInfo& node, const NodeInputs& inputs) {
  try {
    runtime::run_node(device(), node, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string run_error(Session& session, const std::map<std::string, Tensor>& inputs) {
  try {
    session.run(inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace wgi::test
