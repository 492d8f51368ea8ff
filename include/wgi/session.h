// wgi::Session: load an ONNX model once, run it many times on the GPU.
//
//   wgi::Session session = wgi::Session::from_file("model.onnx");
//   auto outputs = session.run({{"pixel_values", image}});
//
// Loading imports and checks the model (every unsupported node is listed in one error), optimises the graph
// and uploads the weights. The first run with a given set of input shapes plans the model for those shapes
// (kernel choice, prepacked weights, memory plan, pipelines, bind groups); later runs with the same shapes
// only upload inputs, encode the recorded dispatches in one submission and download outputs.
//
// Inputs and outputs can also stay in device memory (wgi::DeviceTensor, include/wgi/device_tensor.h): the
// run(inputs, RunOptions) overload takes host or device values and keeps the outputs you name on the device,
// so that a generation loop feeds its present key/values back as the next past key/values without a host
// round trip (docs/decoding.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "wgi/device_tensor.h"
#include "wgi/environment.h"
#include "wgi/error.h"
#include "wgi/tensor.h"
#include "wgi/tuning.h"

namespace wgi {

struct SessionOptions {
  // The device choice (backend, adapter, shader_robustness) of the session's private Environment. A session
  // made on an Environment uses that one's device: these must then be left empty (false) or equal its
  // EnvironmentOptions.
  std::string backend;  // "vulkan", "swiftshader", "gles"; empty: WGI_BACKEND, else the automatic order
  std::string adapter;  // substring of the adapter's name; empty: WGI_ADAPTER
  // Keep Dawn's shader robustness (every array index clamped in the generated shaders) and workgroup-memory
  // zero-initialisation on a native device; also with WGI_SHADER_ROBUSTNESS=1. Off by default, as ONNX
  // Runtime's WebGPU EP runs: wgi's kernels check their own bounds (docs/robustness_audit.md) and the clamps
  // cost 5-15%. For debugging a kernel. A browser always keeps both.
  bool shader_robustness = false;
  // Values for symbolic input dims (e.g. {"batch", 1}), used to report shapes before the first run.
  std::map<std::string, int64_t> dims;
  // Record per-node GPU time with timestamp queries (when the adapter has them); see Session::last_profile.
  bool profiling = false;
  // Called with (done, total, what) during long steps such as weight upload and planning.
  std::function<void(size_t, size_t, const std::string&)> progress;
  // How many input-shape signatures keep their plan (kernels, activation buffers, bind groups); the least
  // recently used one is dropped beyond that, so a loop whose shapes change every run (a decoder's growing
  // past_len) holds at most this many. At least 1. A new signature reuses the kernel plans and prepacked
  // weights of every node whose input shapes an earlier plan already had, so replanning is cheap.
  size_t max_cached_plans = 4;
  // A new input-shape signature whose node plans choose the same kernels as a cached plan's (only sizes
  // differ: a decoder's growing past, another batch) respecializes that plan: new uniforms and grids, the
  // same pipelines, buffers and bind groups (docs/decoding.md). A signature that plan served before gets a
  // plan of its own instead (shapes that alternate). Off: every new signature is planned in full (for
  // measuring).
  bool respecialize_plans = true;
  // GEMM tuning (docs/tuning.md). The GEMM configurations measured fastest on this adapter (by `wgi tune`,
  // Session::tune or `tune` below) are read from a cache file and preferred over the planner's rules; node
  // attributes still force, and an entry the device cannot run is ignored. Without a cache the shipped rules
  // apply: tuning is optional.
  bool use_tuning_cache = true;
  // The cache file. Empty: $WGI_TUNING_CACHE if set (set but empty: no cache), else
  // $XDG_CACHE_HOME/wgi/tuning.json, else ~/.cache/wgi/tuning.json.
  std::filesystem::path tuning_cache;
  // Before planning each new input-shape signature, measure every GEMM problem of the plan that the cache
  // lacks (a few dozen configurations each, every one compiled and timed, reported through `progress` as
  // "tuning"; slow on the CPU adapters, where SwiftShader compiles a fast-kernel pipeline in 1-3 s) and save
  // the cache (unless use_tuning_cache is off; a file that cannot be saved leaves the results in memory).
  bool tune = false;
  // Timed runs per configuration when tuning (their median counts).
  int tune_runs = 10;
  // Graph passes not to run, by name (docs/adding_a_pass.md lists them), joined with those named in
  // WGI_DISABLE_PASSES="a,b": to chase a numerical difference to a fusion, or to test one. An unknown name is
  // an error that lists the valid ones.
  std::vector<std::string> disabled_passes;
  // A new input-shape signature takes each node whose inputs (types, shapes, values known at plan time) are
  // those of its latest planning as it was planned then, without running its planner or host evaluation
  // again (docs/decoding.md, "Unchanged nodes"). Off: every node is planned again (for comparing).
  bool reuse_unchanged_nodes = true;
  // In a run with RunOptions::growing_dims whose sizes grew since the previous run, the node plans for the
  // next sizes (the same growth again, every other input as now) are made while the GPU works on this run,
  // and kept: when the next run's inputs are the predicted ones (sizes and plan-time values), it plans no
  // node at all (docs/decoding.md, "Planning ahead"). A wrong guess costs only host time during the GPU
  // work. Off: node plans are made when their run comes (for comparing).
  bool plan_ahead = true;
  // "f32" or "f16". f16: the GEMMs of constant weights (MatMul, Gemm), group-1 convs with many output tiles
  // and fused attention (heads up to 64, at least 16 queries) compute on subgroup matrices (tensor cores),
  // f16 operands and f32 accumulation (docs/float16.md, "Computing in float16"); every other node, and one
  // the matrix kernels cannot run, stays float32. Needs an adapter with shader-f16, subgroups and
  // chromium-experimental-subgroup-matrix: elsewhere the session is refused, saying what the adapter lacks.
  std::string precision = "f32";
  // Next-token candidates computed on the GPU, for generation loops (docs/decoding.md, "Tokens on the GPU").
  // For a float32 output [batch, tokens, vocab] (a decoder's logits) the session adds the outputs
  // "<logits>.top_k_values" [batch, top_k] and "<logits>.top_k_indices" [batch, top_k] (int64): the top_k
  // largest logits of the last position, best first, equal values by lower index (as ArgMax's first
  // maximum); with log_sum_exp also "<logits>.log_sum_exp" [batch, 1], so that a candidate's
  // log-probability is its value minus it. A loop then downloads a few numbers per row instead of the
  // logits; with top_k 1 the indices are a greedy loop's next input_ids, which it can keep on the device
  // (RunOptions::device_outputs) and feed back without waiting for the step. The model's own outputs stay.
  struct TokenCandidates {
    std::string logits = "logits";
    int64_t top_k = 1;  // 1 to 16
    bool log_sum_exp = false;
  };
  std::optional<TokenCandidates> token_candidates;

  // backend, adapter and shader_robustness, for an Environment of the same device choice.
  EnvironmentOptions environment_options() const { return {backend, adapter, shader_robustness}; }
};

// Options of one Session::run with wgi::Value inputs.
struct RunOptions {
  // Outputs to return as DeviceTensors (copied into device memory of their own, not downloaded). Every name
  // must be an output of the model. The others are downloaded and returned as host Tensors.
  std::vector<std::string> device_outputs;
  // Keep every output on the device (device_outputs is then not needed).
  bool all_outputs_on_device = false;
  // The outputs to return (empty: every output). The others are computed all the same but neither
  // downloaded nor copied: a loop that reads only token candidates (SessionOptions::token_candidates) skips
  // the logits. device_outputs may only name outputs listed here (when the list is not empty).
  std::vector<std::string> outputs;
  // Symbolic input dims that will grow in the runs after this one, and the largest value each reaches (a
  // decoder's past length: {"past_len", prompt + max new tokens}). When this run makes a new plan, the plan
  // leaves its activations and inputs room for those sizes, so every later size up to them respecializes it:
  // one plan for a whole decode loop (docs/decoding.md). Without it a plan grows by doubling what outgrew it
  // (a few plans per loop). Every name must be a symbolic dim of the model's inputs; sizes beyond a limit
  // still run (planned again, as without it).
  std::map<std::string, int64_t> growing_dims;
  // Inputs planned as data although they are small. Inputs of at most 64 elements are normally planned with
  // by value (shape-like inputs: a Reshape target, Slice starts), so every new value is a new plan signature
  // whose value-reading nodes are planned again, and the next run's plan cannot be made ahead. A decoder's
  // token ids ({"input_ids"}) change every step and only feed an embedding Gather: as data, a new token plans
  // nothing and planning ahead covers the whole next step. Every name must be an input of the model. If a
  // run with them as data has to run in stages (a node needs the value), they are planned by value from then
  // on, with a warning.
  std::vector<std::string> inputs_as_data;
};

// A graph input or output as declared by the model; dims < 0 are symbolic (named in `dim_names`) or unknown.
// rank_known is false when the model declares no shape at all (then dims is empty, and any rank is taken).
struct TensorInfo {
  std::string name;
  DType dtype = DType::Float32;
  bool rank_known = true;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
};

// What a session has done so far, in groups: making it (load), its plans (plans), the most recent new
// input-shape signature's plan (last_plan), device memory (memory) and the device's pipelines and buffers
// (device). Session::stats() refreshes the device-wide counters when called.
struct SessionStats {
  // Making the session (Session::from_file / from_bytes), once.
  struct Load {
    double import_ms = 0;    // reading and parsing the model (weights included), on a thread of its own...
    double device_ms = 0;    // ...while this one creates the adapter and device (0 on a given Environment)
    double ms = 0;           // then: checks, graph optimisation and the device's stores
    double optimize_ms = 0;  // of which the checks and graph optimisation (constant folding, fusion)
    size_t nodes = 0;        // graph nodes after optimisation
  };
  // Plans over the session's life (one per input-shape signature, docs/decoding.md).
  struct Plans {
    size_t made = 0;           // plans made (a signature planned again after eviction counts again)
    size_t respecialized = 0;  // new signatures served by respecializing a cached plan instead of a new one
                               // (SessionOptions::respecialize_plans)
    size_t cached = 0;         // plans held now: at most SessionOptions::max_cached_plans
    size_t dispatches = 0;     // GPU dispatches per run of the current plan
    size_t planned_ahead = 0;  // node plannings made during a run's GPU work for the next run's predicted
                               // sizes (SessionOptions::plan_ahead)
    size_t ahead_hits = 0;     // of which the next run had those sizes
    size_t ahead_whole = 0;    // of those, runs that took the node plans made ahead as they were (the
                               // same plan-time values too): no node planned on the run's critical path
  };
  // The plan of the most recent new input-shape signature (made or respecialized).
  struct LastPlan {
    double ms = 0;  // planning it, in all
    // ... and its phases: kernel plans (shapes, kernel choice, host prepacking), memory (activation buffers),
    // pipelines (shader compilation), weight uploads (all weights at the first plan), bind (prepacked
    // constants, bind groups, uniforms; for a respecialized plan: the rewrite).
    double kernel_plans_ms = 0;
    double memory_ms = 0;
    double pipelines_ms = 0;
    double weight_uploads_ms = 0;
    double bind_ms = 0;
    bool respecialized = false;  // served by respecializing a cached plan (memory and pipelines then 0)
    size_t gpu_nodes = 0;        // its GPU nodes
    size_t reused_nodes = 0;     // of which those whose kernel plan was reused from an earlier plan
    // Nodes (GPU and folded) taken unchanged from their latest planning (SessionOptions::
    // reuse_unchanged_nodes), and those planned or folded again (their inputs changed).
    size_t unchanged_nodes = 0;
    size_t replanned_nodes = 0;
    // Its node plannings made ahead, during the previous run's GPU work (SessionOptions::plan_ahead; 0 when
    // its sizes were not the ones predicted): not part of `ms`.
    double planned_ahead_ms = 0;
    // GEMMs planned for it (node plans reused from earlier plans not counted), and how many of them run a
    // configuration from the tuning cache.
    size_t gemms = 0;
    size_t tuned_gemms = 0;
  };
  // Device memory, in bytes.
  struct Memory {
    uint64_t weight_bytes = 0;           // weights (incl. the cached plans' prepacked copies)
    uint64_t peak_activation_bytes = 0;  // the current plan's shared activation buffers
    uint64_t device_tensor_bytes = 0;    // this session's live DeviceTensors
  };
  // The device's pipelines and buffers (shared by the sessions of one Environment).
  struct Device {
    size_t pipelines = 0;           // distinct compute pipelines on the device (all its sessions')
    size_t pipelines_compiled = 0;  // of which this session's plans compiled (the others it found cached)
    uint64_t buffers_created = 0;   // GPU buffers the device created (a repeated run creates none)
  };

  Load load;
  Plans plans;
  LastPlan last_plan;
  Memory memory;
  Device device;
};

struct NodeTiming {
  std::string node;
  std::string op_type;
  std::string kernel;
  double gpu_ms = 0;
};

class Session {
 public:
  static Session from_file(const std::filesystem::path& path, const SessionOptions& options = {});
  // `base_dir` is where external weight files are looked up.
  static Session from_bytes(std::span<const std::byte> model, const SessionOptions& options = {},
                            const std::filesystem::path& base_dir = {});
  // The same on the device of `environment` (include/wgi/environment.h), which the session holds: sessions
  // of one Environment share its device, compiled pipelines and tuning cache. Throws wgi::Error when
  // `options` asks for another device choice than the environment's.
  static Session from_file(const std::filesystem::path& path, const Environment& environment,
                           const SessionOptions& options = {});
  static Session from_bytes(std::span<const std::byte> model, const Environment& environment,
                            const SessionOptions& options = {}, const std::filesystem::path& base_dir = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;

  // Runs the model. Every graph input must be given, with the declared type and rank and matching every fixed
  // dim; throws wgi::Error naming the input otherwise. Returns the outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Runs the model on host or device inputs (wgi::Value) and returns each output as a host Tensor, or as a
  // DeviceTensor when `options` asks to keep it on the device. The same checks as above apply, and a
  // DeviceTensor input must be valid (not released) and made by this session. A device input is copied into
  // the plan's input buffer on the GPU (skipped when the same handle fed that input in this plan's previous
  // run); a device input of at most 64 elements is also read back once, since such small inputs are planned
  // with by value (shape-like inputs). When every output stays on the device, run() returns once the work is
  // submitted, without waiting for the GPU: DeviceTensor::download() and synchronize() wait.
  // Data errors found on the GPU (an index out of range computed at run time, which ONNX makes an error)
  // are thrown by the run that downloads an output; a run whose outputs all stay on the device reports
  // them at the next run that downloads one, or at synchronize().
  std::map<std::string, Value> run(const std::map<std::string, Value>& inputs, const RunOptions& options);

  // Copies a host tensor into this session's device memory, to pass it as an input of later runs.
  DeviceTensor upload(const Tensor& tensor);
  // A new DeviceTensor of this session whose row i along axis 0 is row rows[i] of `tensor` (one of this
  // session's; rows may repeat or be left out), copied on the GPU without a host round trip, after the runs
  // already submitted: a beam search reorders its key/value cache by the chosen beams' parents with it.
  // Throws wgi::Error for an index outside the rows, a released or foreign tensor, or rows that are not whole
  // 4-byte words (an odd float16 row).
  DeviceTensor gather_rows(const DeviceTensor& tensor, std::span<const int64_t> rows);
  // The same rows of several tensors (a decoder's every past key and value), in one submission to the GPU;
  // every tensor is checked before any is copied.
  std::vector<DeviceTensor> gather_rows(std::span<const DeviceTensor> tensors, std::span<const int64_t> rows);
  // Waits until the GPU has finished every run submitted so far; throws the first data error a run recorded
  // that no download has reported yet (see run()).
  void synchronize();

  const SessionStats& stats() const;
  // Per-node GPU times of the last run (SessionOptions::profiling); empty if the adapter lacks timestamp
  // queries, which profiling_note() then explains.
  const std::vector<NodeTiming>& last_profile() const;
  std::string profiling_note() const;
  // The device's maxBufferSize: no input, output or activation can be larger (for checks before allocating).
  uint64_t max_buffer_size() const;
  // Whether the adapter has timestamp queries, without which SessionOptions::profiling measures nothing.
  bool has_timestamps() const;
  // "SwiftShader Device (Subzero) on swiftshader", for reports.
  std::string adapter_description() const;
  // The Environment whose device the session runs on (its private one when it was made without).
  const Environment& environment() const;

  // "tuning cache /home/me/.cache/wgi/tuning.json: 5 entries for this adapter (7 in the file)" when a cache
  // file was read, else empty: tools print it so that nobody reads a time without knowing.
  std::string tuning_note() const;

  // Measures the GEMM problems of the plan for these inputs' shapes (only their shapes and small shape-like
  // values matter) that the cache lacks, or all of them with options.force, and saves the cache (when
  // SessionOptions::use_tuning_cache is on). Later plans use the new entries; plans made before are dropped.
  // Throws wgi::Error for bad inputs, or when the cache file cannot be written (the session keeps the
  // results).
  TuneReport tune(const std::map<std::string, Tensor>& inputs, const TuneOptions& options = {});

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgi
