// Model devices for the planners' pure tests (no GPU needed): WebGPU's default capabilities with the limits
// the GEMM and conv planners choose by, and the error a GEMM choice throws. Header-only: the unit tests do
// not link the GPU test support library.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/device.h"
#include "ops/gemm_launch.h"
#include "wgi/error.h"

namespace wgi::test {

// WebGPU's defaults with `storage` bytes of workgroup memory and `invocations` per workgroup (the H200's
// limits: 49152 and 1024; a compatibility device at its defaults: 16384 and 128).
inline gpu::Capabilities model_device(uint32_t storage, uint32_t invocations) {
  gpu::Capabilities caps = gpu::default_capabilities();
  caps.limits.max_compute_workgroup_storage_size = storage;
  caps.limits.max_compute_invocations_per_workgroup = invocations;
  caps.limits.max_compute_workgroup_size_x = invocations;
  return caps;
}

// The message choose_gemm_config throws for `spec` on `caps`, or "no error".
inline std::string gemm_choice_error(const ops::GemmLaunchSpec& spec, const gpu::Capabilities& caps) {
  try {
    ops::choose_gemm_config(spec, caps);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace wgi::test
