// wgi::load_image and wgi::save_png (include/wgi/image.h) on Debian's stb_image and stb_image_write
// (libstb-dev), whose implementations are compiled once in stb_image_implementation.cpp.
#include <stb/stb_image.h>

#include <memory>
#include <string>

#include "wgi/error.h"
#include "wgi/image.h"

// stb_image_write's stbi_write_png, from stb_image_implementation.cpp.
int wgi_write_png(const char* path, int width, int height, int channels, const void* pixels, int stride);

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

void save_png(const Image& image, const std::filesystem::path& path) {
  if (image.width <= 0 || image.height <= 0 || image.channels < 1 || image.channels > 4 ||
      image.pixels.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) *
                                 static_cast<size_t>(image.channels)) {
    throw Error("cannot write image '" + path.string() + "': the pixels do not hold " +
                std::to_string(image.width) + "x" + std::to_string(image.height) + " with " +
                std::to_string(image.channels) + " channels");
  }
  if (!wgi_write_png(path.string().c_str(), image.width, image.height, image.channels, image.pixels.data(),
                     image.width * image.channels)) {
    throw Error("cannot write image '" + path.string() + "' (is its folder there and writable?)");
  }
}

}  // namespace wgi
