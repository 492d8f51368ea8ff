// wgi::Florence2 end to end on tests/data/pipelines/florence2_tiny (seeded random weights in onnx-community's
// folder layout) against transformers.js 4.3.1's greedy answers recorded in its expected_<task>.json
// (onnxruntime-node 1.30 CPU; README.md there): the prompt ids, the generated ids and text must be equal, and
// the parsed boxes within 1e-6 pixels. Both decoder layouts: the merged decoder (If on use_cache_branch)
// and the split decoder_model + decoder_with_past_model. Then the errors a user can cause.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
#include "wgi/environment.h"
#include "wgi/florence2.h"
#include "wgi/image.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kTiny = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "florence2_tiny";

json::Value expected(const std::string& name) {
  return json::parse(npy::read_file(kTiny / ("expected_" + name + ".json")));
}

std::vector<int64_t> ids_of(const json::Value& list) {
  std::vector<int64_t> ids;
  for (const json::Value& v : list.array) ids.push_back(static_cast<int64_t>(v.number));
  return ids;
}

// A copy of the tiny folder without `skip` (file names under the folder), with `replace` applied to
// the text of `edited` (config.json by default).
fs::path copy_folder(const std::string& name, const std::vector<std::string>& skip,
                     const std::pair<std::string, std::string>& replace = {},
                     const std::string& edited = "config.json") {
  const fs::path dir =
      fs::temp_directory_path() / ("wgi_florence2_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "onnx");
  for (const auto& entry : fs::recursive_directory_iterator(kTiny)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), kTiny).string();
    if (std::find(skip.begin(), skip.end(), relative) != skip.end()) continue;
    fs::copy_file(entry.path(), dir / relative);
  }
  if (!replace.first.empty()) {
    std::string config = npy::read_file(dir / edited);
    const size_t at = config.find(replace.first);
    EXPECT_NE(at, std::string::npos) << replace.first;
    if (at != std::string::npos) config.replace(at, replace.first.size(), replace.second);
    std::ofstream(dir / edited, std::ios::binary) << config;
  }
  return dir;
}

// The answer for `task` must equal transformers.js's. Boxes within 1e-6 px: post_process_generation does
// transformers.js's float64 operations (equal bit for bit in tests/unit/test_tokenizer.cpp), so this only
// allows for the reference's trip through JSON text; it is far below a bin (size / 1000 = 0.064 px here), so
// a wrong location token cannot pass.
void expect_task(Florence2& model, const std::string& task, const std::string& file) {
  SCOPED_TRACE(task + " with " + model.decoder_files());
  const json::Value want = expected(file);
  const Image image = load_image(kTiny / "image.png");
  Florence2GenerateOptions options;
  options.max_new_tokens = static_cast<int>(want.find("max_new_tokens")->number);
  options.num_beams = 1;  // transformers.js 4.3 decodes greedily whatever num_beams says
  const auto start = std::chrono::steady_clock::now();
  const Florence2Result r = model.generate(image, task, {}, options);
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.num_beams, 1);
  // The stages' times: each measured, none negative, together within the call's wall time.
  const Florence2Result::Stages& t = r.stages;
  for (double ms : {t.preprocess_ms, t.vision_ms, t.encoder_ms, t.decode_ms, t.postprocess_ms})
    EXPECT_GE(ms, 0);
  EXPECT_GT(t.vision_ms, 0);
  EXPECT_GT(t.decode_ms, 0);
  EXPECT_LE(t.preprocess_ms + t.vision_ms + t.encoder_ms + t.decode_ms + t.postprocess_ms, wall_ms);
  EXPECT_GT(t.step_embed_ms, 0);
  EXPECT_GT(t.step_decoder_ms, 0);
  EXPECT_LE(t.step_embed_ms + t.step_decoder_ms, t.decode_ms);

  EXPECT_EQ(r.input_ids, ids_of(*want.find("input_ids")));
  const std::vector<int64_t> want_ids = ids_of(*want.find("generated_ids"));
  ASSERT_GT(want_ids.size(), 3u);  // a reference that generated nothing would compare nothing
  EXPECT_EQ(r.generated_ids, want_ids);
  EXPECT_EQ(r.generated_text, want.find("generated_text")->string);
  // The forced BOS step reads its whole logits; the others take their tokens from the GPU's candidates.
  EXPECT_GE(r.logits_downloads, 1);
  EXPECT_LT(r.logits_downloads, r.decode_steps);

  const json::Value& parsed = *want.find("parsed")->find(task);
  if (parsed.is(json::Value::Type::String)) {
    EXPECT_EQ(r.parsed.type, "pure_text");
    EXPECT_EQ(r.parsed.text, parsed.string);
    return;
  }
  const bool ocr = r.parsed.type == "ocr";
  const json::Value& labels = *parsed.find("labels");
  const json::Value& boxes = *parsed.find(ocr ? "quad_boxes" : "bboxes");
  ASSERT_FALSE(boxes.array.empty());
  ASSERT_EQ(r.parsed.labels.size(), labels.array.size());
  for (size_t i = 0; i < labels.array.size(); ++i) EXPECT_EQ(r.parsed.labels[i], labels.array[i].string) << i;
  ASSERT_EQ(ocr ? r.parsed.quad_boxes.size() : r.parsed.boxes.size(), boxes.array.size());
  for (size_t b = 0; b < boxes.array.size(); ++b) {
    ASSERT_EQ(boxes.array[b].array.size(), ocr ? 8u : 4u);
    for (size_t k = 0; k < boxes.array[b].array.size(); ++k) {
      const double got = ocr ? r.parsed.quad_boxes[b][k] : r.parsed.boxes[b][k];
      EXPECT_NEAR(got, boxes.array[b].array[k].number, 1e-6) << "box " << b << " coordinate " << k;
    }
  }
}

TEST(Florence2Pipeline, MergedDecoderMatchesTransformersJs) {
  Florence2 model = Florence2::from_folder(kTiny);
  EXPECT_EQ(model.decoder_files(), "decoder_model_merged.onnx");
  expect_task(model, "<CAPTION>", "caption");
  expect_task(model, "<OD>", "od");
  expect_task(model, "<OCR_WITH_REGION>", "ocr_with_region");
}

TEST(Florence2Pipeline, SplitDecodersMatchTransformersJs) {
  const fs::path dir = copy_folder("split", {"onnx/decoder_model_merged.onnx"});
  Florence2 model = Florence2::from_folder(dir);
  EXPECT_EQ(model.decoder_files(), "decoder_model.onnx + decoder_with_past_model.onnx");
  expect_task(model, "<OCR_WITH_REGION>",
              "ocr_with_region");  // the shortest answer: the CPU adapters are slow
  fs::remove_all(dir);
}

// The files of a dtype are picked by transformers.js's suffixes: a folder whose only vision encoder and
// decoder are "_q4" / "_fp16" files (here copies of the fp32 ones under those names, so the answer must stay
// transformers.js's fp32 one) loads with those dtypes and fails, naming the file, without them.
TEST(Florence2Pipeline, DtypesPickTheSuffixedFiles) {
  const fs::path dir = copy_folder("dtype", {"onnx/decoder_model_merged.onnx", "onnx/vision_encoder.onnx",
                                             "onnx/decoder_model.onnx", "onnx/decoder_with_past_model.onnx"});
  fs::copy_file(kTiny / "onnx" / "decoder_model_merged.onnx", dir / "onnx" / "decoder_model_merged_q4.onnx");
  fs::copy_file(kTiny / "onnx" / "vision_encoder.onnx", dir / "onnx" / "vision_encoder_fp16.onnx");
  const Florence2Files files =
      Florence2Files::parse("embed_tokens=fp32,vision_encoder=fp16,decoder_model_merged=q4");
  EXPECT_EQ(files.file_name("encoder_model"), "encoder_model.onnx");
  EXPECT_EQ(files.file_name("decoder_with_past_model"), "decoder_with_past_model_q4.onnx");
  EXPECT_EQ(Florence2Files::parse("q8").file_name("vision_encoder"), "vision_encoder_quantized.onnx");
  Florence2 model = Florence2::from_folder(dir, {}, files);
  EXPECT_EQ(model.decoder_files(), "decoder_model_merged_q4.onnx");
  expect_task(model, "<OCR_WITH_REGION>", "ocr_with_region");
  try {
    Florence2::from_folder(dir);
    ADD_FAILURE() << "fp32 files that are not there were not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vision_encoder.onnx"), std::string::npos) << e.what();
  }
  for (const auto& [text, part] : std::vector<std::pair<std::string, std::string>>{
           {"q3", "unknown dtype 'q3'"},
           {"decoder=q4", "unknown session 'decoder'"},
           {"encoder_model=q4,encoder_model=fp16", "names encoder_model twice"},
           {"encoder_model", "unknown dtype"},
           {"encoder_model=q4,fp16", "is not session=dtype"}}) {
    try {
      Florence2Files::parse(text);
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << text << ": " << e.what();
    }
  }
  fs::remove_all(dir);
}

// The session checks name the file that was loaded, not the fp32 one: a wrong model saved under a dtype's
// name (the encoder as "vision_encoder_fp16.onnx", then as "decoder_model_merged_q4.onnx") is reported as
// that file.
TEST(Florence2Pipeline, SessionChecksNameTheDtypesFile) {
  const fs::path dir = copy_folder("dtype_names", {});
  fs::copy_file(kTiny / "onnx" / "encoder_model.onnx", dir / "onnx" / "vision_encoder_fp16.onnx");
  fs::copy_file(kTiny / "onnx" / "encoder_model.onnx", dir / "onnx" / "decoder_model_merged_q4.onnx");
  for (const auto& [dtype, part] : std::vector<std::pair<std::string, std::string>>{
           {"vision_encoder=fp16", "Florence-2: vision_encoder_fp16.onnx has no input 'pixel_values'"},
           // The decoders are loaded with token candidates over their logits, which this file lacks.
           {"decoder_model_merged=q4",
            "Florence-2: onnx/decoder_model_merged_q4.onnx: token candidates: the model has no output "
            "'logits'"}}) {
    try {
      Florence2::from_folder(dir, {}, Florence2Files::parse(dtype));
      ADD_FAILURE() << dtype << ": the wrong file was not reported";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << dtype << ": " << e.what();
    }
  }
  fs::remove_all(dir);
}

// max_new_tokens short of the natural EOS: forced EOS at max_length - 1, so the sequence ends with EOS
// after the reference's first tokens. Then a second model on the same Environment (an application with two
// folders, or one loaded twice): the same answer, and no pipeline compiled (its four sessions find every
// kernel the first model's compiled).
TEST(Florence2Pipeline, MaxNewTokensForcesEosAtTheLastPosition) {
  Environment env = Environment::create();
  Florence2 model = Florence2::from_folder(kTiny, env);
  const std::vector<int64_t> full = ids_of(*expected("od").find("generated_ids"));
  Florence2GenerateOptions options;
  options.max_new_tokens = 6;
  options.num_beams = 1;
  const Image image = load_image(kTiny / "image.png");
  const Florence2Result r = model.generate(image, "<OD>", {}, options);
  std::vector<int64_t> want(full.begin(), full.begin() + 6);
  want.push_back(2);  // forced_eos_token_id
  EXPECT_EQ(r.generated_ids, want);

  const size_t compiled = env.pipelines();
  EXPECT_GT(compiled, 0u);
  Florence2 second = Florence2::from_folder(kTiny, env);
  EXPECT_EQ(second.generate(image, "<OD>", {}, options).generated_ids, want);
  EXPECT_EQ(env.pipelines(), compiled);
}

// Beam search against tests/models/beam_search_reference.py (Hugging Face's algorithm in float64 over the
// same weights; docs/beam_search.md): the ids token for token and HF's sequences_scores. The score within
// 1e-5 relative: wgi's logits are float32 (~1e-6 relative error on this model) accumulated in double, the
// reference float64 throughout. The decisions cannot flip on that error: the reference records margins of at
// least 0.0039 nats and 9.8e-5 relative. Every case differs from greedy, so a search that fell back to
// greedy fails.
void expect_beams(Florence2& model, const std::string& name) {
  SCOPED_TRACE(name + " with " + model.decoder_files());
  const json::Value want = expected("beams_" + name);
  const json::Value& g = *want.find("generation");
  Florence2GenerateOptions options;
  options.max_new_tokens = static_cast<int>(g.find("max_new_tokens")->number);
  options.num_beams = static_cast<int>(g.find("num_beams")->number);
  options.length_penalty = g.find("length_penalty")->number;
  options.no_repeat_ngram_size = static_cast<int>(g.find("no_repeat_ngram_size")->number);
  const json::Value& stop = *g.find("early_stopping");
  options.early_stopping = stop.is(json::Value::Type::String) ? EarlyStopping::Never
                           : stop.boolean                     ? EarlyStopping::Yes
                                                              : EarlyStopping::No;
  const std::string task = want.find("task")->string;
  const Florence2Result r = model.generate(load_image(kTiny / "image.png"), task, {}, options);
  EXPECT_EQ(r.num_beams, options.num_beams);
  EXPECT_EQ(r.input_ids, ids_of(*want.find("input_ids")));
  const std::vector<int64_t> want_ids = ids_of(*want.find("generated_ids"));
  ASSERT_GT(want_ids.size(), 3u);
  ASSERT_NE(want_ids, ids_of(*want.find("greedy_ids")));
  EXPECT_EQ(r.generated_ids, want_ids);
  const double score = want.find("sequence_score")->number;
  EXPECT_NEAR(r.sequence_score, score, 1e-5 * std::abs(score));
  EXPECT_EQ(r.decode_steps, static_cast<int>(want.find("decode_steps")->number));
  EXPECT_GE(r.logits_downloads, 1);  // the forced BOS step
  EXPECT_LT(r.logits_downloads, r.decode_steps);
}

// Florence-2's own settings (generation_config.json: 3 beams, early_stopping true) by default. Heavy for the
// CI budget: the default suite runs the same default search through the CLI (tests/cli/cli_test.sh).
TEST(Florence2Pipeline, HeavyBeamSearchWithTheFolderDefaultsMatchesHuggingFace) {
  Florence2 model = Florence2::from_folder(kTiny);
  Florence2GenerateOptions defaults;
  defaults.max_new_tokens = 40;
  const json::Value want = expected("beams_od");
  const Florence2Result r = model.generate(load_image(kTiny / "image.png"), "<OD>", {}, defaults);
  EXPECT_EQ(r.num_beams, 3);  // generation_config.json's
  EXPECT_EQ(r.generated_ids, ids_of(*want.find("generated_ids")));
  EXPECT_NEAR(r.sequence_score, want.find("sequence_score")->number,
              1e-5 * std::abs(want.find("sequence_score")->number));  // expect_beams says why
}

// Every case (caption_lp2 catches each mistake of docs/beam_search.md's list; 4 beams, early_stopping false
// and "never"; the split decoders): slow on the CPU adapters (~20 decoder steps a case).
TEST(Florence2Pipeline, HeavyBeamSearchMatchesHuggingFaceOnEveryCase) {
  Florence2 model = Florence2::from_folder(kTiny);
  for (const char* name :
       {"caption_lp2", "caption", "od", "ocr_with_region", "caption_beams4_lp05_nostop", "od_never_lp2"}) {
    expect_beams(model, name);
  }
  const fs::path dir = copy_folder("split_beams", {"onnx/decoder_model_merged.onnx"});
  Florence2 split = Florence2::from_folder(dir);
  expect_beams(split, "ocr_with_region");
  fs::remove_all(dir);
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Florence2Pipeline, ErrorsNameWhatIsWrong) {
  const fs::path no_encoder = copy_folder("no_encoder", {"onnx/encoder_model.onnx"});
  expect_error([&] { Florence2::from_folder(no_encoder); }, "the folder lacks onnx/encoder_model.onnx");
  fs::remove_all(no_encoder);
  const fs::path no_decoder =
      copy_folder("no_decoder", {"onnx/decoder_model_merged.onnx", "onnx/decoder_with_past_model.onnx"});
  expect_error([&] { Florence2::from_folder(no_decoder); }, "lacks onnx/decoder_with_past_model.onnx");
  fs::remove_all(no_decoder);
  const fs::path three_layers =
      copy_folder("three_layers", {}, {"\"decoder_layers\": 2", "\"decoder_layers\": 3"});
  expect_error([&] { Florence2::from_folder(three_layers); },
               "config.json says 3 decoder layers (4 past inputs each), decoder_model_merged.onnx has 8");
  fs::remove_all(three_layers);
  expect_error([&] { Florence2::from_folder(kTiny / "nothing"); }, "is not a folder");
  for (const char* file : {"tokenizer.json", "preprocessor_config.json", "generation_config.json"}) {
    const fs::path dir = copy_folder("no_file", {file});
    expect_error([&] { Florence2::from_folder(dir); }, std::string("the folder lacks ") + file);
    fs::remove_all(dir);
  }
  // Configs that disagree with the ONNX files, or that wgi cannot follow.
  const std::vector<std::tuple<std::string, std::pair<std::string, std::string>, std::string>> bad_configs = {
      {"config.json",
       {"\"d_model\": 4", "\"d_model\": 8"},
       "embed_tokens.onnx 'inputs_embeds' has dim 2 = 4, but config.json's d_model is 8"},
      {"config.json",
       {"\"vocab_size\": 51285,\n    \"d_model\"", "\"vocab_size\": 51000,\n    \"d_model\""},
       "'logits' has dim 2 = 51285, but config.json's vocab_size is 51000"},
      {"config.json",
       {"\"decoder_attention_heads\": 2", "\"decoder_attention_heads\": 4"},
       "config.json says 4 decoder attention heads, decoder_model_merged.onnx's past_key_values have 2"},
      {"preprocessor_config.json",
       {"\"resample\": 3", "\"resample\": 0"},
       "resample 0 (NEAREST) is not implemented"},
      {"generation_config.json",
       {"\"early_stopping\": true", "\"early_stopping\": \"soon\""},
       "'early_stopping' must be true, false or \"never\""},
      {"generation_config.json", {"\"num_beams\": 3", "\"num_beams\": 0"}, "num_beams must be at least 1"},
  };
  for (const auto& [file, replace, message] : bad_configs) {
    const fs::path dir = copy_folder("bad_config", {}, replace, file);
    expect_error([&] { Florence2::from_folder(dir); }, message);
    fs::remove_all(dir);
  }

  Florence2 model = Florence2::from_folder(kTiny);
  const Image image = load_image(kTiny / "image.png");
  expect_error([&] { model.generate(image, "<FOO>"); }, "<FOO>");
  expect_error([&] { model.generate(image, "<OD>", "a cat"); }, "task <OD> takes no text input");
  expect_error([&] { model.generate(image, "<CAPTION_TO_PHRASE_GROUNDING>"); },
               "task <CAPTION_TO_PHRASE_GROUNDING> needs a text input");
  Florence2GenerateOptions no_beams;
  no_beams.num_beams = 0;
  expect_error([&] { model.generate(image, "<OD>", {}, no_beams); }, "num_beams must be at least 1");
  Florence2GenerateOptions negative_ngram;
  negative_ngram.no_repeat_ngram_size = -1;
  expect_error([&] { model.generate(image, "<OD>", {}, negative_ngram); }, "no_repeat_ngram_size must be 0");
  Image grey = image;
  grey.channels = 1;
  grey.pixels.resize(64 * 64);
  expect_error([&] { model.generate(grey, "<OD>"); }, "the image has 1 channels; RGB (3) is needed");
  Image short_buffer = image;
  short_buffer.pixels.pop_back();
  expect_error([&] { model.generate(short_buffer, "<OD>"); }, "64x64 RGB needs 12288");
  Florence2GenerateOptions zero;
  zero.max_new_tokens = 0;
  expect_error([&] { model.generate(image, "<OD>", {}, zero); }, "max_new_tokens must be at least 1");
  expect_error([&] { load_image(kTiny / "config.json"); }, "cannot read image");
  expect_error([&] { load_image(kTiny / "absent.png"); }, "cannot read image");
  const fs::path no_resize = copy_folder("no_resize", {}, {"\"do_resize\": true", "\"do_resize\": false"},
                                         "preprocessor_config.json");
  Florence2 fixed = Florence2::from_folder(no_resize);
  expect_error([&] { fixed.generate(load_image(kTiny / "image_97x50.png"), "<OD>"); },
               "the image is 97x50; this model's processor takes 64x64 and its do_resize is false");
  fs::remove_all(no_resize);
}

// An image of another size is resized as PIL does (tests/models/pil_resize_reference.py wrote the 97x50
// image and PIL's 64x64 bicubic resize of it): the answer equals the answer on PIL's resize, its boxes
// scaled to 97x50. The answer also differs from image.png's, so the image reached the model.
TEST(Florence2Pipeline, ImagesOfOtherSizesAreResizedAsPilDoes) {
  Florence2 model = Florence2::from_folder(kTiny);
  Florence2GenerateOptions options;
  options.num_beams = 1;
  options.max_new_tokens = 12;  // two boxes: enough to compare, short on the CPU adapters
  const Image wide = load_image(kTiny / "image_97x50.png");
  ASSERT_EQ(wide.width, 97);
  ASSERT_EQ(wide.height, 50);
  const Tensor resized = npy::load(kTiny / "image_97x50_resized.npy");
  Image pil;
  pil.width = 64;
  pil.height = 64;
  pil.pixels.resize(resized.byte_size());
  std::memcpy(pil.pixels.data(), resized.bytes().data(), resized.byte_size());
  const Florence2Result r = model.generate(wide, "<OD>", {}, options);
  const Florence2Result want = model.generate(pil, "<OD>", {}, options);
  EXPECT_EQ(r.generated_ids, want.generated_ids);
  // image.png's answer cut at 12 new tokens (its first 12 ids, then the forced EOS).
  const std::vector<int64_t> full = ids_of(*expected("od").find("generated_ids"));
  std::vector<int64_t> square(full.begin(), full.begin() + 12);
  square.push_back(2);
  EXPECT_NE(r.generated_ids, square);
  ASSERT_FALSE(want.parsed.boxes.empty());
  ASSERT_EQ(r.parsed.boxes.size(), want.parsed.boxes.size());
  for (size_t b = 0; b < r.parsed.boxes.size(); ++b) {
    for (size_t k = 0; k < 4; ++k) {
      const double scale = (k % 2 == 0 ? 97.0 : 50.0) / 64.0;
      EXPECT_NEAR(r.parsed.boxes[b][k], want.parsed.boxes[b][k] * scale, 1e-9) << b << " " << k;
    }
  }
}

}  // namespace
}  // namespace wgi
