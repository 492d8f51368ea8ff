// `wgi siglip`: SigLIP zero-shot image classification on a model folder (include/wgi/siglip.h).
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "wgi/image.h"
#include "wgi/printable.h"
#include "wgi/siglip.h"

namespace wgi::cli {

void add_siglip_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string folder, image, labels, backend, adapter;
    std::string hypothesis_template = kSiglipDefaultTemplate;
    std::string model_file = "model.onnx";
    std::string dtype;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "siglip",
      "Score candidate labels for an image with SigLIP (zero-shot classification, sigmoid scores as "
      "transformers.js computes them; a model folder in Xenova/siglip-base-patch16-224's layout, the image "
      "at "
      "the processor's size)");
  cmd->add_option("model_dir", opts->folder,
                  "The model folder (config.json, preprocessor_config.json, tokenizer.json or spiece.model, "
                  "onnx/model.onnx)")
      ->required();
  cmd->add_option("image", opts->image, "The image (PNG, JPEG, ...)")->required();
  cmd->add_option("--labels", opts->labels, "The candidate labels, comma-separated: cat,dog,a red car")
      ->required();
  cmd->add_option("--template", opts->hypothesis_template,
                  "The hypothesis template; its first {} becomes each label")
      ->capture_default_str();
  cmd->add_option("--model-file", opts->model_file, "The joint model's file under onnx/")
      ->capture_default_str();
  cmd->add_option("--dtype", opts->dtype,
                  "Or transformers.js's dtype, which names the file: fp32, fp16, q8, int8, uint8, q4, q4f16, "
                  "bnb4 (fp16: onnx/model_fp16.onnx)");
  cmd->add_flag("--json", opts->json,
                "Print one JSON object: labels, texts, input_ids, logits, scores (label order) and output "
                "(transformers.js's answer: [{label, score}] by descending score)");
  add_device_options(*cmd, opts->backend, opts->adapter);
  cmd->callback([opts, &exit_code] {
    // The labels and the image first: a mistake there costs no model loading.
    std::vector<std::string> labels;
    std::stringstream list(opts->labels);
    for (std::string label; std::getline(list, label, ',');) labels.push_back(label);
    if (labels.empty())
      throw Error("siglip: --labels is empty; give candidate labels, e.g. --labels cat,dog");
    if (opts->hypothesis_template.find("{}") == std::string::npos) {
      throw Error("siglip: --template '" + opts->hypothesis_template + "' has no {} to put the label in");
    }
    const Image image = load_image(opts->image);
    SiglipOptions options;
    options.session.backend = opts->backend;
    options.session.adapter = opts->adapter;
    options.model_file = opts->model_file;
    options.dtype = opts->dtype;
    options.file();  // an unknown dtype, or both given: before loading anything
    Siglip model = Siglip::from_folder(opts->folder, options);
    const SiglipResult r = model.classify(image, labels, opts->hypothesis_template);
    if (opts->json) {
      nlohmann::ordered_json output = nlohmann::ordered_json::array();
      for (const SiglipScore& s : r.ranked()) output.push_back({{"score", s.score}, {"label", s.label}});
      const nlohmann::ordered_json out = {{"labels", r.labels},       {"texts", r.texts},
                                          {"input_ids", r.input_ids}, {"logits", r.logits},
                                          {"scores", r.scores},       {"output", output}};
      std::cout << out.dump(1) << "\n";
    } else {
      for (const SiglipScore& s : r.ranked()) {
        std::cout << std::fixed << std::setprecision(6) << s.score << "  "
                  << printable(s.label, s.label.size() + 1) << "\n";
      }
    }
    exit_code = 0;
  });
}

}  // namespace wgi::cli
