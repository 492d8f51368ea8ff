// Drawing a detection answer on an image (`wgi florence2 --draw`): box and quadrilateral outlines in
// distinct colors, on an RGB wgi::Image. Plain pixel writes, no dependency (the browser build compiles it
// too).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "wgi/image.h"

namespace wgi::pipelines {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// The color of outline i: a fixed cycle of saturated colors.
Rgb outline_color(size_t i);

// The closed polygon through `xy` (x0, y0, x1, y1, ... in pixel coordinates, as Florence-2's answers give
// them) drawn `thickness` pixels wide; points outside the image are clipped, not an error.
void draw_polygon(Image& image, const std::vector<double>& xy, Rgb color, int thickness);

// A copy of `image` with each box (x1, y1, x2, y2) and quadrilateral (x1, y1, ..., x4, y4) outlined, box i
// and then quadrilateral j in outline_color(i) / outline_color(boxes.size() + j).
Image draw_outlines(const Image& image, const std::vector<std::array<double, 4>>& boxes,
                    const std::vector<std::array<double, 8>>& quads, int thickness = 2);

}  // namespace wgi::pipelines
