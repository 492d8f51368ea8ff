// The single translation unit that compiles the stb single-header libraries the example uses beyond
// stb_image (Debian's libstb-dev); stb_image itself is compiled into the wgi library (wgi::load_image).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#include <stb/stb_truetype.h>
