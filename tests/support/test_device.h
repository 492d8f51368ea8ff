// The GPU device shared by all tests of one test binary. Which adapter it uses follows WGI_BACKEND /
// WGI_ADAPTER (ctest runs each GPU test binary once per CPU backend; see tests/CMakeLists.txt).
#pragma once

#include "gpu/device.h"

namespace wgi::test {

gpu::Device& device();

}  // namespace wgi::test
