// The WGSL kernels embedded in the binary, and a tiny preprocessor for them.
//
// Kernels live as real .wgsl files under src/kernels/; the build embeds them (cmake/embed_wgsl.cmake).
// Directives, each on a line of its own:
//   #include "common/dispatch_grid.wgsl"   inserts another embedded file (once per program)
//   #include "common/workgroup_reduce.wgsl" NAME=tree_sum COMBINE="a + b"
//                                          with parameters: an instance of the file, expanded at every such
//                                          include, in which {{NAME}} and #if NAME see the parameters (their
//                                          values substituted first) over the program's defines
//   #if NAME / #if !NAME / #else / #endif  keeps lines when NAME is not "0" or empty (nesting allowed)
//   #interface                             the kernel's binding and Params declarations: the INTERFACE
//                                          define, which ops::KernelInterface (ops/kernel_interface.h) writes
// and anywhere in a line {{NAME}} is replaced by the define's value. An unknown {{NAME}}, an #if on a name
// that is not defined (even in a branch not taken: callers define every name their kernel tests, as 0 or
// 1), an unknown file or an unbalanced #if is an error, never a silent blank.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/shader_text.h"

namespace wgi::kernels {

struct EmbeddedSource {
  std::string_view path;  // relative to src/kernels/, e.g. "linear/gemm_tiled.wgsl"
  std::string_view text;
};

// Generated at build time.
const std::vector<EmbeddedSource>& embedded_sources();

using Defines = std::map<std::string, std::string, std::less<>>;

// The define that `#interface` places.
inline constexpr std::string_view kInterfaceDefine = "INTERFACE";

// The preprocessed text of an embedded kernel. Throws wgi::Error naming the file and line on a bad directive.
// Memoised: calls with the same path and defines share one copy while any handle to it lives (a plan's
// launches of one kernel variant then hold one text, not one each). Thread-safe.
gpu::ShaderText load_wgsl(std::string_view path, const Defines& defines = {});

// Preprocesses `text` as if it were the embedded file `name` (used by tests and by load_wgsl).
std::string preprocess_wgsl(std::string_view name, std::string_view text, const Defines& defines);

}  // namespace wgi::kernels
