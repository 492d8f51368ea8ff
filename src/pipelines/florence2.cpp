// wgi::Florence2 (include/wgi/florence2.h): transformers.js 4.3's Florence-2 generation on wgi sessions.
// What each step mirrors in transformers.js: image_processors_utils.js preprocess (rescale, normalise, HWC ->
// CHW), florence2/modeling_florence2.js (image features before the prompt's embeddings, an all-ones mask for
// them), modeling_utils.js generate (decoder start token, max_length, the logits processors' order: no
// repeated n-gram, forced BOS, forced EOS; greedy argmax, first maximum; stop at max_length or EOS).
#include <algorithm>
#include <chrono>
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
#include "pipelines/image_resize.h"
#include "pipelines/model_folder.h"
#include "pipelines/token_candidates.h"
#include "pipelines/tokenizer.h"
#include "wgi/florence2.h"
#include "wgi/printable.h"

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
  int num_beams = 1;
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::No;
};

struct Processor {
  int width = 0, height = 0;
  bool do_resize = true;
  pipelines::Resample resample = pipelines::Resample::Bicubic;  // CLIPImageProcessor's default
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
  g.num_beams = static_cast<int>(get("num_beams").value_or(1));
  if (g.num_beams < 1) throw Error("Florence-2: " + file.string() + ": num_beams must be at least 1");
  if (member(generation, "length_penalty")) g.length_penalty = number(generation, "length_penalty", file);
  if (const JsonValue* stop = member(generation, "early_stopping")) {
    if (stop->is(JsonValue::Type::Bool)) {
      g.early_stopping = stop->boolean ? EarlyStopping::Yes : EarlyStopping::No;
    } else if (stop->is(JsonValue::Type::String) && stop->string == "never") {
      g.early_stopping = EarlyStopping::Never;
    } else {
      throw Error("Florence-2: " + file.string() + ": 'early_stopping' must be true, false or \"never\"");
    }
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
  p.do_resize = flag(config, "do_resize", true);
  if (std::optional<int64_t> resample = integer(config, "resample", file)) {
    p.resample = pipelines::resample_from_code(static_cast<int>(*resample), "Florence-2: " + file.string());
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
  std::string decoder_file_names;       // "decoder_model_merged_q4.onnx", or the split pair joined by " + "
  Florence2Files file_names;            // which file each session was loaded from (its --dtype)
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

  // Florence2::from_folder: on `given`, or on an Environment of its own for the four sessions.
  static Florence2 load(const fs::path& folder, const Environment* given, const SessionOptions& options,
                        const Florence2Files& file_names);

  Tensor embed(std::span<const int64_t> ids) {
    return embed_tokens.run({{"input_ids", int64_row(ids)}}).at("inputs_embeds");
  }

  Tensor pixel_values(const Image& image) const;
  void check_sessions(const JsonValue& config);
};

Tensor Florence2::Impl::pixel_values(const Image& original) const {
  if (original.channels != 3) {
    throw Error("Florence-2: the image has " + std::to_string(original.channels) +
                " channels; RGB (3) is needed (wgi::load_image converts)");
  }
  if (original.width <= 0 || original.height <= 0 ||
      original.pixels.size() !=
          static_cast<size_t>(original.width) * static_cast<size_t>(original.height) * 3) {
    throw Error("Florence-2: the image holds " + std::to_string(original.pixels.size()) + " bytes; " +
                std::to_string(original.width) + "x" + std::to_string(original.height) + " RGB needs " +
                std::to_string(static_cast<size_t>(std::max(original.width, 0)) *
                               static_cast<size_t>(std::max(original.height, 0)) * 3));
  }
  const bool same_size = original.width == processor.width && original.height == processor.height;
  if (!same_size && !processor.do_resize) {
    throw Error("Florence-2: the image is " + std::to_string(original.width) + "x" +
                std::to_string(original.height) + "; this model's processor takes " +
                std::to_string(processor.width) + "x" + std::to_string(processor.height) +
                " and its do_resize is false");
  }
  // HF's CLIPImageProcessor resizes through PIL (transformers.js through sharp: docs/pipelines.md).
  const Image image =
      same_size ? original
                : pipelines::resize_image(original, processor.width, processor.height, processor.resample);
  const size_t pixels = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
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
  // The messages name the files loaded, e.g. "embed_tokens_fp16.onnx" under --dtype fp16.
  const std::string embed_file = file_names.file_name("embed_tokens");
  const std::string vision_file = file_names.file_name("vision_encoder");
  const std::string encoder_file = file_names.file_name("encoder_model");
  require(embed_tokens, embed_file, true, "input_ids");
  const TensorInfo& embeds = require(embed_tokens, embed_file, false, "inputs_embeds");
  const TensorInfo& pixels = require(vision_encoder, vision_file, true, "pixel_values");
  require_dim(pixels, 1, 3, vision_file, "RGB's channel count");
  require_dim(pixels, 2, processor.height, vision_file, "preprocessor_config.json's size.height");
  require_dim(pixels, 3, processor.width, vision_file, "preprocessor_config.json's size.width");
  require(vision_encoder, vision_file, false, "image_features");
  require(encoder, encoder_file, true, "inputs_embeds");
  require(encoder, encoder_file, true, "attention_mask");
  require(encoder, encoder_file, false, "last_hidden_state");

  const JsonValue* text_config = member(config, "text_config");
  const JsonValue& tc = text_config ? *text_config : config;
  if (std::optional<int64_t> d_model = integer(tc, "d_model", config_file)) {
    require_dim(embeds, 2, *d_model, embed_file, "config.json's d_model");
  }

  const std::string file = file_names.file_name(merged ? "decoder_model_merged" : "decoder_with_past_model");
  const Session& with_past = merged ? decoder : *decoder_with_past;
  const std::string first_file = merged ? file : file_names.file_name("decoder_model");
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

namespace {

// The decoder over `batch` sequences (the beams) in one run per step, past key/values on the GPU. The encoder
// output is expanded to the batch once. After a step, reorder(parents) makes row j of every decoder past the
// row parents[j] had, on the GPU (Session::gather_rows). The encoder (cross-attention) key/values are not
// reordered: every row holds the same prompt's, so any order of them is the same tensor.
// The sessions a decoder step uses (of Florence2::Impl).
struct DecoderSessions {
  Session& embed_tokens;
  Session& decoder;    // the merged decoder, or decoder_model for the first step
  Session& with_past;  // the merged decoder again, or decoder_with_past_model
  bool merged;
  const std::vector<std::string>& past_names;
  int64_t heads, head_size;
};

// The decoders' token candidates (SessionOptions::token_candidates): per row, the best kTokenCandidates
// logits of the last position and the row's log-sum-exp, computed on the GPU.
constexpr int64_t kTokenCandidates = 16;
const char* const kCandidateValues = "logits.top_k_values";
const char* const kCandidateTokens = "logits.top_k_indices";
const char* const kLogSumExp = "logits.log_sum_exp";

// A decoder step's scores for the search. A step downloads only each row's candidates and log-sum-exp; the
// logits stay on the device and are downloaded only when a step needs every log-probability (a forced token,
// or bans that leave too few of a row's candidates).
class StepScores {
 public:
  StepScores(Tensor values, Tensor tokens, Tensor log_sum_exp, DeviceTensor logits, int& downloads)
      : downloads_(downloads),
        values_(std::move(values)),
        tokens_(std::move(tokens)),
        log_sum_exp_(std::move(log_sum_exp)),
        logits_(std::move(logits)) {
    const Shape& shape = logits_.shape();
    const int64_t rows = values_.rank() == 2 ? values_.shape()[0] : -1;
    if (shape.size() != 3 || shape[0] != rows || shape[1] < 1 || shape[2] < 1 ||
        tokens_.shape() != values_.shape() || log_sum_exp_.shape() != Shape{rows, 1}) {
      throw Error("Florence-2: the decoder's logits are " + shape_to_string(shape) + " with candidates " +
                  shape_to_string(values_.shape()) + "; [rows, tokens, vocab] and [rows, k] were expected");
    }
  }

  // The n best processed log-probabilities of row b (pipelines::best_unbanned), or nullopt.
  std::optional<std::vector<std::pair<int64_t, double>>> best(size_t row, std::span<const int64_t> banned,
                                                              size_t n) const {
    const size_t k = static_cast<size_t>(values_.shape()[1]);
    return pipelines::best_unbanned(
        {values_.data<float>().subspan(row * k, k), tokens_.data<int64_t>().subspan(row * k, k),
         log_sum_exp_.data<float>()[row]},
        banned, n);
  }

  size_t rows() const { return static_cast<size_t>(logits_.shape()[0]); }
  size_t vocab() const { return static_cast<size_t>(logits_.shape()[2]); }

  // The last position's logits [rows, vocab], downloaded the first time.
  const Tensor& logits() {
    if (!last_) {
      ++downloads_;
      const Tensor all = logits_.download();
      const int64_t rows = all.shape()[0], tokens = all.shape()[1], vocab = all.shape()[2];
      last_ = Tensor(DType::Float32, {rows, vocab});
      for (int64_t b = 0; b < rows; ++b) {
        const auto row = all.data<float>().subspan(static_cast<size_t>((b * tokens + tokens - 1) * vocab),
                                                   static_cast<size_t>(vocab));
        std::copy(row.begin(), row.end(), last_->data<float>().begin() + b * vocab);
      }
    }
    return *last_;
  }

 private:
  int& downloads_;                        // the decoder's count of steps whose logits were downloaded
  Tensor values_, tokens_, log_sum_exp_;  // [rows, k] float32, [rows, k] int64, [rows, 1] float32
  DeviceTensor logits_;                   // [rows, tokens, vocab]
  std::optional<Tensor> last_;
};

class BeamDecoder {
 public:
  // `max_length`: of the decoder sequence, start token included: the with-past steps' plan leaves room for a
  // past that long (RunOptions::growing_dims), so the loop is planned once and respecialized after.
  BeamDecoder(const DecoderSessions& m, const Tensor& encoder_hidden, const Tensor& encoder_mask,
              size_t batch, size_t max_length)
      : m_(m), batch_(batch), with_past_(m.with_past) {
    inputs_["encoder_attention_mask"] = m.decoder.upload(repeat_rows(encoder_mask, batch));
    inputs_["encoder_hidden_states"] = m.decoder.upload(repeat_rows(encoder_hidden, batch));
    const int64_t rows = static_cast<int64_t>(batch);
    // Every step returns its candidates (downloaded) and keeps its logits on the device; the first step keeps
    // every present, the later ones the decoder presents (the with-past graph's encoder presents are
    // placeholders, not returned at all).
    for (RunOptions* keep : {&keep_first_, &keep_}) {
      keep->outputs = {kCandidateValues, kCandidateTokens, kLogSumExp, "logits"};
      keep->device_outputs = {"logits"};
    }
    for (const std::string& past : m.past_names) {
      if (m.merged) inputs_[past] = Tensor(DType::Float32, {rows, m.heads, 0, m.head_size});  // else branch
      keep_first_.device_outputs.push_back(present_of(past));
      keep_first_.outputs.push_back(present_of(past));
      if (past.find(".decoder.") == std::string::npos) continue;
      keep_.device_outputs.push_back(present_of(past));
      keep_.outputs.push_back(present_of(past));
      const TensorInfo* info = find_info(with_past_.inputs(), past);
      if (info && info->dim_names.size() == 4 && !info->dim_names[2].empty())
        keep_.growing_dims[info->dim_names[2]] = static_cast<int64_t>(max_length);
    }
  }

  size_t batch() const { return batch_; }

  // Runs one step on the last token of each row: the rows' token embeddings stay on the device
  // (embed_tokens shares the decoder's Environment), and so do the presents and the logits.
  StepScores step(std::span<const int64_t> last_tokens) {
    const bool first = steps_ == 0;
    const auto embed_start = std::chrono::steady_clock::now();
    RunOptions embeds_on_device;
    embeds_on_device.device_outputs = {"inputs_embeds"};
    inputs_["inputs_embeds"] =
        m_.embed_tokens
            .run({{"input_ids", Tensor::from_vector<int64_t>(
                                    {static_cast<int64_t>(batch_), 1},
                                    std::vector<int64_t>(last_tokens.begin(), last_tokens.end()))}},
                 embeds_on_device)
            .at("inputs_embeds");
    if (m_.merged) {
      Tensor use_cache(DType::Bool, {1});
      use_cache.bytes()[0] = std::byte{first ? uint8_t{0} : uint8_t{1}};
      inputs_["use_cache_branch"] = use_cache;
    }
    const auto decoder_start = std::chrono::steady_clock::now();
    embed_ms_ += std::chrono::duration<double, std::milli>(decoder_start - embed_start).count();
    Session& session = first ? m_.decoder : with_past_;
    std::map<std::string, Value> step_inputs;
    for (const auto& [name, value] : inputs_) {
      if (find_info(session.inputs(), name)) step_inputs[name] = value;
    }
    std::map<std::string, Value> out = session.run(step_inputs, first ? keep_first_ : keep_);
    ++steps_;

    for (const std::string& past : m_.past_names) {
      const bool encoder_part = past.find(".encoder.") != std::string::npos;
      if (!first && encoder_part) continue;  // kept from the first step
      inputs_[past] = out.at(present_of(past));
    }
    if (first && !m_.merged) inputs_.erase("encoder_hidden_states");

    StepScores scores(out.at(kCandidateValues).host(), out.at(kCandidateTokens).host(),
                      out.at(kLogSumExp).host(), out.at("logits").device(), logits_downloads_);
    decoder_ms_ +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - decoder_start).count();
    if (scores.rows() != batch_) {
      throw Error("Florence-2: the decoder gave logits for " + std::to_string(scores.rows()) + " rows; " +
                  std::to_string(batch_) + " were run");
    }
    return scores;
  }

  // Row j of every decoder past becomes row parents[j]'s (on the GPU; nothing when the order is unchanged).
  void reorder(const std::vector<int64_t>& parents) {
    bool identity = true;
    for (size_t j = 0; j < parents.size(); ++j) identity = identity && parents[j] == static_cast<int64_t>(j);
    if (identity) return;
    std::vector<std::string> names;
    std::vector<DeviceTensor> pasts;
    for (const std::string& past : m_.past_names) {
      if (past.find(".decoder.") == std::string::npos) continue;
      names.push_back(past);
      pasts.push_back(inputs_.at(past).device());
    }
    std::vector<DeviceTensor> reordered = with_past_.gather_rows(pasts, parents);  // one submission
    for (size_t i = 0; i < names.size(); ++i) inputs_[names[i]] = std::move(reordered[i]);
  }

  int steps() const { return steps_; }
  int logits_downloads() const { return logits_downloads_; }
  // The steps' time in embed_tokens, and in the decoder up to its candidates' download, in ms.
  double embed_ms() const { return embed_ms_; }
  double decoder_ms() const { return decoder_ms_; }

 private:
  static Tensor repeat_rows(const Tensor& one, size_t rows) {
    Shape shape = one.shape();
    shape[0] = static_cast<int64_t>(rows);
    Tensor out(one.dtype(), shape);
    for (size_t r = 0; r < rows; ++r) {
      std::copy(one.bytes().begin(), one.bytes().end(),
                out.bytes().begin() + static_cast<std::ptrdiff_t>(r * one.byte_size()));
    }
    return out;
  }

  DecoderSessions m_;
  size_t batch_;
  Session& with_past_;
  std::map<std::string, Value> inputs_;
  RunOptions keep_first_, keep_;
  int steps_ = 0;
  int logits_downloads_ = 0;
  double embed_ms_ = 0, decoder_ms_ = 0;
};

struct SearchSettings {
  const GenerationSettings& g;
  size_t num_beams;
  int no_repeat_ngram_size;
  double length_penalty;
  EarlyStopping early_stopping;
  size_t max_length;  // of the decoder sequence, start token included
};

struct SearchResult {
  std::vector<int64_t> ids;
  double score = 0;
  int steps = 0;
};

bool is_eos(const GenerationSettings& g, int64_t token) {
  return std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), token) != g.eos_token_ids.end();
}

// The logits processors in Hugging Face's order on one row of `scores` for a sequence `ids`: no repeated
// n-gram, forced BOS at the first step, forced EOS at the last (a forced token gets 0, all others -inf).
void process_row(std::span<double> scores, const std::vector<int64_t>& ids, const SearchSettings& s) {
  const int64_t vocab = static_cast<int64_t>(scores.size());
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  for (int64_t id : banned_ngram_tokens(ids, s.no_repeat_ngram_size))
    if (id >= 0 && id < vocab) scores[static_cast<size_t>(id)] = kMinusInf;
  const auto force = [&](int64_t id) {
    std::fill(scores.begin(), scores.end(), kMinusInf);
    if (id >= 0 && id < vocab) scores[static_cast<size_t>(id)] = 0;
  };
  if (s.g.forced_bos_token_id && ids.size() == 1) force(*s.g.forced_bos_token_id);
  if (s.g.forced_eos_token_id && ids.size() + 1 == s.max_length) force(*s.g.forced_eos_token_id);
}

// log_softmax of a float row, in double.
std::vector<double> log_softmax(std::span<const float> logits) {
  double max = -std::numeric_limits<double>::infinity();
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_sum = max + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_sum;
  return out;
}

// Whether the processors force this step's token (then only the full rows order the others).
bool forced_step(const std::vector<int64_t>& ids, const SearchSettings& s) {
  return (s.g.forced_bos_token_id && ids.size() == 1) ||
         (s.g.forced_eos_token_id && ids.size() + 1 == s.max_length);
}

// Greedy, as transformers.js runs it: the processors on the logits, the first maximum; stop at max_length or
// EOS. The score is the sum of the chosen tokens' processed log-probabilities. The best unbanned candidate
// of the GPU's is that maximum; a forced step, or one whose candidates are all banned, reads the whole row.
SearchResult greedy_search(BeamDecoder& decoder, const SearchSettings& s) {
  SearchResult r;
  r.ids.push_back(s.g.decoder_start_token_id);
  while (true) {
    StepScores step = decoder.step(std::span<const int64_t>(&r.ids.back(), 1));
    const auto best = forced_step(r.ids, s)
                          ? std::nullopt
                          : step.best(0, banned_ngram_tokens(r.ids, s.no_repeat_ngram_size), 1);
    if (best) {
      r.score += best->front().second;
      r.ids.push_back(best->front().first);
    } else {
      const Tensor& logits = step.logits();
      std::vector<double> scores(logits.data<float>().begin(), logits.data<float>().end());
      process_row(scores, r.ids, s);
      const size_t token =
          static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
      std::vector<double> log_probs = log_softmax(logits.data<float>());
      process_row(log_probs, r.ids, s);
      r.score += log_probs[token];
      r.ids.push_back(static_cast<int64_t>(token));
    }
    if (r.ids.size() >= s.max_length || is_eos(s.g, r.ids.back())) break;
  }
  r.steps = decoder.steps();
  return r;
}

// Hugging Face's beam search for one prompt (docs/beam_search.md, whose steps the comments number;
// tests/models/beam_search_reference.py is the reference). Scores in double from float32 logits.
SearchResult beam_search(BeamDecoder& decoder, const SearchSettings& s) {
  const size_t k = s.num_beams, prompt_length = 1;
  constexpr double kDeadBeam = -1e9;  // HF's score of a beam that is not live (and of an empty finished slot)
  const size_t eos_count = std::max<size_t>(1, s.g.eos_token_ids.size());
  const size_t candidate_count = std::max<size_t>(2, 1 + eos_count) * k;
  struct Hypothesis {
    double score;
    std::vector<int64_t> ids;
  };
  // Only beam 0 is live at the first step, so that the k copies do not all pick the same token.
  std::vector<std::vector<int64_t>> running(k, std::vector<int64_t>{s.g.decoder_start_token_id});
  std::vector<double> running_scores(k, kDeadBeam);
  running_scores[0] = 0;
  std::vector<Hypothesis> finished;  // best first, at most k
  bool improvable = true;            // HF's is_early_stop_heuristic_unsatisfied, sticky once false
  size_t cur_len = prompt_length;
  struct Candidate {
    double score;
    size_t index;  // flat: beam * vocab + token
  };
  while (true) {
    // 1-2. Log-probabilities of every running beam, processed.
    std::vector<int64_t> last_tokens;
    for (const std::vector<int64_t>& ids : running) last_tokens.push_back(ids.back());
    StepScores step = decoder.step(last_tokens);
    // 3. The best candidate_count of running score + log-probability over all beams and tokens, by score
    // descending, then flat index ascending (visited in index order: a later equal score never displaces).
    // Each beam's best candidate_count unbanned tokens hold every one of its tokens that can be among them:
    // from the GPU's candidates where they hold that many, else from the whole rows.
    std::vector<Candidate> top;
    const auto offer = [&](double score, size_t index) {
      if (top.size() == candidate_count && !(score > top.back().score)) return;
      auto at = std::upper_bound(top.begin(), top.end(), score,
                                 [](double v, const Candidate& c) { return v > c.score; });
      top.insert(at, Candidate{score, index});
      if (top.size() > candidate_count) top.pop_back();
    };
    std::vector<std::vector<std::pair<int64_t, double>>> best(k);
    bool from_candidates = !forced_step(running[0], s);
    for (size_t b = 0; b < k && from_candidates; ++b) {
      auto row = step.best(b, banned_ngram_tokens(running[b], s.no_repeat_ngram_size), candidate_count);
      from_candidates = row.has_value();
      if (row) best[b] = std::move(*row);
    }
    const size_t vocab = step.vocab();
    for (size_t b = 0; b < k; ++b) {
      if (from_candidates) {
        std::sort(best[b].begin(), best[b].end());  // token order: the flat index order of the whole rows
        for (const auto& [token, log_prob] : best[b])
          offer(running_scores[b] + log_prob, b * vocab + static_cast<size_t>(token));
        continue;
      }
      std::vector<double> log_probs = log_softmax(step.logits().data<float>().subspan(b * vocab, vocab));
      process_row(log_probs, running[b], s);
      for (size_t t = 0; t < vocab; ++t) offer(running_scores[b] + log_probs[t], b * vocab + t);
    }
    // 4. Stopped candidates (EOS or max_length) of rank < k are offered to the finished set, penalized by the
    // generated length (the new token included, the start token not), unless the set is closed.
    const bool all_finished_before = finished.size() == k;
    const bool open = improvable && !(all_finished_before && s.early_stopping == EarlyStopping::Yes);
    const double length = static_cast<double>(cur_len + 1 - prompt_length);
    std::vector<bool> stopped(top.size());
    std::vector<double> masked(top.size());
    for (size_t i = 0; i < top.size(); ++i) {
      const int64_t token = static_cast<int64_t>(top[i].index % vocab);
      stopped[i] = is_eos(s.g, token) || cur_len + 1 >= s.max_length;
      masked[i] = top[i].score + (stopped[i] ? kDeadBeam : 0.0);
      if (stopped[i] && i < k && open) {
        std::vector<int64_t> ids = running[top[i].index / vocab];
        ids.push_back(token);
        finished.push_back(Hypothesis{top[i].score / std::pow(length, s.length_penalty), std::move(ids)});
      }
    }
    // The k best of old + new, old first on ties.
    std::stable_sort(finished.begin(), finished.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (finished.size() > k) finished.resize(k);
    // 5. The next running beams: the k best candidates that did not stop (stopped ones pushed down by 1e9).
    std::vector<size_t> order(top.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return masked[a] > masked[b]; });
    std::vector<std::vector<int64_t>> next;
    std::vector<double> next_scores;
    std::vector<int64_t> parents;
    for (size_t j = 0; j < k && j < order.size(); ++j) {
      const Candidate& c = top[order[j]];
      next.push_back(running[c.index / vocab]);
      next.back().push_back(static_cast<int64_t>(c.index % vocab));
      next_scores.push_back(masked[order[j]]);
      parents.push_back(static_cast<int64_t>(c.index / vocab));
    }
    if (next.size() < k) throw Error("Florence-2: beam search found fewer candidates than beams");
    running = std::move(next);
    running_scores = std::move(next_scores);
    // 6. Can the best running beam still beat the worst finished one?
    ++cur_len;
    const size_t best_length = s.early_stopping == EarlyStopping::Never && s.length_penalty > 0
                                   ? s.max_length - prompt_length
                                   : cur_len - prompt_length;
    const double best_possible =
        running_scores[0] / std::pow(static_cast<double>(best_length), s.length_penalty);
    const bool all_finished = finished.size() == k;
    improvable = improvable && best_possible > (all_finished ? finished.back().score : kDeadBeam);
    // 7. Stop?
    const bool all_stopped = std::all_of(stopped.begin(), stopped.end(), [](bool v) { return v; });
    if (!improvable || (all_finished && s.early_stopping == EarlyStopping::Yes) || all_stopped) break;
    decoder.reorder(parents);
  }
  if (finished.empty()) throw Error("Florence-2: beam search ended without a finished sequence");
  return SearchResult{finished.front().ids, finished.front().score, decoder.steps()};
}

}  // namespace

namespace {

const char* const kFlorence2Sessions[] = {"embed_tokens", "vision_encoder", "encoder_model",
                                          "decoder_model_merged"};

}  // namespace

Florence2Files Florence2Files::parse(const std::string& text) {
  Florence2Files files;
  const auto check_dtype = [](const std::string& name) { pipelines::dtype_suffix("Florence-2", name); };
  if (text.find('=') == std::string::npos) {
    check_dtype(text);
    files.dtype = text;
    return files;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      throw Error("Florence-2: '" + printable(part) + "' in the dtype list is not session=dtype");
    }
    const std::string session = part.substr(0, eq), session_dtype = part.substr(eq + 1);
    if (std::find(std::begin(kFlorence2Sessions), std::end(kFlorence2Sessions), session) ==
        std::end(kFlorence2Sessions)) {
      throw Error("Florence-2: unknown session '" + printable(session) +
                  "' in the dtype list (embed_tokens, vision_encoder, encoder_model, decoder_model_merged)");
    }
    check_dtype(session_dtype);
    if (!files.per_session.emplace(session, session_dtype).second) {
      throw Error("Florence-2: the dtype list names " + session + " twice");
    }
    start = comma + 1;
  }
  return files;
}

std::string Florence2Files::file_name(const std::string& session) const {
  // The split decoders take the merged decoder's dtype (transformers.js names them by the same key).
  const std::string key =
      session == "decoder_model" || session == "decoder_with_past_model" ? "decoder_model_merged" : session;
  const auto it = per_session.find(key);
  const std::string& d = it == per_session.end() ? dtype : it->second;
  return session + pipelines::dtype_suffix("Florence-2", d) + ".onnx";
}

Florence2 Florence2::from_folder(const fs::path& folder, const SessionOptions& options,
                                 const Florence2Files& file_names) {
  return Impl::load(folder, nullptr, options, file_names);
}

Florence2 Florence2::from_folder(const fs::path& folder, const Environment& environment,
                                 const SessionOptions& options, const Florence2Files& file_names) {
  return Impl::load(folder, &environment, options, file_names);
}

Florence2 Florence2::Impl::load(const fs::path& folder, const Environment* given,
                                const SessionOptions& options, const Florence2Files& file_names) {
  if (!fs::is_directory(folder)) throw Error("Florence-2: '" + folder.string() + "' is not a folder");
  const fs::path onnx = folder / "onnx";
  const std::string merged_name = file_names.file_name("decoder_model_merged");
  const std::string first_name = file_names.file_name("decoder_model");
  const std::string with_past_name = file_names.file_name("decoder_with_past_model");
  const bool merged = fs::exists(onnx / merged_name);
  std::vector<fs::path> files = {folder / "config.json",
                                 folder / "generation_config.json",
                                 folder / "preprocessor_config.json",
                                 folder / "tokenizer.json",
                                 onnx / file_names.file_name("embed_tokens"),
                                 onnx / file_names.file_name("vision_encoder"),
                                 onnx / file_names.file_name("encoder_model")};
  if (merged) {
    files.push_back(onnx / merged_name);
  } else {
    files.push_back(onnx / first_name);
    files.push_back(onnx / with_past_name);
  }
  for (const fs::path& file : files) {
    if (!fs::is_regular_file(file)) {
      throw Error("Florence-2: the folder lacks " + fs::relative(file, folder).string() +
                  (file.parent_path() == onnx && file.filename().string().starts_with("decoder")
                       ? " (it needs onnx/" + merged_name + ", or onnx/" + first_name + " and onnx/" +
                             with_past_name + ")"
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

  // One device for the four sessions, made once the files are known to be there.
  const Environment environment = given ? *given : Environment::create(options.environment_options());
  // The decoders choose their token candidates on the GPU (the search downloads those, not the logits).
  SessionOptions decoder_options = options;
  decoder_options.token_candidates = SessionOptions::TokenCandidates{"logits", kTokenCandidates, true};
  const auto load = [&](const std::string& name, const SessionOptions& session_options) {
    try {
      return Session::from_file(onnx / name, environment, session_options);
    } catch (const Error& e) {
      throw Error("Florence-2: onnx/" + name + ": " + e.what());
    }
  };
  auto impl = std::make_unique<Impl>(folder, processor, std::move(generation), std::move(tokenizer),
                                     load(file_names.file_name("embed_tokens"), options),
                                     load(file_names.file_name("vision_encoder"), options),
                                     load(file_names.file_name("encoder_model"), options),
                                     load(merged ? merged_name : first_name, decoder_options));
  impl->merged = merged;
  impl->decoder_file_names = merged ? merged_name : first_name + " + " + with_past_name;
  if (!merged) impl->decoder_with_past.emplace(load(with_past_name, decoder_options));
  impl->file_names = file_names;
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
  // The settings: the call's, else generation_config.json's.
  const GenerationSettings& g = m.generation;
  const int num_beams = options.num_beams.value_or(g.num_beams);
  const int no_repeat_ngram_size = options.no_repeat_ngram_size.value_or(g.no_repeat_ngram_size);
  const double length_penalty = options.length_penalty.value_or(g.length_penalty);
  const EarlyStopping early_stopping = options.early_stopping.value_or(g.early_stopping);
  if (num_beams < 1) {
    throw Error("Florence-2: num_beams must be at least 1 (got " + std::to_string(num_beams) + ")");
  }
  if (no_repeat_ngram_size < 0) {
    throw Error("Florence-2: no_repeat_ngram_size must be 0 (off) or more (got " +
                std::to_string(no_repeat_ngram_size) + ")");
  }
  if (!std::isfinite(length_penalty)) throw Error("Florence-2: length_penalty must be a finite number");
  const size_t max_length = options.max_new_tokens ? 1 + static_cast<size_t>(*options.max_new_tokens)
                                                   : static_cast<size_t>(g.max_length);
  if (max_length < 2) {
    throw Error("Florence-2: generation_config.json's max_length " + std::to_string(g.max_length) +
                " leaves no new token (set max_new_tokens)");
  }

  Florence2Result result;
  auto stage_start = std::chrono::steady_clock::now();
  // The time since the last stage ended, in ms (and the next stage starts now).
  auto stage_ms = [&stage_start] {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - stage_start).count();
    stage_start = now;
    return ms;
  };
  Tensor pixels = m.pixel_values(image);
  result.stages.preprocess_ms = stage_ms();

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
  result.stages.vision_ms = stage_ms();
  const Tensor encoder_hidden =
      m.encoder.run({{"inputs_embeds", encoder_embeds}, {"attention_mask", encoder_mask}})
          .at("last_hidden_state");
  result.stages.encoder_ms = stage_ms();

  const DecoderSessions sessions{m.embed_tokens, m.decoder,    m.merged ? m.decoder : *m.decoder_with_past,
                                 m.merged,       m.past_names, m.heads,
                                 m.head_size};
  BeamDecoder decoder(sessions, encoder_hidden, encoder_mask, static_cast<size_t>(num_beams), max_length);
  const SearchSettings search{
      g, static_cast<size_t>(num_beams), no_repeat_ngram_size, length_penalty, early_stopping, max_length};
  const SearchResult found = num_beams == 1 ? greedy_search(decoder, search) : beam_search(decoder, search);
  result.generated_ids = found.ids;
  result.num_beams = num_beams;
  result.sequence_score = found.score;
  result.decode_steps = found.steps;
  result.logits_downloads = decoder.logits_downloads();
  result.stages.decode_ms = stage_ms();
  result.stages.step_embed_ms = decoder.embed_ms();
  result.stages.step_decoder_ms = decoder.decoder_ms();
  const std::vector<int64_t>& ids = result.generated_ids;

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
  result.stages.postprocess_ms = stage_ms();
  return result;
}

int Florence2::image_width() const {
  return impl_->processor.width;
}
int Florence2::image_height() const {
  return impl_->processor.height;
}
std::string Florence2::decoder_files() const {
  return impl_->decoder_file_names;
}

Florence2::Florence2(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Florence2::~Florence2() = default;
Florence2::Florence2(Florence2&&) noexcept = default;
Florence2& Florence2::operator=(Florence2&&) noexcept = default;

}  // namespace wgi
