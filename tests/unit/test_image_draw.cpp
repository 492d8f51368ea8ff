// pipelines::draw_outlines (`wgi florence2 --draw`): box and quadrilateral outlines land on the pixels of
// their edges in their colors, the inside and outside stay as they were, and edges at the image border show.
#include <gtest/gtest.h>

#include <random>

#include "pipelines/image_draw.h"
#include "wgi/error.h"

namespace wgi {
namespace {

Image noise(int width, int height) {
  Image image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  std::mt19937 rng(5);
  // Values 20..200: never one of the outline colors' saturated channels, so a match means drawn.
  for (uint8_t& v : image.pixels) v = static_cast<uint8_t>(20 + rng() % 181);
  return image;
}

pipelines::Rgb at(const Image& image, int x, int y) {
  const uint8_t* p =
      &image.pixels[(static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x)) * 3];
  return {p[0], p[1], p[2]};
}

bool is(const pipelines::Rgb& a, const pipelines::Rgb& b) {
  return a.r == b.r && a.g == b.g && a.b == b.b;
}

TEST(ImageDraw, OutlinesBoxesAndQuadrilaterals) {
  const Image image = noise(61, 47);
  const std::vector<std::array<double, 4>> boxes = {{10.2, 5.7, 40.9, 30.1}, {0, 0, 61, 47}};
  const std::vector<std::array<double, 8>> quads = {{45, 35, 58, 35, 58, 44, 45, 44}};
  const Image out = pipelines::draw_outlines(image, boxes, quads, 1);
  const pipelines::Rgb first = pipelines::outline_color(0), border = pipelines::outline_color(1),
                       quad = pipelines::outline_color(2);
  ASSERT_FALSE(is(first, border));
  // Box 0's four sides, at floor of the coordinates.
  for (int x = 11; x <= 40; ++x) {
    EXPECT_TRUE(is(at(out, x, 5), first)) << x;
    EXPECT_TRUE(is(at(out, x, 30), first)) << x;
  }
  for (int y = 6; y <= 29; ++y) {
    EXPECT_TRUE(is(at(out, 10, y), first)) << y;
    EXPECT_TRUE(is(at(out, 40, y), first)) << y;
  }
  // Inside and just outside: untouched.
  for (const auto& [x, y] :
       std::vector<std::pair<int, int>>{{25, 18}, {12, 7}, {39, 29}, {8, 18}, {25, 32}}) {
    EXPECT_TRUE(is(at(out, x, y), at(image, x, y))) << x << "," << y;
  }
  // The whole-image box: on the first and last rows and columns.
  EXPECT_TRUE(is(at(out, 30, 0), border));
  EXPECT_TRUE(is(at(out, 30, 46), border));
  EXPECT_TRUE(is(at(out, 0, 20), border));
  EXPECT_TRUE(is(at(out, 60, 20), border));
  // The quadrilateral's sides.
  EXPECT_TRUE(is(at(out, 50, 35), quad));
  EXPECT_TRUE(is(at(out, 58, 40), quad));
  EXPECT_TRUE(is(at(out, 50, 44), quad));
  EXPECT_TRUE(is(at(out, 45, 40), quad));
  EXPECT_TRUE(is(at(out, 51, 40), at(image, 51, 40)));
  // The input is not changed.
  EXPECT_EQ(image.pixels, noise(61, 47).pixels);
}

TEST(ImageDraw, FarOffPointsAreClippedAndBadPolygonsAreErrors) {
  Image image = noise(8, 8);
  pipelines::draw_polygon(image, {-1e9, 3, 1e9, 3}, {255, 0, 0}, 1);
  EXPECT_TRUE(is(at(image, 4, 3), {255, 0, 0}));
  EXPECT_THROW(pipelines::draw_polygon(image, {1, 2, 3}, {255, 0, 0}, 1), Error);
}

}  // namespace
}  // namespace wgi
