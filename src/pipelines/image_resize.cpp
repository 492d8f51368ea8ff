// PIL's resampling (image_resize.h), step for step as Pillow's Resample.c computes it: coefficients in
// double, normalised to sum 1, then rounded to PRECISION_BITS fixed point; each output byte is the rounded,
// clipped sum of the integer products.
#include "pipelines/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "wgi/error.h"

namespace wgi::pipelines {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

struct Filter {
  double support;
  double (*weight)(double);
};

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double box_filter(double x) {
  return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
}
double bilinear_filter(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}
double hamming_filter(double x) {
  x = std::abs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x *= M_PI;
  return std::sin(x) / x * (0.54 + 0.46 * std::cos(x));
}
double bicubic_filter(double x) {
  constexpr double a = -0.5;  // PIL's choice (Keys' kernel with a = -0.5)
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double lanczos_filter(double x) {
  return x > -3.0 && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

Filter filter_of(Resample r) {
  switch (r) {
    case Resample::Box:
      return {0.5, box_filter};
    case Resample::Bilinear:
      return {1.0, bilinear_filter};
    case Resample::Hamming:
      return {1.0, hamming_filter};
    case Resample::Bicubic:
      return {2.0, bicubic_filter};
    case Resample::Lanczos:
      return {3.0, lanczos_filter};
    case Resample::Nearest:
      break;
  }
  throw Error("image resize: NEAREST is not implemented");
}

// For each output position: the first input index, the count, and `ksize` fixed-point coefficients.
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> k;
};

Coefficients precompute(int in_size, int out_size, const Filter& filter) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter.support * filter_scale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out_size));
  c.count.resize(static_cast<size_t>(out_size));
  c.k.assign(static_cast<size_t>(out_size) * static_cast<size_t>(c.ksize), 0);
  std::vector<double> w(static_cast<size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    // PIL truncates after adding 0.5 (a round for these non-negative values).
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[static_cast<size_t>(x)] = filter.weight((x + xmin - center + 0.5) * ss);
      sum += w[static_cast<size_t>(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = w[static_cast<size_t>(x)];
      if (sum != 0.0) v /= sum;
      const double fixed = v * (1 << kPrecisionBits);
      c.k[static_cast<size_t>(xx) * static_cast<size_t>(c.ksize) + static_cast<size_t>(x)] =
          static_cast<int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return c;
}

uint8_t clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// One pass along x (horizontal) or y: out has out_w x out_h pixels, each the weighted sum of `in`'s pixels
// along the pass's axis.
Image pass(const Image& in, int out_w, int out_h, bool horizontal, const Coefficients& c, int row_offset) {
  Image out;
  out.width = out_w;
  out.height = out_h;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(out_w) * static_cast<size_t>(out_h) * 3);
  const auto at = [&](int x, int y) {
    return &in.pixels[(static_cast<size_t>(y) * static_cast<size_t>(in.width) + static_cast<size_t>(x)) * 3];
  };
  for (int y = 0; y < out_h; ++y) {
    for (int x = 0; x < out_w; ++x) {
      const int o = horizontal ? x : y;
      const int32_t* k = &c.k[static_cast<size_t>(o) * static_cast<size_t>(c.ksize)];
      const int first = c.first[static_cast<size_t>(o)], count = c.count[static_cast<size_t>(o)];
      int32_t sum[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      for (int i = 0; i < count; ++i) {
        const uint8_t* p = horizontal ? at(first + i, y + row_offset) : at(x, first + i);
        for (int ch = 0; ch < 3; ++ch) sum[ch] += static_cast<int32_t>(p[ch]) * k[i];
      }
      uint8_t* q =
          &out.pixels[(static_cast<size_t>(y) * static_cast<size_t>(out_w) + static_cast<size_t>(x)) * 3];
      for (int ch = 0; ch < 3; ++ch) q[ch] = clip8(sum[ch]);
    }
  }
  return out;
}

}  // namespace

Resample resample_from_code(int code, const std::string& where) {
  if (code >= 1 && code <= 5) return static_cast<Resample>(code);
  throw Error(where + ": resample " + std::to_string(code) +
              (code == 0
                   ? " (NEAREST) is not implemented"
                   : " is not one of PIL's filters (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)"));
}

Image resize_image(const Image& image, int width, int height, Resample resample) {
  if (image.channels != 3) throw Error("image resize: RGB (3 channels) is needed");
  if (width <= 0 || height <= 0 || image.width <= 0 || image.height <= 0) {
    throw Error("image resize: " + std::to_string(image.width) + "x" + std::to_string(image.height) + " to " +
                std::to_string(width) + "x" + std::to_string(height) + ": sizes must be positive");
  }
  if (image.pixels.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3) {
    throw Error("image resize: the pixel buffer does not hold " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + " RGB");
  }
  const Filter filter = filter_of(resample);
  const bool horizontal = width != image.width, vertical = height != image.height;
  if (!horizontal && !vertical) return image;
  const Coefficients ch = precompute(image.width, width, filter);
  const Coefficients cv = precompute(image.height, height, filter);
  Image current = image;
  Coefficients vertical_c = cv;
  if (horizontal) {
    // Only the rows the vertical pass reads (PIL's ybox_first .. ybox_last); their values do not depend on
    // it.
    int first_row = 0, last_row = image.height;
    if (vertical) {
      first_row = cv.first.front();
      last_row = cv.first.back() + cv.count.back();
      for (int& f : vertical_c.first) f -= first_row;
    }
    current = pass(image, width, last_row - first_row, true, ch, first_row);
  }
  if (vertical) current = pass(current, width, height, false, vertical_c, 0);
  return current;
}

}  // namespace wgi::pipelines
