#include "support/reference_data_movement.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>

#include "ops/registry.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi::test {

namespace {

using Index = std::vector<int64_t>;

Index unravel(int64_t flat, const Shape& shape) {
  Index idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const Index& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

void copy_element(const Tensor& src, int64_t si, Tensor& dst, int64_t di) {
  const size_t es = dtype_size(src.dtype());
  std::memcpy(dst.bytes().data() + static_cast<size_t>(di) * es,
              src.bytes().data() + static_cast<size_t>(si) * es, es);
}

// Builds a tensor of `shape` whose element at multi-index o is x's element source(o) (a flat index).
template <class F>
Tensor map_elements(const Tensor& x, const Shape& shape, F source) {
  Tensor out(x.dtype(), shape);
  for (int64_t i = 0; i < out.element_count(); ++i) copy_element(x, source(unravel(i, shape)), out, i);
  return out;
}

int64_t positive_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == DType::Int64) {
    for (int64_t x : t.data<int64_t>()) v.push_back(x);
  } else {
    for (int32_t x : t.data<int32_t>()) v.push_back(x);
  }
  return v;
}

}  // namespace

Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape()[static_cast<size_t>(p)]);
  return map_elements(x, shape, [&](const Index& o) {
    Index in(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) in[static_cast<size_t>(perm[d])] = o[d];
    return ravel(in, x.shape());
  });
}

Tensor concat_reference(const std::vector<Tensor>& inputs, int64_t axis) {
  const size_t a = static_cast<size_t>(positive_axis(axis, inputs[0].shape().size()));
  Shape shape = inputs[0].shape();
  shape[a] = 0;
  for (const Tensor& t : inputs) shape[a] += t.shape()[a];
  Tensor out(inputs[0].dtype(), shape);
  for (int64_t i = 0; i < out.element_count(); ++i) {
    Index o = unravel(i, shape);
    size_t k = 0;
    while (o[a] >= inputs[k].shape()[a]) o[a] -= inputs[k++].shape()[a];
    copy_element(inputs[k], ravel(o, inputs[k].shape()), out, i);
  }
  return out;
}

std::vector<Tensor> split_reference(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  const size_t a = static_cast<size_t>(positive_axis(axis, x.shape().size()));
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    Shape shape = x.shape();
    shape[a] = s;
    out.push_back(map_elements(x, shape, [&](Index o) {
      o[a] += offset;
      return ravel(o, x.shape());
    }));
    offset += s;
  }
  return out;
}

Tensor slice_reference(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                       const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  // The input positions each output axis walks through, listed one by one.
  std::vector<std::vector<int64_t>> picks(x.shape().size());
  for (size_t d = 0; d < picks.size(); ++d) {
    for (int64_t i = 0; i < x.shape()[d]; ++i) picks[d].push_back(i);
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t a = static_cast<size_t>(positive_axis(axes[k], x.shape().size()));
    const int64_t n = x.shape()[a], step = steps[k];
    int64_t start = starts[k], end = ends[k];
    if (start < 0) start += n;
    if (end < 0) end += n;
    picks[a].clear();
    if (step > 0) {
      start = std::min(std::max<int64_t>(start, 0), n);
      end = std::min(std::max<int64_t>(end, 0), n);
      for (int64_t i = start; i < end; i += step) picks[a].push_back(i);
    } else {
      start = std::min(std::max<int64_t>(start, -1), n - 1);
      end = std::min(std::max<int64_t>(end, -1), n - 1);
      for (int64_t i = start; i > end; i += step) picks[a].push_back(i);
    }
  }
  Shape shape;
  for (const auto& p : picks) shape.push_back(static_cast<int64_t>(p.size()));
  return map_elements(x, shape, [&](const Index& o) {
    Index in(o.size());
    for (size_t d = 0; d < o.size(); ++d) in[d] = picks[d][static_cast<size_t>(o[d])];
    return ravel(in, x.shape());
  });
}

Tensor gather_reference(const Tensor& x, const Tensor& indices, int64_t axis) {
  const size_t a = static_cast<size_t>(positive_axis(axis, x.shape().size()));
  const std::vector<int64_t> idx = ints_of(indices);
  const size_t q = indices.shape().size();
  Shape shape(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(a));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), x.shape().begin() + static_cast<std::ptrdiff_t>(a) + 1, x.shape().end());
  return map_elements(x, shape, [&](const Index& o) {
    Index in(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(a));
    Index j(o.begin() + static_cast<std::ptrdiff_t>(a), o.begin() + static_cast<std::ptrdiff_t>(a + q));
    int64_t v = idx[static_cast<size_t>(ravel(j, indices.shape()))];
    in.push_back(v < 0 ? v + x.shape()[a] : v);
    in.insert(in.end(), o.begin() + static_cast<std::ptrdiff_t>(a + q), o.end());
    return ravel(in, x.shape());
  });
}

Tensor gather_elements_reference(const Tensor& x, const Tensor& indices, int64_t axis) {
  const size_t a = static_cast<size_t>(positive_axis(axis, x.shape().size()));
  const std::vector<int64_t> idx = ints_of(indices);
  return map_elements(x, indices.shape(), [&](Index o) {
    int64_t v = idx[static_cast<size_t>(ravel(o, indices.shape()))];
    o[a] = v < 0 ? v + x.shape()[a] : v;
    return ravel(o, x.shape());
  });
}

Tensor expand_reference(const Tensor& x, const std::vector<int64_t>& target) {
  const size_t rank = std::max(x.shape().size(), target.size());
  Shape xs(rank - x.shape().size(), 1), ts(rank - target.size(), 1);
  xs.insert(xs.end(), x.shape().begin(), x.shape().end());
  ts.insert(ts.end(), target.begin(), target.end());
  Shape shape(rank);
  for (size_t d = 0; d < rank; ++d) shape[d] = xs[d] == 1 ? ts[d] : xs[d];
  return map_elements(x, shape, [&](const Index& o) {
    Index in(x.shape().size());
    for (size_t d = 0; d < in.size(); ++d) {
      const size_t od = d + rank - in.size();
      in[d] = x.shape()[d] == 1 ? 0 : o[od];
    }
    return ravel(in, x.shape());
  });
}

Tensor tile_reference(const Tensor& x, const std::vector<int64_t>& repeats) {
  Shape shape;
  for (size_t d = 0; d < repeats.size(); ++d) shape.push_back(x.shape()[d] * repeats[d]);
  return map_elements(x, shape, [&](const Index& o) {
    Index in(o.size());
    for (size_t d = 0; d < o.size(); ++d) in[d] = o[d] % x.shape()[d];
    return ravel(in, x.shape());
  });
}

Tensor pad_reference(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
                     const Tensor& value) {
  const size_t rank = x.shape().size();
  Shape shape(rank);
  for (size_t d = 0; d < rank; ++d) shape[d] = x.shape()[d] + pads[d] + pads[d + rank];
  Tensor out(x.dtype(), shape);
  for (int64_t i = 0; i < out.element_count(); ++i) {
    Index o = unravel(i, shape);
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape()[d];
      int64_t c = o[d] - pads[d];
      if (mode == "edge") {
        c = std::min(std::max<int64_t>(c, 0), n - 1);
      } else if (mode == "wrap") {
        while (c < 0) c += n;
        c %= n;
      } else if (mode == "reflect") {
        // Bounce between the edges one step at a time (numpy's reflect, repeated for long pads).
        while (n > 1 && (c < 0 || c >= n)) c = c < 0 ? -c : 2 * (n - 1) - c;
        if (n == 1) c = 0;
      } else if (c < 0 || c >= n) {
        outside = true;
      }
      o[d] = c;
    }
    if (outside) {
      copy_element(value, 0, out, i);
    } else {
      copy_element(x, ravel(o, x.shape()), out, i);
    }
  }
  return out;
}

Tensor depth_to_space_reference(const Tensor& x, int64_t b, const std::string& mode) {
  const Shape& s = x.shape();
  const int64_t co = s[1] / (b * b);
  return map_elements(x, {s[0], co, s[2] * b, s[3] * b}, [&](const Index& o) {
    const int64_t i = o[2] % b, j = o[3] % b;
    const int64_t c = mode == "DCR" ? (i * b + j) * co + o[1] : o[1] * b * b + i * b + j;
    return ravel({o[0], c, o[2] / b, o[3] / b}, s);
  });
}

Tensor space_to_depth_reference(const Tensor& x, int64_t b) {
  const Shape& s = x.shape();
  return map_elements(x, {s[0], s[1] * b * b, s[2] / b, s[3] / b}, [&](const Index& o) {
    const int64_t c = o[1] % s[1], block = o[1] / s[1];
    return ravel({o[0], c, o[2] * b + block / b, o[3] * b + block % b}, s);
  });
}

Tensor random_ints(DType dtype, const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
  if (dtype == DType::Float32) return random_tensor(shape, seed);
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const int64_t v = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    switch (dtype) {
      case DType::Int64:
        t.data<int64_t>()[static_cast<size_t>(i)] = v;
        break;
      case DType::Int32:
        t.data<int32_t>()[static_cast<size_t>(i)] = static_cast<int32_t>(v);
        break;
      case DType::Int8:
        t.data<int8_t>()[static_cast<size_t>(i)] = static_cast<int8_t>(v % 128);
        break;
      case DType::UInt8:
        t.data<uint8_t>()[static_cast<size_t>(i)] = static_cast<uint8_t>(v & 0xff);
        break;
      case DType::Bool:
        t.bytes()[static_cast<size_t>(i)] = std::byte{static_cast<uint8_t>(v & 1)};
        break;
      default:
        throw Error("random_ints: unsupported dtype");
    }
  }
  return t;
}

Tensor iota_tensor(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const size_t k = static_cast<size_t>(i);
    switch (dtype) {
      case DType::Float32:
        t.data<float>()[k] = static_cast<float>(i + 1);
        break;
      case DType::Int64:
        t.data<int64_t>()[k] = i + 1;
        break;
      case DType::Int32:
        t.data<int32_t>()[k] = static_cast<int32_t>(i + 1);
        break;
      case DType::Bool:
        t.bytes()[k] = std::byte{static_cast<uint8_t>(i & 1)};
        break;
      default:
        throw Error("iota_tensor: unsupported dtype");
    }
  }
  return t;
}

::testing::AssertionResult identical(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
  }
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << shape_to_string(actual.shape()) << ", expected "
                                         << shape_to_string(expected.shape());
  }
  const size_t es = dtype_size(actual.dtype());
  for (int64_t i = 0; i < actual.element_count(); ++i) {
    const size_t at = static_cast<size_t>(i) * es;
    if (std::memcmp(actual.bytes().data() + at, expected.bytes().data() + at, es) != 0) {
      std::ostringstream msg;
      msg << "element " << i << " of " << actual.element_count() << " differs:";
      if (actual.dtype() == DType::Float32) {
        msg << " got " << actual.data<float>()[static_cast<size_t>(i)] << ", expected "
            << expected.data<float>()[static_cast<size_t>(i)];
      } else if (actual.dtype() == DType::Int64) {
        msg << " got " << actual.data<int64_t>()[static_cast<size_t>(i)] << ", expected "
            << expected.data<int64_t>()[static_cast<size_t>(i)];
      } else if (actual.dtype() == DType::Int32) {
        msg << " got " << actual.data<int32_t>()[static_cast<size_t>(i)] << ", expected "
            << expected.data<int32_t>()[static_cast<size_t>(i)];
      }
      return ::testing::AssertionFailure() << msg.str();
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<Tensor> fold_node(const ops::NodeInfo& node, const NodeInputs& inputs) {
  const ops::OpRegistry::Entry* entry = ops::builtin_registry().find(node.domain, node.op_type, node.opset);
  if (!entry) throw Error(node.describe() + ": not registered");
  if (!entry->handler.evaluate_on_host) throw Error(node.describe() + ": has no evaluate_on_host");
  ops::PlanContext ctx{node, {}, {}, device().capabilities()};
  std::vector<const Tensor*> host;
  for (const auto& in : inputs) {
    ctx.inputs.push_back(in ? std::optional<ops::TensorDesc>({in->value.dtype(), in->value.shape()})
                            : std::nullopt);
    ctx.constant_inputs.push_back(in ? &in->value : nullptr);
    host.push_back(in ? &in->value : nullptr);
  }
  return entry->handler.evaluate_on_host(ctx, host);
}

void expect_node_outputs(const ops::NodeInfo& node, const NodeInputs& inputs,
                         const std::vector<Tensor>& expected, const runtime::NodeRunOptions& options) {
  SCOPED_TRACE(node.op_type + " opset " + std::to_string(node.opset));
  const std::vector<Tensor> gpu = runtime::run_node(device(), node, inputs, options);
  ASSERT_GE(gpu.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(identical(gpu[i], expected[i])) << "GPU output " << i;
  const std::vector<Tensor> host = fold_node(node, inputs);
  ASSERT_EQ(host.size(), expected.size()) << "host folding declined or returned the wrong number of outputs";
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(identical(host[i], expected[i])) << "host output " << i;
}

Tensor ints(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

}  // namespace wgi::test
