// Greedy decoding with the tiny BART decoder step (tests/models/florence_siglip.py) through the public API:
// the prompt step with empty past key/values, then steps that feed back the argmax token and the present
// key/values as the next past, so past_len grows and the Session plans one more input-shape signature per
// step. The tokens must equal PyTorch's float64 greedy loop and each step's last-position logits must match
// within relative L2 1e-4: this is the KV-cache path Florence-2's generation takes.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/npy.h"
#include "support/model_reference.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kDecoder = fs::path(WGI_TEST_DATA_DIR) / "models" / "bart_decoder_tiny_opset17";

// logits [batch, tokens, vocab] -> the last position's [batch, vocab].
Tensor last_position(const Tensor& logits) {
  const int64_t batch = logits.shape()[0], tokens = logits.shape()[1], vocab = logits.shape()[2];
  Tensor out(DType::Float32, {batch, vocab});
  auto src = logits.data<float>();
  auto dst = out.data<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t v = 0; v < vocab; ++v) dst[b * vocab + v] = src[(b * tokens + tokens - 1) * vocab + v];
  return out;
}

Tensor argmax_rows(const Tensor& rows) {
  const int64_t batch = rows.shape()[0], vocab = rows.shape()[1];
  std::vector<int64_t> ids(static_cast<size_t>(batch));
  auto v = rows.data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (v[b * vocab + i] > v[b * vocab + best]) best = i;
    ids[static_cast<size_t>(b)] = best;
  }
  return Tensor::from_vector<int64_t>({batch, 1}, ids);
}

// Row `step` of the [steps, batch, vocab] reference.
test::Float64Array reference_step(const test::Float64Array& all, int64_t step) {
  const int64_t per_step = all.shape[1] * all.shape[2];
  test::Float64Array out{{all.shape[1], all.shape[2]}, {}};
  out.values.assign(all.values.begin() + step * per_step, all.values.begin() + (step + 1) * per_step);
  return out;
}

TEST(DecoderLoop, GreedyDecodingWithKvCacheMatchesPyTorch) {
  Session session = Session::from_file(kDecoder / "model.onnx");
  const Tensor prompt = npy::load(kDecoder / "greedy_prompt_ids.npy");
  const Tensor encoder = npy::load(kDecoder / "greedy_encoder_hidden_states.npy");
  const Tensor expected_ids = npy::load(kDecoder / "greedy_expected_ids.npy");
  const test::Float64Array expected_logits = test::load_float64_npy(kDecoder / "greedy_expected_logits.npy");
  const int64_t batch = prompt.shape()[0];
  const int64_t steps = expected_ids.shape()[1];
  ASSERT_EQ(expected_logits.shape, (Shape{steps, batch, expected_logits.shape[2]}));

  // The past inputs' fixed dims (heads, head_dim) come from the model; the prompt step has past_len 0.
  std::map<std::string, Tensor> inputs{{"input_ids", prompt}, {"encoder_hidden_states", encoder}};
  std::vector<std::string> past_names;
  for (const TensorInfo& in : session.inputs()) {
    if (in.name.rfind("past_", 0) != 0) continue;
    ASSERT_EQ(in.dims.size(), 4u) << in.name;
    inputs[in.name] = Tensor(DType::Float32, {batch, in.dims[1], 0, in.dims[3]});
    past_names.push_back(in.name);
  }
  ASSERT_FALSE(past_names.empty());

  std::vector<int64_t> produced(static_cast<size_t>(batch * steps));
  int64_t past_len = 0;
  for (int64_t step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step) + ", past_len " + std::to_string(past_len));
    auto outputs = session.run(inputs);
    const Tensor logits = last_position(outputs.at("logits"));
    auto close = test::close_in_l2(logits, reference_step(expected_logits, step), 1e-4);
    EXPECT_TRUE(close);
    std::cerr << "[ step " << step << " past_len " << past_len << ": " << close.message() << " ]\n";

    const Tensor next = argmax_rows(logits);
    for (int64_t b = 0; b < batch; ++b)
      produced[static_cast<size_t>(b * steps + step)] = next.data<int64_t>()[b];
    past_len += inputs.at("input_ids").shape()[1];
    inputs["input_ids"] = next;
    for (const std::string& past : past_names) {
      Tensor present = outputs.at("present_" + past.substr(5));
      ASSERT_EQ(present.shape()[2], past_len) << past;
      inputs[past] = std::move(present);
    }
  }
  const auto want = expected_ids.data<int64_t>();
  EXPECT_EQ(produced, std::vector<int64_t>(want.begin(), want.end()));
  EXPECT_EQ(session.stats().plans, static_cast<size_t>(steps));  // one per past_len (the prompt step's too)
}

}  // namespace
}  // namespace wgi
