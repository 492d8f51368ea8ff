// The one op registry: (domain, op type, opset range) -> handler. The ONNX importer asks it whether a node is
// supported, so a model either fails at load with the complete list of unsupported nodes, or runs.
#pragma once

#include <climits>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op.h"

namespace wgi::ops {

inline constexpr int kLatestOpset = INT_MAX;

class OpRegistry {
 public:
  struct Entry {
    std::string domain;  // normalised: "" for ai.onnx
    std::string op_type;
    int since_version;
    int until_version;  // inclusive; kLatestOpset for "and later"
    OpHandler handler;
    std::string site;  // file:line of the registration
  };

  // Registers a handler for opsets since..until of an op. A second registration whose opset range overlaps an
  // existing one for the same op throws wgi::Error naming both registration sites.
  void add(std::string_view domain, std::string_view op_type, int since_version, int until_version,
           OpHandler handler, std::source_location where = std::source_location::current());

  const Entry* find(std::string_view domain, std::string_view op_type, int opset) const;
  // nullopt when supported; otherwise why not ("no handler for op 'X'", "registered for opsets 7-12 only").
  std::optional<std::string> unsupported_reason(std::string_view domain, std::string_view op_type,
                                                int opset) const;
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// The registry with every op wgi ships, built on first use.
const OpRegistry& builtin_registry();

// Adds every built-in op family to `registry` (each family's register_* function).
void register_builtin_ops(OpRegistry& registry);

}  // namespace wgi::ops
