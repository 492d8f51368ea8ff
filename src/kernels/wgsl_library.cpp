#include "kernels/wgsl_library.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "wgi/error.h"

namespace wgi::kernels {

namespace {

std::string_view find_embedded(std::string_view path) {
  for (const auto& s : embedded_sources()) {
    if (s.path == path) return s.text;
  }
  throw Error("no embedded WGSL file '" + std::string(path) + "'");
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

bool is_true(const Defines& defines, const std::string& name) {
  auto it = defines.find(name);
  return it != defines.end() && !it->second.empty() && it->second != "0";
}

// The parameters of `#include "path" NAME=value NAME="a value with spaces" ...`, after the path's closing
// quote.
Defines parse_include_parameters(std::string_view rest, const std::string& where) {
  Defines parameters;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
  };
  auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (skip_spaces(); i < rest.size(); skip_spaces()) {
    size_t name_begin = i;
    while (i < rest.size() && is_name_char(rest[i])) ++i;
    std::string name(rest.substr(name_begin, i - name_begin));
    if (name.empty() || i >= rest.size() || rest[i] != '=') {
      throw Error(where + "#include parameters are NAME=value or NAME=\"value\"");
    }
    ++i;
    std::string value;
    if (i < rest.size() && rest[i] == '"') {
      size_t close = rest.find('"', i + 1);
      if (close == std::string_view::npos)
        throw Error(where + "unterminated \" in #include parameter " + name);
      value = std::string(rest.substr(i + 1, close - i - 1));
      i = close + 1;
    } else {
      size_t end = rest.find_first_of(" \t", i);
      if (end == std::string_view::npos) end = rest.size();
      value = std::string(rest.substr(i, end - i));
      i = end;
    }
    if (value.empty()) throw Error(where + "#include parameter " + name + " has no value");
    if (!parameters.emplace(std::move(name), std::move(value)).second) {
      throw Error(where + "#include parameter given twice");
    }
  }
  return parameters;
}

class Preprocessor {
 public:
  explicit Preprocessor(const Defines& defines) : defines_(&defines) {}

  // `instance`: an #include with parameters, whose file is expanded at every such include rather than once.
  void run(std::string_view name, std::string_view text, bool instance = false) {
    if (!instance && !included_.insert(std::string(name)).second) return;  // each file once per program
    struct Branch {
      bool parent_active;
      bool condition;
      bool in_else;
    };
    std::vector<Branch> stack;
    auto active = [&] {
      return stack.empty() || (stack.back().parent_active && stack.back().condition != stack.back().in_else);
    };
    std::istringstream in{std::string(text)};
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::string t = trim(line);
      auto where = [&] { return std::string(name) + ":" + std::to_string(number) + ": "; };
      if (t.rfind("#if", 0) == 0 && (t.size() == 3 || t[3] == ' ')) {
        std::string cond = trim(std::string_view(t).substr(3));
        bool negate = !cond.empty() && cond[0] == '!';
        if (negate) cond = trim(std::string_view(cond).substr(1));
        if (cond.empty()) throw Error(where() + "#if needs a name");
        // Every name a kernel tests is defined by its caller (0 or 1), even in a branch not taken: a
        // misspelled or forgotten define is an error, never a silent "off".
        if (defines_->find(cond) == defines_->end()) {
          throw Error(where() + "#if " + cond + ": " + cond +
                      " is not defined (callers define every name their kernel tests, as 0 or 1)");
        }
        bool value = is_true(*defines_, cond) != negate;
        stack.push_back({active(), value, false});
        continue;
      }
      if (t == "#else") {
        if (stack.empty() || stack.back().in_else) throw Error(where() + "#else without #if");
        stack.back().in_else = true;
        continue;
      }
      if (t == "#endif") {
        if (stack.empty()) throw Error(where() + "#endif without #if");
        stack.pop_back();
        continue;
      }
      if (!active()) continue;
      if (t.rfind("#include", 0) == 0) {
        size_t q1 = t.find('"');
        size_t q2 = q1 == std::string::npos ? q1 : t.find('"', q1 + 1);
        if (q1 == std::string::npos || q2 == std::string::npos || t.find_first_not_of(" \t", 8) != q1) {
          throw Error(where() + "#include needs a \"path\"");
        }
        std::string path = t.substr(q1 + 1, q2 - q1 - 1);
        Defines parameters = parse_include_parameters(std::string_view(t).substr(q2 + 1), where());
        if (parameters.empty()) {
          run(path, find_embedded(path));
          continue;
        }
        // The included text sees the parameters over the program's defines; the includer's text after the
        // #include line sees the program's defines again.
        Defines scoped = *defines_;
        for (auto& [key, value] : parameters) scoped[key] = substitute(value, where());
        struct Restore {
          const Defines*& current;
          const Defines* outer;
          ~Restore() { current = outer; }
        } restore{defines_, defines_};
        defines_ = &scoped;
        run(path, find_embedded(path), /*instance=*/true);
        continue;
      }
      if (t == "#interface") {
        auto it = defines_->find(kInterfaceDefine);
        if (it == defines_->end()) {
          throw Error(where() +
                      "#interface: no interface declared (ops/kernel_interface.h loads the kernel)");
        }
        out_ += substitute(it->second, where());
        out_ += '\n';
        continue;
      }
      if (!t.empty() && t[0] == '#') throw Error(where() + "unknown directive '" + t + "'");
      out_ += substitute(line, where());
      out_ += '\n';
    }
    if (!stack.empty()) throw Error(std::string(name) + ": #if without #endif");
  }

  std::string take() { return std::move(out_); }

 private:
  std::string substitute(const std::string& line, const std::string& where) const {
    std::string result;
    size_t pos = 0;
    while (true) {
      size_t open = line.find("{{", pos);
      if (open == std::string::npos) break;
      size_t close = line.find("}}", open);
      if (close == std::string::npos) throw Error(where + "unterminated {{");
      std::string key = trim(std::string_view(line).substr(open + 2, close - open - 2));
      auto it = defines_->find(key);
      if (it == defines_->end()) throw Error(where + "{{" + key + "}} is not defined");
      result.append(line, pos, open - pos);
      result += it->second;
      pos = close + 2;
    }
    result.append(line, pos);
    return result;
  }

  const Defines* defines_;  // the program's, or an instance's parameters over them
  std::set<std::string> included_;
  std::string out_;
};

// Identifies a load_wgsl call: each part with its length first, so that no two (path, defines) share a key
// whatever characters the values hold.
std::string memo_key(std::string_view path, const Defines& defines) {
  std::string key;
  auto add = [&key](std::string_view part) {
    key += std::to_string(part.size());
    key += ':';
    key += part;
  };
  add(path);
  for (const auto& [name, value] : defines) {
    add(name);
    add(value);
  }
  return key;
}

// The texts load_wgsl handed out, held weakly: a text lives as long as some plan holds it, and the table
// drops expired entries whenever it has doubled since it last did.
struct LoadedTexts {
  std::mutex mutex;
  std::unordered_map<std::string, gpu::ShaderText::Weak> texts;
  size_t sweep_at = 64;
};

LoadedTexts& loaded_texts() {
  static LoadedTexts loaded;
  return loaded;
}

}  // namespace

std::string preprocess_wgsl(std::string_view name, std::string_view text, const Defines& defines) {
  Preprocessor p(defines);
  p.run(name, text);
  return p.take();
}

gpu::ShaderText load_wgsl(std::string_view path, const Defines& defines) {
  LoadedTexts& loaded = loaded_texts();
  std::string key = memo_key(path, defines);
  {
    std::lock_guard<std::mutex> lock(loaded.mutex);
    if (auto it = loaded.texts.find(key); it != loaded.texts.end()) {
      if (std::optional<gpu::ShaderText> text = it->second.lock()) return *text;
    }
  }
  gpu::ShaderText text(preprocess_wgsl(path, find_embedded(path), defines));
  std::lock_guard<std::mutex> lock(loaded.mutex);
  auto [it, inserted] = loaded.texts.try_emplace(std::move(key), text);
  if (!inserted) {
    // Another thread loaded the same text meanwhile: hand out its copy while it lives.
    if (std::optional<gpu::ShaderText> other = it->second.lock()) return *other;
    it->second = gpu::ShaderText::Weak(text);
  }
  if (loaded.texts.size() >= loaded.sweep_at) {
    std::erase_if(loaded.texts, [](const auto& entry) { return entry.second.expired(); });
    loaded.sweep_at = std::max<size_t>(64, 2 * loaded.texts.size());
  }
  return text;
}

}  // namespace wgi::kernels
