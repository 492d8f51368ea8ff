// The one wait primitive of the browser build, used by src/gpu/'s blocking waits (Device::wait_until).
#pragma once

extern "C" {
// Implemented in webgpu.js: suspends the wasm stack through Asyncify until a WebGPU promise has settled and
// queued its callback for wgpuInstanceProcessEvents. Listed in ASYNCIFY_IMPORTS (web/CMakeLists.txt).
void wgi_web_wait();
}

namespace wgi::gpu::web {

inline void wait_for_webgpu_event() {
  wgi_web_wait();
}

}  // namespace wgi::gpu::web
