// wgi::Siglip: SigLIP zero-shot image classification (image + candidate labels -> sigmoid scores) end to end
// on a wgi session, as transformers.js 4.3's pipeline('zero-shot-image-classification') computes it for a
// model_type "siglip" folder (docs/siglip.md).
//
//   wgi::Siglip model = wgi::Siglip::from_folder("siglip-base-patch16-224");
//   wgi::SiglipResult r = model.classify(wgi::load_image("image.png"), {"cat", "dog"});
//   for (const wgi::SiglipScore& s : r.ranked()) ... s.label, s.score ...
//
// The folder has Xenova/siglip-base-patch16-224's layout: config.json (model_type siglip),
// preprocessor_config.json, spiece.model (+ tokenizer_config.json) and onnx/model.onnx, the joint model whose
// logits_per_image already hold exp(logit_scale) * cos + logit_bias (the pipeline's only session; the
// separate onnx/text_model.onnx and onnx/vision_model.onnx towers carry neither logit_scale nor logit_bias).
// float32 files only for now.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "wgi/error.h"
#include "wgi/image.h"
#include "wgi/session.h"

namespace wgi {

// transformers.js's default is "This is a photo of {}": SigLIP's tokenizer removes the punctuation, so both
// give the same ids.
inline constexpr const char* kSiglipDefaultTemplate = "This is a photo of {}.";

struct SiglipOptions {
  SessionOptions session;
  // The joint model's file under onnx/.
  std::string model_file = "model.onnx";
  // Or transformers.js's dtype, which names it: "fp16" -> onnx/model_fp16.onnx (fp32, fp16, q8, int8, uint8,
  // q4, q4f16, bnb4); "" keeps model_file. Giving both (model_file changed) is an error.
  std::string dtype;

  // The file under onnx/ these options load; wgi::Error for an unknown dtype or both given.
  std::string file() const;
};

struct SiglipScore {
  std::string label;
  double score = 0;
};

struct SiglipResult {
  std::vector<std::string> labels;              // as given
  std::vector<std::string> texts;               // the template filled with each label
  std::vector<std::vector<int64_t>> input_ids;  // each text as the text tower takes it (max_length ids)
  std::vector<float> logits;                    // logits_per_image, in label order
  std::vector<float> scores;                    // sigmoid(logits), float32 as transformers.js stores them
  // The labels by descending score, ties in label order (transformers.js's stable sort): its output.
  std::vector<SiglipScore> ranked() const;
};

class Siglip {
 public:
  // Checks the folder's files (a missing one is named), the configs, the tokenizer and the session's inputs
  // and outputs against the configs before returning.
  static Siglip from_folder(const std::filesystem::path& folder, const SiglipOptions& options = {});
  // The same on a given Environment (include/wgi/environment.h), e.g. the one of another model of the same
  // application; options.session's device choice must be left empty or equal the environment's.
  static Siglip from_folder(const std::filesystem::path& folder, const Environment& environment,
                            const SiglipOptions& options = {});
  ~Siglip();
  Siglip(Siglip&&) noexcept;
  Siglip& operator=(Siglip&&) noexcept;

  // Scores each label for `image`, an RGB image at the processor's size (no resizing yet: wgi::Error
  // otherwise). `hypothesis_template`'s first "{}" is replaced by each label (a template without "{}" is an
  // error). The labels go through the model in one run when its text batch is dynamic.
  SiglipResult classify(const Image& image, const std::vector<std::string>& labels,
                        const std::string& hypothesis_template = kSiglipDefaultTemplate);

  // `text` as the pipeline tokenizes it (max_length ids, "</s>" and padding included).
  std::vector<int64_t> tokenize(const std::string& text) const;

  // The processor's input size (preprocessor_config.json's size): images must have it.
  int image_width() const;
  int image_height() const;
  int max_length() const;

 private:
  struct Impl;
  explicit Siglip(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgi
