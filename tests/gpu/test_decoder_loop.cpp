// Greedy decoding with the tiny BART decoder steps through the public API: the prompt step with empty past
// key/values, then steps that feed back the argmax token and the present key/values as the next past, so
// past_len grows and the Session plans one more input-shape signature per step. Two models:
// bart_decoder_tiny_opset17 (tests/models/florence_siglip.py: cross-attention keys/values computed from
// encoder_hidden_states in every step) and bart_decoder_cached_cross_tiny_opset17
// (tests/models/decoder_cached_cross_tiny.py: the per-layer cross keys/values are inputs, as Florence-2
// caches them). The tokens must equal PyTorch's float64 greedy loop and each step's last-position logits must
// match within relative L2 1e-4, both with the key/values through the host and kept on the device
// (DeviceTensor), where the loop must give the same logits bit for bit; the plan cache stays within its
// capacity and the device memory held is what the loop holds. With token candidates
// (SessionOptions::token_candidates) the loop takes its tokens from the GPU: fed back as DeviceTensors
// without the logits, they must be PyTorch's tokens, and the candidates (top K, log-sum-exp) must be those of
// the logits the same session returns.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/npy.h"
#include "support/model_reference.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";

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

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0;
}

// The past inputs as empty tensors of the model's fixed dims (their names in `past_names`), the other inputs
// from the reference files.
std::map<std::string, Value> first_inputs(const Session& session, const fs::path& dir, int64_t batch,
                                          std::vector<std::string>& past_names) {
  std::map<std::string, Value> inputs{{"input_ids", npy::load(dir / "greedy_prompt_ids.npy")}};
  for (const TensorInfo& in : session.inputs()) {
    if (in.name == "input_ids") continue;
    if (in.name.rfind("past_", 0) == 0) {
      EXPECT_EQ(in.dims.size(), 4u) << in.name;
      inputs[in.name] = Tensor(DType::Float32, {batch, in.dims[1], 0, in.dims[3]});
      past_names.push_back(in.name);
    } else {
      inputs[in.name] = npy::load(dir / ("greedy_" + in.name + ".npy"));
    }
  }
  EXPECT_FALSE(past_names.empty());
  return inputs;
}

enum class KeyValues { Host, Device };

struct LoopResult {
  std::vector<int64_t> ids;    // [batch, steps]
  std::vector<Tensor> logits;  // per step: the last position's [batch, vocab]
};

// The greedy loop of the model in `folder` against its greedy_*.npy reference. With KeyValues::Device the
// inputs that do not change (encoder states or cross key/values) are uploaded once and the presents stay on
// the device as the next step's past.
LoopResult greedy_loop(const std::string& folder, KeyValues kv, size_t max_cached_plans = 4) {
  SCOPED_TRACE(folder +
               (kv == KeyValues::Device ? ", key/values on the device" : ", key/values on the host"));
  const fs::path dir = kModels / folder;
  SessionOptions options;
  options.max_cached_plans = max_cached_plans;
  Session session = Session::from_file(dir / "model.onnx", options);
  const Tensor prompt = npy::load(dir / "greedy_prompt_ids.npy");
  const Tensor expected_ids = npy::load(dir / "greedy_expected_ids.npy");
  const test::Float64Array expected_logits = test::load_float64_npy(dir / "greedy_expected_logits.npy");
  const int64_t batch = prompt.shape()[0];
  const int64_t steps = expected_ids.shape()[1];
  EXPECT_EQ(expected_logits.shape, (Shape{steps, batch, expected_logits.shape[2]}));

  // The past inputs' fixed dims (heads, head_dim) come from the model; the prompt step has past_len 0. The
  // other inputs are the reference's (encoder states, or cross keys/values per layer).
  std::vector<std::string> past_names;
  std::map<std::string, Value> inputs = first_inputs(session, dir, batch, past_names);
  RunOptions keep;
  if (kv == KeyValues::Device) {
    for (const std::string& past : past_names) keep.device_outputs.push_back("present_" + past.substr(5));
    // The inputs that do not change (encoder states or cross key/values) uploaded once.
    for (auto& [name, value] : inputs) {
      if (name != "input_ids" && name.rfind("past_", 0) != 0) value = session.upload(value.host());
    }
  }

  LoopResult result;
  result.ids.resize(static_cast<size_t>(batch * steps));
  uint64_t fewest_new_buffers = UINT64_MAX;
  int64_t past_len = 0;
  for (int64_t step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step) + ", past_len " + std::to_string(past_len));
    const uint64_t buffers_before = session.stats().device.buffers_created;
    auto outputs = session.run(inputs, keep);
    const Tensor logits = last_position(outputs.at("logits").host());
    auto close = test::close_in_l2(logits, reference_step(expected_logits, step), 1e-4);
    EXPECT_TRUE(close);
    std::cerr << "[ " << folder << " step " << step << " past_len " << past_len << ": " << close.message()
              << " ]\n";
    result.logits.push_back(logits);

    const Tensor next = argmax_rows(logits);
    for (int64_t b = 0; b < batch; ++b)
      result.ids[static_cast<size_t>(b * steps + step)] = next.data<int64_t>()[b];
    past_len += inputs.at("input_ids").shape()[1];
    inputs["input_ids"] = next;
    for (const std::string& past : past_names) {
      Value present = outputs.at("present_" + past.substr(5));
      EXPECT_EQ(present.on_device(), kv == KeyValues::Device) << past;
      EXPECT_EQ(present.shape()[2], past_len) << past;
      inputs[past] = std::move(present);
    }
    const SessionStats& stats = session.stats();
    // One new signature per past_len: the prompt step and the first one-token step are planned, the later
    // steps respecialize the step's plan (tests/gpu/test_plan_respecialize.cpp) while its buffers have room;
    // a step without room plans in full with the grown regions doubled, so full plans grow with the log of
    // the loop's length (when they come depends on how the memory planner packed the buffers).
    EXPECT_EQ(stats.plans.made + stats.plans.respecialized, static_cast<size_t>(step + 1));
    if (step < 2) {
      EXPECT_EQ(stats.plans.made, static_cast<size_t>(step + 1));
    } else {
      EXPECT_LE(stats.plans.made, 2u + std::bit_width(static_cast<uint64_t>(step)))
          << "more full plans than log2";
    }
    EXPECT_LE(stats.plans.cached, max_cached_plans);
    // Device memory held by the session's DeviceTensors is exactly what the loop holds: last step's past
    // key/values went back to the pool when the presents replaced them.
    uint64_t held = 0;
    for (const auto& entry : inputs) {
      if (entry.second.on_device()) held += entry.second.device().device_bytes();
    }
    EXPECT_EQ(stats.memory.device_tensor_bytes, held);
    if (step > 1) {
      // new_tokens is 1 from step 1 on: the projections' plans (and prepacked weights) carry over, attention
      // and the past/new concatenations are planned again.
      EXPECT_GT(stats.last_plan.reused_nodes, stats.last_plan.gpu_nodes / 2);
      EXPECT_LT(stats.last_plan.reused_nodes, stats.last_plan.gpu_nodes);
      fewest_new_buffers =
          std::min<uint64_t>(fewest_new_buffers, stats.device.buffers_created - buffers_before);
    }
  }
  // A new plan shares the session's activation buffers and, where a reused node plan binds the same buffers,
  // its bound dispatches (each with a uniform buffer). Steps where an activation buffer grows bind anew, the
  // others create fewer buffers than a plan has dispatches: one per dispatch would mean nothing is reused.
  // (Not a fixed fraction: fusions keep taking dispatches away while the buffers a step needs stay; the
  // cached-cross BART decoder now has 45 dispatches and its best steps create 20-24 buffers.)
  EXPECT_LT(fewest_new_buffers, session.stats().plans.dispatches);
  const auto want = expected_ids.data<int64_t>();
  EXPECT_EQ(result.ids, std::vector<int64_t>(want.begin(), want.end()));
  return result;
}

class DecoderLoop : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderLoop, GreedyTokensChosenOnTheGpuAndFedBackMatchPyTorch) {
  const fs::path dir = kModels / GetParam();
  SessionOptions options;
  options.token_candidates = SessionOptions::TokenCandidates{};  // top 1 of "logits"
  Session session = Session::from_file(dir / "model.onnx", options);
  const Tensor expected_ids = npy::load(dir / "greedy_expected_ids.npy");
  const int64_t batch = expected_ids.shape()[0], steps = expected_ids.shape()[1];
  std::vector<std::string> past_names;
  std::map<std::string, Value> inputs = first_inputs(session, dir, batch, past_names);
  RunOptions run;
  run.inputs_as_data = {"input_ids"};
  run.device_outputs = {"logits.top_k_indices"};
  run.outputs = {"logits.top_k_indices"};
  for (const std::string& past : past_names) {
    run.device_outputs.push_back("present_" + past.substr(5));
    run.outputs.push_back("present_" + past.substr(5));
  }
  std::vector<DeviceTensor> tokens;
  for (int64_t step = 0; step < steps; ++step) {
    auto out = session.run(inputs, run);
    EXPECT_EQ(out.count("logits"), 0u) << "RunOptions::outputs leaves the logits out";
    inputs["input_ids"] = out.at("logits.top_k_indices");
    tokens.push_back(out.at("logits.top_k_indices").device());
    for (const std::string& past : past_names) inputs[past] = out.at("present_" + past.substr(5));
  }
  std::vector<int64_t> ids(static_cast<size_t>(batch * steps));
  for (int64_t step = 0; step < steps; ++step) {
    const Tensor t = tokens[static_cast<size_t>(step)].download();
    ASSERT_EQ(t.shape(), (Shape{batch, 1}));
    for (int64_t b = 0; b < batch; ++b) ids[static_cast<size_t>(b * steps + step)] = t.data<int64_t>()[b];
  }
  const auto want = expected_ids.data<int64_t>();
  EXPECT_EQ(ids, std::vector<int64_t>(want.begin(), want.end()));
}

TEST_P(DecoderLoop, TokenCandidatesAreTheTopOfTheLastPositionAndItsLogSumExp) {
  const fs::path dir = kModels / GetParam();
  SessionOptions options;
  options.token_candidates = SessionOptions::TokenCandidates{"logits", 5, true};
  Session session = Session::from_file(dir / "model.onnx", options);
  const int64_t batch = npy::load(dir / "greedy_prompt_ids.npy").shape()[0];
  std::vector<std::string> past_names;
  std::map<std::string, Value> inputs = first_inputs(session, dir, batch, past_names);
  for (int step = 0; step < 3; ++step) {  // the prompt (several tokens), then one-token steps
    SCOPED_TRACE("step " + std::to_string(step));
    auto out = session.run(inputs, RunOptions{});
    const Tensor last = last_position(out.at("logits").host());
    const int64_t vocab = last.shape()[1];
    const Tensor values = out.at("logits.top_k_values").host();
    const Tensor indices = out.at("logits.top_k_indices").host();
    const Tensor lse = out.at("logits.log_sum_exp").host();
    ASSERT_EQ(values.shape(), (Shape{batch, 5}));
    ASSERT_EQ(indices.shape(), (Shape{batch, 5}));
    ASSERT_EQ(lse.shape(), (Shape{batch, 1}));
    for (int64_t b = 0; b < batch; ++b) {
      const auto row = last.data<float>().subspan(static_cast<size_t>(b * vocab), static_cast<size_t>(vocab));
      std::vector<int64_t> order(static_cast<size_t>(vocab));
      for (int64_t i = 0; i < vocab; ++i) order[static_cast<size_t>(i)] = i;
      std::stable_sort(order.begin(), order.end(), [&row](int64_t x, int64_t y) {
        return row[static_cast<size_t>(x)] > row[static_cast<size_t>(y)];
      });
      double max = row[0], sum = 0;
      for (float v : row) max = std::max(max, static_cast<double>(v));
      for (float v : row) sum += std::exp(static_cast<double>(v) - max);
      for (int64_t j = 0; j < 5; ++j) {
        EXPECT_EQ(indices.data<int64_t>()[b * 5 + j], order[static_cast<size_t>(j)])
            << "row " << b << " #" << j;
        EXPECT_EQ(values.data<float>()[b * 5 + j], row[static_cast<size_t>(order[static_cast<size_t>(j)])]);
      }
      // float32 accumulation of ~vocab exponentials against float64: a few ulps of the sum.
      EXPECT_NEAR(lse.data<float>()[b], max + std::log(sum), 1e-5 * std::abs(max + std::log(sum)) + 1e-6);
    }
    inputs["input_ids"] = argmax_rows(last);
    for (const std::string& past : past_names) inputs[past] = out.at("present_" + past.substr(5));
  }
}

TEST(TokenCandidates, ErrorsNameTheOutputOrK) {
  const fs::path model = kModels / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx";
  const auto error = [&model](SessionOptions::TokenCandidates tc) {
    SessionOptions options;
    options.token_candidates = tc;
    try {
      Session::from_file(model, options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = error({"scores", 1, false});
  EXPECT_NE(missing.find("no output 'scores' (its outputs: logits"), std::string::npos) << missing;
  const std::string wrong_rank = error({"present_key_0", 1, false});
  EXPECT_NE(wrong_rank.find("output 'present_key_0' has shape"), std::string::npos) << wrong_rank;
  EXPECT_NE(wrong_rank.find("logits [batch, tokens, vocab] are expected"), std::string::npos) << wrong_rank;
  const std::string too_many = error({"logits", 17, false});
  EXPECT_NE(too_many.find("top_k is 17; it must be 1 to 16"), std::string::npos) << too_many;
  const std::string none = error({"logits", 0, false});
  EXPECT_NE(none.find("top_k is 0"), std::string::npos) << none;
  RunOptions run;
  run.outputs = {"logits"};
  run.device_outputs = {"logits.top_k_indices"};
  SessionOptions options;
  options.token_candidates = SessionOptions::TokenCandidates{};
  Session session = Session::from_file(model, options);
  try {
    session.run(std::map<std::string, Value>{}, run);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("which RunOptions::outputs leaves out"), std::string::npos)
        << e.what();
  }
}

TEST_P(DecoderLoop, GreedyDecodingWithKvCacheMatchesPyTorch) {
  const LoopResult host = greedy_loop(GetParam(), KeyValues::Host);
  const LoopResult device = greedy_loop(GetParam(), KeyValues::Device);
  // The same plans on the same inputs: the device-resident loop must give exactly the host loop's logits.
  ASSERT_EQ(host.logits.size(), device.logits.size());
  for (size_t step = 0; step < host.logits.size(); ++step)
    EXPECT_TRUE(same_bytes(host.logits[step], device.logits[step])) << "step " << step;
}

TEST_P(DecoderLoop, PlanCacheStaysWithinItsCapacityOverALongerLoop) {
  // Capacity 2 over 6 or 7 steps, each with a new past_len: plans are dropped as the loop goes.
  greedy_loop(GetParam(), KeyValues::Device, 2);
}

INSTANTIATE_TEST_SUITE_P(Tiny, DecoderLoop,
                         ::testing::Values("bart_decoder_tiny_opset17",
                                           "bart_decoder_cached_cross_tiny_opset17"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace wgi
