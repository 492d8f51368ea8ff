// PIL's Image.resize for 8-bit RGB images (Pillow's libImaging/Resample.c, the algorithm Hugging Face's image
// processors run through PIL): a separable convolution, horizontal pass then vertical, each rounded to 8
// bits, with the filter widened by the scale when shrinking (antialiasing), coefficients in 22-bit fixed
// point. Written from the algorithm, bit-exact against Debian's python3-pil
// (tests/unit/test_image_resize.cpp).
#pragma once

#include <string>

#include "wgi/image.h"

namespace wgi::pipelines {

// PIL's resample codes (Image.Resampling): the ones a processor config's `resample` may name.
enum class Resample { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

// `resample` as a Resample, or wgi::Error naming `where` (NEAREST is not implemented: PIL runs a different
// algorithm for it, and no image processor of these pipelines asks for it).
Resample resample_from_code(int code, const std::string& where);

// `image` (RGB) resized to width x height as PIL's Image.resize((width, height), resample) does; the image
// itself when the size is already that.
Image resize_image(const Image& image, int width, int height, Resample resample);

}  // namespace wgi::pipelines
