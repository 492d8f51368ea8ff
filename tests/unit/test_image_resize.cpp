// pipelines::resize_image against PIL's Image.resize (Debian's python3-pil 9.4; the .npy files of
// tests/data/pipelines/resize, written by tests/models/pil_resize_reference.py): every byte equal, since the
// implementation does PIL's integer arithmetic (22-bit fixed-point coefficients, 8-bit rounding after each
// pass). Up- and downscaling, non-square and odd sizes, one pass or both, every filter PIL has but NEAREST.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "core/npy.h"
#include "pipelines/image_resize.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kResize = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "resize";

Image image_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::UInt8);
  EXPECT_EQ(t.rank(), 3);
  Image image;
  image.height = static_cast<int>(t.shape()[0]);
  image.width = static_cast<int>(t.shape()[1]);
  image.pixels.resize(t.byte_size());
  std::memcpy(image.pixels.data(), t.bytes().data(), t.byte_size());
  return image;
}

TEST(ImageResize, EqualsPilByteForByte) {
  const json::Value manifest = json::parse(npy::read_file(kResize / "cases.json"));
  const json::Value& cases = *manifest.find("cases");
  ASSERT_GE(cases.array.size(), 10u);
  for (const json::Value& c : cases.array) {
    const std::string name = c.find("name")->string;
    SCOPED_TRACE(name);
    const Image in = image_of(npy::load(kResize / ("in_" + name + ".npy")));
    const Image want = image_of(npy::load(kResize / ("out_" + name + ".npy")));
    const int width = static_cast<int>(c.find("width")->number),
              height = static_cast<int>(c.find("height")->number);
    ASSERT_EQ(want.width, width);
    ASSERT_EQ(want.height, height);
    const Image got = pipelines::resize_image(
        in, width, height, pipelines::resample_from_code(static_cast<int>(c.find("resample")->number), name));
    ASSERT_EQ(got.width, width);
    ASSERT_EQ(got.height, height);
    ASSERT_EQ(got.pixels.size(), want.pixels.size());
    size_t differing = 0;
    int worst = 0;
    for (size_t i = 0; i < want.pixels.size(); ++i) {
      const int d = std::abs(int{got.pixels[i]} - int{want.pixels[i]});
      differing += d != 0;
      worst = std::max(worst, d);
    }
    EXPECT_EQ(differing, 0u) << "max difference " << worst;
  }
}

TEST(ImageResize, SameSizeIsACopyAndBadArgumentsAreErrors) {
  Image in;
  in.width = 3;
  in.height = 2;
  in.pixels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
  EXPECT_EQ(pipelines::resize_image(in, 3, 2, pipelines::Resample::Bicubic).pixels, in.pixels);
  EXPECT_THROW(pipelines::resize_image(in, 0, 2, pipelines::Resample::Bicubic), Error);
  Image grey = in;
  grey.channels = 1;
  EXPECT_THROW(pipelines::resize_image(grey, 4, 4, pipelines::Resample::Bicubic), Error);
  try {
    pipelines::resample_from_code(0, "preprocessor_config.json");
    ADD_FAILURE() << "NEAREST accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resample 0 (NEAREST) is not implemented"), std::string::npos);
  }
  EXPECT_THROW(pipelines::resample_from_code(7, "x"), Error);
}

}  // namespace
}  // namespace wgi
