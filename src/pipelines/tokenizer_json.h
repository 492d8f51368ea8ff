// Reading Hugging Face's tokenizer.json and tokenizer_config.json for the tokenizers of src/pipelines/
// (tokenizer.cpp, text_normalizer.cpp, unigram.cpp): errors that name the file and the key, so that a
// refused or malformed file says what to change.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include "core/json.h"
#include "wgi/error.h"

namespace wgi::pipelines {

inline const char* json_type_name(json::Value::Type t) {
  switch (t) {
    case json::Value::Type::Null:
      return "null";
    case json::Value::Type::Bool:
      return "a boolean";
    case json::Value::Type::Number:
      return "a number";
    case json::Value::Type::String:
      return "a string";
    case json::Value::Type::Array:
      return "an array";
    case json::Value::Type::Object:
      return "an object";
  }
  return "?";
}

class TokenizerJsonReader {
 public:
  using Value = json::Value;
  explicit TokenizerJsonReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(file_ + ": '" + key + "' " + what);
  }
  const Value& member(const Value& object, std::string_view parent, std::string_view key) const {
    const Value* v = object.find(key);
    if (!v) fail(join(parent, key), "is missing");
    return *v;
  }
  const Value& typed(const Value& v, const std::string& key, Value::Type type) const {
    if (!v.is(type)) {
      fail(key, std::string("must be ") + json_type_name(type) + ", found " + json_type_name(v.type));
    }
    return v;
  }
  const Value& member(const Value& object, std::string_view parent, std::string_view key,
                      Value::Type type) const {
    return typed(member(object, parent, key), join(parent, key), type);
  }
  // An optional boolean (absent or null: `fallback`).
  bool flag(const Value& object, std::string_view parent, std::string_view key, bool fallback) const {
    const Value* v = object.find(key);
    if (!v || v->is(Value::Type::Null)) return fallback;
    return typed(*v, join(parent, key), Value::Type::Bool).boolean;
  }
  // An optional string (absent or null: `fallback`).
  std::string text(const Value& object, std::string_view parent, std::string_view key,
                   const std::string& fallback) const {
    const Value* v = object.find(key);
    if (!v || v->is(Value::Type::Null)) return fallback;
    return typed(*v, join(parent, key), Value::Type::String).string;
  }
  // A token id below `limit`.
  int32_t id(const Value& v, const std::string& key, size_t limit) const {
    typed(v, key, Value::Type::Number);
    if (v.number < 0 || v.number >= static_cast<double>(limit) || std::floor(v.number) != v.number) {
      fail(key, "must be a token id (an integer in [0, " + std::to_string(limit) +
                    "), twice the tokens the file defines), found " + json::number(v.number));
    }
    return static_cast<int32_t>(v.number);
  }
  // `text` parsed as JSON, a parse error prefixed with the file's name.
  Value parse(std::string_view text) const {
    try {
      return json::parse(text);
    } catch (const Error& e) {
      throw Error(file_ + ": " + e.what());
    }
  }
  static std::string join(std::string_view parent, std::string_view key) {
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
  }

 private:
  std::string file_;
};

}  // namespace wgi::pipelines
