// A float64 CPU reference for ONNX LSTM, GRU and RNN (src/ops/recurrent.cpp), written from the ONNX operator
// definitions: each step's gates computed serially in double, per batch row and direction, with
// sequence_lens (a reverse direction runs from each row's own last valid step; outputs past a row's length
// are zero; Y_h / Y_c are the state after the last valid step, zero for a row of length 0 as in onnxruntime).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct RecurrentSpec {
  std::string op = "LSTM";  // LSTM, GRU or RNN
  std::string direction = "forward";
  int64_t hidden = 0;
  int64_t layout = 0;
  int64_t input_forget = 0;         // LSTM
  int64_t linear_before_reset = 0;  // GRU
  std::optional<float> clip;
  // Names (Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign,
  // Softplus) and their alpha / beta per function (the defaults' values when the name takes none); empty:
  // the op's defaults.
  std::vector<std::string> activations;
  std::vector<double> alphas, betas;
};

struct RecurrentInputs {
  Tensor x, w, r;
  std::optional<Tensor> b, sequence_lens, initial_h, initial_c, p;
};

struct RecurrentReference {
  std::vector<double> y, y_h, y_c;  // in the node's output layouts
};

RecurrentReference recurrent_reference(const RecurrentSpec& spec, const RecurrentInputs& in);

}  // namespace wgi::test
