// The C functions that web/wgi.mjs calls for the pipelines (include/wgi/florence2.h, include/wgi/siglip.h):
// the same C++ as the CLI's `wgi florence2 --json` and `wgi siglip --json`, on a model folder that wgi.mjs
// has written into Emscripten's in-memory file system (Module.FS), so the folder layout, the checks and the
// messages are the native ones. Results go to JavaScript as JSON in the CLI's shape. Calls that wait for the
// GPU suspend through Asyncify.
//
// Adding a pipeline: a Web<Name> struct holding the C++ object and its
// last JSON, wgi_web_<name>_create(folder) / _run(handle, ..., options JSON) / _free here, their names in
// web/CMakeLists.txt's exported list, and a class over them in web/wgi.mjs next to Florence2
// (docs/browser.md).
#include <emscripten/emscripten.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "wgi/florence2.h"
#include "wgi/image.h"
#include "wgi/siglip.h"
#include "wgi_web_api.h"

namespace {

using wgi::web::guarded;
namespace json = wgi::json;

struct WebFlorence2 {
  wgi::Florence2 model;
  std::string text;  // the last string handed to JavaScript
};

struct WebSiglip {
  wgi::Siglip model;
  std::string text;  // the last string handed to JavaScript
};

// `rgb` (width x height x 3 bytes) if not null, else the encoded file at `image_path` in MEMFS, decoded by
// wgi::load_image as natively.
wgi::Image image_of(const std::string& pipeline, const char* image_path, const uint8_t* rgb, int width,
                    int height) {
  if (!rgb) return wgi::load_image(image_path);
  if (width <= 0 || height <= 0) throw wgi::Error(pipeline + ": the RGB image needs a positive size");
  wgi::Image image;
  image.width = width;
  image.height = height;
  image.channels = 3;
  image.pixels.assign(rgb, rgb + static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  return image;
}

// Scores with 9 significant digits: float32 values, which JavaScript then reads back exactly.
std::string float_json(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// Box coordinates with 17 significant digits, so JavaScript reads back the same doubles.
std::string exact_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <class T, class F>
std::string json_list(const std::vector<T>& values, F&& item) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + item(values[i]);
  return out + "]";
}

std::string ids_json(const std::vector<int64_t>& ids) {
  return json_list(ids, [](int64_t id) { return std::to_string(id); });
}

template <size_t N>
std::string boxes_json(const std::vector<std::array<double, N>>& boxes) {
  return json_list(boxes, [](const std::array<double, N>& box) {
    return json_list(std::vector<double>(box.begin(), box.end()), exact_number);
  });
}

// `parsed` as transformers.js's post_process_generation returns it (and `wgi florence2 --json` prints it):
// {task: text}, or {task: {labels, bboxes}} / {task: {labels, quad_boxes}} for OCR.
std::string parsed_json(const wgi::Florence2Result& r) {
  const wgi::Florence2Parsed& p = r.parsed;
  if (p.type == "pure_text") return "{" + json::quote(r.task) + ":" + json::quote(p.text) + "}";
  std::string answer =
      "{\"labels\":" + json_list(p.labels, [](const std::string& s) { return json::quote(s); });
  answer +=
      p.type == "ocr" ? ",\"quad_boxes\":" + boxes_json(p.quad_boxes) : ",\"bboxes\":" + boxes_json(p.boxes);
  return "{" + json::quote(r.task) + ":" + answer + "}}";
}

const json::Value* option(const json::Value& options, std::string_view key) {
  const json::Value* v = options.find(key);
  return v && !v->is(json::Value::Type::Null) ? v : nullptr;
}

int integer_option(const json::Value& options, std::string_view key) {
  const json::Value* v = option(options, key);
  if (!v->is(json::Value::Type::Number) || v->number != static_cast<double>(static_cast<int>(v->number))) {
    throw wgi::Error("Florence-2: option " + std::string(key) + " must be an integer");
  }
  return static_cast<int>(v->number);
}

std::string string_option(const json::Value& options, std::string_view key) {
  const json::Value* v = option(options, key);
  if (!v) return {};
  if (!v->is(json::Value::Type::String))
    throw wgi::Error("Florence-2: option " + std::string(key) + " must be a string");
  return v->string;
}

}  // namespace

extern "C" {

// Loads the Florence-2 folder at `folder` (in MEMFS; include/wgi/florence2.h's layout) and its four sessions
// (async), each with SessionOptions::precision `precision` ("f32" if null or empty), the files of `dtype`
// (wgi_web_florence2_files; fp32 if null or empty). Returns null with wgi_web_last_error() set.
EMSCRIPTEN_KEEPALIVE WebFlorence2* wgi_web_florence2_create(const char* folder, const char* precision,
                                                            const char* dtype) {
  return guarded(
      [&]() {
        wgi::SessionOptions options;
        if (precision && *precision) options.precision = precision;
        const wgi::Florence2Files files = wgi::Florence2Files::parse(dtype && *dtype ? dtype : "fp32");
        return new WebFlorence2{wgi::Florence2::from_folder(folder, options, files), {}};
      },
      static_cast<WebFlorence2*>(nullptr));
}

// The folder's model files for `dtype` (`wgi florence2 --dtype`'s syntax: "q4", or
// "vision_encoder=fp16,decoder_model_merged=q4"): {"embed_tokens": "onnx/embed_tokens.onnx", ...} for the
// four sessions and both split decoders, so that wgi.mjs reads the files the pipeline will load. Returns
// null with wgi_web_last_error() set for a bad dtype.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_florence2_files(const char* dtype) {
  static std::string text;
  return guarded(
      [&]() -> const char* {
        const wgi::Florence2Files files = wgi::Florence2Files::parse(dtype && *dtype ? dtype : "fp32");
        text = "{";
        for (const char* session : {"embed_tokens", "vision_encoder", "encoder_model", "decoder_model_merged",
                                    "decoder_model", "decoder_with_past_model"}) {
          if (text.size() > 1) text += ",";
          text += json::quote(session) + ":" + json::quote("onnx/" + files.file_name(session));
        }
        text += "}";
        return text.c_str();
      },
      static_cast<const char*>(nullptr));
}

// {"image_width", "image_height", "decoder_files"}: the processor's input size and which decoder runs.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_florence2_info(WebFlorence2* web) {
  web->text = "{\"image_width\":" + std::to_string(web->model.image_width()) +
              ",\"image_height\":" + std::to_string(web->model.image_height()) +
              ",\"decoder_files\":" + json::quote(web->model.decoder_files()) + "}";
  return web->text.c_str();
}

// Runs a task (async). The image: `rgb` (width x height x 3 bytes) if not null, else the encoded file at
// `image_path` in MEMFS, decoded by wgi::load_image as natively. `options_json`: {"task", "text",
// "max_new_tokens", "num_beams"}. Returns {"task", "input_ids", "generated_ids", "generated_text", "parsed"}
// (the CLI's --json) with "num_beams", "decode_steps" and "stages" (Florence2Result::Stages, ms), or null
// with wgi_web_last_error() set.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_florence2_generate(WebFlorence2* web, const char* image_path,
                                                            const uint8_t* rgb, int width, int height,
                                                            const char* options_json) {
  return guarded(
      [&]() -> const char* {
        const json::Value options = json::parse(options_json);
        const std::string task = string_option(options, "task");
        if (task.empty()) throw wgi::Error("Florence-2: no task given (e.g. \"<CAPTION>\", \"<OD>\")");
        wgi::Florence2GenerateOptions generate;
        if (option(options, "max_new_tokens"))
          generate.max_new_tokens = integer_option(options, "max_new_tokens");
        // Unset: generation_config.json's num_beams (Florence-2's: 3); 1 is greedy, transformers.js's answer.
        if (option(options, "num_beams")) generate.num_beams = integer_option(options, "num_beams");
        const wgi::Image image = image_of("Florence-2", image_path, rgb, width, height);
        const wgi::Florence2Result r =
            web->model.generate(image, task, string_option(options, "text"), generate);
        const auto& st = r.stages;
        const auto ms = [](double v) { return json::number(v); };
        web->text = "{\"task\":" + json::quote(r.task) + ",\"input_ids\":" + ids_json(r.input_ids) +
                    ",\"generated_ids\":" + ids_json(r.generated_ids) +
                    ",\"generated_text\":" + json::quote(r.generated_text) + ",\"parsed\":" + parsed_json(r) +
                    ",\"num_beams\":" + std::to_string(r.num_beams) +
                    ",\"decode_steps\":" + std::to_string(r.decode_steps) +
                    ",\"stages\":{\"preprocess_ms\":" + ms(st.preprocess_ms) +
                    ",\"vision_ms\":" + ms(st.vision_ms) + ",\"encoder_ms\":" + ms(st.encoder_ms) +
                    ",\"decode_ms\":" + ms(st.decode_ms) + ",\"postprocess_ms\":" + ms(st.postprocess_ms) +
                    ",\"step_embed_ms\":" + ms(st.step_embed_ms) +
                    ",\"step_decoder_ms\":" + ms(st.step_decoder_ms) + "}}";
        return web->text.c_str();
      },
      static_cast<const char*>(nullptr));
}

EMSCRIPTEN_KEEPALIVE void wgi_web_florence2_free(WebFlorence2* web) {
  delete web;
}

// Loads the SigLIP folder at `folder` (in MEMFS; include/wgi/siglip.h's layout, tokenizer.json for the
// tokenizer: the browser build has no libsentencepiece) and its session (async), with `precision` as for
// Florence-2. Returns null with wgi_web_last_error() set.
// The joint model's file under onnx/ for transformers.js's `dtype` ("fp16" -> "model_fp16.onnx") or, with no
// dtype, `model_file` (SiglipOptions::file); null with wgi_web_last_error() set for an unknown dtype or both.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_siglip_model_file(const char* dtype, const char* model_file) {
  static std::string text;
  return guarded(
      [&]() -> const char* {
        wgi::SiglipOptions options;
        if (dtype) options.dtype = dtype;
        if (model_file && *model_file) options.model_file = model_file;
        text = options.file();
        return text.c_str();
      },
      static_cast<const char*>(nullptr));
}

EMSCRIPTEN_KEEPALIVE WebSiglip* wgi_web_siglip_create(const char* folder, const char* model_file,
                                                      const char* precision) {
  return guarded(
      [&]() {
        wgi::SiglipOptions options;
        if (model_file && *model_file) options.model_file = model_file;
        if (precision && *precision) options.session.precision = precision;
        return new WebSiglip{wgi::Siglip::from_folder(folder, options), {}};
      },
      static_cast<WebSiglip*>(nullptr));
}

// {"image_width", "image_height", "max_length"}: the processor's input size and the texts' length in ids.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_siglip_info(WebSiglip* web) {
  web->text = "{\"image_width\":" + std::to_string(web->model.image_width()) +
              ",\"image_height\":" + std::to_string(web->model.image_height()) +
              ",\"max_length\":" + std::to_string(web->model.max_length()) + "}";
  return web->text.c_str();
}

// Scores the labels for an image (async; the image as for wgi_web_florence2_generate). `options_json`:
// {"labels": [...], "hypothesis_template"} (unset: wgi::kSiglipDefaultTemplate). Returns {"labels", "texts",
// "input_ids", "logits", "scores", "output"} as `wgi siglip --json` (scores in label order, output [{score,
// label}] sorted as transformers.js's), or
// null with wgi_web_last_error() set.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_siglip_classify(WebSiglip* web, const char* image_path,
                                                         const uint8_t* rgb, int width, int height,
                                                         const char* options_json) {
  return guarded(
      [&]() -> const char* {
        const json::Value options = json::parse(options_json);
        const json::Value* labels_value = option(options, "labels");
        if (!labels_value || !labels_value->is(json::Value::Type::Array)) {
          throw wgi::Error("SigLIP: options.labels must be an array of strings");
        }
        std::vector<std::string> labels;
        for (const json::Value& v : labels_value->array) {
          if (!v.is(json::Value::Type::String)) throw wgi::Error("SigLIP: options.labels must be strings");
          labels.push_back(v.string);
        }
        const std::string hypothesis = option(options, "hypothesis_template")
                                           ? string_option(options, "hypothesis_template")
                                           : std::string(wgi::kSiglipDefaultTemplate);
        const wgi::Image image = image_of("SigLIP", image_path, rgb, width, height);
        const wgi::SiglipResult r = web->model.classify(image, labels, hypothesis);
        const auto quoted = [](const std::string& t) { return json::quote(t); };
        web->text = "{\"labels\":" + json_list(r.labels, quoted) +
                    ",\"texts\":" + json_list(r.texts, quoted) +
                    ",\"input_ids\":" + json_list(r.input_ids, ids_json) +
                    ",\"logits\":" + json_list(r.logits, float_json) +
                    ",\"scores\":" + json_list(r.scores, float_json) + ",\"output\":" +
                    json_list(r.ranked(),
                              [](const wgi::SiglipScore& x) {
                                return "{\"score\":" + float_json(static_cast<float>(x.score)) +
                                       ",\"label\":" + json::quote(x.label) + "}";
                              }) +
                    "}";
        return web->text.c_str();
      },
      static_cast<const char*>(nullptr));
}

EMSCRIPTEN_KEEPALIVE void wgi_web_siglip_free(WebSiglip* web) {
  delete web;
}

}  // extern "C"
