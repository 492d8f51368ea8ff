#include "pipelines/image_draw.h"

#include <algorithm>
#include <cmath>

#include "wgi/error.h"

namespace wgi::pipelines {

Rgb outline_color(size_t i) {
  static constexpr std::array<Rgb, 8> kColors = {Rgb{255, 0, 0},   Rgb{0, 200, 0},   Rgb{0, 80, 255},
                                                 Rgb{255, 160, 0}, Rgb{200, 0, 255}, Rgb{0, 220, 220},
                                                 Rgb{255, 0, 140}, Rgb{140, 220, 0}};
  return kColors[i % kColors.size()];
}

namespace {

// A thickness x thickness square of pixels whose top left corner is (x, y) - thickness / 2, clipped.
void plot(Image& image, double x, double y, Rgb color, int thickness) {
  const int x0 = static_cast<int>(std::floor(x)) - thickness / 2,
            y0 = static_cast<int>(std::floor(y)) - thickness / 2;
  for (int py = std::max(y0, 0); py < std::min(y0 + thickness, image.height); ++py) {
    for (int px = std::max(x0, 0); px < std::min(x0 + thickness, image.width); ++px) {
      uint8_t* p = &image.pixels[(static_cast<size_t>(py) * static_cast<size_t>(image.width) +
                                  static_cast<size_t>(px)) *
                                 3];
      p[0] = color.r;
      p[1] = color.g;
      p[2] = color.b;
    }
  }
}

// Clips the segment a-b to [lo, hi] in x and y (Liang-Barsky); false when nothing of it is inside.
bool clip(double& ax, double& ay, double& bx, double& by, double lo_x, double lo_y, double hi_x,
          double hi_y) {
  double t0 = 0, t1 = 1;
  const double dx = bx - ax, dy = by - ay;
  const double p[4] = {-dx, dx, -dy, dy}, q[4] = {ax - lo_x, hi_x - ax, ay - lo_y, hi_y - ay};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return false;
  }
  const double x0 = ax + t0 * dx, y0 = ay + t0 * dy;
  bx = ax + t1 * dx;
  by = ay + t1 * dy;
  ax = x0;
  ay = y0;
  return true;
}

}  // namespace

void draw_polygon(Image& image, const std::vector<double>& xy, Rgb color, int thickness) {
  if (image.channels != 3 ||
      image.pixels.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3) {
    throw Error("draw: an RGB image is needed");
  }
  if (xy.size() < 4 || xy.size() % 2 != 0) throw Error("draw: a polygon needs 2 or more x, y points");
  const size_t points = xy.size() / 2;
  for (size_t i = 0; i < points; ++i) {
    double ax = xy[2 * i], ay = xy[2 * i + 1];
    double bx = xy[(2 * i + 2) % xy.size()], by = xy[(2 * i + 3) % xy.size()];
    if (!std::isfinite(ax) || !std::isfinite(ay) || !std::isfinite(bx) || !std::isfinite(by)) continue;
    // Only the part within the image (and a brush width around it) is walked, in steps of at most half a
    // pixel.
    const double margin = thickness + 1.0;
    if (!clip(ax, ay, bx, by, -margin, -margin, image.width + margin, image.height + margin)) continue;
    const double length = std::hypot(bx - ax, by - ay);
    const int steps = static_cast<int>(std::ceil(length * 2)) + 1;
    for (int s = 0; s <= steps; ++s) {
      const double t = static_cast<double>(s) / steps;
      plot(image, ax + (bx - ax) * t, ay + (by - ay) * t, color, thickness);
    }
  }
}

Image draw_outlines(const Image& image, const std::vector<std::array<double, 4>>& boxes,
                    const std::vector<std::array<double, 8>>& quads, int thickness) {
  Image out = image;
  for (size_t i = 0; i < boxes.size(); ++i) {
    // Answers reach the image's edge (x2 = width): kept on its last pixel so that the side shows.
    const auto x = [&](double v) { return std::clamp(v, 0.0, image.width - 1.0); };
    const auto y = [&](double v) { return std::clamp(v, 0.0, image.height - 1.0); };
    const auto& b = boxes[i];
    draw_polygon(out, {x(b[0]), y(b[1]), x(b[2]), y(b[1]), x(b[2]), y(b[3]), x(b[0]), y(b[3])},
                 outline_color(i), thickness);
  }
  for (size_t j = 0; j < quads.size(); ++j) {
    draw_polygon(out, std::vector<double>(quads[j].begin(), quads[j].end()), outline_color(boxes.size() + j),
                 thickness);
  }
  return out;
}

}  // namespace wgi::pipelines
