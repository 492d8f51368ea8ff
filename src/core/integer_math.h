// Integer arithmetic that planners and dispatch code share.
#pragma once

#include <concepts>
#include <type_traits>

namespace wgi {

// ceil(a / b) for a >= 0, b > 0, in the type of `a` (b converts to it); a + b must fit in that type.
template <std::integral T>
constexpr T ceil_div(T a, std::type_identity_t<T> b) {
  return (a + b - 1) / b;
}

}  // namespace wgi
