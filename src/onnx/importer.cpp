#include "onnx/importer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "onnx/onnx_proto.h"
#include "onnx/tensor_proto.h"
#include "wgi/printable.h"

namespace wgi::onnx {

namespace pb = proto;
namespace fs = std::filesystem;
using detail::ConstantBudget;
using detail::dtype_from_onnx;
using detail::onnx_dtype_name;

namespace {

// The nesting limit of one decode (messages inside messages: graphs in attributes in nodes...), libprotobuf's
// default. The importer itself does not recurse: it never descends into subgraphs.
constexpr int kMaxNesting = 100;
// The decoded structure (names, nodes, attributes, typed values; not raw_data, which stays in the input) is
// held to ImportOptions::max_model_bytes, but never to less than this: a tight limit meant for weights must
// still let a small graph decode.
constexpr uint64_t kMinDecodedBytes = 64ull << 20;

std::string normalise_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}
std::string domain_label(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

// Caps on the graph's shape, so that what loading and planning cost stays bounded by the model file's size:
// a node's inputs and outputs are a few bytes each in the file, but each costs the planner kilobytes (a
// 6 MB Sum of 2 million inputs grew `wgi check` to 10 GB). Far above what real models have (a Concat of a few
// hundred inputs, tens of thousands of nodes); each is a wgi::Error naming the node.
constexpr size_t kMaxNodes = size_t{1} << 20;
constexpr size_t kMaxNodeInputsOrOutputs = 4096;
void check_graph_size(const pb::GraphProto& graph) {
  if (graph.node.size() > kMaxNodes) {
    throw Error("the graph has " + std::to_string(graph.node.size()) + " nodes; wgi loads at most " +
                std::to_string(kMaxNodes));
  }
  for (size_t i = 0; i < graph.node.size(); ++i) {
    const pb::NodeProto& n = graph.node[i];
    const size_t most = std::max(n.input.size(), n.output.size());
    if (most <= kMaxNodeInputsOrOutputs) continue;
    throw Error("node " + std::to_string(i) + " ('" + printable(n.name) + "', " + printable(n.op_type) +
                ") has " + std::to_string(n.input.size()) + " inputs and " + std::to_string(n.output.size()) +
                " outputs; wgi takes at most " + std::to_string(kMaxNodeInputsOrOutputs) +
                " of each (split the node, e.g. a Sum or Concat into a tree of smaller ones)");
  }
}

// The decoded model views `bytes` (raw_data): the bytes must outlive it.
pb::ModelProto parse_model(std::span<const std::byte> bytes, const ImportOptions& options) {
  if (bytes.size() > options.max_model_bytes) {
    throw Error("the model is " + std::to_string(bytes.size()) + " bytes, more than the limit of " +
                std::to_string(options.max_model_bytes) + " bytes (ImportOptions::max_model_bytes)");
  }
  pb::DecodeOptions decode;
  decode.max_decoded_bytes = std::max(options.max_model_bytes, kMinDecodedBytes);
  decode.max_depth = kMaxNesting;
  decode.invalid = "not a valid ONNX model";
  decode.limit_name = "ImportOptions::max_model_bytes, at least 64 MiB";
  return pb::decode_model(bytes, decode);
}

const char* type_kind_name(pb::TypeProto::ValueCase kind) {
  using Case = pb::TypeProto::ValueCase;
  switch (kind) {
    case Case::SequenceType:
      return "a sequence";
    case Case::MapType:
      return "a map";
    case Case::OptionalType:
      return "an optional";
    case Case::SparseTensorType:
      return "a sparse tensor";
    case Case::OpaqueType:
      return "an opaque value";
    default:
      return "not a tensor";
  }
}

// Fills the value's dtype and shape from a declared type. Returns why it cannot, or nullopt. A missing type
// is "has no type".
std::optional<std::string> read_declared_type(const pb::ValueInfoProto& info, graph::Value& value) {
  if (!info.type || info.type->value_case == pb::TypeProto::ValueCase::NotSet) return "has no type";
  const pb::TypeProto& type = *info.type;
  if (type.value_case != pb::TypeProto::ValueCase::TensorType) {
    return std::string("is ") + type_kind_name(type.value_case) + "; wgi supports tensors only";
  }
  const pb::TypeProto::Tensor& tensor = type.tensor_type;
  if (!tensor.elem_type || *tensor.elem_type == static_cast<int32_t>(pb::DataType::Undefined)) {
    return "has no element type";
  }
  std::optional<DType> dtype = dtype_from_onnx(*tensor.elem_type);
  if (!dtype) {
    return "has element type " + onnx_dtype_name(*tensor.elem_type) +
           detail::unsupported_dtype_reason(*tensor.elem_type);
  }
  value.dtype = *dtype;
  value.shape = graph::ValueShape{};
  if (tensor.shape) {
    value.shape.rank_known = true;
    value.shape.dims.reserve(tensor.shape->dim.size());
    for (const pb::TensorShapeProto::Dimension& d : tensor.shape->dim) {
      // A negative dim_value is not valid ONNX; some exporters wrote -1 for "unknown", so read it as that.
      if (d.dim_value && *d.dim_value >= 0) {
        value.shape.dims.push_back(graph::Dim::known(*d.dim_value));
      } else if (d.dim_param && !d.dim_param->empty()) {
        value.shape.dims.push_back(graph::Dim::named(*d.dim_param));
      } else {
        value.shape.dims.emplace_back();
      }
    }
  }
  return std::nullopt;
}

pb::AttributeType attribute_type(const pb::AttributeProto& a, const std::string& what) {
  using Type = pb::AttributeType;
  if (a.type != Type::Undefined) return a.type;
  // Very old files leave `type` unset: infer it from the one field that holds the value.
  if (a.g) return Type::Graph;
  if (!a.graphs.empty()) return Type::Graphs;
  if (a.t) return Type::Tensor;
  if (a.has_sparse_tensor) return Type::SparseTensor;
  if (!a.floats.empty()) return Type::Floats;
  if (!a.ints.empty()) return Type::Ints;
  if (!a.strings.empty()) return Type::Strings;
  if (!a.tensors.empty()) return Type::Tensors;
  if (a.f) return Type::Float;
  if (a.i) return Type::Int;
  if (a.s) return Type::String;
  throw Error(what + " has neither a type nor a value");
}

// Ops whose integer attribute names an element type to produce.
const char* dtype_attribute_of(const std::string& domain, const std::string& op_type) {
  if (!domain.empty()) return nullptr;
  if (op_type == "Cast") return "to";
  static const std::unordered_set<std::string> with_dtype = {
      "EyeLike",           "RandomNormal", "RandomNormalLike", "RandomUniform",
      "RandomUniformLike", "Multinomial",  "Bernoulli"};
  return with_dtype.count(op_type) ? "dtype" : nullptr;
}

class Importer {
 public:
  Importer(const pb::ModelProto& model, fs::path base_dir, const ImportOptions& options)
      : model_(model), base_dir_(std::move(base_dir)), budget_(options.max_model_bytes) {}

  graph::Graph run() {
    read_header();
    const pb::GraphProto& g = *model_.graph;
    check_graph_size(g);
    graph_.name = g.name;
    if (!g.sparse_initializer.empty()) {
      const std::optional<pb::TensorProto>& values = g.sparse_initializer[0].values;
      throw Error("sparse initializer '" + (values ? values->name : std::string()) +
                  "': sparse initializers are not supported; store the tensor densely");
    }
    for (const pb::TensorProto& t : g.initializer) add_initializer(t);
    for (const pb::ValueInfoProto& in : g.input) add_input(in);
    for (const pb::FunctionProto& f : model_.functions) {
      local_functions_.insert(normalise_domain(f.domain) + ":" + f.name);
    }
    for (size_t i = 0; i < g.node.size(); ++i) add_node(g.node[i], i);
    resolve_node_inputs();
    for (const pb::ValueInfoProto& info : g.value_info) apply_declared_type(info, "value_info entry");
    add_outputs();
    for (size_t n = 0; n < pending_.size(); ++n) {
      Pending& p = pending_[n];
      if (!p.unsupported.empty()) {
        std::string reason;
        for (const std::string& r : p.unsupported) reason += (reason.empty() ? "" : "; ") + r;
        p.node.info.attributes.set(std::string(kUnsupportedReasonAttribute), reason);
      }
      graph_.nodes.push_back(std::move(p.node));
    }
    graph_.sort_topologically();
    sort_subgraphs(graph_);
    return std::move(graph_);
  }

 private:
  struct Pending {
    graph::Node node;
    std::vector<std::string> input_names;
    std::vector<std::string> unsupported;  // reasons the importer already knows
    // Graph-valued attributes, imported once every name of the node's scope is known (resolve_node_inputs).
    std::vector<std::pair<std::string, const pb::GraphProto*>> subgraph_protos;
    std::vector<int32_t> if_output_types;  // an If's: per output, the element type its branches declare, or 0
  };

  void read_header() {
    if (!model_.ir_version) throw Error("the model has no ir_version: not an ONNX model?");
    int64_t ir = *model_.ir_version;
    if (ir < kMinIrVersion || ir > kMaxIrVersion) {
      throw Error("the model has ONNX IR version " + std::to_string(ir) + "; wgi reads IR versions " +
                  std::to_string(kMinIrVersion) + " to " + std::to_string(kMaxIrVersion));
    }
    graph_.ir_version = ir;
    if (!model_.graph) throw Error("the model has no graph");
    if (model_.opset_import.empty()) throw Error("the model has no opset_import: which opset is it?");
    for (const pb::OperatorSetIdProto& op : model_.opset_import) {
      std::string domain = normalise_domain(op.domain);
      int64_t version = op.version;
      if (version < 1 || version > INT32_MAX) {
        throw Error("the model imports domain " + domain_label(domain) + " at opset " +
                    std::to_string(version) + ", which is not a valid opset version");
      }
      auto [it, inserted] = graph_.opsets.emplace(domain, version);
      if (!inserted && it->second != version) {
        throw Error("the model imports domain " + domain_label(domain) + " twice, at opsets " +
                    std::to_string(it->second) + " and " + std::to_string(version));
      }
    }
  }

  // Records where a value name comes from; a second definition is an error naming both.
  void claim(const std::string& name, const std::string& origin) {
    auto [it, inserted] = origins_.emplace(name, origin);
    if (!inserted) {
      throw Error("value '" + name + "' is defined twice: as " + it->second + " and as " + origin);
    }
  }

  void add_constant(const std::string& name, Tensor tensor, const std::string& origin) {
    claim(name, origin);
    graph::Value v;
    v.name = name;
    v.dtype = tensor.dtype();
    v.shape = graph::ValueShape::of(tensor.shape());
    v.constant = std::move(tensor);
    define(std::move(v));
  }

  void add_initializer(const pb::TensorProto& t) {
    if (t.name.empty()) throw Error("the graph has an initializer without a name");
    std::string what = "initializer '" + t.name + "'";
    add_constant(t.name, detail::tensor_from_proto(t, what, base_dir_, budget_), what);
  }

  void add_input(const pb::ValueInfoProto& in) {
    if (in.name.empty()) throw Error("the graph has an input without a name");
    auto it = origins_.find(in.name);
    // Exporters before IR 4 list every initializer as an input too: those are constants, not runtime inputs.
    if (it != origins_.end() && it->second.rfind("initializer", 0) == 0) return;
    std::string what = "graph input '" + in.name + "'";
    claim(in.name, what);
    graph::Value v;
    v.name = in.name;
    if (std::optional<std::string> problem = read_declared_type(in, v)) {
      // A Loop or Scan body may leave its inputs' types to the node's inputs (ONNX's Range function does).
      const size_t index = scopes_.empty() ? 0 : scopes_.back().inputs.size();
      const bool untyped = *problem == "has no type" || *problem == "has no element type";
      if (!untyped || scopes_.empty() || index >= scopes_.back().input_types.size() ||
          !scopes_.back().input_types[index]) {
        throw Error(what + " " + *problem);
      }
      v.dtype = *scopes_.back().input_types[index];
      v.shape = graph::ValueShape{};
    }
    graph::ValueId id = define(std::move(v));
    (scopes_.empty() ? graph_.inputs : scopes_.back().inputs).push_back(id);
  }

  int opset_of(const std::string& domain, const std::string& label) const {
    auto it = graph_.opsets.find(domain);
    if (it == graph_.opsets.end()) {
      throw Error(label + " is in domain '" + domain_label(domain) +
                  "', which the model's opset_import does not list");
    }
    return static_cast<int>(it->second);
  }

  void add_node(const pb::NodeProto& n, size_t index) {
    std::string name = n.name.empty() ? "<unnamed #" + std::to_string(index) + ">" : n.name;
    std::string label = "node '" + name + "' (" + n.op_type + ")";
    if (n.op_type.empty()) throw Error("node '" + name + "' has no op_type");
    std::string domain = normalise_domain(n.domain);
    int opset = opset_of(domain, label);
    if (domain.empty() && n.op_type == "Constant") {
      add_constant_node(n, label);
      return;
    }
    Pending p;
    ops::NodeInfo& info = p.node.info;
    info.name = name;
    info.op_type = n.op_type;
    info.domain = domain;
    info.opset = opset;
    label = info.describe();
    import_attributes(n, label, p);
    if (local_functions_.count(domain + ":" + n.op_type)) {
      p.unsupported.push_back("calls the model-local function " + domain_label(domain) + ":" + n.op_type +
                              ", which wgi does not inline");
    }
    for (const std::string& in : n.input) {
      info.input_names.push_back(in);
      p.input_names.push_back(in);
    }
    for (size_t o = 0; o < n.output.size(); ++o) {
      const std::string& out = n.output[o];
      info.output_names.push_back(out);
      if (out.empty()) {  // an optional output the model does not use
        p.node.outputs.push_back(graph::kNoValue);
        continue;
      }
      claim(out, "output " + std::to_string(o) + " of " + label);
      graph::Value v;
      v.name = out;
      v.producer = static_cast<int32_t>(pending_.size());
      p.node.outputs.push_back(define(std::move(v)));
    }
    pending_.push_back(std::move(p));
  }

  void add_constant_node(const pb::NodeProto& n, const std::string& label) {
    if (n.output.size() != 1 || n.output[0].empty()) {
      throw Error(label + " must have exactly one named output, has " + std::to_string(n.output.size()));
    }
    if (!n.input.empty()) {
      throw Error(label + " must have no inputs, has " + std::to_string(n.input.size()));
    }
    if (n.attribute.size() != 1) {
      throw Error(label +
                  " must have exactly one of the attributes value, value_float, value_floats, value_int, " +
                  "value_ints; it has " + std::to_string(n.attribute.size()) + " attributes");
    }
    const pb::AttributeProto& a = n.attribute[0];
    const std::string& form = a.name;
    std::string what = "attribute '" + form + "' of " + label;
    if (!a.ref_attr_name.empty()) throw Error(what + " refers to a function attribute outside a function");
    Tensor t;
    if (form == "value") {
      if (!a.t) throw Error(what + " holds no tensor");
      t = detail::tensor_from_proto(*a.t, what, base_dir_, budget_);
    } else if (form == "value_float") {
      if (!a.f) throw Error(what + " holds no float");
      t = Tensor::from_vector<float>({}, {*a.f});
    } else if (form == "value_int") {
      if (!a.i) throw Error(what + " holds no int");
      t = Tensor::from_vector<int64_t>({}, {*a.i});
    } else if (form == "value_floats") {
      t = Tensor::from_vector<float>({static_cast<int64_t>(a.floats.size())}, a.floats);
    } else if (form == "value_ints") {
      t = Tensor::from_vector<int64_t>({static_cast<int64_t>(a.ints.size())}, a.ints);
    } else if (form == "value_string" || form == "value_strings") {
      throw Error(label + " holds strings (" + form + "); wgi supports numeric tensors only");
    } else if (form == "sparse_value") {
      throw Error(label + " holds a sparse tensor (sparse_value), which wgi does not support");
    } else {
      throw Error(label + " has the attribute '" + form + "'; expected value, value_float, value_floats, " +
                  "value_int or value_ints");
    }
    if (form != "value") budget_.take(t.byte_size(), what);
    add_constant(n.output[0], std::move(t), "output of " + label);
  }

  void import_attributes(const pb::NodeProto& n, const std::string& label, Pending& p) {
    ops::Attributes& attrs = p.node.info.attributes;
    for (const pb::AttributeProto& a : n.attribute) {
      const std::string& name = a.name;
      if (name.empty()) throw Error(label + " has an attribute without a name");
      std::string what = "attribute '" + name + "' of " + label;
      if (name == kUnsupportedReasonAttribute)
        throw Error(label + " uses the attribute name wgi reserves: " + name);
      if (attrs.has(name)) throw Error(label + " has the attribute '" + name + "' twice");
      if (!a.ref_attr_name.empty()) {
        throw Error(what + " refers to the function attribute '" + a.ref_attr_name +
                    "', which is only valid inside a function body");
      }
      using Type = pb::AttributeType;
      Type type = attribute_type(a, what);
      switch (type) {
        // A field the type names but the file leaves out reads as its default, as protobuf's accessors do.
        case Type::Float:
          attrs.set(name, a.f.value_or(0.0f));
          break;
        case Type::Int:
          attrs.set(name, a.i.value_or(0));
          break;
        case Type::String:
          attrs.set(name, a.s.value_or(std::string()));
          break;
        case Type::Floats:
          attrs.set(name, a.floats);
          break;
        case Type::Ints:
          attrs.set(name, a.ints);
          break;
        case Type::Strings:
          attrs.set(name, a.strings);
          break;
        case Type::Tensor: {
          if (!a.t) throw Error(what + " is of type TENSOR but holds no tensor");
          int32_t data_type = a.t->data_type.value_or(0);
          if (data_type != static_cast<int32_t>(pb::DataType::Undefined) && !dtype_from_onnx(data_type)) {
            p.unsupported.push_back("dtype unsupported: attribute '" + name + "' holds a " +
                                    onnx_dtype_name(data_type) + " tensor" +
                                    detail::unsupported_dtype_reason(data_type));
            break;
          }
          attrs.set(name, detail::tensor_from_proto(*a.t, what, base_dir_, budget_));
          break;
        }
        case Type::Graph:
        case Type::Graphs:
          add_subgraph_attribute(a, type, what, p);
          break;
        case Type::SparseTensor:
        case Type::SparseTensors:
        case Type::Tensors:
        case Type::TypeProto:
        case Type::TypeProtos:
          p.unsupported.push_back("attribute '" + name + "' is of kind " +
                                  std::string(pb::attribute_type_name(type)) +
                                  ", which wgi does not support");
          break;
        default:
          throw Error(what + " has an unknown type " + std::to_string(static_cast<int>(type)));
      }
    }
    const ops::NodeInfo& info = p.node.info;
    if (const char* key = dtype_attribute_of(info.domain, info.op_type)) {
      auto it = attrs.all().find(key);
      if (it != attrs.all().end()) {
        if (const int64_t* to = std::get_if<int64_t>(&it->second); to && !dtype_from_onnx(*to)) {
          p.unsupported.push_back("dtype unsupported: attribute '" + std::string(key) + "' asks for " +
                                  onnx_dtype_name(*to) + detail::unsupported_dtype_reason(*to));
        }
      }
    }
  }

  void resolve_node_inputs() {
    for (Pending& p : pending_) {
      for (size_t i = 0; i < p.input_names.size(); ++i) {
        const std::string& in = p.input_names[i];
        if (in.empty()) {  // an optional input the model does not give
          p.node.inputs.push_back(graph::kNoValue);
          continue;
        }
        graph::ValueId id = resolve(in);
        if (id == graph::kNoValue) {
          throw Error(p.node.info.describe() + " reads '" + in + "' as input " + std::to_string(i) +
                      ", but no graph input, initializer or node output " +
                      (scopes_.empty() ? "" : "of this subgraph or an enclosing graph ") + "has that name");
        }
        p.node.inputs.push_back(id);
      }
      import_subgraphs(p);
    }
  }

  // A declared type (value_info, graph output) of a node's output: fills its dtype and shape, and records an
  // element type wgi lacks on the producing node.
  void apply_declared_type(const pb::ValueInfoProto& info, const char* kind) {
    graph::ValueId id = find_in_scope(info.name);
    if (id == graph::kNoValue) return;  // value_info for a value the graph does not have: harmless
    graph::Value& v = graph_.value(id);
    if (v.producer < 0) return;  // inputs and constants have their types already
    graph::Value declared = v;
    std::optional<std::string> problem = read_declared_type(info, declared);
    if (!problem) {
      check_declared_if_output(pending_[static_cast<size_t>(v.producer)], id, info);
      v.dtype = declared.dtype;
      v.shape = std::move(declared.shape);
    } else if (*problem != "has no type" && *problem != "has no element type") {
      pending_[static_cast<size_t>(v.producer)].unsupported.push_back(
          (problem->rfind("has element type", 0) == 0 ? "dtype unsupported: " : "") + std::string(kind) +
          " '" + info.name + "' " + *problem);
    }
  }

  void add_outputs() {
    std::set<std::string> seen;
    for (const pb::ValueInfoProto& out : model_.graph->output) {
      if (out.name.empty()) throw Error("the graph has an output without a name");
      if (!seen.insert(out.name).second) throw Error("graph output '" + out.name + "' is listed twice");
      graph::ValueId id = graph_.find(out.name);
      if (id == graph::kNoValue) {
        throw Error("graph output '" + out.name +
                    "' is not a graph input, an initializer or any node's output");
      }
      apply_declared_type(out, "graph output");
      graph_.outputs.push_back(id);
    }
    if (graph_.outputs.empty()) throw Error("the graph has no outputs");
  }

  const pb::ModelProto& model_;
  fs::path base_dir_;
  ConstantBudget budget_;
  graph::Graph graph_;
  std::unordered_map<std::string, std::string> origins_;  // value name -> "initializer 'w'", ...
  std::unordered_set<std::string> local_functions_;       // "domain:name"
  std::vector<Pending> pending_;                          // nodes in file order

  // ---- Subgraphs (graph-valued attributes): each is a scope of its own, its values in graph_'s table. ----

  struct Scope {
    std::string path;  // "If 'if_0' / then_branch", for messages
    std::unordered_map<std::string, graph::ValueId> names;
    std::vector<graph::ValueId> inputs;
    std::vector<std::optional<DType>> input_types;  // per formal input: its type when the body declares none
  };
  // An error raised inside a subgraph, already prefixed with its path: enclosing scopes pass it on unchanged.
  struct SubgraphError : Error {
    using Error::Error;
  };

  // Adds a value of the scope being imported: the main graph's values are found by name in graph_, a
  // subgraph's in its scope (where they may shadow names of enclosing scopes).
  graph::ValueId define(graph::Value v) {
    if (scopes_.empty()) return graph_.add_value(std::move(v));
    std::string name = v.name;
    graph::ValueId id = graph_.add_scoped_value(std::move(v));
    scopes_.back().names[name] = id;
    return id;
  }
  graph::ValueId find_in_scope(const std::string& name) const {
    if (scopes_.empty()) return graph_.find(name);
    auto it = scopes_.back().names.find(name);
    return it == scopes_.back().names.end() ? graph::kNoValue : it->second;
  }
  // The innermost value of this name visible from the scope being imported.
  graph::ValueId resolve(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->names.find(name);
      if (it != scope->names.end()) return it->second;
    }
    return graph_.find(name);
  }

  void add_subgraph_attribute(const pb::AttributeProto& a, pb::AttributeType type, const std::string& what,
                              Pending& p) {
    if (type == pb::AttributeType::Graph) {
      if (!a.g) throw Error(what + " is of type GRAPH but holds no graph");
      p.subgraph_protos.emplace_back(a.name, a.g.get());
      return;
    }
    for (size_t i = 0; i < a.graphs.size(); ++i)
      p.subgraph_protos.emplace_back(a.name + "[" + std::to_string(i) + "]", &a.graphs[i]);
  }

  void import_subgraphs(Pending& p) {
    if (p.subgraph_protos.empty()) return;
    const ops::NodeInfo& info = p.node.info;
    const std::string owner =
        (scopes_.empty() ? "" : scopes_.back().path + " / ") + info.op_type + " '" + info.name + "'";
    for (const auto& [attribute, proto] : p.subgraph_protos)
      p.node.subgraphs.push_back(import_subgraph(*proto, attribute, owner, body_input_types(p, attribute)));
    graph::set_outer_reads(graph_, p.node);
    if (info.domain.empty() && info.op_type == "If") check_if_branches(p);
  }

  // The types a Loop's or Scan's body inputs take from the node: Loop's iteration number (int64), condition
  // (bool) and loop-carried values; Scan's states and scan slices (opset 8 has sequence_lens first).
  std::vector<std::optional<DType>> body_input_types(const Pending& p, const std::string& attribute) const {
    const ops::NodeInfo& info = p.node.info;
    std::vector<std::optional<DType>> types;
    if (!info.domain.empty() || attribute != "body" || (info.op_type != "Loop" && info.op_type != "Scan"))
      return types;
    size_t first = 0;
    if (info.op_type == "Loop") {
      types = {DType::Int64, DType::Bool};
      first = 2;
    } else if (info.opset < 9) {
      first = 1;
    }
    for (size_t i = first; i < p.node.inputs.size(); ++i) {
      const graph::ValueId v = p.node.inputs[i];
      types.push_back(v == graph::kNoValue ? std::nullopt : std::optional<DType>(graph_.value(v).dtype));
    }
    return types;
  }

  graph::Subgraph import_subgraph(const pb::GraphProto& g, const std::string& attribute,
                                  const std::string& owner,
                                  std::vector<std::optional<DType>> input_types = {}) {
    graph::Subgraph sub;
    sub.attribute = attribute;
    sub.name = g.name;
    scopes_.push_back(Scope{owner + " / " + attribute, {}, {}, std::move(input_types)});
    std::unordered_map<std::string, std::string> outer_origins = std::exchange(origins_, {});
    std::vector<Pending> outer_pending = std::exchange(pending_, {});
    try {
      check_graph_size(g);  // the same caps as the main graph
      if (!g.sparse_initializer.empty()) throw Error("sparse initializers are not supported");
      for (const pb::TensorProto& t : g.initializer) add_initializer(t);
      for (const pb::ValueInfoProto& in : g.input) add_input(in);
      for (size_t i = 0; i < g.node.size(); ++i) add_node(g.node[i], i);
      resolve_node_inputs();
      for (const pb::ValueInfoProto& info : g.value_info) apply_declared_type(info, "value_info entry");
      for (const pb::ValueInfoProto& out : g.output) {
        if (out.name.empty()) throw Error("the subgraph has an output without a name");
        graph::ValueId id = resolve(out.name);
        if (id == graph::kNoValue) {
          throw Error("subgraph output '" + out.name +
                      "' is no value of this subgraph or an enclosing graph");
        }
        apply_declared_type(out, "subgraph output");
        sub.outputs.push_back(id);
      }
      for (Pending& n : pending_) {
        if (!n.unsupported.empty()) {
          std::string reason;
          for (const std::string& r : n.unsupported) reason += (reason.empty() ? "" : "; ") + r;
          n.node.info.attributes.set(std::string(kUnsupportedReasonAttribute), reason);
        }
        sub.nodes.push_back(std::move(n.node));
      }
    } catch (const SubgraphError&) {
      throw;
    } catch (const Error& e) {
      throw SubgraphError(scopes_.back().path + ": " + e.what());
    }
    sub.inputs = std::move(scopes_.back().inputs);
    scopes_.pop_back();
    origins_ = std::move(outer_origins);
    pending_ = std::move(outer_pending);
    return sub;
  }

  // If's two branches must give what the node declares: as many outputs as it has, of the same element types
  // where both declare them (shapes may differ from opset 11 on).
  void check_if_branches(Pending& p) {
    const graph::Node& node = p.node;
    const std::string label = node.info.describe();
    const pb::GraphProto* branch[2] = {nullptr, nullptr};
    for (const auto& [attribute, proto] : p.subgraph_protos) {
      if (attribute == "then_branch") branch[0] = proto;
      if (attribute == "else_branch") branch[1] = proto;
    }
    if (!branch[0] || !branch[1])
      throw Error(label + " needs both graph attributes then_branch and else_branch");
    if (node.op_input_count() != 1) {
      throw Error(label + " has " + std::to_string(node.op_input_count()) + " inputs; If takes one, cond");
    }
    for (int b = 0; b < 2; ++b) {
      if (branch[b]->output.size() != node.outputs.size()) {
        throw Error(label + ": " + (b ? "else_branch" : "then_branch") + " has " +
                    std::to_string(branch[b]->output.size()) + " outputs, but the node has " +
                    std::to_string(node.outputs.size()));
      }
    }
    auto elem_type = [](const pb::ValueInfoProto& info) -> int32_t {
      if (!info.type || info.type->value_case != pb::TypeProto::ValueCase::TensorType) return 0;
      return info.type->tensor_type.elem_type.value_or(0);
    };
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int32_t then_type = elem_type(branch[0]->output[o]), else_type = elem_type(branch[1]->output[o]);
      if (then_type != 0 && else_type != 0 && then_type != else_type) {
        throw Error(label + ": output " + std::to_string(o) + " is " + onnx_dtype_name(then_type) +
                    " in then_branch ('" + branch[0]->output[o].name + "') but " +
                    onnx_dtype_name(else_type) + " in else_branch ('" + branch[1]->output[o].name + "')");
      }
      p.if_output_types.push_back(then_type != 0 ? then_type : else_type);
    }
  }

  // An If's output declared (value_info, graph output) of another element type than its branches give.
  static void check_declared_if_output(const Pending& p, graph::ValueId id, const pb::ValueInfoProto& info) {
    for (size_t o = 0; o < p.if_output_types.size(); ++o) {
      const int32_t declared = info.type->tensor_type.elem_type.value_or(0);
      if (p.node.outputs[o] != id || p.if_output_types[o] == 0 || declared == p.if_output_types[o]) continue;
      throw Error(p.node.info.describe() + ": output " + std::to_string(o) + " '" + info.name +
                  "' is declared " + onnx_dtype_name(declared) + ", but its branches give " +
                  onnx_dtype_name(p.if_output_types[o]));
    }
  }

  // Sorts every subgraph's nodes topologically (nested ones too), as the importer sorts the main graph.
  static void sort_subgraphs(graph::Graph& g) {
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (size_t s = 0; s < g.nodes[n].subgraphs.size(); ++s) g.edit_subgraph(g.nodes[n], s, sort_subgraphs);
    }
  }

  std::vector<Scope> scopes_;  // the subgraphs being imported, innermost last
};

}  // namespace

graph::Graph import_model(std::span<const std::byte> model_bytes, const fs::path& base_dir,
                          const ImportOptions& options) {
  try {
    pb::ModelProto model = parse_model(model_bytes, options);
    return Importer(model, base_dir, options).run();
  } catch (const Error& e) {
    // Messages quote the model's names: escape what is not printable and cut long lines, in one place.
    throw Error(printable_message(e.what()));
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while importing the model (" + std::to_string(model_bytes.size()) + " bytes)");
  }
}

graph::Graph import_model_file(const fs::path& path, const ImportOptions& options) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw Error("model file '" + path.string() + "' does not exist");
  if (!fs::is_regular_file(status)) throw Error("model path '" + path.string() + "' is not a regular file");
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error("cannot read the size of model file '" + path.string() + "': " + ec.message());
  if (size > options.max_model_bytes) {
    throw Error("model file '" + path.string() + "' is " + std::to_string(size) +
                " bytes, more than ImportOptions::max_model_bytes (" +
                std::to_string(options.max_model_bytes) + ")");
  }
  if constexpr (sizeof(size_t) < sizeof(uint64_t)) {  // a 32-bit host (wasm32)
    if (size > std::numeric_limits<size_t>::max()) {
      throw Error("model file '" + path.string() + "' is " + std::to_string(size) +
                  " bytes, more than this process can address; save the weights as external data");
    }
  }
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open model file '" + path.string() + "'");
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in || static_cast<uint64_t>(in.gcount()) != size) {
    throw Error("reading model file '" + path.string() + "' failed");
  }
  fs::path base_dir = path.parent_path();
  if (base_dir.empty()) base_dir = ".";
  try {
    return import_model(bytes, base_dir, options);
  } catch (const Error& e) {
    throw Error(printable(path.filename().string()) + ": " + e.what());
  }
}

}  // namespace wgi::onnx
