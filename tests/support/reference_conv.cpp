#include "support/reference_conv.h"

#include <algorithm>
#include <stdexcept>

namespace wgi::test {

namespace {

// A rank-3 or rank-4 NCHW tensor seen as rank 4 (1-D data has height 1).
struct View4 {
  int64_t d0, d1, h, w;
};

View4 view4(const Tensor& t) {
  const Shape& s = t.shape();
  if (s.size() == 3) return {s[0], s[1], 1, s[2]};
  if (s.size() == 4) return {s[0], s[1], s[2], s[3]};
  throw std::invalid_argument("conv reference: rank " + std::to_string(s.size()));
}

Shape output_shape(bool one_d, int64_t n, int64_t c, int64_t h, int64_t w) {
  return one_d ? Shape{n, c, w} : Shape{n, c, h, w};
}

void finish(ConvReference& r, const Tensor* b, int64_t channels, int64_t plane,
            const ConvReferenceParams& p) {
  for (size_t i = 0; i < r.values.size(); ++i) {
    double& v = r.values[i];
    if (b) v += b->data<float>()[static_cast<size_t>((static_cast<int64_t>(i) / plane) % channels)];
    v = std::clamp(v, p.lo, p.hi);
  }
}

}  // namespace

ConvReference conv_reference(const Tensor& x, const Tensor& w, const Tensor* b,
                             const ConvReferenceParams& p) {
  const View4 xv = view4(x), wv = view4(w);
  const int64_t n_count = xv.d0, c_in = xv.d1, in_h = xv.h, in_w = xv.w;
  const int64_t c_out = wv.d0, icpg = wv.d1, k_h = wv.h, k_w = wv.w;
  const int64_t ocpg = c_out / p.groups;
  const int64_t out_h = (in_h + p.pads[0] + p.pads[2] - ((k_h - 1) * p.dilations[0] + 1)) / p.strides[0] + 1;
  const int64_t out_w = (in_w + p.pads[1] + p.pads[3] - ((k_w - 1) * p.dilations[1] + 1)) / p.strides[1] + 1;
  ConvReference r;
  r.shape = output_shape(x.rank() == 3, n_count, c_out, out_h, out_w);
  r.values.assign(static_cast<size_t>(n_count * c_out * out_h * out_w), 0.0);
  auto xd = x.data<float>();
  auto wd = w.data<float>();
  for (int64_t n = 0; n < n_count; ++n) {
    for (int64_t oc = 0; oc < c_out; ++oc) {
      const int64_t g = oc / ocpg;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) {
          double acc = 0;
          for (int64_t ic = 0; ic < icpg; ++ic) {
            for (int64_t kh = 0; kh < k_h; ++kh) {
              const int64_t ih = oh * p.strides[0] - p.pads[0] + kh * p.dilations[0];
              if (ih < 0 || ih >= in_h) continue;
              for (int64_t kw = 0; kw < k_w; ++kw) {
                const int64_t iw = ow * p.strides[1] - p.pads[1] + kw * p.dilations[1];
                if (iw < 0 || iw >= in_w) continue;
                const int64_t c = g * icpg + ic;
                acc +=
                    static_cast<double>(xd[static_cast<size_t>(((n * c_in + c) * in_h + ih) * in_w + iw)]) *
                    wd[static_cast<size_t>(((oc * icpg + ic) * k_h + kh) * k_w + kw)];
              }
            }
          }
          r.values[static_cast<size_t>(((n * c_out + oc) * out_h + oh) * out_w + ow)] = acc;
        }
      }
    }
  }
  finish(r, b, c_out, out_h * out_w, p);
  return r;
}

ConvReference conv_transpose_reference(const Tensor& x, const Tensor& w, const Tensor* b,
                                       const ConvReferenceParams& p) {
  const View4 xv = view4(x), wv = view4(w);
  const int64_t n_count = xv.d0, c_in = xv.d1, in_h = xv.h, in_w = xv.w;
  const int64_t ocpg = wv.d1, k_h = wv.h, k_w = wv.w;
  const int64_t c_out = ocpg * p.groups;
  const int64_t icpg = c_in / p.groups;
  const int64_t out_h = p.strides[0] * (in_h - 1) + p.output_padding[0] + (k_h - 1) * p.dilations[0] + 1 -
                        p.pads[0] - p.pads[2];
  const int64_t out_w = p.strides[1] * (in_w - 1) + p.output_padding[1] + (k_w - 1) * p.dilations[1] + 1 -
                        p.pads[1] - p.pads[3];
  ConvReference r;
  r.shape = output_shape(x.rank() == 3, n_count, c_out, out_h, out_w);
  r.values.assign(static_cast<size_t>(n_count * c_out * out_h * out_w), 0.0);
  auto xd = x.data<float>();
  auto wd = w.data<float>();
  for (int64_t n = 0; n < n_count; ++n) {
    for (int64_t c = 0; c < c_in; ++c) {
      const int64_t g = c / icpg;
      for (int64_t ih = 0; ih < in_h; ++ih) {
        for (int64_t iw = 0; iw < in_w; ++iw) {
          const double xval = xd[static_cast<size_t>(((n * c_in + c) * in_h + ih) * in_w + iw)];
          for (int64_t m = 0; m < ocpg; ++m) {
            const int64_t oc = g * ocpg + m;
            for (int64_t kh = 0; kh < k_h; ++kh) {
              const int64_t oh = ih * p.strides[0] - p.pads[0] + kh * p.dilations[0];
              if (oh < 0 || oh >= out_h) continue;
              for (int64_t kw = 0; kw < k_w; ++kw) {
                const int64_t ow = iw * p.strides[1] - p.pads[1] + kw * p.dilations[1];
                if (ow < 0 || ow >= out_w) continue;
                r.values[static_cast<size_t>(((n * c_out + oc) * out_h + oh) * out_w + ow)] +=
                    xval * wd[static_cast<size_t>(((c * ocpg + m) * k_h + kh) * k_w + kw)];
              }
            }
          }
        }
      }
    }
  }
  finish(r, b, c_out, out_h * out_w, p);
  return r;
}

}  // namespace wgi::test
