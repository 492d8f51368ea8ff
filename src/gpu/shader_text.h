// The text of a compute program: immutable and shared. Every launch of one kernel variant holds a handle to
// one copy (kernels::load_wgsl memoises its results), so the kernel text a plan holds grows with its
// distinct programs, not with its launches.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace wgi::gpu {

class ShaderText {
  struct Shared;

 public:
  ShaderText() = default;
  // A copy of its own, shared by the copies of this handle (not interned: only load_wgsl's texts are).
  // Implicit, so that tests can assign plain strings.
  ShaderText(std::string text);
  ShaderText(const char* text) : ShaderText(std::string(text)) {}

  const std::string& str() const;
  size_t size() const { return str().size(); }
  bool empty() const { return str().empty(); }
  // Of the contents, computed once.
  size_t hash() const;
  // Whether both handles hold the same copy (then their contents are equal without comparing them).
  bool same_copy(const ShaderText& other) const { return text_ == other.text_; }

  // Compares contents, the handles first.
  friend bool operator==(const ShaderText& a, const ShaderText& b) {
    return a.same_copy(b) || (a.hash() == b.hash() && a.str() == b.str());
  }

  // A reference that does not keep the text alive, for memo tables.
  class Weak {
   public:
    explicit Weak(const ShaderText& text) : text_(text.text_) {}
    // The text, or nothing once no ShaderText holds it.
    std::optional<ShaderText> lock() const;
    bool expired() const { return text_.expired(); }

   private:
    std::weak_ptr<const Shared> text_;
  };

 private:
  struct Shared {
    std::string text;
    size_t hash;
  };
  explicit ShaderText(std::shared_ptr<const Shared> text) : text_(std::move(text)) {}

  std::shared_ptr<const Shared> text_;
};

}  // namespace wgi::gpu
