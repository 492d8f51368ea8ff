// The ONNX importer: a serialized ModelProto -> graph::Graph, validated, with constants loaded and nodes in
// topological order. It accepts ONNX IR versions 3-10 and reads every opset; which opsets run is the
// registry's call (find_unsupported), except that wgi supports the default domain only for opsets
// kMinOpset..kMaxOpset.
//
// The importer never trusts the file: malformed protobuf, impossible shapes, data that does not match its
// declared size, external data outside the model's folder and sizes beyond ImportOptions::max_model_bytes are
// each a wgi::Error naming the tensor, node or input involved (the loader is fuzzed, see tests/fuzz/).
//
// Graph-valued attributes (If's branches, Loop's body) become graph::Subgraphs of their node, nested to any
// depth, each a scope of its own that may read every value of its enclosing scopes (docs/control_flow.md).
//
// The protobuf wire format is decoded by wgi itself (onnx_proto.h), not libprotobuf: there is no 2 GiB
// ceiling on one model file; ImportOptions::max_model_bytes is the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "ops/registry.h"

namespace wgi::onnx {

struct ImportOptions {
  // The most bytes the model may make wgi hold: the serialized model itself, and the sum of all constants
  // (initializers, Constant nodes, tensor attributes, external data). Anything beyond is refused before it is
  // read or allocated. The decoded structure of the file (names, nodes, attributes, typed tensor values) is
  // held to the same number, but never to less than 64 MiB, so that a tight limit on weights still decodes a
  // small graph.
  uint64_t max_model_bytes = 4ull << 30;
};

// The default ("ai.onnx") domain opsets wgi supports; nodes of models outside this range are reported by
// find_unsupported.
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 10;

// A node the importer kept but already knows wgi cannot run (an element type wgi lacks,
// a model-local function) carries the reason in this string attribute; find_unsupported reports it. Ops never
// see such nodes run, since a model with unsupported nodes fails to load.
inline constexpr std::string_view kUnsupportedReasonAttribute = "wgi.unsupported_reason";

// Parses and validates a model. base_dir: where external data files are looked up (the model's folder); an
// empty base_dir refuses external data. Throws wgi::Error with a message naming what is wrong.
graph::Graph import_model(std::span<const std::byte> model_bytes, const std::filesystem::path& base_dir,
                          const ImportOptions& options = {});
// Reads `path` (size-checked first) and imports it with its folder as base_dir.
graph::Graph import_model_file(const std::filesystem::path& path, const ImportOptions& options = {});

struct UnsupportedNode {
  std::string node_name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  int64_t opset = 0;
  std::string reason;
  std::string scope;  // "" in the main graph; else the path to the subgraph: "If 'if_0' / then_branch"
};

// Every node the registry cannot run, with the reason (op missing / opset unsupported / element type
// unsupported), in graph order, nodes inside subgraphs after the node that holds them. Empty when the whole
// model is supported.
std::vector<UnsupportedNode> find_unsupported(const graph::Graph& graph, const ops::OpRegistry& registry);
// A readable multi-line list, nodes with the same op, opset and reason grouped on one line; "" for an empty
// list.
std::string format_unsupported(const std::vector<UnsupportedNode>& nodes);

}  // namespace wgi::onnx
