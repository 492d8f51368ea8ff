// wgi::Image: an 8-bit RGB image read from a PNG, JPEG, BMP, GIF, TGA, PSD, HDR or PNM file (stb_image),
// or written as a PNG (stb_image_write),
// for pipelines whose input is a picture (Florence-2, include/wgi/florence2.h; the OCR example).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace wgi {

struct Image {
  int width = 0;
  int height = 0;
  int channels = 3;             // of `pixels`: 3 (RGB) from load_image
  std::vector<uint8_t> pixels;  // row-major, `channels` bytes per pixel
};

// The image at `path` as RGB (grey and alpha images are converted, as transformers.js's RawImage.rgb()
// does: alpha dropped). Throws wgi::Error naming the file if it cannot be read or decoded.
Image load_image(const std::filesystem::path& path);

// Writes `image` (1 to 4 channels) as a PNG file. Throws wgi::Error naming the file if it cannot.
void save_png(const Image& image, const std::filesystem::path& path);

}  // namespace wgi
