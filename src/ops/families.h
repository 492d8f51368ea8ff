// Every op family's registration function. One file per family under src/ops/; each adds its ops here.
#pragma once

#include <array>

namespace wgi::ops {

class OpRegistry;

inline constexpr std::array<void (*)(OpRegistry&), 0> kOpFamilies = {};

}  // namespace wgi::ops
