// wgi::Siglip end to end on tests/data/pipelines/siglip_tiny (seeded random weights in
// Xenova/siglip-base-patch16-224's folder layout) against transformers.js 4.3.1's
// pipeline('zero-shot-image-classification') answers recorded in its expected_scores_*.json (onnxruntime-node
// 1.30 CPU, float32; README.md there): the texts' ids must be equal and each sigmoid score within 1e-4.
// Then the errors a user can cause.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
#include "wgi/environment.h"
#include "wgi/image.h"
#include "wgi/siglip.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kTiny = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip_tiny";
// SigLIP 2's layout: tokenizer.json only, Gemma's BPE with byte_fallback (its README.md).
const fs::path kTiny2 = fs::path(WGI_TEST_DATA_DIR) / "pipelines" / "siglip2_tiny";
// Scores are sigmoid(100 * cos + 36) in float32: a cosine off by a few float32 ulps (~1e-7 each, summed over
// 32-element dot products and norms) moves the logit by ~1e-4 and the score by at most a quarter of that.
constexpr double kScoreTolerance = 1e-4;

void expect_case(Siglip& model, const std::string& file, const fs::path& folder = kTiny) {
  SCOPED_TRACE(file);
  const json::Value expected = json::parse(npy::read_file(folder / file));
  std::vector<std::string> labels;
  for (const json::Value& v : expected.find("labels")->array) labels.push_back(v.string);
  const std::string hypothesis = expected.find("hypothesis_template")->string;
  const SiglipResult r =
      model.classify(load_image(folder / expected.find("image")->string), labels, hypothesis);
  const auto& ids = expected.find("input_ids")->array;
  const auto& scores = expected.find("scores")->array;
  ASSERT_EQ(r.input_ids.size(), ids.size());
  ASSERT_EQ(r.scores.size(), scores.size());
  ASSERT_FALSE(scores.empty());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<int64_t> want;
    for (const json::Value& v : ids[i].array) want.push_back(static_cast<int64_t>(v.number));
    EXPECT_EQ(r.input_ids[i], want) << "text " << i << ": " << r.texts[i];
    EXPECT_NEAR(r.scores[i], scores[i].number, kScoreTolerance) << labels[i];
    EXPECT_NEAR(1.0 / (1.0 + std::exp(-static_cast<double>(r.logits[i]))), r.scores[i], 1e-7);
  }
  // transformers.js's order, where its neighbouring scores are further apart than the tolerance allows to
  // swap.
  const auto& output = expected.find("output")->array;
  const std::vector<SiglipScore> ranked = r.ranked();
  ASSERT_EQ(ranked.size(), output.size());
  for (size_t i = 0; i + 1 < output.size(); ++i) {
    const double gap = output[i].find("score")->number - output[i + 1].find("score")->number;
    if (gap > 2 * kScoreTolerance) {
      EXPECT_EQ(ranked[i].label, output[i].find("label")->string) << i;
    }
  }
}

// The four cases against transformers.js; then a second model on the same Environment (an application with
// two folders, or one loaded twice): the same answers, and no pipeline compiled by it.
TEST(SiglipPipeline, ScoresMatchTransformersJs) {
  Environment env = Environment::create();
  Siglip model = Siglip::from_folder(kTiny, env);
  EXPECT_EQ(model.image_width(), 40);
  EXPECT_EQ(model.image_height(), 40);
  EXPECT_EQ(model.max_length(), 64);
  for (const char* file : {"expected_scores_a.json", "expected_scores_b.json", "expected_scores_c.json",
                           "expected_scores_c_one.json"}) {
    expect_case(model, file);
  }
  const size_t compiled = env.pipelines();
  EXPECT_GT(compiled, 0u);
  Siglip second = Siglip::from_folder(kTiny, env);
  expect_case(second, "expected_scores_a.json");
  EXPECT_EQ(env.pipelines(), compiled);
}

TEST(SiglipPipeline, Siglip2ScoresMatchTransformersJs) {
  Siglip model = Siglip::from_folder(kTiny2);
  EXPECT_EQ(model.max_length(), 64);
  EXPECT_EQ(model.tokenize("a cat").back(), 0);  // padded with <pad>, Gemma's id 0
  // expected_scores_b.json's labels have capitals, punctuation, CJK and emoji: byte-fallback pieces (one
  // case of the two recorded, for CI's time).
  expect_case(model, "expected_scores_b.json", kTiny2);
}

// A model whose text batch is fixed at 1 (onnx/model_text_batch1.onnx, model.onnx otherwise): one run per
// label, the same answers.
TEST(SiglipPipeline, TextBatchOfOneRunsEachLabel) {
  SiglipOptions options;
  options.model_file = "model_text_batch1.onnx";
  Siglip model = Siglip::from_folder(kTiny, options);
  expect_case(model, "expected_scores_c.json");
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

struct Edit {
  std::string file, from, to;  // in `file` (under the folder), the first `from` becomes `to`
};

// A copy of the tiny folder without `skip` (file names under the folder), with `edits` applied.
fs::path copy_folder(const std::string& name, const std::vector<std::string>& skip,
                     const std::vector<Edit>& edits = {}) {
  const fs::path dir = fs::temp_directory_path() / ("wgi_siglip_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "onnx");
  for (const auto& entry : fs::recursive_directory_iterator(kTiny)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), kTiny).string();
    if (std::find(skip.begin(), skip.end(), relative) != skip.end()) continue;
    fs::copy_file(entry.path(), dir / relative);
  }
  for (const Edit& edit : edits) {
    std::string text = npy::read_file(dir / edit.file);
    const size_t at = text.find(edit.from);
    EXPECT_NE(at, std::string::npos) << edit.from;
    if (at != std::string::npos) text.replace(at, edit.from.size(), edit.to);
    std::ofstream(dir / edit.file, std::ios::binary) << text;
  }
  return dir;
}

// Each tokenizer source alone: tokenizer.json (pipelines::Tokenizer, the browser's) and spiece.model
// (libsentencepiece, native only) give transformers.js's ids and scores.
TEST(SiglipPipeline, EitherTokenizerFileAlone) {
  for (const char* skipped : {"spiece.model", "tokenizer.json"}) {
    SCOPED_TRACE(std::string("without ") + skipped);
    const fs::path dir = copy_folder(std::string("without_") + skipped, {skipped});
    Siglip model = Siglip::from_folder(dir);
    expect_case(model, "expected_scores_c_one.json");  // one label: the folder's load is the point
    fs::remove_all(dir);
  }
}

TEST(SiglipPipeline, MissingFilesAreNamed) {
  const fs::path towers_only = copy_folder("towers_only", {"onnx/model.onnx"});
  expect_error([&] { Siglip::from_folder(towers_only); },
               "the folder lacks onnx/model.onnx (the separate text_model.onnx and vision_model.onnx towers");
  fs::remove_all(towers_only);
  const fs::path no_tokenizer = copy_folder("no_tokenizer", {"spiece.model", "tokenizer.json"});
  expect_error([&] { Siglip::from_folder(no_tokenizer); },
               "the folder lacks tokenizer.json and spiece.model");
  fs::remove_all(no_tokenizer);
  const fs::path no_config = copy_folder("no_config", {"config.json"});
  expect_error([&] { Siglip::from_folder(no_config); }, "the folder lacks config.json");
  fs::remove_all(no_config);
  expect_error([&] { Siglip::from_folder(kTiny / "nothing"); }, "is not a folder");
}

// transformers.js's dtype names the joint model's file: a folder whose only model is "model_fp16.onnx" (a
// copy of the fp32 one, so the scores stay transformers.js's fp32 ones) loads with dtype fp16 and fails,
// naming the file, without it; an unknown dtype, or a dtype and a model file together, are refused.
TEST(SiglipPipeline, DtypeNamesTheModelFile) {
  const fs::path dir = copy_folder("dtype", {"onnx/model.onnx"});
  fs::copy_file(kTiny / "onnx" / "model.onnx", dir / "onnx" / "model_fp16.onnx");
  SiglipOptions options;
  options.dtype = "fp16";
  EXPECT_EQ(options.file(), "model_fp16.onnx");
  Siglip model = Siglip::from_folder(dir, options);
  expect_case(model, "expected_scores_c_one.json");
  expect_error([&] { Siglip::from_folder(dir); }, "the folder lacks onnx/model.onnx");
  options.dtype = "q3";
  expect_error([&] { Siglip::from_folder(dir, options); }, "SigLIP: unknown dtype 'q3' (one of");
  options.dtype = "q8";
  EXPECT_EQ(options.file(), "model_quantized.onnx");
  options.model_file = "model_fp16.onnx";
  expect_error([&] { Siglip::from_folder(dir, options); }, "give a dtype or a model file, not both");
  fs::remove_all(dir);
}

TEST(SiglipPipeline, ConfigsThatDoNotMatchTheModelAreNamed) {
  // preprocessor_config.json and config.json say 48x48; onnx/model.onnx's pixel_values are fixed at 40x40.
  const fs::path size48 = copy_folder("size48", {},
                                      {{"preprocessor_config.json", "\"height\": 40", "\"height\": 48"},
                                       {"preprocessor_config.json", "\"width\": 40", "\"width\": 48"},
                                       {"config.json", "\"image_size\": 40", "\"image_size\": 48"}});
  expect_error(
      [&] { Siglip::from_folder(size48); },
      "onnx/model.onnx 'pixel_values' has dim 2 = 40, but preprocessor_config.json's size.height is 48");
  fs::remove_all(size48);
  const fs::path image_size =
      copy_folder("image_size", {}, {{"config.json", "\"image_size\": 40", "\"image_size\": 48"}});
  expect_error([&] { Siglip::from_folder(image_size); },
               "config.json's vision_config.image_size is 48, preprocessor_config.json's size is 40x40");
  fs::remove_all(image_size);
  const fs::path clip =
      copy_folder("clip", {}, {{"config.json", "\"model_type\": \"siglip\"", "\"model_type\": \"clip\""}});
  expect_error([&] { Siglip::from_folder(clip); }, "model_type must be \"siglip\" (found \"clip\")");
  fs::remove_all(clip);
  const fs::path vocab =
      copy_folder("vocab", {}, {{"config.json", "\"vocab_size\": 320", "\"vocab_size\": 100"}});
  expect_error([&] { Siglip::from_folder(vocab); },
               "config.json's text_config.vocab_size (100) is smaller than tokenizer.json's 320 tokens");
  fs::remove_all(vocab);
  // The text tower must take max_length ids: the towers' file has the joint model's names but not its output.
  const fs::path towers = copy_folder("towers", {"onnx/model.onnx"});
  fs::copy_file(kTiny / "onnx" / "text_model.onnx", towers / "onnx" / "model.onnx");
  expect_error([&] { Siglip::from_folder(towers); }, "onnx/model.onnx has no input 'pixel_values'");
  fs::remove_all(towers);
}

TEST(SiglipPipeline, BadInputsAreNamed) {
  Siglip model = Siglip::from_folder(kTiny);
  const Image image = load_image(kTiny / "image_a.png");
  expect_error([&] { model.classify(image, {}); }, "no candidate labels");
  expect_error([&] { model.classify(image, {"cat"}, "a photo"); }, "has no {} to put the label in");
  expect_error([&] { model.classify(image, {"bad \xff utf-8"}); }, "invalid UTF-8");
  Image small = image;
  small.width = 20;
  small.pixels.resize(20 * 40 * 3);
  expect_error([&] { model.classify(small, {"cat"}); },
               "the image is 20x40; this model's processor takes 40x40");
  const fs::path broken =
      fs::temp_directory_path() / ("wgi_siglip_broken_" + std::to_string(::getpid()) + ".png");
  const std::string png = npy::read_file(kTiny / "image_a.png");
  std::ofstream(broken, std::ios::binary) << png.substr(0, png.size() / 2);
  expect_error([&] { load_image(broken); }, "cannot read image '" + broken.string() + "'");
  fs::remove(broken);
}

}  // namespace
}  // namespace wgi
