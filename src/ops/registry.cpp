#include "ops/registry.h"

#include <filesystem>

#include "ops/families.h"
#include "ops/float16.h"

namespace wgi::ops {

namespace {

std::string normalise_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

std::string domain_label(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

std::string range_label(int since, int until) {
  if (until == kLatestOpset) return std::to_string(since) + "+";
  return std::to_string(since) + "-" + std::to_string(until);
}

}  // namespace

void OpRegistry::add(std::string_view domain, std::string_view op_type, int since_version, int until_version,
                     OpHandler handler, std::source_location where) {
  std::string site =
      std::filesystem::path(where.file_name()).filename().string() + ":" + std::to_string(where.line());
  std::string dom = normalise_domain(domain);
  if (since_version < 1 || until_version < since_version) {
    throw Error("op registration " + std::string(op_type) + " at " + site + ": bad opset range " +
                range_label(since_version, until_version));
  }
  if (!handler.plan)
    throw Error("op registration " + std::string(op_type) + " at " + site + " has no plan function");
  for (const Entry& e : entries_) {
    if (e.domain == dom && e.op_type == op_type && since_version <= e.until_version &&
        e.since_version <= until_version) {
      throw Error("op " + std::string(op_type) + " (domain " + domain_label(dom) +
                  ") registered twice: opsets " + range_label(e.since_version, e.until_version) + " at " +
                  e.site + " and opsets " + range_label(since_version, until_version) + " at " + site);
    }
  }
  // Every op takes float16 through float32 unless it says otherwise (ops/float16.h).
  entries_.push_back(
      {dom, std::string(op_type), since_version, until_version, with_float16(std::move(handler)), site});
}

const OpRegistry::Entry* OpRegistry::find(std::string_view domain, std::string_view op_type,
                                          int opset) const {
  std::string dom = normalise_domain(domain);
  for (const Entry& e : entries_) {
    if (e.domain == dom && e.op_type == op_type && e.since_version <= opset && opset <= e.until_version)
      return &e;
  }
  return nullptr;
}

std::optional<std::string> OpRegistry::unsupported_reason(std::string_view domain, std::string_view op_type,
                                                          int opset) const {
  if (find(domain, op_type, opset)) return std::nullopt;
  std::string dom = normalise_domain(domain);
  std::string ranges;
  for (const Entry& e : entries_) {
    if (e.domain == dom && e.op_type == op_type) {
      ranges += (ranges.empty() ? "" : ", ") + range_label(e.since_version, e.until_version);
    }
  }
  if (ranges.empty())
    return "op missing: wgi has no " + std::string(op_type) + " in domain " + domain_label(dom);
  return "opset " + std::to_string(opset) + " unsupported: wgi implements " + std::string(op_type) +
         " for opsets " + ranges;
}

const OpRegistry& builtin_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_builtin_ops(r);
    return r;
  }();
  return registry;
}

void register_builtin_ops(OpRegistry& registry) {
  for (auto* register_family : kOpFamilies) register_family(registry);
}

}  // namespace wgi::ops
