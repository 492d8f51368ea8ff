// What the C functions of the WebAssembly build share (web/wgi_web_api.cpp: sessions;
// web/wgi_web_pipelines.cpp: Florence-2 and the other pipelines): one last-error slot that
// wgi_web_last_error() hands to JavaScript.
#pragma once

#include <exception>
#include <string>

namespace wgi::web {

// The message of the last call that failed (empty after one that succeeded).
std::string& last_error();

// Runs f, turning any exception into last_error() and `fail`.
template <class F, class R>
R guarded(F&& f, R fail) {
  try {
    last_error().clear();
    return f();
  } catch (const std::exception& e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "unknown C++ exception";
  }
  return fail;
}

}  // namespace wgi::web
