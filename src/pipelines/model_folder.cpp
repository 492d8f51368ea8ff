// pipelines/model_folder.h: the config and session checks of the image+text pipelines.
#include "pipelines/model_folder.h"

#include <cmath>
#include <map>
#include <span>
#include <utility>

#include "core/npy.h"
#include "wgi/error.h"
#include "wgi/printable.h"

namespace wgi::pipelines {

namespace {

const std::map<std::string, std::string>& dtype_suffixes() {
  static const std::map<std::string, std::string> suffixes = {
      {"fp32", ""},        {"fp16", "_fp16"}, {"q8", "_quantized"}, {"int8", "_int8"},
      {"uint8", "_uint8"}, {"q4", "_q4"},     {"q4f16", "_q4f16"},  {"bnb4", "_bnb4"}};
  return suffixes;
}

}  // namespace

std::string dtype_suffix(const std::string& pipeline, const std::string& dtype) {
  const auto it = dtype_suffixes().find(dtype);
  if (it != dtype_suffixes().end()) return it->second;
  std::string names;
  for (const auto& [name, suffix] : dtype_suffixes()) names += (names.empty() ? "" : ", ") + name;
  throw Error(pipeline + ": unknown dtype '" + printable(dtype) + "' (one of " + names + ")");
}

namespace fs = std::filesystem;

json::Value read_json_file(const std::string& pipeline, const fs::path& file) {
  try {
    return json::parse(npy::read_file(file));
  } catch (const Error& e) {
    throw Error(pipeline + ": " + file.string() + ": " + e.what());
  }
}

const json::Value* json_member(const json::Value& object, std::string_view key) {
  const json::Value* v = object.find(key);
  return v && !v->is(json::Value::Type::Null) ? v : nullptr;
}

std::optional<int64_t> json_integer(const std::string& pipeline, const json::Value& object,
                                    std::string_view key, const fs::path& file) {
  const json::Value* v = json_member(object, key);
  if (!v) return std::nullopt;
  if (!v->is(json::Value::Type::Number) || v->number != std::floor(v->number) || std::abs(v->number) > 1e15) {
    throw Error(pipeline + ": " + file.string() + ": '" + std::string(key) + "' must be an integer");
  }
  return static_cast<int64_t>(v->number);
}

namespace {

double json_number(const std::string& pipeline, const json::Value& object, std::string_view key,
                   const fs::path& file) {
  const json::Value* v = json_member(object, key);
  if (!v || !v->is(json::Value::Type::Number)) {
    throw Error(pipeline + ": " + file.string() + ": '" + std::string(key) + "' must be a number");
  }
  return v->number;
}

bool json_flag(const json::Value& object, std::string_view key, bool fallback) {
  const json::Value* v = json_member(object, key);
  return v && v->is(json::Value::Type::Bool) ? v->boolean : fallback;
}

std::string names_of(const std::vector<TensorInfo>& list) {
  std::string out;
  for (const TensorInfo& info : list) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

}  // namespace

const TensorInfo& require_tensor(const std::string& pipeline, const Session& session, const std::string& file,
                                 bool input, const std::string& name) {
  const std::vector<TensorInfo>& list = input ? session.inputs() : session.outputs();
  for (const TensorInfo& info : list)
    if (info.name == name) return info;
  throw Error(pipeline + ": " + file + " has no " + (input ? "input" : "output") + " '" + name + "' (its " +
              (input ? "inputs" : "outputs") + ": " + names_of(list) + ")");
}

void require_dim(const std::string& pipeline, const TensorInfo& info, size_t axis, int64_t expected,
                 const std::string& file, const std::string& what) {
  if (info.rank_known && axis < info.dims.size() && info.dims[axis] >= 0 && info.dims[axis] != expected) {
    throw Error(pipeline + ": " + file + " '" + info.name + "' has dim " + std::to_string(axis) + " = " +
                std::to_string(info.dims[axis]) + ", but " + what + " is " + std::to_string(expected));
  }
}

ImageProcessor ImageProcessor::from_config(const std::string& pipeline, const json::Value& config,
                                           const fs::path& file) {
  ImageProcessor p;
  if (json_flag(config, "do_center_crop", false) || json_flag(config, "do_pad", false) ||
      json_flag(config, "do_thumbnail", false)) {
    throw Error(pipeline + ": " + file.string() + ": center crop, padding and thumbnails are not supported");
  }
  const json::Value* size = json_member(config, "size");
  if (!size || !size->is(json::Value::Type::Object)) {
    throw Error(pipeline + ": " + file.string() + ": 'size' must be an object with height and width");
  }
  p.width = static_cast<int>(json_integer(pipeline, *size, "width", file).value_or(0));
  p.height = static_cast<int>(json_integer(pipeline, *size, "height", file).value_or(0));
  if (p.width <= 0 || p.height <= 0 || p.width > 1 << 15 || p.height > 1 << 15) {
    throw Error(pipeline + ": " + file.string() + ": 'size' needs a height and width from 1 to 32768");
  }
  p.do_rescale = json_flag(config, "do_rescale", true);
  if (json_member(config, "rescale_factor"))
    p.rescale_factor = json_number(pipeline, config, "rescale_factor", file);
  p.do_normalize = json_flag(config, "do_normalize", false);
  if (p.do_normalize) {
    for (const auto& [key, out] : {std::pair{"image_mean", &p.mean}, std::pair{"image_std", &p.stddev}}) {
      const json::Value* v = json_member(config, key);
      if (!v || !v->is(json::Value::Type::Array) || v->array.size() != 3) {
        throw Error(pipeline + ": " + file.string() + ": '" + key + "' must be a list of 3 numbers (RGB)");
      }
      for (size_t c = 0; c < 3; ++c) {
        if (!v->array[c].is(json::Value::Type::Number) ||
            (key == std::string_view("image_std") && v->array[c].number == 0)) {
          throw Error(pipeline + ": " + file.string() + ": '" + key + "' must hold numbers" +
                      (key == std::string_view("image_std") ? " other than 0" : ""));
        }
        (*out)[c] = v->array[c].number;
      }
    }
  }
  return p;
}

Tensor ImageProcessor::pixel_values(const std::string& pipeline, const Image& image) const {
  if (image.channels != 3) {
    throw Error(pipeline + ": the image has " + std::to_string(image.channels) +
                " channels; RGB (3) is needed (wgi::load_image converts)");
  }
  if (image.width != width || image.height != height) {
    throw Error(pipeline + ": the image is " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + "; this model's processor takes " + std::to_string(width) +
                "x" + std::to_string(height) + " (resizing is not implemented yet: resize it beforehand)");
  }
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  if (image.pixels.size() != pixels * 3) {
    throw Error(pipeline + ": the image holds " + std::to_string(image.pixels.size()) + " bytes; " +
                std::to_string(image.width) + "x" + std::to_string(image.height) + " RGB needs " +
                std::to_string(pixels * 3));
  }
  Tensor out(DType::Float32, {1, 3, image.height, image.width});
  std::span<float> data = out.data<float>();
  for (size_t i = 0; i < pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      // transformers.js stores each step in a Float32Array and computes it in double: the same roundings.
      float v = static_cast<float>(image.pixels[i * 3 + c]);
      if (do_rescale) v = static_cast<float>(rescale_factor * v);
      if (do_normalize) v = static_cast<float>((v - mean[c]) / stddev[c]);
      data[c * pixels + i] = v;
    }
  }
  return out;
}

}  // namespace wgi::pipelines
