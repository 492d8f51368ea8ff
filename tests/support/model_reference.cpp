#include "support/model_reference.h"

#include <cmath>
#include <cstring>

#include "core/npy.h"

namespace wgi::test {

Float64Array load_float64_npy(const std::filesystem::path& path) {
  std::string bytes = npy::read_file(path);
  npy::ArrayHeader header = npy::parse_header(bytes, path.string());
  Float64Array out{header.shape, {}};
  const size_t n = static_cast<size_t>(element_count(header.shape));
  const char* data = bytes.data() + header.data_offset;
  if (header.descr == "<f8" && bytes.size() >= header.data_offset + 8 * n) {
    out.values.resize(n);
    std::memcpy(out.values.data(), data, 8 * n);
  } else if (header.descr == "<f4" && bytes.size() >= header.data_offset + 4 * n) {
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      out.values.push_back(v);
    }
  } else {
    throw Error(path.string() + ": expected a float64 or float32 .npy, found '" + header.descr + "'");
  }
  return out;
}

::testing::AssertionResult close_in_l2(const Tensor& got, const Float64Array& want, double max_relative_l2) {
  if (got.shape() != want.shape) {
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(got.shape()) << ", expected " << shape_to_string(want.shape);
  }
  if (got.dtype() != DType::Float32) return ::testing::AssertionFailure() << "output is not float32";
  auto g = got.data<float>();
  double diff2 = 0, ref2 = 0, max_abs = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double d = static_cast<double>(g[i]) - want.values[i];
    if (std::isnan(d)) return ::testing::AssertionFailure() << "NaN at element " << i;
    diff2 += d * d;
    ref2 += want.values[i] * want.values[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  double rel = std::sqrt(diff2 / std::max(ref2, 1e-300));
  auto result = rel <= max_relative_l2 ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
  return result << "relative L2 error " << rel << " (limit " << max_relative_l2 << "), max abs error "
                << max_abs;
}

}  // namespace wgi::test
