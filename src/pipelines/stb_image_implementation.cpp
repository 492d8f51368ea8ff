// The translation unit that compiles stb_image (Debian's libstb-dev) for wgi::load_image; third-party C,
// compiled without wgi's warning set (src/CMakeLists.txt). The OCR example links it from here.
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
