#include "text_detection.h"

#include <algorithm>
#include <cmath>

namespace ocr {

namespace {

double cross(const Point& o, const Point& a, const Point& b) {
  return static_cast<double>(a.x - o.x) * (b.y - o.y) - static_cast<double>(a.y - o.y) * (b.x - o.x);
}

// Andrew's monotone chain; `points` need not be unique.
std::vector<Point> convex_hull(std::vector<Point> points) {
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  if (points.size() < 3) return points;
  std::vector<Point> hull(2 * points.size());
  size_t k = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], points[i]) <= 0) --k;
    hull[k++] = points[i];
  }
  for (size_t i = points.size() - 1, t = k + 1; i > 0; --i) {
    while (k >= t && cross(hull[k - 2], hull[k - 1], points[i - 1]) <= 0) --k;
    hull[k++] = points[i - 1];
  }
  hull.resize(k - 1);
  return hull;
}

struct Rect {
  Point center;
  float width = 0;  // along `axis`
  float height = 0;
  Point axis;  // unit vector of the width direction
};

// Minimum-area enclosing rectangle: one of its sides lies on a hull edge (rotating calipers, O(n^2) is plenty
// for text regions).
Rect min_area_rect(const std::vector<Point>& hull) {
  Rect best;
  double best_area = INFINITY;
  for (size_t i = 0; i < hull.size(); ++i) {
    const Point& a = hull[i];
    const Point& b = hull[(i + 1) % hull.size()];
    double dx = b.x - a.x, dy = b.y - a.y, len = std::hypot(dx, dy);
    if (len == 0) continue;
    dx /= len;
    dy /= len;
    double lo_u = INFINITY, hi_u = -INFINITY, lo_v = INFINITY, hi_v = -INFINITY;
    for (const Point& p : hull) {
      double u = p.x * dx + p.y * dy, v = -p.x * dy + p.y * dx;
      lo_u = std::min(lo_u, u);
      hi_u = std::max(hi_u, u);
      lo_v = std::min(lo_v, v);
      hi_v = std::max(hi_v, v);
    }
    double area = (hi_u - lo_u) * (hi_v - lo_v);
    if (area < best_area) {
      best_area = area;
      double cu = (lo_u + hi_u) / 2, cv = (lo_v + hi_v) / 2;
      best.center = {static_cast<float>(cu * dx - cv * dy), static_cast<float>(cu * dy + cv * dx)};
      best.width = static_cast<float>(hi_u - lo_u);
      best.height = static_cast<float>(hi_v - lo_v);
      best.axis = {static_cast<float>(dx), static_cast<float>(dy)};
    }
  }
  // Make the width axis the more horizontal one, pointing right, so that corners come out in reading order.
  if (std::abs(best.axis.x) < std::abs(best.axis.y)) {
    best.axis = {-best.axis.y, best.axis.x};
    std::swap(best.width, best.height);
  }
  if (best.axis.x < 0) best.axis = {-best.axis.x, -best.axis.y};
  return best;
}

std::array<Point, 4> corners_of(const Rect& r) {
  const Point u{r.axis.x * r.width / 2, r.axis.y * r.width / 2};
  const Point v{-r.axis.y * r.height / 2, r.axis.x * r.height / 2};  // points down in image coordinates
  return {Point{r.center.x - u.x - v.x, r.center.y - u.y - v.y},
          Point{r.center.x + u.x - v.x, r.center.y + u.y - v.y},
          Point{r.center.x + u.x + v.x, r.center.y + u.y + v.y},
          Point{r.center.x - u.x + v.x, r.center.y - u.y + v.y}};
}

}  // namespace

std::vector<TextBox> find_text_boxes(const float* prob, int width, int height,
                                     const DetectionParams& params) {
  std::vector<int> label(static_cast<size_t>(width) * height, -1);
  std::vector<TextBox> boxes;
  std::vector<std::pair<int, int>> stack, pixels;
  for (int y0 = 0; y0 < height; ++y0) {
    for (int x0 = 0; x0 < width; ++x0) {
      const size_t i0 = static_cast<size_t>(y0) * width + x0;
      if (label[i0] != -1 || prob[i0] <= params.threshold) continue;
      // Flood-fill one 8-connected region of above-threshold pixels.
      pixels.clear();
      stack.assign(1, {x0, y0});
      label[i0] = 1;
      while (!stack.empty()) {
        auto [x, y] = stack.back();
        stack.pop_back();
        pixels.push_back({x, y});
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const int nx = x + dx, ny = y + dy;
            if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
            const size_t ni = static_cast<size_t>(ny) * width + nx;
            if (label[ni] == -1 && prob[ni] > params.threshold) {
              label[ni] = 1;
              stack.push_back({nx, ny});
            }
          }
        }
      }
      if (pixels.size() < 4) continue;
      double sum = 0;
      std::vector<Point> corners;
      corners.reserve(pixels.size() * 4);
      for (auto [x, y] : pixels) {
        sum += prob[static_cast<size_t>(y) * width + x];
        // Pixel squares, not centres: a region's extent is its pixels' outer edges.
        for (auto [cx, cy] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
          corners.push_back({static_cast<float>(x + cx), static_cast<float>(y + cy)});
        }
      }
      const float score = static_cast<float>(sum / static_cast<double>(pixels.size()));
      if (score < params.box_threshold) continue;
      Rect r = min_area_rect(convex_hull(std::move(corners)));
      if (std::min(r.width, r.height) < params.min_size) continue;
      // Unclip: offset the rectangle outwards by area * ratio / perimeter, like PaddleOCR's polygon offset.
      const float distance = r.width * r.height * params.unclip_ratio / (2 * (r.width + r.height));
      r.width += 2 * distance;
      r.height += 2 * distance;
      if (std::min(r.width, r.height) < params.min_size + 2) continue;
      boxes.push_back({corners_of(r), score});
    }
  }
  // Reading order: by line (boxes whose tops are within half a line height are on one line), then left to
  // right.
  std::sort(boxes.begin(), boxes.end(), [](const TextBox& a, const TextBox& b) {
    const float line = 0.5f * std::min(a.corners[3].y - a.corners[0].y, b.corners[3].y - b.corners[0].y);
    if (std::abs(a.corners[0].y - b.corners[0].y) > line) return a.corners[0].y < b.corners[0].y;
    return a.corners[0].x < b.corners[0].x;
  });
  return boxes;
}

}  // namespace ocr
