// The translation unit that compiles stb_image and stb_image_write (Debian's libstb-dev) for wgi::load_image
// and wgi::save_png; third-party C, compiled without wgi's warning set (src/CMakeLists.txt). The OCR example
// links stb_image from here. stb_image_write is compiled static (the OCR example has its own copy) and
// reached through wgi_write_png.
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

int wgi_write_png(const char* path, int width, int height, int channels, const void* pixels, int stride) {
  return stbi_write_png(path, width, height, channels, pixels, stride);
}
