// wgi::DeviceTensor: a tensor that lives in a session's GPU memory, and wgi::Value: a model input or output
// that is either a host Tensor or a DeviceTensor.
//
// Device tensors let a generation loop keep its state on the GPU: upload what does not change once
// (Session::upload), keep chosen outputs on the device (RunOptions::device_outputs) and pass them back as the
// next run's inputs, and download only what the host needs. See docs/decoding.md.
//
//   wgi::DeviceTensor cross = session.upload(cross_key);          // once
//   wgi::RunOptions keep;
//   keep.device_outputs = {"present_key_0"};
//   auto out = session.run({{"input_ids", ids}, {"cross_key_0", cross}, {"past_key_0", past}}, keep);
//   past = out.at("present_key_0").device();                      // stays on the GPU
//   wgi::Tensor logits = out.at("logits").host();
#pragma once

#include <cstdint>
#include <memory>
#include <variant>

#include "wgi/error.h"
#include "wgi/tensor.h"

namespace wgi {

namespace detail {
struct DeviceTensorState;
}

// A handle to an immutable tensor in the device memory of the session that made it (Session::upload, or an
// output of Session::run kept on the device). Nothing wgi does writes to it after it is made: later runs do
// not change it, and it never shares memory with a session's internal buffers or with another DeviceTensor.
// It is an input of the session that made it and of every other session on the same device, i.e. made on
// the same wgi::Environment (one model's output fed to the next, as a pipeline's embeddings to its decoder).
//
// Handles are cheap to copy; copies refer to the same device memory, which is freed when the last copy is
// destroyed or when release() is called on any copy (after which every copy is released: download() and use
// as an input throw). A handle may outlive its session (download() still works). Like Session, a handle is
// not thread-safe: use a session and its handles from one thread at a time.
class DeviceTensor {
 public:
  DeviceTensor() = default;  // empty: valid() is false

  // Type and shape as on the host (int64 stays int64 although the device holds 32-bit integers, see
  // docs/architecture.md). Throw wgi::Error on an empty handle; still answer after release().
  DType dtype() const;
  const Shape& shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t element_count() const;
  // Bytes of device memory it holds (the device layout, rounded up to whole 4-byte words); 0 once released.
  uint64_t device_bytes() const;

  // False for an empty (default-constructed or moved-from) or released handle.
  bool valid() const noexcept;
  explicit operator bool() const noexcept { return valid(); }
  // True if both refer to the same device memory (one is a copy of the other).
  bool same_as(const DeviceTensor& other) const noexcept { return state_ && state_ == other.state_; }

  // Copies the tensor to the host. Waits for the GPU work submitted so far, or after start_download() only
  // for the work submitted before it. Throws wgi::Error if the handle is empty or released.
  Tensor download() const;
  // Starts the copy to the host now, in the queue's order: the next download() then waits only for the GPU
  // work submitted before this call, not for work submitted since. A generation loop starts the download of
  // a step's token, submits the next step, then reads the token while the GPU runs that step. Does nothing
  // if a download is already started.
  void start_download() const;
  // Frees the device memory now, for every copy of this handle. Releasing twice is harmless.
  void release();

 private:
  friend struct detail::DeviceTensorState;
  explicit DeviceTensor(std::shared_ptr<detail::DeviceTensorState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::DeviceTensorState> state_;
};

// A model input or output: a host Tensor or a DeviceTensor (implicitly made from either).
class Value {
 public:
  Value() = default;                                         // an empty host tensor
  Value(Tensor tensor) : value_(std::move(tensor)) {}        // NOLINT(google-explicit-constructor)
  Value(DeviceTensor tensor) : value_(std::move(tensor)) {}  // NOLINT(google-explicit-constructor)

  bool on_device() const { return value_.index() == 1; }
  // The host tensor / the device tensor; throw wgi::Error naming what the value is instead.
  const Tensor& host() const;
  Tensor& host();
  const DeviceTensor& device() const;
  DType dtype() const { return on_device() ? device().dtype() : host().dtype(); }
  const Shape& shape() const { return on_device() ? device().shape() : host().shape(); }
  // The host tensor, or a download of the device one.
  Tensor to_host() const { return on_device() ? device().download() : host(); }

 private:
  std::variant<Tensor, DeviceTensor> value_;
};

}  // namespace wgi
