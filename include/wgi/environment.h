// wgi::Environment: one GPU device that several sessions share, as ONNX Runtime's Ort::Env is shared by its
// sessions.
//
//   wgi::Environment env = wgi::Environment::create();  // EnvironmentOptions: backend, adapter
//   wgi::Session vision = wgi::Session::from_file("vision.onnx", env);
//   wgi::Session text = wgi::Session::from_file("text.onnx", env);
//
// What the sessions of one Environment share: the adapter and device (created once: costly, see
// docs/performance.md, "Measurements behind the planner's rules"),
// the compiled compute pipelines (a kernel that one session compiled is not compiled again by the next: a
// pipeline's sessions of the same model compile nothing), and the GEMM tuning cache file as read from disk
// (one copy per path, so that what one session measures and saves is not overwritten by another's save).
// Each session keeps its own weights, plans, activation buffers and DeviceTensors.
//
// Ownership is shared: an Environment is a handle (copies name the same device), and every session made on
// it holds it, so the device lives until the last of the handles and sessions is gone, in any order.
//
// Threads: a device, and so an Environment with all its sessions, is used from one thread at a time (an
// OpenGL ES device also only from the thread that created it), as a single Session already is.
// Session::from_file without an Environment makes a private one, as before.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace wgi {

// Which GPU an Environment uses; the same choices as SessionOptions' fields of the same names.
struct EnvironmentOptions {
  std::string backend;  // "vulkan", "swiftshader", "gles"; empty: WGI_BACKEND, else the automatic order
  std::string adapter;  // substring of the adapter's name; empty: WGI_ADAPTER
  // Dawn's shader robustness and workgroup-memory zero-initialisation (SessionOptions::shader_robustness).
  bool shader_robustness = false;
};

class Session;

class Environment {
 public:
  // Selects an adapter and creates its device; throws wgi::Error listing every backend tried and why each
  // was rejected.
  static Environment create(const EnvironmentOptions& options = {});

  const EnvironmentOptions& options() const;
  // "SwiftShader Device (Subzero) on swiftshader", for reports.
  std::string adapter_description() const;
  // Distinct compute pipelines compiled on this device so far, by all of its sessions.
  size_t pipelines() const;
  // How long selecting the adapter and creating the device took.
  double device_ms() const;

  struct Impl;  // src/runtime/environment.h

 private:
  explicit Environment(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
  friend class Session;
};

}  // namespace wgi
