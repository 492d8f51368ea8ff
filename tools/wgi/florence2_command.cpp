// `wgi florence2`: Florence-2 end to end on a model folder (include/wgi/florence2.h), greedy.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.h"
#include "pipelines/florence2_text.h"
#include "wgi/florence2.h"
#include "wgi/image.h"
#include "wgi/printable.h"

namespace wgi::cli {

namespace {

// `parsed` as transformers.js's post_process_generation returns it: {task: text} or {task: {labels, boxes}}.
nlohmann::ordered_json parsed_json(const Florence2Result& r) {
  const Florence2Parsed& p = r.parsed;
  if (p.type == "pure_text") return {{r.task, p.text}};
  nlohmann::ordered_json answer = {{"labels", p.labels}};
  if (p.type == "ocr") {
    answer["quad_boxes"] = p.quad_boxes;
  } else {
    answer["bboxes"] = p.boxes;
  }
  return {{r.task, answer}};
}

}  // namespace

void add_florence2_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string folder, image, task, text, backend, adapter;
    std::optional<int> max_new_tokens;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("florence2",
                         "Run Florence-2 (greedy) on an image: caption, objects, OCR... (a model folder in "
                         "onnx-community's layout; the image at the processor's size)");
  cmd->add_option("model_dir", opts->folder, "The model folder (config.json, ..., onnx/*.onnx)")->required();
  cmd->add_option("image", opts->image, "The image (PNG, JPEG, ...)")->required();
  cmd->add_option("--task", opts->task, "The task token, e.g. '<CAPTION>', '<OD>', '<OCR_WITH_REGION>'")
      ->required();
  cmd->add_option("--text", opts->text,
                  "The text input of the tasks that take one (e.g. a caption to ground)");
  cmd->add_option("--max-new-tokens", opts->max_new_tokens,
                  "New tokens at most (default: generation_config.json's max_length, else 20 in all)")
      ->check(at_least(1));
  cmd->add_flag("--json", opts->json,
                "Print one JSON object: input_ids, generated_ids, generated_text, parsed");
  cmd->add_option("--backend", opts->backend,
                  "vulkan, swiftshader or gles (default: WGI_BACKEND, else automatic)");
  cmd->add_option("--adapter", opts->adapter,
                  "Substring the adapter name must contain (default: WGI_ADAPTER)");
  cmd->callback([opts, &exit_code] {
    // The task, its text and the image first: a mistake there costs no model loading.
    pipelines::florence2::construct_prompt(opts->task, opts->text);
    const Image image = load_image(opts->image);
    SessionOptions session;
    session.backend = opts->backend;
    session.adapter = opts->adapter;
    Florence2 model = Florence2::from_folder(opts->folder, session);
    Florence2GenerateOptions generate;
    generate.max_new_tokens = opts->max_new_tokens;
    const Florence2Result r = model.generate(image, opts->task, opts->text, generate);
    if (opts->json) {
      const nlohmann::ordered_json out = {{"task", r.task},
                                          {"input_ids", r.input_ids},
                                          {"generated_ids", r.generated_ids},
                                          {"generated_text", r.generated_text},
                                          {"parsed", parsed_json(r)}};
      std::cout << out.dump(1) << "\n";
    } else {
      std::cout << printable(r.generated_text, r.generated_text.size() + 1) << "\n"
                << parsed_json(r).dump() << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace wgi::cli
