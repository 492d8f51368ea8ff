#include "model_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "core/npy.h"

namespace wgi::cli {

namespace {

double half_to_double(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

}  // namespace

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--dim '" + d + "': expected NAME=VALUE");
    try {
      size_t used = 0;
      int64_t v = std::stoll(d.substr(eq + 1), &used);
      if (used != d.size() - eq - 1 || v < 0) throw std::invalid_argument("bad");
      out[d.substr(0, eq)] = v;
    } catch (const std::exception&) {
      throw Error("--dim '" + d + "': VALUE must be a non-negative integer");
    }
  }
  return out;
}

std::map<std::string, Tensor> make_inputs(const std::vector<TensorInfo>& model_inputs,
                                          const InputSpec& spec) {
  std::map<std::string, Tensor> out;
  for (const std::string& f : spec.files) {
    size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--input '" + f + "': expected NAME=FILE.npy");
    std::string name = f.substr(0, eq);
    bool known = std::any_of(model_inputs.begin(), model_inputs.end(),
                             [&](const TensorInfo& i) { return i.name == name; });
    if (!known) {
      std::string names;
      for (const auto& i : model_inputs) names += (names.empty() ? "" : ", ") + i.name;
      throw Error("--input '" + f + "': the model has no input '" + name + "' (its inputs: " + names + ")");
    }
    out[name] = npy::load(f.substr(eq + 1));
  }
  const auto dims = parse_dims(spec.dims);
  std::vector<std::string> missing;
  std::mt19937_64 rng(spec.random_seed.value_or(0));
  for (const TensorInfo& info : model_inputs) {
    if (out.count(info.name)) continue;
    if (!spec.random_seed) {
      missing.push_back(info.name);
      continue;
    }
    Shape shape;
    for (size_t d = 0; d < info.dims.size(); ++d) {
      if (info.dims[d] >= 0) {
        shape.push_back(info.dims[d]);
        continue;
      }
      auto it = dims.find(info.dim_names[d]);
      if (info.dim_names[d].empty() || it == dims.end()) {
        throw Error("input '" + info.name + "' dim " + std::to_string(d) + " is " +
                    (info.dim_names[d].empty() ? std::string("unknown") : "'" + info.dim_names[d] + "'") +
                    ": give its size with --dim " + (info.dim_names[d].empty() ? "NAME" : info.dim_names[d]) +
                    "=VALUE or the input with --input");
      }
      shape.push_back(it->second);
    }
    Tensor t(info.dtype, shape);
    if (info.dtype == DType::Float32) {
      for (float& v : t.data<float>())
        v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
    out[info.name] = std::move(t);
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw Error("no value for input(s) " + list + ": give --input NAME=FILE.npy or --random-inputs SEED");
  }
  return out;
}

std::string summarize(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape());
  if (t.element_count() == 0) return s;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  auto add = [&](double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  };
  switch (t.dtype()) {
    case DType::Float32:
      for (float v : t.data<float>()) add(v);
      break;
    case DType::Int64:
      for (int64_t v : t.data<int64_t>()) add(static_cast<double>(v));
      break;
    case DType::Int32:
      for (int32_t v : t.data<int32_t>()) add(v);
      break;
    case DType::Float16:
      for (size_t i = 0; i < t.byte_size(); i += 2) {
        uint16_t h = static_cast<uint16_t>(static_cast<unsigned>(t.bytes()[i]) |
                                           (static_cast<unsigned>(t.bytes()[i + 1]) << 8));
        add(half_to_double(h));
      }
      break;
    case DType::Int8:
      for (std::byte b : t.bytes()) add(static_cast<double>(static_cast<int8_t>(b)));
      break;
    case DType::UInt8:
    case DType::Bool:
      for (std::byte b : t.bytes()) add(static_cast<double>(static_cast<uint8_t>(b)));
      break;
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, ", min %.6g, max %.6g, mean %.6g", lo, hi,
                sum / static_cast<double>(t.element_count()));
  return s + buf;
}

}  // namespace wgi::cli
