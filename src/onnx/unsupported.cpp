#include <map>

#include "onnx/importer.h"
#include "wgi/printable.h"

namespace wgi::onnx {

namespace {

constexpr size_t kMaxNamesPerGroup = 8;

std::string domain_label(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : printable(domain);
}

}  // namespace

namespace {

void collect_unsupported(const std::vector<graph::Node>& nodes, const std::string& scope,
                         const ops::OpRegistry& registry, std::vector<UnsupportedNode>& out) {
  const std::string marker(kUnsupportedReasonAttribute);
  for (const graph::Node& node : nodes) {
    const ops::NodeInfo& info = node.info;
    std::optional<std::string> reason;
    auto it = info.attributes.all().find(marker);
    if (it != info.attributes.all().end()) {
      const std::string* known = std::get_if<std::string>(&it->second);
      reason = known ? *known : std::string("the importer marked the node unsupported");
    } else if (info.domain.empty() && (info.opset < kMinOpset || info.opset > kMaxOpset)) {
      reason = "opset " + std::to_string(info.opset) + " unsupported: wgi supports ai.onnx opsets " +
               std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset);
    } else {
      reason = registry.unsupported_reason(info.domain, info.op_type, info.opset);
    }
    if (reason) out.push_back({info.name, info.op_type, info.domain, info.opset, std::move(*reason), scope});
    for (const graph::Subgraph& sub : node.subgraphs) {
      collect_unsupported(
          sub.nodes,
          (scope.empty() ? "" : scope + " / ") + info.op_type + " '" + info.name + "' / " + sub.attribute,
          registry, out);
    }
  }
}

}  // namespace

std::vector<UnsupportedNode> find_unsupported(const graph::Graph& graph, const ops::OpRegistry& registry) {
  std::vector<UnsupportedNode> out;
  collect_unsupported(graph.nodes, "", registry, out);
  return out;
}

std::string format_unsupported(const std::vector<UnsupportedNode>& nodes) {
  if (nodes.empty()) return "";
  // Group nodes that fail for the same reason, in order of first appearance.
  struct Group {
    const UnsupportedNode* first;
    std::vector<std::string> names;
  };
  std::vector<Group> groups;
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, size_t> index;
  for (const UnsupportedNode& n : nodes) {
    auto key = std::make_tuple(n.op_type, n.domain, n.opset, n.reason);
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) groups.push_back({&n, {}});
    const std::string name = "'" + printable(n.node_name) + "'";
    groups[it->second].names.push_back(n.scope.empty() ? name : printable(n.scope) + " / node " + name);
  }
  std::string s = std::to_string(nodes.size()) + (nodes.size() == 1 ? " node is" : " nodes are") +
                  " not supported by wgi:\n";
  for (const Group& g : groups) {
    s += "  " + printable(g.first->op_type) + " (" + domain_label(g.first->domain) + " opset " +
         std::to_string(g.first->opset) + "): " + printable(g.first->reason, 1000) + "\n";
    s += "      " + std::to_string(g.names.size()) + (g.names.size() == 1 ? " node: " : " nodes: ");
    for (size_t i = 0; i < g.names.size() && i < kMaxNamesPerGroup; ++i) {
      s += (i ? ", " : "") + g.names[i];
    }
    if (g.names.size() > kMaxNamesPerGroup)
      s += " and " + std::to_string(g.names.size() - kMaxNamesPerGroup) + " more";
    s += "\n";
  }
  return s;
}

}  // namespace wgi::onnx
