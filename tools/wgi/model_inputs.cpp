#include "model_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <span>

#include "core/npy.h"
#include "runtime/device_tensor.h"
#include "wgi/printable.h"

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

// The float16 bits of v, which must be exactly representable (|v| <= 1, a multiple of 2^-11 here).
uint16_t half_bits_of_exact(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int biased = e - 1 + 15;
  if (biased <= 0) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));
  return static_cast<uint16_t>(sign | (biased << 10) | static_cast<uint16_t>((2 * m - 1) * 1024));
}

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string names;
  for (const auto& i : infos) names += (names.empty() ? "'" : ", '") + printable(i.name) + "'";
  return names;
}

// The shape a random input gets: declared dims, symbolic ones from --dim. Names every dim it cannot size.
Shape random_input_shape(const TensorInfo& info, const std::map<std::string, int64_t>& dims) {
  if (!info.rank_known) {
    throw Error("input '" + printable(info.name) +
                "' has no declared shape (not even a rank), so --random-inputs cannot make it: give it with "
                "--input " +
                printable(info.name) + "=FILE.npy");
  }
  Shape shape;
  std::vector<std::string> problems;
  for (size_t d = 0; d < info.dims.size(); ++d) {
    if (info.dims[d] >= 0) {
      shape.push_back(info.dims[d]);
      continue;
    }
    const std::string& name = info.dim_names[d];
    auto it = dims.find(name);
    if (!name.empty() && it != dims.end()) {
      shape.push_back(it->second);
    } else if (!name.empty()) {
      problems.push_back("dim " + std::to_string(d) + " is '" + printable(name) + "': give --dim " +
                         printable(name) + "=VALUE");
    } else {
      problems.push_back("dim " + std::to_string(d) + " is unknown and has no name, so no --dim can size it");
    }
  }
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
    throw Error("input '" + printable(info.name) + "' " + list + " (or give the input with --input)");
  }
  return shape;
}

}  // namespace

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--dim '" + printable(d) + "': expected NAME=VALUE");
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(d.substr(eq + 1), &used);
      if (used != d.size() - eq - 1 || v < 0) throw std::invalid_argument("bad");
    } catch (const std::exception&) {
      throw Error("--dim '" + printable(d) + "': VALUE must be a non-negative integer below 2^63");
    }
    if (!out.emplace(d.substr(0, eq), v).second) {
      throw Error("--dim " + printable(d.substr(0, eq)) + " is given twice");
    }
  }
  return out;
}

void warn_unknown_dims(const std::map<std::string, int64_t>& dims,
                       const std::vector<TensorInfo>& model_inputs) {
  std::set<std::string> known;
  for (const TensorInfo& info : model_inputs) {
    for (const std::string& name : info.dim_names) {
      if (!name.empty()) known.insert(name);
    }
  }
  for (const auto& [name, value] : dims) {
    if (known.count(name)) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + printable(k);
    std::cerr << "wgi: warning: --dim " << printable(name) << ": no input of the model has a dim named '"
              << printable(name) << "' ("
              << (known.empty() ? std::string("its inputs have no named dims") : "its dims: " + list)
              << "); ignored\n";
  }
}

std::map<std::string, Tensor> make_inputs(const std::vector<TensorInfo>& model_inputs, const InputSpec& spec,
                                          uint64_t max_buffer_bytes) {
  const auto dims = parse_dims(spec.dims);
  warn_unknown_dims(dims, model_inputs);
  std::map<std::string, Tensor> out;
  for (const std::string& f : spec.files) {
    size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error("--input '" + printable(f) + "': expected NAME=FILE.npy");
    }
    std::string name = f.substr(0, eq);
    bool known = std::any_of(model_inputs.begin(), model_inputs.end(),
                             [&](const TensorInfo& i) { return i.name == name; });
    if (!known) {
      throw Error("--input '" + printable(f) + "': the model has no input '" + printable(name) +
                  "' (its inputs: " + names_of(model_inputs) + ")");
    }
    if (out.count(name)) throw Error("--input " + printable(name) + " is given twice");
    out[name] = npy::load(f.substr(eq + 1));
  }
  std::vector<std::string> missing;
  std::mt19937_64 rng(spec.random_seed.value_or(0));
  for (const TensorInfo& info : model_inputs) {
    if (out.count(info.name)) continue;
    if (!spec.random_seed) {
      missing.push_back(printable(info.name));
      continue;
    }
    const Shape shape = random_input_shape(info, dims);
    // The device limit first: a shape the device cannot hold is refused before its host memory exists.
    const uint64_t count = static_cast<uint64_t>(element_count(shape));  // throws past int64
    // Every element takes at least a byte, so a count past the limit is refused before its bytes overflow.
    const uint64_t bytes = count > max_buffer_bytes ? count : runtime::device_byte_size({info.dtype, shape});
    if (max_buffer_bytes && bytes > max_buffer_bytes) {
      throw Error("input '" + printable(info.name) + "' " + shape_to_string(shape) + " " +
                  std::string(dtype_name(info.dtype)) + " needs " +
                  (count > max_buffer_bytes ? "at least " + std::to_string(count) : std::to_string(bytes)) +
                  " bytes on the device, more than one GPU buffer may hold (maxBufferSize " +
                  std::to_string(max_buffer_bytes) + ")");
    }
    Tensor t(info.dtype, shape);
    // float16: uniform over the multiples of 2^-11 in [-1, 1), every one of them exact in float16.
    auto uniform = [&rng] { return static_cast<double>(static_cast<int64_t>(rng() >> 52) - 2048) / 2048.0; };
    if (info.dtype == DType::Float32) {
      for (float& v : t.data<float>())
        v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 * 2.0 - 1.0);
    } else if (info.dtype == DType::Float16) {
      std::span<std::byte> b = t.bytes();
      for (size_t i = 0; i + 1 < b.size(); i += 2) {
        const uint16_t h = half_bits_of_exact(uniform());
        b[i] = static_cast<std::byte>(h & 0xff);
        b[i + 1] = static_cast<std::byte>(h >> 8);
      }
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
