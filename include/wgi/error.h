// The one exception type wgi throws. Its message is meant for the user: it names what was wrong (which node,
// which input, which limit), what was expected and what was found.
#pragma once

#include <stdexcept>
#include <string>

namespace wgi {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace wgi
