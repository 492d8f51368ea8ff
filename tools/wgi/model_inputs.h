// Inputs for `wgi run` and `wgi bench`: from .npy files, or seeded random values, with symbolic dims given on
// the command line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wgi/session.h"

namespace wgi::cli {

struct InputSpec {
  std::vector<std::string> files;  // NAME=FILE.npy
  std::optional<uint64_t> random_seed;
  std::vector<std::string> dims;  // NAME=VALUE for symbolic dims
};

// Parses "NAME=VALUE" dims; throws wgi::Error on a malformed or repeated one.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims);
// Warns on stderr about a --dim whose name no input of the model has (listing the names it has): a typo then
// shows at once; and one list of dims can serve several models (bench/h200_campaign.sh).
void warn_unknown_dims(const std::map<std::string, int64_t>& dims,
                       const std::vector<TensorInfo>& model_inputs);

// Every model input: from its file if given, else random (float32 and float16: uniform [-1, 1); integers and
// bool: 0) when a seed is given; otherwise an error listing the inputs still missing. A random input is
// checked against `max_buffer_bytes` (the device's maxBufferSize; 0: no check) before it is allocated.
std::map<std::string, Tensor> make_inputs(const std::vector<TensorInfo>& model_inputs, const InputSpec& spec,
                                          uint64_t max_buffer_bytes = 0);

// "shape [1, 3], min -0.5, max 0.9, mean 0.1" (numeric types).
std::string summarize(const Tensor& tensor);

}  // namespace wgi::cli
