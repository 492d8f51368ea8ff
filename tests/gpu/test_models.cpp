// Every model in tests/data/models (written by tests/models/generate_models.py: PyTorch exports at opsets 13
// and 17 and hand-built graphs) runs through the public Session API and matches its float64 reference:
// relative L2 error <= 1e-4 for each output; the max abs error is reported too.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/npy.h"
#include "support/model_reference.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kModels)) {
    bool has_expected = false;
    for (const auto& f : fs::directory_iterator(entry.path())) {
      has_expected |= f.path().filename().string().rfind("expected_", 0) == 0;
    }
    if (has_expected) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelTest, MatchesFloat64Reference) {
  const fs::path dir = kModels / GetParam();
  Session session = Session::from_file(dir / "model.onnx");
  std::map<std::string, Tensor> inputs;
  for (const TensorInfo& in : session.inputs())
    inputs[in.name] = npy::load(dir / ("input_" + in.name + ".npy"));
  auto outputs = session.run(inputs);
  int compared = 0;
  for (const TensorInfo& out : session.outputs()) {
    fs::path expected = dir / ("expected_" + out.name + ".npy");
    if (!fs::exists(expected)) continue;
    ++compared;
    auto result = test::close_in_l2(outputs.at(out.name), test::load_float64_npy(expected), 1e-4);
    EXPECT_TRUE(result) << GetParam() << " output '" << out.name << "'";
    std::cerr << "[ model " << GetParam() << " / " << out.name << ": " << result.message() << " ]\n";
  }
  // A folder whose expected files name no output of the model compared nothing: that is a failure.
  EXPECT_GT(compared, 0) << GetParam() << ": no output has an expected_<name>.npy";
}

INSTANTIATE_TEST_SUITE_P(Models, ModelTest, ::testing::ValuesIn(model_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace wgi
