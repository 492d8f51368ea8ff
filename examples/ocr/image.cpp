#include "image.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>

#include <stb/stb_image_write.h>
#include <stb/stb_truetype.h>

#include "wgi/image.h"

namespace ocr {

Image load_image(const std::filesystem::path& path) {
  wgi::Image image = wgi::load_image(path);
  return Image{image.width, image.height, std::move(image.pixels)};
}

void save_png(const Image& image, const std::filesystem::path& path) {
  if (!stbi_write_png(path.string().c_str(), image.width, image.height, 3, image.rgb.data(),
                      image.width * 3)) {
    throw std::runtime_error("cannot write '" + path.string() + "'");
  }
}

namespace {

// Bilinear sample at (x, y) in pixel-centre coordinates; outside the image is white.
std::array<float, 3> sample(const Image& img, float x, float y) {
  const int x0 = static_cast<int>(std::floor(x)), y0 = static_cast<int>(std::floor(y));
  const float fx = x - x0, fy = y - y0;
  std::array<float, 3> out = {0, 0, 0};
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const float weight = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
      const int xi = x0 + dx, yi = y0 + dy;
      for (int c = 0; c < 3; ++c) {
        const float v =
            (xi < 0 || yi < 0 || xi >= img.width || yi >= img.height) ? 255.0f : img.at(xi, yi)[c];
        out[static_cast<size_t>(c)] += weight * v;
      }
    }
  }
  return out;
}

uint8_t to_byte(float v) {
  return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

}  // namespace

Image resize_bilinear(const Image& image, int width, int height) {
  Image out{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  const float sx = static_cast<float>(image.width) / width, sy = static_cast<float>(image.height) / height;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      // Half-pixel centres, clamped to the image so edges are not blended with the white outside.
      float u = std::clamp((x + 0.5f) * sx - 0.5f, 0.0f, static_cast<float>(image.width - 1));
      float v = std::clamp((y + 0.5f) * sy - 0.5f, 0.0f, static_cast<float>(image.height - 1));
      auto px = sample(image, u, v);
      for (int c = 0; c < 3; ++c) out.at(x, y)[c] = to_byte(px[static_cast<size_t>(c)]);
    }
  }
  return out;
}

Image warp_quad(const Image& image, const std::array<Point, 4>& q, int width, int height) {
  Image out{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    const float v = (y + 0.5f) / height;
    for (int x = 0; x < width; ++x) {
      const float u = (x + 0.5f) / width;
      // Bilinear interpolation of the four corners: exact for rectangles, close for mild perspective.
      const float px = (1 - v) * ((1 - u) * q[0].x + u * q[1].x) + v * ((1 - u) * q[3].x + u * q[2].x);
      const float py = (1 - v) * ((1 - u) * q[0].y + u * q[1].y) + v * ((1 - u) * q[3].y + u * q[2].y);
      auto s = sample(image, px - 0.5f, py - 0.5f);
      for (int c = 0; c < 3; ++c) out.at(x, y)[c] = to_byte(s[static_cast<size_t>(c)]);
    }
  }
  return out;
}

Image rotate_180(const Image& image) {
  Image out = image;
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      std::copy_n(image.at(x, y), 3, out.at(image.width - 1 - x, image.height - 1 - y));
    }
  }
  return out;
}

Image render_text(const std::vector<std::string>& lines, const std::filesystem::path& font_path,
                  float pixel_height) {
  std::ifstream in(font_path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open font '" + font_path.string() + "'");
  std::vector<unsigned char> font_data((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
  stbtt_fontinfo font;
  if (!stbtt_InitFont(&font, font_data.data(), stbtt_GetFontOffsetForIndex(font_data.data(), 0))) {
    throw std::runtime_error("cannot parse font '" + font_path.string() + "'");
  }
  const float scale = stbtt_ScaleForPixelHeight(&font, pixel_height);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&font, &ascent, &descent, &gap);
  const int line_height = static_cast<int>(std::ceil((ascent - descent + gap) * scale * 1.6f));
  const int margin = static_cast<int>(pixel_height);
  auto line_width = [&](const std::string& text) {
    float w = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      int advance = 0, bearing = 0;
      stbtt_GetCodepointHMetrics(&font, static_cast<unsigned char>(text[i]), &advance, &bearing);
      w += advance * scale;
      if (i + 1 < text.size()) {
        w += scale * stbtt_GetCodepointKernAdvance(&font, static_cast<unsigned char>(text[i]),
                                                   static_cast<unsigned char>(text[i + 1]));
      }
    }
    return static_cast<int>(std::ceil(w));
  };
  int width = 0;
  for (const auto& l : lines) width = std::max(width, line_width(l));
  Image img{width + 2 * margin, static_cast<int>(lines.size()) * line_height + 2 * margin, {}};
  img.rgb.assign(static_cast<size_t>(img.width) * img.height * 3, 255);
  for (size_t li = 0; li < lines.size(); ++li) {
    const std::string& text = lines[li];
    const int baseline = margin + static_cast<int>(li) * line_height + static_cast<int>(ascent * scale);
    float x = static_cast<float>(margin);
    for (size_t i = 0; i < text.size(); ++i) {
      const int cp = static_cast<unsigned char>(text[i]);
      int advance = 0, bearing = 0;
      stbtt_GetCodepointHMetrics(&font, cp, &advance, &bearing);
      int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
      stbtt_GetCodepointBitmapBox(&font, cp, scale, scale, &x0, &y0, &x1, &y1);
      const int gw = x1 - x0, gh = y1 - y0;
      if (gw > 0 && gh > 0) {
        std::vector<unsigned char> glyph(static_cast<size_t>(gw) * gh);
        stbtt_MakeCodepointBitmap(&font, glyph.data(), gw, gh, gw, scale, scale, cp);
        const int ox = static_cast<int>(std::lround(x)) + x0, oy = baseline + y0;
        for (int gy = 0; gy < gh; ++gy) {
          for (int gx = 0; gx < gw; ++gx) {
            const int px = ox + gx, py = oy + gy;
            if (px < 0 || py < 0 || px >= img.width || py >= img.height) continue;
            const int ink = glyph[static_cast<size_t>(gy) * gw + gx];
            for (int c = 0; c < 3; ++c)
              img.at(px, py)[c] = static_cast<uint8_t>(std::min<int>(img.at(px, py)[c], 255 - ink));
          }
        }
      }
      x += advance * scale;
      if (i + 1 < text.size())
        x += scale * stbtt_GetCodepointKernAdvance(&font, cp, static_cast<unsigned char>(text[i + 1]));
    }
  }
  return img;
}

}  // namespace ocr
