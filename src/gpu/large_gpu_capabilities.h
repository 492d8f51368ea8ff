// A device description for planning without a device (beside gpu::default_capabilities).
#pragma once

#include "gpu/device.h"

namespace wgi::gpu {

// The limits and features of a large discrete GPU (the NVIDIA H200 through the pinned Dawn, docs/devices.md:
// 48 KiB of workgroup memory, 1024 invocations, subgroups, WGSL's packed int8 dot products, no shader-f16):
// what `wgi check --device-limits large` and plan-structure tests plan against, to see the kernels that GPU
// gets without one at hand.
Capabilities large_gpu_capabilities();

}  // namespace wgi::gpu
