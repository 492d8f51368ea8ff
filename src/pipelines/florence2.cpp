// wgi::Florence2 (include/wgi/florence2.h): transformers.js 4.3's Florence-2 generation on wgi sessions.
// What each step mirrors in transformers.js: image_processors_utils.js preprocess (rescale, normalise, HWC ->
// CHW), florence2/modeling_florence2.js (image features before the prompt's embeddings, an all-ones mask for
// them), modeling_utils.js generate (decoder start token, max_length, the logits processors' order: no
// repeated n-gram, forced BOS, forced EOS; greedy argmax, first maximum; stop at max_length or EOS).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
#include "pipelines/florence2_text.h"
#include "pipelines/tokenizer.h"
#include "wgi/florence2.h"

namespace wgi {

namespace {

namespace fs = std::filesystem;
using JsonValue = json::Value;
namespace text = pipelines::florence2;

// The generation settings transformers.js reads from generation_config.json (config.json's as fallback).
struct GenerationSettings {
  int64_t decoder_start_token_id = 0;
  std::optional<int64_t> forced_bos_token_id;
  std::optional<int64_t> forced_eos_token_id;
  std::vector<int64_t> eos_token_ids;
  int no_repeat_ngram_size = 0;
  int max_length = 20;  // GenerationConfig's default
};

struct Processor {
  int width = 0, height = 0;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255;
  bool do_normalize = false;
  std::array<double, 3> mean{}, stddev{};
};

JsonValue read_json(const fs::path& file) {
  try {
    return json::parse(npy::read_file(file));
  } catch (const Error& e) {
    throw Error("Florence-2: " + file.string() + ": " + e.what());
  }
}

const JsonValue* member(const JsonValue& object, std::string_view key) {
  const JsonValue* v = object.find(key);
  return v && !v->is(JsonValue::Type::Null) ? v : nullptr;
}

std::optional<int64_t> integer(const JsonValue& object, std::string_view key, const fs::path& file) {
  const JsonValue* v = member(object, key);
  if (!v) return std::nullopt;
  if (!v->is(JsonValue::Type::Number) || v->number != std::floor(v->number) || std::abs(v->number) > 1e15) {
    throw Error("Florence-2: " + file.string() + ": '" + std::string(key) + "' must be an integer");
  }
  return static_cast<int64_t>(v->number);
}

double number(const JsonValue& object, std::string_view key, const fs::path& file) {
  const JsonValue* v = member(object, key);
  if (!v || !v->is(JsonValue::Type::Number)) {
    throw Error("Florence-2: " + file.string() + ": '" + std::string(key) + "' must be a number");
  }
  return v->number;
}

bool flag(const JsonValue& object, std::string_view key, bool fallback) {
  const JsonValue* v = member(object, key);
  return v && v->is(JsonValue::Type::Bool) ? v->boolean : fallback;
}

GenerationSettings read_generation(const JsonValue& generation, const JsonValue& config,
                                   const fs::path& file) {
  GenerationSettings g;
  const auto get = [&](std::string_view key) {
    std::optional<int64_t> v = integer(generation, key, file);
    return v ? v : integer(config, key, file.parent_path() / "config.json");
  };
  const std::optional<int64_t> start = get("decoder_start_token_id");
  const std::optional<int64_t> bos = get("bos_token_id");
  if (!start && !bos) throw Error("Florence-2: " + file.string() + " has no decoder_start_token_id");
  g.decoder_start_token_id = start ? *start : *bos;
  g.forced_bos_token_id = get("forced_bos_token_id");
  g.forced_eos_token_id = get("forced_eos_token_id");
  const JsonValue* eos = member(generation, "eos_token_id");
  if (!eos) eos = member(config, "eos_token_id");
  if (eos && eos->is(JsonValue::Type::Array)) {
    for (const JsonValue& id : eos->array) g.eos_token_ids.push_back(static_cast<int64_t>(id.number));
  } else if (std::optional<int64_t> id = get("eos_token_id")) {
    g.eos_token_ids.push_back(*id);
  }
  g.no_repeat_ngram_size = static_cast<int>(get("no_repeat_ngram_size").value_or(0));
  if (std::optional<int64_t> max_length = integer(generation, "max_length", file)) {
    g.max_length = static_cast<int>(*max_length);
  }
  return g;
}

Processor read_processor(const JsonValue& config, const fs::path& file) {
  Processor p;
  if (flag(config, "do_center_crop", false) || flag(config, "do_pad", false) ||
      flag(config, "do_thumbnail", false)) {
    throw Error("Florence-2: " + file.string() +
                ": center crop, padding and thumbnails are not supported (Florence-2's processor uses none)");
  }
  const JsonValue* size = member(config, "size");
  if (!size || !size->is(JsonValue::Type::Object)) {
    throw Error("Florence-2: " + file.string() + ": 'size' must be an object with height and width");
  }
  p.width = static_cast<int>(integer(*size, "width", file).value_or(0));
  p.height = static_cast<int>(integer(*size, "height", file).value_or(0));
  if (p.width <= 0 || p.height <= 0) {
    throw Error("Florence-2: " + file.string() + ": 'size' needs a positive height and width");
  }
  p.do_rescale = flag(config, "do_rescale", true);
  if (member(config, "rescale_factor")) p.rescale_factor = number(config, "rescale_factor", file);
  p.do_normalize = flag(config, "do_normalize", false);
  if (p.do_normalize) {
    for (const auto& [key, out] : {std::pair{"image_mean", &p.mean}, std::pair{"image_std", &p.stddev}}) {
      const JsonValue* v = member(config, key);
      if (!v || !v->is(JsonValue::Type::Array) || v->array.size() != 3) {
        throw Error("Florence-2: " + file.string() + ": '" + key + "' must be a list of 3 numbers (RGB)");
      }
      for (size_t c = 0; c < 3; ++c) (*out)[c] = v->array[c].number;
    }
  }
  return p;
}

const TensorInfo* find_info(const std::vector<TensorInfo>& list, std::string_view name) {
  for (const TensorInfo& info : list)
    if (info.name == name) return &info;
  return nullptr;
}

std::string names_of(const std::vector<TensorInfo>& list) {
  std::string out;
  for (const TensorInfo& info : list) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

// The session's input or output `name`, or a wgi::Error naming the file and what it has instead.
const TensorInfo& require(const Session& session, const std::string& file, bool input,
                          const std::string& name) {
  const std::vector<TensorInfo>& list = input ? session.inputs() : session.outputs();
  const TensorInfo* info = find_info(list, name);
  if (!info) {
    throw Error("Florence-2: " + file + " has no " + (input ? "input" : "output") + " '" + name + "' (its " +
                (input ? "inputs" : "outputs") + ": " + names_of(list) + ")");
  }
  return *info;
}

// Fails when a fixed dim of the model disagrees with what a config says.
void require_dim(const TensorInfo& info, size_t axis, int64_t expected, const std::string& file,
                 const std::string& what) {
  if (info.rank_known && axis < info.dims.size() && info.dims[axis] >= 0 && info.dims[axis] != expected) {
    throw Error("Florence-2: " + file + " '" + info.name + "' has dim " + std::to_string(axis) + " = " +
                std::to_string(info.dims[axis]) + ", but " + what + " is " + std::to_string(expected));
  }
}

Tensor int64_row(std::span<const int64_t> values) {
  return Tensor::from_vector<int64_t>({1, static_cast<int64_t>(values.size())},
                                      std::vector<int64_t>(values.begin(), values.end()));
}

std::string parsed_type_name(text::AnswerType type) {
  switch (type) {
    case text::AnswerType::PureText:
      return "pure_text";
    case text::AnswerType::DescriptionWithBoxes:
      return "description_with_bboxes";
    case text::AnswerType::Boxes:
      return "bboxes";
    case text::AnswerType::PhraseGrounding:
      return "phrase_grounding";
    case text::AnswerType::Ocr:
      return "ocr";
    case text::AnswerType::Polygons:
      return "polygons";
    case text::AnswerType::BoxesOrPolygons:
      return "description_with_bboxes_or_polygons";
  }
  return "pure_text";
}

// NoRepeatNGramLogitsProcessor: every token that would complete an n-gram already in `ids`.
std::vector<int64_t> banned_ngram_tokens(const std::vector<int64_t>& ids, int n) {
  std::vector<int64_t> banned;
  const size_t len = ids.size(), size = static_cast<size_t>(n);
  if (n <= 0 || len + 1 < size) return banned;
  for (size_t j = 0; j + size <= len; ++j) {
    if (std::equal(ids.begin() + static_cast<std::ptrdiff_t>(j),
                   ids.begin() + static_cast<std::ptrdiff_t>(j + size - 1),
                   ids.end() - static_cast<std::ptrdiff_t>(size - 1))) {
      banned.push_back(ids[j + size - 1]);
    }
  }
  return banned;
}

std::string past_name(size_t layer, const char* part) {
  return "past_key_values." + std::to_string(layer) + "." + part;
}
std::string present_of(const std::string& past) {
  return "present" + past.substr(std::string("past_key_values").size());
}

}  // namespace

struct Florence2::Impl {
  fs::path folder;
  Processor processor;
  GenerationSettings generation;
  pipelines::Tokenizer tokenizer;
  Session embed_tokens, vision_encoder, encoder;
  // The merged decoder (use_cache_branch), or decoder_model for the first step + decoder_with_past.
  Session decoder;
  std::optional<Session> decoder_with_past;
  bool merged = false;
  std::vector<std::string> past_names;  // every past_key_values.* input, in layer order
  int64_t heads = 0, head_size = 0;

  Impl(fs::path folder_in, Processor p, GenerationSettings g, pipelines::Tokenizer t, Session embed,
       Session vision, Session enc, Session dec)
      : folder(std::move(folder_in)),
        processor(p),
        generation(std::move(g)),
        tokenizer(std::move(t)),
        embed_tokens(std::move(embed)),
        vision_encoder(std::move(vision)),
        encoder(std::move(enc)),
        decoder(std::move(dec)) {}

  Tensor embed(std::span<const int64_t> ids) {
    return embed_tokens.run({{"input_ids", int64_row(ids)}}).at("inputs_embeds");
  }

  Tensor pixel_values(const Image& image) const;
  void check_sessions(const JsonValue& config);
};

Tensor Florence2::Impl::pixel_values(const Image& image) const {
  if (image.channels != 3) {
    throw Error("Florence-2: the image has " + std::to_string(image.channels) +
                " channels; RGB (3) is needed (wgi::load_image converts)");
  }
  if (image.width != processor.width || image.height != processor.height) {
    throw Error("Florence-2: the image is " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + "; this model's processor takes " +
                std::to_string(processor.width) + "x" + std::to_string(processor.height) +
                " (resizing is not implemented yet: resize it beforehand)");
  }
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  if (image.pixels.size() != pixels * 3) {
    throw Error("Florence-2: the image holds " + std::to_string(image.pixels.size()) + " bytes; " +
                std::to_string(image.width) + "x" + std::to_string(image.height) + " RGB needs " +
                std::to_string(pixels * 3));
  }
  Tensor out(DType::Float32, {1, 3, image.height, image.width});
  std::span<float> data = out.data<float>();
  for (size_t i = 0; i < pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      // transformers.js stores each step in a Float32Array and computes it in double: the same roundings.
      float v = static_cast<float>(image.pixels[i * 3 + c]);
      if (processor.do_rescale) v = static_cast<float>(processor.rescale_factor * v);
      if (processor.do_normalize) v = static_cast<float>((v - processor.mean[c]) / processor.stddev[c]);
      data[c * pixels + i] = v;
    }
  }
  return out;
}

void Florence2::Impl::check_sessions(const JsonValue& config) {
  const fs::path config_file = folder / "config.json";
  require(embed_tokens, "embed_tokens.onnx", true, "input_ids");
  const TensorInfo& embeds = require(embed_tokens, "embed_tokens.onnx", false, "inputs_embeds");
  const TensorInfo& pixels = require(vision_encoder, "vision_encoder.onnx", true, "pixel_values");
  require_dim(pixels, 1, 3, "vision_encoder.onnx", "RGB's channel count");
  require_dim(pixels, 2, processor.height, "vision_encoder.onnx", "preprocessor_config.json's size.height");
  require_dim(pixels, 3, processor.width, "vision_encoder.onnx", "preprocessor_config.json's size.width");
  require(vision_encoder, "vision_encoder.onnx", false, "image_features");
  require(encoder, "encoder_model.onnx", true, "inputs_embeds");
  require(encoder, "encoder_model.onnx", true, "attention_mask");
  require(encoder, "encoder_model.onnx", false, "last_hidden_state");

  const JsonValue* text_config = member(config, "text_config");
  const JsonValue& tc = text_config ? *text_config : config;
  if (std::optional<int64_t> d_model = integer(tc, "d_model", config_file)) {
    require_dim(embeds, 2, *d_model, "embed_tokens.onnx", "config.json's d_model");
  }

  const std::string file = merged ? "decoder_model_merged.onnx" : "decoder_with_past_model.onnx";
  const Session& with_past = merged ? decoder : *decoder_with_past;
  const std::string first_file = merged ? file : "decoder_model.onnx";
  for (const char* name : {"encoder_attention_mask", "inputs_embeds"}) {
    require(decoder, first_file, true, name);
    require(with_past, file, true, name);
  }
  require(decoder, first_file, true, "encoder_hidden_states");
  if (merged) require(decoder, file, true, "use_cache_branch");
  const TensorInfo& logits = require(decoder, first_file, false, "logits");
  if (std::optional<int64_t> v = integer(tc, "vocab_size", config_file)) {
    require_dim(logits, 2, *v, first_file, "config.json's vocab_size");
  }

  for (const TensorInfo& in : with_past.inputs()) {
    if (in.name.starts_with("past_key_values.")) past_names.push_back(in.name);
  }
  const std::optional<int64_t> layers = integer(tc, "decoder_layers", config_file);
  if (layers && static_cast<int64_t>(past_names.size()) != 4 * *layers) {
    throw Error("Florence-2: config.json says " + std::to_string(*layers) +
                " decoder layers (4 past inputs each), " + file + " has " +
                std::to_string(past_names.size()) + " past_key_values inputs");
  }
  if (past_names.empty()) throw Error("Florence-2: " + file + " has no past_key_values.* inputs");
  for (size_t layer = 0; layer * 4 < past_names.size(); ++layer) {
    for (const char* part : {"decoder.key", "decoder.value", "encoder.key", "encoder.value"}) {
      const std::string past = past_name(layer, part);
      const TensorInfo& info = require(with_past, file, true, past);
      // Heads and head size must be numbers: the first step's empty past tensors are built from them, as
      // transformers.js builds them from the session's metadata.
      if (!info.rank_known || info.dims.size() != 4 || info.dims[1] < 0 || info.dims[3] < 0) {
        throw Error("Florence-2: " + file + " '" + past +
                    "' must be [batch, heads, length, head size] with fixed heads and head size");
      }
      if (heads == 0) {
        heads = info.dims[1];
        head_size = info.dims[3];
      }
      if (info.dims[1] != heads || info.dims[3] != head_size) {
        throw Error("Florence-2: " + file + " '" + past + "' has heads x head size " +
                    std::to_string(info.dims[1]) + " x " + std::to_string(info.dims[3]) +
                    ", other past inputs " + std::to_string(heads) + " x " + std::to_string(head_size));
      }
      if (std::string_view(part).starts_with("decoder")) require(with_past, file, false, present_of(past));
      require(decoder, first_file, false, present_of(past));
    }
  }
  if (std::optional<int64_t> h = integer(tc, "decoder_attention_heads", config_file); h && *h != heads) {
    throw Error("Florence-2: config.json says " + std::to_string(*h) + " decoder attention heads, " + file +
                "'s past_key_values have " + std::to_string(heads));
  }
}

Florence2 Florence2::from_folder(const fs::path& folder, const SessionOptions& options) {
  if (!fs::is_directory(folder)) throw Error("Florence-2: '" + folder.string() + "' is not a folder");
  const fs::path onnx = folder / "onnx";
  const bool merged = fs::exists(onnx / "decoder_model_merged.onnx");
  std::vector<fs::path> files = {
      folder / "config.json",     folder / "generation_config.json", folder / "preprocessor_config.json",
      folder / "tokenizer.json",  onnx / "embed_tokens.onnx",        onnx / "vision_encoder.onnx",
      onnx / "encoder_model.onnx"};
  if (merged) {
    files.push_back(onnx / "decoder_model_merged.onnx");
  } else {
    files.push_back(onnx / "decoder_model.onnx");
    files.push_back(onnx / "decoder_with_past_model.onnx");
  }
  for (const fs::path& file : files) {
    if (!fs::is_regular_file(file)) {
      throw Error("Florence-2: the folder lacks " + fs::relative(file, folder).string() +
                  (file.parent_path() == onnx && file.filename().string().starts_with("decoder")
                       ? " (it needs onnx/decoder_model_merged.onnx, or onnx/decoder_model.onnx and "
                         "onnx/decoder_with_past_model.onnx)"
                       : ""));
    }
  }
  const JsonValue config = read_json(folder / "config.json");
  const JsonValue generation_config = read_json(folder / "generation_config.json");
  const JsonValue preprocessor_config = read_json(folder / "preprocessor_config.json");
  Processor processor = read_processor(preprocessor_config, folder / "preprocessor_config.json");
  GenerationSettings generation =
      read_generation(generation_config, config, folder / "generation_config.json");
  pipelines::Tokenizer tokenizer = pipelines::Tokenizer::from_folder(folder);

  const auto load = [&](const char* name) {
    try {
      return Session::from_file(onnx / name, options);
    } catch (const Error& e) {
      throw Error("Florence-2: onnx/" + std::string(name) + ": " + e.what());
    }
  };
  auto impl = std::make_unique<Impl>(folder, processor, std::move(generation), std::move(tokenizer),
                                     load("embed_tokens.onnx"), load("vision_encoder.onnx"),
                                     load("encoder_model.onnx"),
                                     load(merged ? "decoder_model_merged.onnx" : "decoder_model.onnx"));
  impl->merged = merged;
  if (!merged) impl->decoder_with_past.emplace(load("decoder_with_past_model.onnx"));
  impl->check_sessions(config);
  return Florence2(std::move(impl));
}

Florence2Result Florence2::generate(const Image& image, const std::string& task,
                                    const std::string& text_input, const Florence2GenerateOptions& options) {
  Impl& m = *impl_;
  const text::Task& task_info = text::find_task(task);
  const std::string prompt = text::construct_prompt(task, text_input);
  if (options.max_new_tokens && *options.max_new_tokens < 1) {
    throw Error("Florence-2: max_new_tokens must be at least 1 (got " +
                std::to_string(*options.max_new_tokens) + ")");
  }
  Tensor pixels = m.pixel_values(image);

  Florence2Result result;
  result.task = task;
  for (int32_t id : m.tokenizer.encode(prompt)) result.input_ids.push_back(id);

  // The encoder's input: [image features; prompt embeddings], the mask all ones (one unpadded prompt).
  const Tensor prompt_embeds = m.embed(result.input_ids);
  const Tensor image_features = m.vision_encoder.run({{"pixel_values", pixels}}).at("image_features");
  if (image_features.rank() != 3 || prompt_embeds.rank() != 3 ||
      image_features.shape()[2] != prompt_embeds.shape()[2]) {
    throw Error("Florence-2: vision_encoder's image_features " + shape_to_string(image_features.shape()) +
                " and embed_tokens' inputs_embeds " + shape_to_string(prompt_embeds.shape()) +
                " cannot be joined (both [1, tokens, d_model])");
  }
  const int64_t d_model = prompt_embeds.shape()[2];
  const int64_t encoder_length = image_features.shape()[1] + prompt_embeds.shape()[1];
  std::vector<float> joined(image_features.data<float>().begin(), image_features.data<float>().end());
  joined.insert(joined.end(), prompt_embeds.data<float>().begin(), prompt_embeds.data<float>().end());
  const Tensor encoder_embeds = Tensor::from_vector<float>({1, encoder_length, d_model}, joined);
  const Tensor encoder_mask = Tensor::from_vector<int64_t>(
      {1, encoder_length}, std::vector<int64_t>(static_cast<size_t>(encoder_length), 1));
  const Tensor encoder_hidden =
      m.encoder.run({{"inputs_embeds", encoder_embeds}, {"attention_mask", encoder_mask}})
          .at("last_hidden_state");

  // The decoder loop. Past key/values stay on the GPU: each step's present.* feed the next step's
  // past_key_values.*, the encoder ones from the first step (the with-past graph does not recompute them).
  const GenerationSettings& g = m.generation;
  std::vector<int64_t>& ids = result.generated_ids;
  ids.push_back(g.decoder_start_token_id);
  const size_t max_length = options.max_new_tokens ? ids.size() + static_cast<size_t>(*options.max_new_tokens)
                                                   : static_cast<size_t>(g.max_length);

  Session& with_past = m.merged ? m.decoder : *m.decoder_with_past;
  std::map<std::string, Value> inputs;
  inputs["encoder_attention_mask"] = m.decoder.upload(encoder_mask);
  inputs["encoder_hidden_states"] = m.decoder.upload(encoder_hidden);
  RunOptions keep;
  for (const std::string& past : m.past_names) {
    if (m.merged)
      inputs[past] = Tensor(DType::Float32, {1, m.heads, 0, m.head_size});  // ignored (else branch)
    keep.device_outputs.push_back(present_of(past));
  }
  RunOptions keep_decoder;  // the with-past graph's encoder presents are placeholders: keep only these
  for (const std::string& past : m.past_names)
    if (past.find(".decoder.") != std::string::npos) keep_decoder.device_outputs.push_back(present_of(past));

  while (true) {
    const bool first = ids.size() == 1;
    inputs["inputs_embeds"] = m.embed(std::span<const int64_t>(&ids.back(), 1));
    if (m.merged) {
      Tensor use_cache(DType::Bool, {1});
      use_cache.bytes()[0] = std::byte{first ? uint8_t{0} : uint8_t{1}};
      inputs["use_cache_branch"] = use_cache;
    }
    Session& session = first ? m.decoder : with_past;
    std::map<std::string, Value> step_inputs;
    for (const auto& [name, value] : inputs) {
      if (find_info(session.inputs(), name)) step_inputs[name] = value;
    }
    std::map<std::string, Value> out = session.run(step_inputs, first ? keep : keep_decoder);

    // The split files are two sessions: device memory is per session, so the first step's presents move once.
    const bool move_to_with_past = first && !m.merged;
    for (const std::string& past : m.past_names) {
      const bool encoder_part = past.find(".encoder.") != std::string::npos;
      if (!first && encoder_part) continue;  // kept from the first step
      const Value& present = out.at(present_of(past));
      inputs[past] = move_to_with_past ? Value(with_past.upload(present.to_host())) : present;
    }
    if (move_to_with_past) {
      inputs["encoder_attention_mask"] = with_past.upload(encoder_mask);
      inputs.erase("encoder_hidden_states");
    }

    const Tensor logits_tensor = out.at("logits").to_host();
    if (logits_tensor.rank() != 3 || logits_tensor.shape()[0] != 1 || logits_tensor.shape()[2] < 1) {
      throw Error("Florence-2: the decoder's logits are " + shape_to_string(logits_tensor.shape()) +
                  "; [1, tokens, vocab] was expected");
    }
    const int64_t vocab = logits_tensor.shape()[2];
    std::span<const float> last = logits_tensor.data<float>().last(static_cast<size_t>(vocab));
    std::vector<float> scores(last.begin(), last.end());
    const auto force = [&](std::span<const int64_t> allowed) {
      std::fill(scores.begin(), scores.end(), -std::numeric_limits<float>::infinity());
      for (int64_t id : allowed)
        if (id >= 0 && id < vocab) scores[static_cast<size_t>(id)] = 0;
    };
    for (int64_t id : banned_ngram_tokens(ids, g.no_repeat_ngram_size))
      if (id >= 0 && id < vocab) scores[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
    if (g.forced_bos_token_id && ids.size() == 1) force(std::span<const int64_t>(&*g.forced_bos_token_id, 1));
    if (g.forced_eos_token_id && ids.size() + 1 == max_length) {
      force(std::span<const int64_t>(&*g.forced_eos_token_id, 1));
    }
    // The first maximum, as transformers.js's max() takes it.
    ids.push_back(std::max_element(scores.begin(), scores.end()) - scores.begin());
    if (ids.size() >= max_length ||
        std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), ids.back()) != g.eos_token_ids.end()) {
      break;
    }
  }

  std::vector<int32_t> ids32(ids.begin(), ids.end());
  result.generated_text = m.tokenizer.decode(ids32, pipelines::DecodeOptions{false, {}});
  const text::Answer answer = text::post_process_generation(
      result.generated_text, task,
      text::ImageSize{static_cast<double>(image.width), static_cast<double>(image.height)});
  result.parsed.type = parsed_type_name(task_info.answer);
  result.parsed.text = answer.text;
  result.parsed.labels = answer.labels;
  result.parsed.boxes = answer.boxes;
  result.parsed.quad_boxes = answer.quad_boxes;
  return result;
}

int Florence2::image_width() const {
  return impl_->processor.width;
}
int Florence2::image_height() const {
  return impl_->processor.height;
}
std::string Florence2::decoder_files() const {
  return impl_->merged ? "decoder_model_merged.onnx" : "decoder_model.onnx + decoder_with_past_model.onnx";
}

Florence2::Florence2(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Florence2::~Florence2() = default;
Florence2::Florence2(Florence2&&) noexcept = default;
Florence2& Florence2::operator=(Florence2&&) noexcept = default;

}  // namespace wgi
