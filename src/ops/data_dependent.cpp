#include "ops/data_dependent.h"

#include <map>
#include <mutex>
#include <string>

namespace wgi::ops {

namespace {

struct Declarations {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, DataDependence, std::less<>> by_op;
};

Declarations& declarations() {
  static Declarations d;
  return d;
}

}  // namespace

void declare_data_dependence(std::string_view domain, std::string_view op_type, DataDependence declaration) {
  Declarations& d = declarations();
  const std::lock_guard lock(d.mutex);
  // The first declaration stays (registries built again declare the same): a pointer handed out is never
  // written to.
  d.by_op.try_emplace({std::string(domain), std::string(op_type)}, std::move(declaration));
}

const DataDependence* data_dependence(const NodeInfo& node) {
  Declarations& d = declarations();
  const std::lock_guard lock(d.mutex);
  auto it = d.by_op.find(std::make_pair(node.domain, node.op_type));
  return it == d.by_op.end() ? nullptr : &it->second;
}

}  // namespace wgi::ops
