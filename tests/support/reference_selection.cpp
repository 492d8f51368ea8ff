#include "support/reference_selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/float16.h"

namespace wgi::test {

double element_value(const Tensor& t, int64_t i) {
  const size_t k = static_cast<size_t>(i);
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[k];
    case DType::Float16: {
      uint16_t h;
      std::memcpy(&h, t.bytes().data() + 2 * k, 2);
      return ops::half_to_float(h);
    }
    case DType::Int64:
      return static_cast<double>(t.data<int64_t>()[k]);
    case DType::Int32:
      return t.data<int32_t>()[k];
    case DType::Int8:
      return static_cast<double>(static_cast<int8_t>(t.bytes()[k]));
    case DType::UInt8:
    case DType::Bool:
      return static_cast<double>(static_cast<uint8_t>(t.bytes()[k]));
  }
  return 0;
}

namespace {

Tensor int64_tensor(Shape shape, const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(std::move(shape), values);
}

// x viewed as [outer, len, inner] along `axis` (flattened without one).
struct SliceView {
  int64_t outer = 1, len = 1, inner = 1;
};
SliceView view_of(const Tensor& x, std::optional<int64_t> axis) {
  SliceView v;
  if (!axis) {
    v.len = x.element_count();
    return v;
  }
  const int64_t rank = x.rank();
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  v.len = x.shape()[static_cast<size_t>(a)];
  for (int64_t d = 0; d < a; ++d) v.outer *= x.shape()[static_cast<size_t>(d)];
  for (int64_t d = a + 1; d < rank; ++d) v.inner *= x.shape()[static_cast<size_t>(d)];
  return v;
}

// Copies slices `picked` of x (viewed as `v`) into a tensor of `shape`.
Tensor take_slices(const Tensor& x, const SliceView& v, const std::vector<int64_t>& picked, Shape shape) {
  Tensor out(x.dtype(), std::move(shape));
  const size_t size = dtype_size(x.dtype());
  const int64_t count = static_cast<int64_t>(picked.size());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t from = (o * v.len + picked[static_cast<size_t>(j)]) * v.inner + i;
        const int64_t to = (o * count + j) * v.inner + i;
        std::memcpy(out.bytes().data() + to * size, x.bytes().data() + from * size, size);
      }
    }
  }
  return out;
}

Shape with_axis_size(const Tensor& x, std::optional<int64_t> axis, int64_t size) {
  if (!axis) return {size};
  Shape s = x.shape();
  s[static_cast<size_t>(*axis < 0 ? *axis + x.rank() : *axis)] = size;
  return s;
}

}  // namespace

Tensor nonzero_reference(const Tensor& x) {
  const Shape shape = x.shape().empty() ? Shape{1} : x.shape();
  std::vector<int64_t> found;
  for (int64_t i = 0; i < x.element_count(); ++i) {
    if (element_value(x, i) != 0.0 || std::isnan(element_value(x, i))) found.push_back(i);
  }
  const int64_t rank = static_cast<int64_t>(shape.size()), count = static_cast<int64_t>(found.size());
  std::vector<int64_t> coords(static_cast<size_t>(rank * count));
  for (int64_t c = 0; c < count; ++c) {
    int64_t rest = found[static_cast<size_t>(c)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      coords[static_cast<size_t>(d * count + c)] = rest % shape[static_cast<size_t>(d)];
      rest /= shape[static_cast<size_t>(d)];
    }
  }
  return int64_tensor({rank, count}, coords);
}

Tensor compress_reference(const Tensor& x, const std::vector<bool>& condition, std::optional<int64_t> axis) {
  const SliceView v = view_of(x, axis);
  std::vector<int64_t> picked;
  for (size_t j = 0; j < condition.size(); ++j) {
    if (condition[j]) picked.push_back(static_cast<int64_t>(j));
  }
  return take_slices(x, v, picked, with_axis_size(x, axis, static_cast<int64_t>(picked.size())));
}

UniqueOutputs unique_reference(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  const SliceView v = view_of(x, axis);
  auto at = [&](int64_t k, int64_t e) {
    return element_value(x, ((e / v.inner) * v.len + k) * v.inner + e % v.inner);
  };
  const int64_t elements = v.outer * v.inner;
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < elements; ++e) {
      if (at(a, e) != at(b, e)) return at(a, e) < at(b, e);
    }
    return false;
  };
  std::vector<int64_t> order(static_cast<size_t>(v.len));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  // Groups of equal slices in value order: (first index, members).
  std::vector<std::pair<int64_t, std::vector<int64_t>>> groups;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || less(order[r - 1], order[r])) groups.push_back({order[r], {}});
    groups.back().second.push_back(order[r]);
  }
  if (!sorted) {
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  const int64_t u = static_cast<int64_t>(groups.size());
  std::vector<int64_t> indices, counts, inverse(static_cast<size_t>(v.len));
  for (int64_t g = 0; g < u; ++g) {
    indices.push_back(groups[static_cast<size_t>(g)].first);
    counts.push_back(static_cast<int64_t>(groups[static_cast<size_t>(g)].second.size()));
    for (int64_t k : groups[static_cast<size_t>(g)].second) inverse[static_cast<size_t>(k)] = g;
  }
  UniqueOutputs out;
  out.y = take_slices(x, v, indices, with_axis_size(x, axis, u));
  out.indices = int64_tensor({u}, indices);
  out.inverse_indices = int64_tensor({v.len}, inverse);
  out.counts = int64_tensor({u}, counts);
  return out;
}

NmsOutputs nms_reference(const Tensor& boxes, const Tensor& scores, int64_t max_per_class,
                         double iou_threshold, std::optional<double> score_threshold, bool center_point_box) {
  const int64_t batches = boxes.shape()[0], n = boxes.shape()[1], classes = scores.shape()[1];
  auto box = [&](int64_t b, int64_t i) {
    std::array<double, 4> v;
    for (int64_t k = 0; k < 4; ++k)
      v[static_cast<size_t>(k)] = boxes.data<float>()[static_cast<size_t>((b * n + i) * 4 + k)];
    if (center_point_box) {
      return std::array<double, 4>{v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
    }
    return std::array<double, 4>{std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]),
                                 std::max(v[0], v[2])};
  };
  NmsOutputs out;
  // IoU, or -1 where ONNX never suppresses (no overlap, an empty box).
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    const auto p = box(b, i), q = box(b, j);
    const double x0 = std::max(p[0], q[0]), y0 = std::max(p[1], q[1]), x1 = std::min(p[2], q[2]),
                 y1 = std::min(p[3], q[3]);
    if (x1 <= x0 || y1 <= y0) return -1.0;
    const double ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
    if (ap <= 0 || aq <= 0) return -1.0;
    const double inter = (x1 - x0) * (y1 - y0);
    return inter / (ap + aq - inter);
  };
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) {
        const double v = iou(b, i, j);
        if (v >= 0 && std::abs(v - iou_threshold) < 1e-5) ++out.near_threshold_pairs;
      }
    }
  }
  std::vector<int64_t> triples;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      auto score = [&](int64_t i) {
        return scores.data<float>()[static_cast<size_t>((b * classes + c) * n + i)];
      };
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < n; ++i) {
        if (!score_threshold || score(i) > *score_threshold) candidates.push_back(i);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t a, int64_t z) { return score(a) > score(z); });
      std::vector<int64_t> kept;
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const bool suppressed =
            std::any_of(kept.begin(), kept.end(), [&](int64_t k) { return iou(b, k, i) > iou_threshold; });
        if (!suppressed) kept.push_back(i);
      }
      for (int64_t i : kept) triples.insert(triples.end(), {b, c, i});
    }
  }
  out.selected = int64_tensor({static_cast<int64_t>(triples.size() / 3), 3}, triples);
  return out;
}

}  // namespace wgi::test
