// wgi::Siglip (include/wgi/siglip.h): transformers.js 4.3's zero-shot-image-classification pipeline for a
// SigLIP model on a wgi session. What each step mirrors in transformers.js: pipelines/
// zero-shot-image-classification.js (hypothesis_template.replace('{}', label), padding 'max_length' for
// model_type siglip, sigmoid of logits_per_image, a stable sort by score), modeling_utils.js encoder_forward
// (the one 'model' session, fed the inputs it names), image_processors_utils.js (rescale, normalise, HWC ->
// CHW).
#include "wgi/siglip.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "pipelines/model_folder.h"
#include "pipelines/siglip_tokenizer.h"
#include "wgi/printable.h"

namespace wgi {

namespace {

namespace fs = std::filesystem;
const std::string kPipeline = "SigLIP";

// The configs against each other, before any session is made: a mistake there costs no model loading.
void check_configs(const json::Value& config, const fs::path& folder,
                   const pipelines::ImageProcessor& processor, const pipelines::SiglipTokenizer& tokenizer) {
  const fs::path config_file = folder / "config.json";
  const json::Value* type = pipelines::json_member(config, "model_type");
  if (!type || !type->is(json::Value::Type::String) || type->string != "siglip") {
    throw Error(kPipeline + ": " + config_file.string() + ": model_type must be \"siglip\" (found " +
                (type && type->is(json::Value::Type::String) ? "\"" + type->string + "\"" : "none") +
                "); other zero-shot models score with softmax, which this pipeline does not do");
  }
  const json::Value empty;
  const json::Value* text = pipelines::json_member(config, "text_config");
  const json::Value* vision = pipelines::json_member(config, "vision_config");
  const json::Value& text_config = text ? *text : empty;
  const json::Value& vision_config = vision ? *vision : empty;

  if (std::optional<int64_t> size =
          pipelines::json_integer(kPipeline, vision_config, "image_size", config_file);
      size && (*size != processor.width || *size != processor.height)) {
    throw Error(kPipeline + ": config.json's vision_config.image_size is " + std::to_string(*size) +
                ", preprocessor_config.json's size is " + std::to_string(processor.width) + "x" +
                std::to_string(processor.height));
  }
  if (std::optional<int64_t> positions =
          pipelines::json_integer(kPipeline, text_config, "max_position_embeddings", config_file);
      positions && *positions < tokenizer.max_length()) {
    throw Error(kPipeline + ": config.json's text_config.max_position_embeddings (" +
                std::to_string(*positions) + ") is below tokenizer_config.json's model_max_length (" +
                std::to_string(tokenizer.max_length()) + ")");
  }
  if (std::optional<int64_t> vocab =
          pipelines::json_integer(kPipeline, text_config, "vocab_size", config_file);
      vocab && (*vocab < 0 || static_cast<size_t>(*vocab) < tokenizer.vocab_size())) {
    throw Error(kPipeline + ": config.json's text_config.vocab_size (" + std::to_string(*vocab) +
                ") is smaller than " + tokenizer.source().filename().string() + "'s " +
                std::to_string(tokenizer.vocab_size()) + " tokens");
  }
}

}  // namespace

struct Siglip::Impl {
  fs::path folder;
  std::string model_file;  // "onnx/model.onnx", for messages
  pipelines::ImageProcessor processor;
  pipelines::SiglipTokenizer tokenizer;
  Session session;
  bool has_attention_mask = false;
  bool text_batch_fixed_to_one = false;

  Impl(fs::path f, std::string file, pipelines::ImageProcessor p, pipelines::SiglipTokenizer t, Session s)
      : folder(std::move(f)),
        model_file(std::move(file)),
        processor(p),
        tokenizer(std::move(t)),
        session(std::move(s)) {}

  // Siglip::from_folder: on `given`, or on an Environment of its own.
  static Siglip load(const fs::path& folder, const Environment* given, const SiglipOptions& options);

  void check_session();
  // logits_per_image of one image and the texts' ids (`lengths`: their unpadded lengths).
  std::vector<float> logits(const Tensor& pixels, const std::vector<std::vector<int64_t>>& ids,
                            const std::vector<size_t>& lengths);
};

void Siglip::Impl::check_session() {
  const TensorInfo& ids = pipelines::require_tensor(kPipeline, session, model_file, true, "input_ids");
  if (ids.dtype != DType::Int64 || (ids.rank_known && ids.dims.size() != 2)) {
    throw Error(kPipeline + ": " + model_file + " 'input_ids' must be int64 [texts, sequence_length]");
  }
  pipelines::require_dim(kPipeline, ids, 1, tokenizer.max_length(), model_file,
                         "tokenizer_config.json's model_max_length");
  text_batch_fixed_to_one = ids.rank_known && ids.dims[0] == 1;
  const TensorInfo& pixels = pipelines::require_tensor(kPipeline, session, model_file, true, "pixel_values");
  if (pixels.dtype != DType::Float32 || (pixels.rank_known && pixels.dims.size() != 4)) {
    throw Error(kPipeline + ": " + model_file + " 'pixel_values' must be float32 [images, 3, height, width]");
  }
  pipelines::require_dim(kPipeline, pixels, 1, 3, model_file, "RGB's channel count");
  pipelines::require_dim(kPipeline, pixels, 2, processor.height, model_file,
                         "preprocessor_config.json's size.height");
  pipelines::require_dim(kPipeline, pixels, 3, processor.width, model_file,
                         "preprocessor_config.json's size.width");
  pipelines::require_tensor(kPipeline, session, model_file, false, "logits_per_image");
  for (const TensorInfo& in : session.inputs()) {
    if (in.name == "attention_mask") {
      has_attention_mask = true;
    } else if (in.name != "input_ids" && in.name != "pixel_values") {
      throw Error(kPipeline + ": " + model_file + " has an input '" + in.name +
                  "' that the pipeline does not feed (it feeds input_ids, pixel_values and attention_mask)");
    }
  }
}

std::vector<float> Siglip::Impl::logits(const Tensor& pixels, const std::vector<std::vector<int64_t>>& ids,
                                        const std::vector<size_t>& lengths) {
  const int64_t length = tokenizer.max_length();
  const int64_t texts = static_cast<int64_t>(ids.size());
  std::vector<int64_t> flat, mask;
  for (size_t t = 0; t < ids.size(); ++t) {
    flat.insert(flat.end(), ids[t].begin(), ids[t].end());
    // The tokenizer's attention_mask: 1 over the unpadded ids, 0 over the padding.
    for (int64_t i = 0; i < length; ++i) mask.push_back(static_cast<size_t>(i) < lengths[t] ? 1 : 0);
  }
  std::map<std::string, Tensor> inputs = {{"pixel_values", pixels},
                                          {"input_ids", Tensor::from_vector<int64_t>({texts, length}, flat)}};
  if (has_attention_mask) inputs["attention_mask"] = Tensor::from_vector<int64_t>({texts, length}, mask);
  const Tensor out = session.run(inputs).at("logits_per_image");
  if (out.dtype() != DType::Float32 || out.rank() != 2 || out.shape()[0] != 1 || out.shape()[1] != texts) {
    throw Error(kPipeline + ": " + model_file + "'s logits_per_image is " + shape_to_string(out.shape()) +
                "; [1, " + std::to_string(texts) + "] (images x texts) was expected");
  }
  return std::vector<float>(out.data<float>().begin(), out.data<float>().end());
}

std::string SiglipOptions::file() const {
  if (dtype.empty()) return model_file;
  if (model_file != SiglipOptions{}.model_file) {
    throw Error(kPipeline + ": give a dtype or a model file, not both (dtype '" + printable(dtype) +
                "', model file '" + printable(model_file) + "')");
  }
  return "model" + pipelines::dtype_suffix(kPipeline, dtype) + ".onnx";
}

Siglip Siglip::from_folder(const fs::path& folder, const SiglipOptions& options) {
  return Impl::load(folder, nullptr, options);
}

Siglip Siglip::from_folder(const fs::path& folder, const Environment& environment,
                           const SiglipOptions& options) {
  return Impl::load(folder, &environment, options);
}

Siglip Siglip::Impl::load(const fs::path& folder, const Environment* given, const SiglipOptions& options) {
  if (!fs::is_directory(folder)) throw Error(kPipeline + ": '" + folder.string() + "' is not a folder");
  const fs::path onnx = folder / "onnx";
  const std::string model_file = options.file();
  const fs::path model = onnx / model_file;
  for (const fs::path& file : {folder / "config.json", folder / "preprocessor_config.json", model}) {
    if (fs::is_regular_file(file)) continue;
    std::string hint;
    if (file == model && (fs::exists(onnx / "text_model.onnx") || fs::exists(onnx / "vision_model.onnx"))) {
      hint =
          " (the separate text_model.onnx and vision_model.onnx towers carry neither logit_scale nor "
          "logit_bias: scores need the joint model, as transformers.js's pipeline does)";
    }
    throw Error(kPipeline + ": the folder lacks " + fs::relative(file, folder).string() + hint);
  }
  const json::Value config = pipelines::read_json_file(kPipeline, folder / "config.json");
  const json::Value preprocessor_config =
      pipelines::read_json_file(kPipeline, folder / "preprocessor_config.json");
  pipelines::ImageProcessor processor = pipelines::ImageProcessor::from_config(
      kPipeline, preprocessor_config, folder / "preprocessor_config.json");
  pipelines::SiglipTokenizer tokenizer = pipelines::SiglipTokenizer::from_folder(folder);
  check_configs(config, folder, processor, tokenizer);
  const std::string model_name = "onnx/" + model_file;
  Session session = [&] {
    try {
      return given ? Session::from_file(model, *given, options.session)
                   : Session::from_file(model, options.session);
    } catch (const Error& e) {
      throw Error(kPipeline + ": " + model_name + ": " + e.what());
    }
  }();
  auto impl = std::make_unique<Impl>(folder, model_name, processor, std::move(tokenizer), std::move(session));
  impl->check_session();
  return Siglip(std::move(impl));
}

SiglipResult Siglip::classify(const Image& image, const std::vector<std::string>& labels,
                              const std::string& hypothesis_template) {
  Impl& m = *impl_;
  if (labels.empty()) throw Error(kPipeline + ": no candidate labels (give at least one)");
  const size_t slot = hypothesis_template.find("{}");
  if (slot == std::string::npos) {
    throw Error(kPipeline + ": the hypothesis template '" + hypothesis_template +
                "' has no {} to put the label in (e.g. \"This is a photo of {}.\")");
  }
  const Tensor pixels = m.processor.pixel_values(kPipeline, image);
  SiglipResult r;
  r.labels = labels;
  std::vector<size_t> lengths;
  for (const std::string& label : labels) {
    std::string text = hypothesis_template;
    text.replace(slot, 2, label);  // the first {} only, as String.prototype.replace with a string
    std::vector<int64_t> ids = m.tokenizer.encode(text);
    lengths.push_back(std::min(ids.size(), static_cast<size_t>(m.tokenizer.max_length())));
    ids.resize(static_cast<size_t>(m.tokenizer.max_length()), m.tokenizer.pad_id());  // truncated, padded
    r.input_ids.push_back(std::move(ids));
    r.texts.push_back(std::move(text));
  }
  if (m.text_batch_fixed_to_one) {  // a model exported with one text per run: one run per label
    for (size_t i = 0; i < labels.size(); ++i)
      r.logits.push_back(m.logits(pixels, {r.input_ids[i]}, {lengths[i]})[0]);
  } else {
    r.logits = m.logits(pixels, r.input_ids, lengths);
  }
  for (float logit : r.logits) {
    // Tensor.sigmoid: 1 / (1 + Math.exp(-x)) in double, stored in a Float32Array.
    r.scores.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logit)))));
  }
  return r;
}

std::vector<SiglipScore> SiglipResult::ranked() const {
  std::vector<SiglipScore> out;
  for (size_t i = 0; i < labels.size() && i < scores.size(); ++i) out.push_back({labels[i], scores[i]});
  std::stable_sort(out.begin(), out.end(),
                   [](const SiglipScore& a, const SiglipScore& b) { return a.score > b.score; });
  return out;
}

std::vector<int64_t> Siglip::tokenize(const std::string& text) const {
  return impl_->tokenizer.encode_padded(text);
}
int Siglip::image_width() const {
  return impl_->processor.width;
}
int Siglip::image_height() const {
  return impl_->processor.height;
}
int Siglip::max_length() const {
  return impl_->tokenizer.max_length();
}

Siglip::Siglip(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Siglip::~Siglip() = default;
Siglip::Siglip(Siglip&&) noexcept = default;
Siglip& Siglip::operator=(Siglip&&) noexcept = default;

}  // namespace wgi
