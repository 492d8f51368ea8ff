// pipelines::SentencePieceModel (sentencepiece_model.h) on Debian's libsentencepiece-dev.
#include "pipelines/sentencepiece_model.h"

#include <utility>

#include "wgi/error.h"

#if __has_include(<sentencepiece_processor.h>)
#include <sentencepiece_processor.h>
#define WGI_HAVE_SENTENCEPIECE 1
#endif

namespace wgi::pipelines {

#ifdef WGI_HAVE_SENTENCEPIECE

struct SentencePieceModel::State {
  sentencepiece::SentencePieceProcessor processor;
  std::string name;
};

SentencePieceModel SentencePieceModel::load(std::string_view serialized, const std::string& name) {
  auto state = std::make_unique<State>();
  state->name = name;
  if (const sentencepiece::util::Status status = state->processor.LoadFromSerializedProto(serialized);
      !status.ok()) {
    throw Error(name + " is not a SentencePiece model: " + status.ToString());
  }
  return SentencePieceModel(std::move(state));
}

std::vector<int64_t> SentencePieceModel::encode(std::string_view text) const {
  std::vector<int> ids;
  if (const sentencepiece::util::Status status = state_->processor.Encode(text, &ids); !status.ok()) {
    throw Error(state_->name + ": SentencePiece could not encode the text: " + status.ToString());
  }
  return std::vector<int64_t>(ids.begin(), ids.end());
}

size_t SentencePieceModel::size() const {
  return static_cast<size_t>(state_->processor.GetPieceSize());
}

std::optional<int64_t> SentencePieceModel::piece_id(const std::string& piece) const {
  const int id = state_->processor.PieceToId(piece);
  // PieceToId answers the unknown id for any string that is not a piece.
  if (id < 0 || state_->processor.IdToPiece(id) != piece) return std::nullopt;
  return id;
}

std::string SentencePieceModel::piece(int64_t id) const {
  return state_->processor.IdToPiece(static_cast<int>(id));
}

bool SentencePieceModel::is_special(int64_t id) const {
  return state_->processor.IsControl(static_cast<int>(id)) ||
         state_->processor.IsUnknown(static_cast<int>(id));
}

#else

struct SentencePieceModel::State {};

SentencePieceModel SentencePieceModel::load(std::string_view, const std::string& name) {
  throw Error(name +
              ": this build of wgi has no SentencePiece library (libsentencepiece), so it cannot read "
              "spiece.model");
}
std::vector<int64_t> SentencePieceModel::encode(std::string_view) const {
  return {};
}
size_t SentencePieceModel::size() const {
  return 0;
}
std::optional<int64_t> SentencePieceModel::piece_id(const std::string&) const {
  return std::nullopt;
}
std::string SentencePieceModel::piece(int64_t) const {
  return {};
}
bool SentencePieceModel::is_special(int64_t) const {
  return false;
}

#endif

SentencePieceModel::SentencePieceModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
SentencePieceModel::~SentencePieceModel() = default;
SentencePieceModel::SentencePieceModel(SentencePieceModel&&) noexcept = default;
SentencePieceModel& SentencePieceModel::operator=(SentencePieceModel&&) noexcept = default;

}  // namespace wgi::pipelines
