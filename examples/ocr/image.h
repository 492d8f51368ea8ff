// 8-bit RGB images for the OCR example: loading (PNG, JPEG, ... through stb_image), saving PNG, bilinear
// resizing, sampling a rotated rectangle, and rendering text with a TrueType font (for the bundled sample and
// the tests, which render lines and check that they are read back exactly).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ocr {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel

  uint8_t* at(int x, int y) { return rgb.data() + 3 * (static_cast<size_t>(y) * width + x); }
  const uint8_t* at(int x, int y) const { return rgb.data() + 3 * (static_cast<size_t>(y) * width + x); }
};

struct Point {
  float x = 0;
  float y = 0;
};

// Throws std::runtime_error naming the file if it cannot be read or decoded.
Image load_image(const std::filesystem::path& path);
void save_png(const Image& image, const std::filesystem::path& path);

Image resize_bilinear(const Image& image, int width, int height);

// The quadrilateral corners[0..3] (top-left, top-right, bottom-right, bottom-left) mapped onto an upright
// width x height image (bilinear sampling; outside the source is white).
Image warp_quad(const Image& image, const std::array<Point, 4>& corners, int width, int height);
Image rotate_180(const Image& image);

// Renders `lines` in black on white with the font at `font_path`, `pixel_height` high, one line under the
// other with margins. Throws std::runtime_error if the font cannot be loaded.
Image render_text(const std::vector<std::string>& lines, const std::filesystem::path& font_path,
                  float pixel_height);

}  // namespace ocr
