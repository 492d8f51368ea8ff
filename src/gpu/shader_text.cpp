#include "gpu/shader_text.h"

namespace wgi::gpu {

ShaderText::ShaderText(std::string text) {
  const size_t hash = std::hash<std::string_view>{}(text);
  text_ = std::make_shared<const Shared>(Shared{std::move(text), hash});
}

const std::string& ShaderText::str() const {
  static const std::string kEmpty;
  return text_ ? text_->text : kEmpty;
}

size_t ShaderText::hash() const {
  return text_ ? text_->hash : std::hash<std::string_view>{}({});
}

std::optional<ShaderText> ShaderText::Weak::lock() const {
  std::shared_ptr<const Shared> text = text_.lock();
  if (!text) return std::nullopt;
  return ShaderText(std::move(text));
}

}  // namespace wgi::gpu
