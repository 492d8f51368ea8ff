// A small JSON reader and the string quoting a writer needs, for wgi's own files (the tuning cache,
// docs/tuning.md). The library carries no JSON dependency: the browser build compiles the same sources with
// Emscripten's sysroot, which has none of Debian's headers.
//
// The reader takes RFC 8259 JSON (UTF-8; \u escapes, surrogate pairs included, become UTF-8) with nesting
// up to 64 levels, so a hostile file cannot exhaust the stack. Errors are wgi::Error with line and column.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wgi::json {

struct Member;

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  // In file order; a repeated key keeps its last value. A struct of its own rather than std::pair: pair's
  // constructor constraints ask whether Value is default-constructible while Value is still incomplete, which
  // clang rejects with libstdc++ 12 (the fuzzing build).
  std::vector<Member> object;

  bool is(Type t) const { return type == t; }
  // The member named `key` of an object (the last one, if repeated); nullptr if absent or not an object.
  const Value* find(std::string_view key) const;
};

struct Member {
  std::string key;
  Value value;
};

// Throws wgi::Error("line L, column C: what") on anything that is not one complete JSON value.
Value parse(std::string_view text);

// `text` as a JSON string literal, quotes included (control characters escaped; UTF-8 passes through).
std::string quote(std::string_view text);

// `v` in the classic locale: integers below 2^53 exactly, other values with 9 significant digits (plenty
// for times); "null" for a NaN or an infinity, which JSON cannot spell.
std::string number(double v);

}  // namespace wgi::json
