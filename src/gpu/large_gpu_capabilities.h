// A device description for planning without a device (beside gpu::default_capabilities).
#pragma once

#include "gpu/device.h"

namespace wgi::gpu {

// The limits and features of a large discrete GPU (the NVIDIA H200 through the pinned Dawn, docs/devices.md:
// 48 KiB of workgroup memory, 1024 invocations, subgroups, WGSL's packed int8 dot products, no shader-f16):
// what `wgi check --device-limits large` and plan-structure tests plan against, to see the kernels that GPU
// gets without one at hand.
Capabilities large_gpu_capabilities();
// The same GPU as dawn.node gives it with the NVIDIA toggles (docs/node.md): shader-f16, subgroups and the
// f16 subgroup-matrix configuration too. f16_compute stays false, as in any device's own capabilities: a
// precision f16 session sets it (runtime/session.cpp), and so do planners that show such a session's plan.
Capabilities large_gpu_f16_capabilities();

}  // namespace wgi::gpu
