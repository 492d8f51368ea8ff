#include "support/reference_sampling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace wgi::test {

namespace {

double reflect(double v, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (v < lo) {
    const double dv = lo - v;
    const double n = std::floor(dv / range), r = dv - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const double dv = v - hi;
    const double n = std::floor(dv / range), r = dv - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return v;
}

std::vector<double> cubic_coefficients(double t) {
  const double a = -0.75;
  auto near = [&](double s) { return ((a + 2) * s - (a + 3)) * s * s + 1; };       // |s| <= 1
  auto far = [&](double s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };  // 1 < |s| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

}  // namespace

std::vector<double> grid_sample_reference(const Tensor& x, const Tensor& grid, const std::string& mode,
                                          const std::string& padding, bool align_corners) {
  const Shape& xs = x.shape();
  const size_t rank = xs.size() - 2;
  const int64_t n_count = xs[0], channels = xs[1];
  std::vector<int64_t> dims(xs.begin() + 2, xs.end());
  int64_t out_spatial = 1;
  for (size_t d = 1; d + 1 < grid.shape().size(); ++d) out_spatial *= grid.shape()[d];
  int64_t in_spatial = 1;
  for (int64_t d : dims) in_spatial *= d;
  auto xv = x.data<float>();
  auto gv = grid.data<float>();
  std::vector<double> lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = align_corners ? 0.0 : -0.5;
    hi[d] = align_corners ? static_cast<double>(dims[d]) - 1 : static_cast<double>(dims[d]) - 0.5;
  }
  std::vector<double> y(static_cast<size_t>(n_count * channels * out_spatial));
  for (int64_t n = 0; n < n_count; ++n) {
    for (int64_t o = 0; o < out_spatial; ++o) {
      // Coordinates per X dim: the grid lists them innermost (width) first.
      std::vector<double> pos(rank);
      for (size_t d = 0; d < rank; ++d) {
        const double g =
            gv[static_cast<size_t>((n * out_spatial + o) * static_cast<int64_t>(rank)) + rank - 1 - d];
        const double size = static_cast<double>(dims[d]);
        double v = align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
        if (mode == "nearest") v = std::nearbyint(v);  // half to even in the default rounding mode
        if (v < lo[d] || v > hi[d]) {
          if (padding == "border") v = std::clamp(v, 0.0, size - 1);
          if (padding == "reflection") v = reflect(v, lo[d], hi[d]);
        }
        pos[d] = v;
      }
      for (int64_t c = 0; c < channels; ++c) {
        const size_t plane = static_cast<size_t>((n * channels + c) * in_spatial);
        // The value at integer index i of dim d, padded, times what the inner dims interpolate.
        std::function<double(size_t, int64_t)> interpolate;
        auto pixel = [&](size_t d, int64_t i, int64_t offset) -> std::optional<int64_t> {
          const int64_t size = dims[d];
          if (i < 0 || i >= size) {
            if (padding == "zeros") return std::nullopt;
            if (padding == "border") i = std::clamp<int64_t>(i, 0, size - 1);
            if (padding == "reflection") {
              i = static_cast<int64_t>(reflect(static_cast<double>(i), lo[d], hi[d]));
            }
          }
          return offset * size + i;
        };
        interpolate = [&](size_t d, int64_t offset) -> double {
          if (d == rank) return xv[plane + static_cast<size_t>(offset)];
          const double v = pos[d];
          std::vector<int64_t> taps;
          std::vector<double> weights;
          if (mode == "nearest") {
            taps = {static_cast<int64_t>(v)};
            weights = {1.0};
          } else {
            const double f = std::floor(v);
            const int64_t f0 = static_cast<int64_t>(f);
            if (mode == "linear") {
              taps = {f0, f0 + 1};
              weights = {1 - (v - f), v - f};
            } else {
              taps = {f0 - 1, f0, f0 + 1, f0 + 2};
              weights = cubic_coefficients(v - f);
            }
          }
          double sum = 0;
          for (size_t k = 0; k < taps.size(); ++k) {
            if (std::optional<int64_t> at = pixel(d, taps[k], offset))
              sum += weights[k] * interpolate(d + 1, *at);
          }
          return sum;
        };
        y[static_cast<size_t>((n * channels + c) * out_spatial + o)] = interpolate(0, 0);
      }
    }
  }
  return y;
}

std::vector<double> roi_align_reference(const Tensor& x, const Tensor& rois, const Tensor& batch_indices,
                                        const std::string& mode, bool half_pixel, int64_t out_h,
                                        int64_t out_w, int64_t sampling_ratio, double spatial_scale) {
  const int64_t channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const int64_t count = rois.shape()[0];
  auto xv = x.data<float>();
  auto rv = rois.data<float>();
  auto bv = batch_indices.data<int64_t>();
  std::vector<double> y(static_cast<size_t>(count * channels * out_h * out_w));
  for (int64_t r = 0; r < count; ++r) {
    const double offset = half_pixel ? 0.5 : 0.0;
    const double start_w = rv[static_cast<size_t>(4 * r)] * spatial_scale - offset;
    const double start_h = rv[static_cast<size_t>(4 * r + 1)] * spatial_scale - offset;
    double roi_w = rv[static_cast<size_t>(4 * r + 2)] * spatial_scale - offset - start_w;
    double roi_h = rv[static_cast<size_t>(4 * r + 3)] * spatial_scale - offset - start_h;
    if (!half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    const int64_t grid_h = sampling_ratio > 0
                               ? sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(out_h)));
    const int64_t grid_w = sampling_ratio > 0
                               ? sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(out_w)));
    for (int64_t c = 0; c < channels; ++c) {
      const size_t plane = static_cast<size_t>((bv[static_cast<size_t>(r)] * channels + c) * height * width);
      auto at = [&](int64_t yy, int64_t xx) {
        return static_cast<double>(xv[plane + static_cast<size_t>(yy * width + xx)]);
      };
      for (int64_t ph = 0; ph < out_h; ++ph) {
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double sum = 0, largest = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double sy = start_h + static_cast<double>(ph) * bin_h +
                          (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              double sx = start_w + static_cast<double>(pw) * bin_w +
                          (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              double value = 0;
              if (!(sy < -1 || sy > static_cast<double>(height) || sx < -1 ||
                    sx > static_cast<double>(width))) {
                sy = std::max(sy, 0.0);
                sx = std::max(sx, 0.0);
                int64_t row0 = static_cast<int64_t>(sy), col0 = static_cast<int64_t>(sx), row1 = row0 + 1,
                        col1 = col0 + 1;
                if (row0 >= height - 1) {
                  row0 = row1 = height - 1;
                  sy = static_cast<double>(row0);
                }
                if (col0 >= width - 1) {
                  col0 = col1 = width - 1;
                  sx = static_cast<double>(col0);
                }
                const double ly = sy - static_cast<double>(row0), lx = sx - static_cast<double>(col0);
                const double corners[4] = {(1 - ly) * (1 - lx) * at(row0, col0),
                                           (1 - ly) * lx * at(row0, col1), ly * (1 - lx) * at(row1, col0),
                                           ly * lx * at(row1, col1)};
                value = mode == "max"
                            ? std::max(std::max(corners[0], corners[1]), std::max(corners[2], corners[3]))
                            : corners[0] + corners[1] + corners[2] + corners[3];
              }
              largest = first ? value : std::max(largest, value);
              first = false;
              sum += value;
            }
          }
          const size_t out = static_cast<size_t>(((r * channels + c) * out_h + ph) * out_w + pw);
          y[out] = mode == "max" ? largest : sum / static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
        }
      }
    }
  }
  return y;
}

}  // namespace wgi::test
