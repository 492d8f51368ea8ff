// `wgi florence2`: Florence-2 end to end on a model folder (include/wgi/florence2.h), greedy or beam search.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.h"
#include "pipelines/florence2_text.h"
#include "pipelines/image_draw.h"
#include "wgi/florence2.h"
#include "wgi/image.h"
#include "wgi/printable.h"

namespace wgi::cli {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

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
    std::string folder, image, task, text, backend, adapter, draw, early_stopping, dtype = "fp32";
    int runs = 1;
    std::optional<int> max_new_tokens, num_beams, no_repeat_ngram_size;
    std::optional<double> length_penalty;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("florence2",
                         "Run Florence-2 on an image: caption, objects, OCR... (a model folder in "
                         "onnx-community's layout; any image size: resized as PIL does). Beam search by "
                         "default when generation_config.json asks for it (Florence-2: 3 beams); "
                         "--num-beams 1 gives transformers.js's greedy answer");
  cmd->add_option("model_dir", opts->folder, "The model folder (config.json, ..., onnx/*.onnx)")->required();
  cmd->add_option("image", opts->image, "The image (PNG, JPEG, ...)")->required();
  cmd->add_option("--task", opts->task, "The task token, e.g. '<CAPTION>', '<OD>', '<OCR_WITH_REGION>'")
      ->required();
  cmd->add_option("--text", opts->text,
                  "The text input of the tasks that take one (e.g. a caption to ground)");
  cmd->add_option("--max-new-tokens", opts->max_new_tokens,
                  "New tokens at most (default: generation_config.json's max_length, else 20 in all)")
      ->check(at_least(1));
  cmd->add_option("--num-beams", opts->num_beams,
                  "Beams (default: generation_config.json's num_beams, else 1 = greedy)")
      ->check(at_least(1));
  cmd->add_option("--no-repeat-ngram-size", opts->no_repeat_ngram_size,
                  "Ban repeating n-grams of this size, 0 = off (default: generation_config.json's)")
      ->check(at_least(0));
  cmd->add_option(
      "--length-penalty", opts->length_penalty,
      "Beam search: finished scores are divided by length ^ this (default: generation_config.json's, "
      "else 1.0)");
  cmd->add_option("--early-stopping", opts->early_stopping,
                  "Beam search: true (stop at num_beams finished), false or never, as Hugging Face "
                  "(default: generation_config.json's, else false)")
      ->check(CLI::IsMember({"true", "false", "never"}));
  cmd->add_option(
         "--dtype", opts->dtype,
         "Which file of each session: fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4 (transformers.js's "
         "suffixes: onnx/encoder_model_q4.onnx), for all or per session: "
         "'embed_tokens=fp32,vision_encoder=fp16,encoder_model=q4,decoder_model_merged=q4'")
      ->capture_default_str();
  cmd->add_option("--runs", opts->runs,
                  "Run the task this many times (after loading) and print the wall time of each end to end "
                  "(image decode -> parsed answer), per decoder step and per stage on stderr")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--draw", opts->draw,
                  "Write a PNG copy of the image with the answer's boxes / OCR quadrilaterals outlined");
  cmd->add_flag("--json", opts->json,
                "Print one JSON object: input_ids, generated_ids, generated_text, parsed, num_beams, "
                "sequence_score");
  add_device_options(*cmd, opts->backend, opts->adapter);
  cmd->callback([opts, &exit_code] {
    // The task, its text and the image first: a mistake there costs no model loading.
    pipelines::florence2::construct_prompt(opts->task, opts->text);
    const Florence2Files files = Florence2Files::parse(opts->dtype);
    Image image = load_image(opts->image);
    SessionOptions session;
    session.backend = opts->backend;
    session.adapter = opts->adapter;
    const auto load_start = std::chrono::steady_clock::now();
    Florence2 model = Florence2::from_folder(opts->folder, session, files);
    const double load_ms = ms_since(load_start);
    Florence2GenerateOptions generate;
    generate.max_new_tokens = opts->max_new_tokens;
    generate.num_beams = opts->num_beams;
    generate.no_repeat_ngram_size = opts->no_repeat_ngram_size;
    generate.length_penalty = opts->length_penalty;
    if (!opts->early_stopping.empty()) {
      generate.early_stopping = opts->early_stopping == "true"    ? EarlyStopping::Yes
                                : opts->early_stopping == "never" ? EarlyStopping::Never
                                                                  : EarlyStopping::No;
    }
    Florence2Result r;
    std::vector<double> times;
    std::vector<Florence2Result::Stages> stages;
    for (int run = 0; run < opts->runs; ++run) {
      // Each run decodes the image file again: the time is image file -> parsed answer.
      const auto start = std::chrono::steady_clock::now();
      if (run > 0) image = load_image(opts->image);
      r = model.generate(image, opts->task, opts->text, generate);
      times.push_back(ms_since(start));
      stages.push_back(r.stages);
    }
    if (opts->runs > 1) {
      std::cerr << "load: " << load_ms << " ms (" << model.decoder_files() << ")\n";
      for (size_t i = 0; i < times.size(); ++i) {
        std::cerr << "run " << i + 1 << ": " << times[i] << " ms, " << r.decode_steps << " decoder steps ("
                  << r.logits_downloads << " with their logits downloaded), " << r.generated_ids.size()
                  << " tokens, " << r.num_beams << " beams\n";
      }
      std::vector<double> later(times.begin() + 1, times.end());
      std::sort(later.begin(), later.end());
      const double median = later[later.size() / 2];
      std::cerr << "median of runs 2..: " << median << " ms end to end, "
                << median / std::max(1, r.decode_steps) << " ms per decoder step (whole run / steps)\n";
      // Each stage's median over runs 2.. (docs/pipelines.md says what each holds).
      auto stage_median = [&](double Florence2Result::Stages::*field) {
        std::vector<double> v;
        for (size_t i = 1; i < stages.size(); ++i) v.push_back(stages[i].*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double decode = stage_median(&Florence2Result::Stages::decode_ms);
      std::cerr << "stages (median of runs 2..): preprocess "
                << stage_median(&Florence2Result::Stages::preprocess_ms) << " ms, vision encoder "
                << stage_median(&Florence2Result::Stages::vision_ms) << " ms, encoder "
                << stage_median(&Florence2Result::Stages::encoder_ms) << " ms, decoding " << decode << " ms ("
                << decode / std::max(1, r.decode_steps) << " ms a step; of the decoding, embed_tokens "
                << stage_median(&Florence2Result::Stages::step_embed_ms)
                << " ms and the decoder to its candidates "
                << stage_median(&Florence2Result::Stages::step_decoder_ms) << " ms), postprocess "
                << stage_median(&Florence2Result::Stages::postprocess_ms) << " ms\n";
    }
    if (!opts->draw.empty()) {
      save_png(pipelines::draw_outlines(image, r.parsed.boxes, r.parsed.quad_boxes), opts->draw);
    }
    if (opts->json) {
      const nlohmann::ordered_json out = {{"task", r.task},
                                          {"input_ids", r.input_ids},
                                          {"generated_ids", r.generated_ids},
                                          {"generated_text", r.generated_text},
                                          {"parsed", parsed_json(r)},
                                          {"num_beams", r.num_beams},
                                          {"sequence_score", r.sequence_score}};
      std::cout << out.dump(1) << "\n";
    } else {
      std::cout << printable(r.generated_text, r.generated_text.size() + 1) << "\n"
                << parsed_json(r).dump() << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace wgi::cli
