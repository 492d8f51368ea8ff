// What the image+text pipelines share about a Hugging Face model folder: reading its JSON configs, checking
// a session's inputs and outputs against them (a wgi::Error naming the file, the name and what it has
// instead), and the image processor of preprocessor_config.json (rescale, normalise, HWC -> NCHW; no resize
// yet). Each message starts with the pipeline's name (`pipeline`, e.g. "SigLIP").
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "wgi/image.h"
#include "wgi/session.h"
#include "wgi/tensor.h"

namespace wgi::pipelines {

json::Value read_json_file(const std::string& pipeline, const std::filesystem::path& file);

// transformers.js's dtype -> file suffix ("fp32" -> "", "fp16" -> "_fp16", "q8" -> "_quantized", "int8",
// "uint8", "q4", "q4f16", "bnb4": its DEFAULT_DTYPE_SUFFIX_MAPPING); wgi::Error naming the known ones for
// another dtype, the message starting with `pipeline`.
std::string dtype_suffix(const std::string& pipeline, const std::string& dtype);

// The member `key` of `object`, nullptr when absent or null.
const json::Value* json_member(const json::Value& object, std::string_view key);
// An integer member; wgi::Error naming `file` if it is present but not an integer.
std::optional<int64_t> json_integer(const std::string& pipeline, const json::Value& object,
                                    std::string_view key, const std::filesystem::path& file);

// The session's input (or output) `name`; wgi::Error naming `file` and the names it has otherwise.
const TensorInfo& require_tensor(const std::string& pipeline, const Session& session, const std::string& file,
                                 bool input, const std::string& name);
// wgi::Error when the fixed dim `axis` of `info` is not `expected` (`what` says where that number comes
// from).
void require_dim(const std::string& pipeline, const TensorInfo& info, size_t axis, int64_t expected,
                 const std::string& file, const std::string& what);

// preprocessor_config.json's rescale and normalisation at a fixed size.
struct ImageProcessor {
  int width = 0, height = 0;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255;
  bool do_normalize = false;
  std::array<double, 3> mean{}, stddev{};

  // Refuses center crop, padding and thumbnails (neither SigLIP's nor Florence-2's processor uses them).
  static ImageProcessor from_config(const std::string& pipeline, const json::Value& config,
                                    const std::filesystem::path& file);
  // [1, 3, height, width] float32, as transformers.js computes it; wgi::Error unless `image` is RGB at
  // width x height (resizing is not implemented).
  Tensor pixel_values(const std::string& pipeline, const Image& image) const;
};

}  // namespace wgi::pipelines
