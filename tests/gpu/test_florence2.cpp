// wgi::Florence2 end to end on tests/data/pipelines/florence2_tiny (seeded random weights in onnx-community's
// folder layout) against transformers.js 4.3.1's greedy answers recorded in its expected_<task>.json
// (onnxruntime-node 1.30 CPU; README.md there): the prompt ids, the generated ids and text must be equal, and
// the parsed boxes within 1e-6 pixels. Both decoder layouts: the merged decoder (If on use_cache_branch)
// and the split decoder_model + decoder_with_past_model. Then the errors a user can cause.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/npy.h"
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
// config.json's text.
fs::path copy_folder(const std::string& name, const std::vector<std::string>& skip,
                     const std::pair<std::string, std::string>& replace = {}) {
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
    std::string config = npy::read_file(dir / "config.json");
    const size_t at = config.find(replace.first);
    EXPECT_NE(at, std::string::npos) << replace.first;
    if (at != std::string::npos) config.replace(at, replace.first.size(), replace.second);
    std::ofstream(dir / "config.json", std::ios::binary) << config;
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
  const Florence2Result r = model.generate(image, task, {}, options);

  EXPECT_EQ(r.input_ids, ids_of(*want.find("input_ids")));
  const std::vector<int64_t> want_ids = ids_of(*want.find("generated_ids"));
  ASSERT_GT(want_ids.size(), 3u);  // a reference that generated nothing would compare nothing
  EXPECT_EQ(r.generated_ids, want_ids);
  EXPECT_EQ(r.generated_text, want.find("generated_text")->string);

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

// max_new_tokens short of the natural EOS: forced EOS at max_length - 1, so the sequence ends with EOS
// after the reference's first tokens.
TEST(Florence2Pipeline, MaxNewTokensForcesEosAtTheLastPosition) {
  Florence2 model = Florence2::from_folder(kTiny);
  const std::vector<int64_t> full = ids_of(*expected("od").find("generated_ids"));
  Florence2GenerateOptions options;
  options.max_new_tokens = 6;
  const Florence2Result r = model.generate(load_image(kTiny / "image.png"), "<OD>", {}, options);
  std::vector<int64_t> want(full.begin(), full.begin() + 6);
  want.push_back(2);  // forced_eos_token_id
  EXPECT_EQ(r.generated_ids, want);
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

  Florence2 model = Florence2::from_folder(kTiny);
  const Image image = load_image(kTiny / "image.png");
  expect_error([&] { model.generate(image, "<FOO>"); }, "<FOO>");
  expect_error([&] { model.generate(image, "<OD>", "a cat"); }, "<OD>");
  Image small = image;
  small.width = 32;
  small.pixels.resize(32 * 64 * 3);
  expect_error([&] { model.generate(small, "<OD>"); },
               "the image is 32x64; this model's processor takes 64x64");
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
}

}  // namespace
}  // namespace wgi
