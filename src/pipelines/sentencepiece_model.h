// A SentencePiece model (spiece.model) through Debian's libsentencepiece, the one file of the pipelines that
// needs it. A build without the library (the browser's Emscripten sysroot has none) compiles a stand-in whose
// load() throws wgi::Error saying so, so that the rest of the pipelines builds everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgi::pipelines {

class SentencePieceModel {
 public:
  // `serialized`: the bytes of a .model file; `name` names it in errors.
  static SentencePieceModel load(std::string_view serialized, const std::string& name);
  SentencePieceModel(SentencePieceModel&&) noexcept;
  SentencePieceModel& operator=(SentencePieceModel&&) noexcept;
  ~SentencePieceModel();

  // The model's ids of `text` (its normaliser, its dummy prefix, its pieces).
  std::vector<int64_t> encode(std::string_view text) const;
  size_t size() const;
  std::optional<int64_t> piece_id(const std::string& piece) const;  // nullopt if not a piece
  std::string piece(int64_t id) const;
  // Control (<pad>, </s>) and unknown (<unk>) pieces: what Hugging Face's tokenizers make added tokens of.
  bool is_special(int64_t id) const;

 private:
  struct State;
  explicit SentencePieceModel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace wgi::pipelines
