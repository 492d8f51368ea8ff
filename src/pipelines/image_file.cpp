// wgi::load_image (include/wgi/image.h) on Debian's stb_image (libstb-dev), whose implementation is compiled
// once in stb_image_implementation.cpp.
#include <stb/stb_image.h>

#include <memory>
#include <string>

#include "wgi/error.h"
#include "wgi/image.h"

namespace wgi {

Image load_image(const std::filesystem::path& path) {
  int width = 0, height = 0, channels_in_file = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> data(
      stbi_load(path.string().c_str(), &width, &height, &channels_in_file, 3), stbi_image_free);
  if (!data) {
    throw Error("cannot read image '" + path.string() + "': " + std::string(stbi_failure_reason()));
  }
  Image image;
  image.width = width;
  image.height = height;
  image.channels = 3;
  image.pixels.assign(data.get(), data.get() + static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  return image;
}

}  // namespace wgi
