#include "runtime/device_tensor.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>

#include "gpu/commands.h"
#include "runtime/execution_plan.h"

namespace wgi::runtime {

namespace {

size_t device_element_size(DType dtype) {
  return dtype == DType::Float16 ? 2 : 4;
}

}  // namespace

size_t device_payload_bytes(const ops::TensorDesc& desc) {
  return static_cast<size_t>(element_count(desc.shape)) * device_element_size(desc.dtype);
}

uint64_t device_byte_size(const ops::TensorDesc& desc) {
  uint64_t bytes = static_cast<uint64_t>(element_count(desc.shape)) * device_element_size(desc.dtype);
  return std::max<uint64_t>(4, (bytes + 3) / 4 * 4);
}

std::vector<std::byte> to_device_bytes(const Tensor& tensor, const std::string& what) {
  const size_t n = static_cast<size_t>(tensor.element_count());
  std::vector<std::byte> out(n * device_element_size(tensor.dtype()));
  auto src = tensor.bytes();
  switch (tensor.dtype()) {
    case DType::Float32:
    case DType::Int32:
    case DType::Float16:
      if (!src.empty()) std::memcpy(out.data(), src.data(), src.size());
      break;
    case DType::Int64: {
      auto values = tensor.data<int64_t>();
      for (size_t i = 0; i < n; ++i) {
        int64_t v = values[i];
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          throw Error(what + ": int64 value " + std::to_string(v) + " at element " + std::to_string(i) +
                      " does not fit the GPU's 32-bit integers");
        }
        int32_t v32 = static_cast<int32_t>(v);
        std::memcpy(out.data() + 4 * i, &v32, 4);
      }
      break;
    }
    case DType::Bool:
    case DType::UInt8:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v = static_cast<uint8_t>(src[i]);
        if (tensor.dtype() == DType::Bool) v = v != 0;
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case DType::Int8:
      for (size_t i = 0; i < n; ++i) {
        int32_t v = static_cast<int8_t>(src[i]);
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
  }
  return out;
}

Tensor from_device_bytes(const ops::TensorDesc& desc, std::span<const std::byte> bytes) {
  Tensor t(desc.dtype, desc.shape);
  const size_t n = static_cast<size_t>(t.element_count());
  auto dst = t.bytes();
  switch (desc.dtype) {
    case DType::Float32:
    case DType::Int32:
    case DType::Float16:
      if (!dst.empty()) std::memcpy(dst.data(), bytes.data(), dst.size());
      break;
    case DType::Int64: {
      auto values = t.data<int64_t>();
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        values[i] = v;
      }
      break;
    }
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        dst[i] = static_cast<std::byte>(desc.dtype == DType::Bool ? (v != 0) : (v & 0xff));
      }
      break;
  }
  return t;
}

gpu::Buffer upload_tensor(gpu::Device& device, const Tensor& tensor, const std::string& label) {
  gpu::Buffer buffer = device.create_buffer(device_byte_size({tensor.dtype(), tensor.shape()}), label);
  write_tensor(device, {&buffer}, tensor, label);
  return buffer;
}

void write_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const Tensor& tensor,
                  const std::string& what) {
  // Types the device stores as the host does go straight from the tensor: no converted copy (a model's
  // weights are hundreds of MB, and the copy's allocation and page faults were a visible part of cold start).
  const DType t = tensor.dtype();
  const bool as_is = t == DType::Float32 || t == DType::Int32 || t == DType::Float16;
  std::vector<std::byte> converted;
  if (!as_is) converted = to_device_bytes(tensor, what);
  const std::span<const std::byte> bytes = as_is ? tensor.bytes() : std::span<const std::byte>(converted);
  if (bytes.size() > slice.resolved_size()) {
    throw Error(what + ": " + std::to_string(bytes.size()) + " bytes do not fit a device region of " +
                std::to_string(slice.resolved_size()));
  }
  device.upload(*slice.buffer, slice.offset, bytes);
}

Tensor read_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const ops::TensorDesc& desc) {
  std::vector<std::byte> bytes(device_payload_bytes(desc));
  device.download(*slice.buffer, slice.offset, bytes);
  return from_device_bytes(desc, bytes);
}

uint64_t pooled_size_class(uint64_t bytes) {
  if (bytes <= 256) return 256;
  const uint64_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

gpu::Buffer DeviceMemory::acquire(uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 4);
  size_t best = pool_.size();
  for (size_t i = 0; i < pool_.size(); ++i) {
    const uint64_t size = pool_[i].size();
    if (size >= bytes && size <= bytes + bytes / 4 && (best == pool_.size() || size < pool_[best].size()))
      best = i;
  }
  if (best < pool_.size()) {
    gpu::Buffer buffer = std::move(pool_[best]);
    pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(best));
    pooled_bytes_ -= buffer.size();
    return buffer;
  }
  uint64_t size = pooled_size_class(bytes);
  if (size > device_->limits().max_buffer_size) size = bytes;  // the device's limit, not the class, decides
  return device_->create_buffer(size, "wgi::DeviceTensor");
}

void DeviceMemory::recycle(gpu::Buffer buffer) {
  if (!buffer || buffer.size() > kMaxPooledBytes) return;
  pooled_bytes_ += buffer.size();
  pool_.push_back(std::move(buffer));
  while (pool_.size() > kMaxPooledBuffers || pooled_bytes_ > kMaxPooledBytes) {
    pooled_bytes_ -= pool_.front().size();
    pool_.erase(pool_.begin());
  }
}

DeviceTensor DeviceMemory::allocate(const ops::TensorDesc& desc) {
  static std::atomic<uint64_t> next_id{1};
  const uint64_t bytes = device_byte_size(desc);
  auto state = std::make_shared<detail::DeviceTensorState>();
  state->buffer = acquire(bytes);
  state->desc = desc;
  state->id = next_id.fetch_add(1);
  live_bytes_ += state->buffer.size();
  // Set last: the state's destructor gives the buffer back only once it is accounted for.
  state->memory = shared_from_this();
  return detail::DeviceTensorState::wrap(std::move(state));
}

DeviceTensor DeviceMemory::upload(const Tensor& tensor) {
  const ops::TensorDesc desc{tensor.dtype(), tensor.shape()};
  auto bytes = to_device_bytes(tensor, "DeviceTensor upload");  // checks int64 ranges before allocating
  DeviceTensor out = allocate(desc);
  const auto& state = detail::DeviceTensorState::of(out);
  if (!bytes.empty()) device_->upload(state->buffer, 0, bytes);
  if (tensor.element_count() <= kHostVisibleInputElements) state->small_value = tensor;
  return out;
}

DeviceTensor DeviceMemory::gather_rows(const DeviceTensor& source, std::span<const int64_t> rows) {
  return gather_rows(std::span<const DeviceTensor>(&source, 1), rows).at(0);
}

std::vector<DeviceTensor> DeviceMemory::gather_rows(std::span<const DeviceTensor> sources,
                                                    std::span<const int64_t> rows) {
  // Every source checked before anything is allocated or copied.
  std::vector<uint64_t> row_bytes_of;
  for (const DeviceTensor& source : sources) {
    const auto& state = detail::DeviceTensorState::of(source);
    if (!state) throw Error("gather_rows: empty DeviceTensor (default-constructed or moved from)");
    const std::string what = "gather_rows of DeviceTensor " + shape_to_string(state->desc.shape);
    if (!state->memory) throw Error(what + ": it was released");
    if (&state->memory->device() != device_.get()) throw Error(what + ": it " + std::string(kOtherDevice));
    if (state->desc.shape.empty()) throw Error(what + ": a scalar has no rows");
    const int64_t count = state->desc.shape[0];
    const uint64_t row_elements =
        count == 0 ? 0 : static_cast<uint64_t>(element_count(state->desc.shape) / count);
    const uint64_t row_bytes = row_elements * device_element_size(state->desc.dtype);
    // Rows are copied with copyBufferToBuffer, which needs 4-byte multiples (a float16 row of odd length is
    // not).
    if (row_bytes % 4 != 0) {
      throw Error(what + ": a row is " + std::to_string(row_bytes) + " bytes, not a multiple of 4");
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= count) {
        throw Error(what + ": row index " + std::to_string(rows[i]) + " (at " + std::to_string(i) +
                    ") is outside [0, " + std::to_string(count) + ")");
      }
    }
    row_bytes_of.push_back(row_bytes);
  }
  std::vector<DeviceTensor> gathered;
  gpu::CommandBatch batch(*device_);
  bool copies = false;
  for (size_t t = 0; t < sources.size(); ++t) {
    const auto& state = detail::DeviceTensorState::of(sources[t]);
    Shape shape = state->desc.shape;
    shape[0] = static_cast<int64_t>(rows.size());
    gathered.push_back(allocate(ops::TensorDesc{state->desc.dtype, shape}));
    const uint64_t row_bytes = row_bytes_of[t];
    const auto& target = detail::DeviceTensorState::of(gathered.back());
    for (size_t i = 0; i < rows.size() && row_bytes != 0; ++i) {
      batch.copy({&state->buffer, static_cast<uint64_t>(rows[i]) * row_bytes, row_bytes},
                 {&target->buffer, i * row_bytes, row_bytes});
      copies = true;
    }
  }
  if (copies) batch.submit();
  return gathered;
}

}  // namespace wgi::runtime

namespace wgi::detail {

DeviceTensorState::~DeviceTensorState() {
  release();
}

void DeviceTensorState::release() {
  if (!memory) return;
  pending.reset();  // waits for its copy out of the buffer, which goes back to the pool below
  memory->live_bytes_ -= buffer.size();
  memory->recycle(std::move(buffer));
  buffer = gpu::Buffer();
  memory.reset();
  small_value.reset();
}

}  // namespace wgi::detail

namespace wgi {

namespace {

detail::DeviceTensorState& checked_state(const std::shared_ptr<detail::DeviceTensorState>& state) {
  if (!state) throw Error("empty DeviceTensor (default-constructed or moved from)");
  return *state;
}

}  // namespace

DType DeviceTensor::dtype() const {
  return checked_state(state_).desc.dtype;
}
const Shape& DeviceTensor::shape() const {
  return checked_state(state_).desc.shape;
}
int64_t DeviceTensor::element_count() const {
  return wgi::element_count(shape());
}
uint64_t DeviceTensor::device_bytes() const {
  return state_ && state_->memory ? state_->buffer.size() : 0;
}
bool DeviceTensor::valid() const noexcept {
  return state_ && state_->memory;
}

Tensor DeviceTensor::download() const {
  detail::DeviceTensorState& s = checked_state(state_);
  if (!s.memory) throw Error("DeviceTensor " + shape_to_string(s.desc.shape) + " was released");
  if (s.small_value) return *s.small_value;
  if (s.pending) {
    s.pending->finish();
    s.pending.reset();
    Tensor t = runtime::from_device_bytes(s.desc, s.pending_bytes);
    s.pending_bytes = {};
    return t;
  }
  return runtime::read_tensor(s.memory->device(), s.slice(), s.desc);
}

void DeviceTensor::start_download() const {
  detail::DeviceTensorState& s = checked_state(state_);
  if (!s.memory) throw Error("DeviceTensor " + shape_to_string(s.desc.shape) + " was released");
  if (s.small_value || s.pending) return;
  s.pending_bytes.resize(runtime::device_payload_bytes(s.desc));
  const gpu::Device::DownloadRegion region{&s.buffer, 0, s.pending_bytes};
  s.pending = std::make_unique<gpu::Device::PendingDownload>(
      s.memory->device(), std::span<const gpu::Device::DownloadRegion>(&region, 1));
}

void DeviceTensor::release() {
  if (state_) state_->release();
}

const Tensor& Value::host() const {
  if (on_device()) throw Error("the value is a DeviceTensor, not a host Tensor (download() it)");
  return std::get<0>(value_);
}
Tensor& Value::host() {
  if (on_device()) throw Error("the value is a DeviceTensor, not a host Tensor (download() it)");
  return std::get<0>(value_);
}
const DeviceTensor& Value::device() const {
  if (!on_device()) throw Error("the value is a host Tensor, not a DeviceTensor");
  return std::get<1>(value_);
}

}  // namespace wgi
