// The C functions that web/wgi.mjs calls (through Module.ccall) to use wgi::Session and wgi::Environment from
// JavaScript.
// Everything is plain C types and JSON strings, so the JavaScript side needs no binding generator.
// Calls that wait for the GPU (create, run) suspend through Asyncify; wgi.mjs runs them one at a time.
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "wgi/environment.h"
#include "wgi/session.h"
#include "wgi_web_api.h"

std::string& wgi::web::last_error() {
  static std::string message;
  return message;
}

namespace {

using wgi::web::guarded;

struct WebEnvironment {
  wgi::Environment environment;
};

struct WebSession {
  std::unique_ptr<wgi::Session> session;
  std::map<std::string, wgi::Tensor> inputs;
  std::map<std::string, wgi::Value> device_inputs;  // wgi_web_session_run_on_device's, uploaded once
  std::vector<std::pair<std::string, wgi::Tensor>> outputs;
  std::string text;  // the last string handed to JavaScript
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_dims(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string json_infos(const std::vector<wgi::TensorInfo>& infos) {
  std::string out = "[";
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& t = infos[i];
    std::string names = "[";
    for (size_t d = 0; d < t.dim_names.size(); ++d) names += (d ? "," : "") + json_string(t.dim_names[d]);
    out += std::string(i ? "," : "") + "{\"name\":" + json_string(t.name) +
           ",\"dtype\":" + json_string(std::string(wgi::dtype_name(t.dtype))) +
           ",\"dims\":" + json_dims(t.dims) + ",\"dim_names\":" + names + "]" +
           ",\"rank_known\":" + (t.rank_known ? "true" : "false") + "}";
  }
  return out + "]";
}

bool parse_dtype(const std::string& name, wgi::DType& out) {
  for (wgi::DType d : {wgi::DType::Float32, wgi::DType::Float16, wgi::DType::Int64, wgi::DType::Int32,
                       wgi::DType::Int8, wgi::DType::UInt8, wgi::DType::Bool}) {
    if (wgi::dtype_name(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* wgi_web_last_error() {
  return wgi::web::last_error().c_str();
}

// Creates a WebGPU device that sessions can share (async). Returns null on error.
EMSCRIPTEN_KEEPALIVE WebEnvironment* wgi_web_environment_create() {
  return guarded([]() { return new WebEnvironment{wgi::Environment::create()}; },
                 static_cast<WebEnvironment*>(nullptr));
}

// The sessions made on it keep the device (shared ownership).
EMSCRIPTEN_KEEPALIVE void wgi_web_environment_free(WebEnvironment* web) {
  delete web;
}

// Loads an ONNX model from memory on `environment`'s device, or (null) on a device of its own, created now
// (async). Returns null on error. `base_dir` (may be empty): the folder of Emscripten's in-memory file system
// where wgi.mjs put the model's external data files. `precision`: SessionOptions::precision ("f32" if null).
EMSCRIPTEN_KEEPALIVE WebSession* wgi_web_session_create(const uint8_t* bytes, size_t size, int profiling,
                                                        const char* base_dir, WebEnvironment* environment,
                                                        const char* precision) {
  return guarded(
      [&]() -> WebSession* {
        wgi::SessionOptions options;
        options.profiling = profiling != 0;
        if (precision && *precision) options.precision = precision;
        const std::span<const std::byte> model(reinterpret_cast<const std::byte*>(bytes), size);
        const std::string dir = base_dir ? base_dir : "";
        auto web = std::make_unique<WebSession>();
        web->session = std::make_unique<wgi::Session>(
            environment ? wgi::Session::from_bytes(model, environment->environment, options, dir)
                        : wgi::Session::from_bytes(model, options, dir));
        return web.release();
      },
      static_cast<WebSession*>(nullptr));
}

EMSCRIPTEN_KEEPALIVE void wgi_web_session_free(WebSession* web) {
  delete web;
}

// {"adapter": "...", "max_buffer_size": bytes, "inputs": [{name, dtype, dims, dim_names, rank_known}],
//  "outputs": [...]}; dims < 0 are symbolic (dim_names[i] names them, "" when unnamed).
EMSCRIPTEN_KEEPALIVE const char* wgi_web_session_info(WebSession* web) {
  web->text = "{\"adapter\":" + json_string(web->session->adapter_description()) +
              ",\"max_buffer_size\":" + std::to_string(web->session->max_buffer_size()) +
              ",\"inputs\":" + json_infos(web->session->inputs()) +
              ",\"outputs\":" + json_infos(web->session->outputs()) + "}";
  return web->text.c_str();
}

// Copies one input for the next run. Returns 0, or -1 with wgi_web_last_error() set.
EMSCRIPTEN_KEEPALIVE int wgi_web_session_set_input(WebSession* web, const char* name, const char* dtype,
                                                   const int32_t* dims, int rank, const uint8_t* data,
                                                   size_t bytes) {
  return guarded(
      [&]() {
        wgi::DType type;
        if (!parse_dtype(dtype, type)) throw wgi::Error("unknown dtype '" + std::string(dtype) + "'");
        wgi::Shape shape(dims, dims + rank);
        web->inputs[name] = wgi::Tensor(
            type, shape, std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), bytes));
        return 0;
      },
      -1);
}

// Runs the model on the inputs set since the last run (async). Returns the number of outputs, or -1.
EMSCRIPTEN_KEEPALIVE int wgi_web_session_run(WebSession* web) {
  return guarded(
      [&]() {
        auto inputs = std::move(web->inputs);
        web->inputs.clear();
        web->outputs.clear();
        for (auto& [name, tensor] : web->session->run(inputs))
          web->outputs.emplace_back(name, std::move(tensor));
        return static_cast<int>(web->outputs.size());
      },
      -1);
}

// Runs the model with its inputs already on the device and every output left there (async), for timing the
// GPU's work without transfers: the inputs set since the last run are uploaded first and reused by the calls
// after it; the outputs are not returned (output_info and output_data see none). Returns once the GPU is
// done: the number of outputs, or -1.
EMSCRIPTEN_KEEPALIVE int wgi_web_session_run_on_device(WebSession* web) {
  return guarded(
      [&]() {
        if (!web->inputs.empty()) {
          web->device_inputs.clear();
          for (const auto& [name, tensor] : web->inputs)
            web->device_inputs[name] = web->session->upload(tensor);
          web->inputs.clear();
        }
        web->outputs.clear();
        wgi::RunOptions keep;
        keep.all_outputs_on_device = true;
        const size_t count = web->session->run(web->device_inputs, keep).size();
        web->session->synchronize();
        return static_cast<int>(count);
      },
      -1);
}

// {"name", "dtype", "dims"} of output i of the last run; its bytes at output_data(i), output_bytes(i) long.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_session_output_info(WebSession* web, int i) {
  const auto& [name, t] = web->outputs.at(static_cast<size_t>(i));
  web->text = "{\"name\":" + json_string(name) +
              ",\"dtype\":" + json_string(std::string(wgi::dtype_name(t.dtype()))) +
              ",\"dims\":" + json_dims(t.shape()) + "}";
  return web->text.c_str();
}

EMSCRIPTEN_KEEPALIVE const void* wgi_web_session_output_data(WebSession* web, int i) {
  return web->outputs.at(static_cast<size_t>(i)).second.bytes().data();
}

EMSCRIPTEN_KEEPALIVE size_t wgi_web_session_output_bytes(WebSession* web, int i) {
  return web->outputs.at(static_cast<size_t>(i)).second.byte_size();
}

// Session statistics and, with profiling, the last run's per-node GPU times, as JSON.
// The JSON keeps its flat names (web/wgi.mjs, docs/browser.md) over SessionStats' groups.
EMSCRIPTEN_KEEPALIVE const char* wgi_web_session_stats(WebSession* web) {
  const wgi::SessionStats& s = web->session->stats();
  std::string profile = "[";
  const auto& nodes = web->session->last_profile();
  for (size_t i = 0; i < nodes.size(); ++i) {
    profile += std::string(i ? "," : "") + "{\"node\":" + json_string(nodes[i].node) +
               ",\"op\":" + json_string(nodes[i].op_type) + ",\"kernel\":" + json_string(nodes[i].kernel) +
               ",\"gpu_ms\":" + std::to_string(nodes[i].gpu_ms) + "}";
  }
  profile += "]";
  web->text =
      "{\"load_ms\":" + std::to_string(s.load.ms) + ",\"last_plan_ms\":" + std::to_string(s.last_plan.ms) +
      ",\"weight_bytes\":" + std::to_string(s.memory.weight_bytes) +
      ",\"peak_activation_bytes\":" + std::to_string(s.memory.peak_activation_bytes) +
      ",\"plans\":" + std::to_string(s.plans.made) + ",\"nodes\":" + std::to_string(s.load.nodes) +
      ",\"dispatches\":" + std::to_string(s.plans.dispatches) +
      ",\"pipelines\":" + std::to_string(s.device.pipelines) +
      ",\"pipelines_compiled\":" + std::to_string(s.device.pipelines_compiled) + ",\"profile\":" + profile +
      ",\"profiling_note\":" + json_string(web->session->profiling_note()) + "}";
  return web->text.c_str();
}

}  // extern "C"
