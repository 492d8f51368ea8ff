// wgi::Florence2: Florence-2 (image + task prompt -> text, boxes or OCR lines) end to end on wgi sessions:
// greedy as transformers.js 4.3 runs it, or beam search as Hugging Face's generate runs it
// (docs/pipelines.md, "Florence-2 end to end"; docs/beam_search.md).
//
//   wgi::Florence2 model = wgi::Florence2::from_folder("Florence-2-base-ft");
//   wgi::Florence2Result r = model.generate(wgi::load_image("image.png"), "<OD>");
//   for (size_t i = 0; i < r.parsed.boxes.size(); ++i) ... r.parsed.labels[i], r.parsed.boxes[i] ...
//
// The folder has onnx-community's layout: config.json, generation_config.json, preprocessor_config.json,
// tokenizer.json (+ tokenizer_config.json), onnx/embed_tokens.onnx, onnx/vision_encoder.onnx,
// onnx/encoder_model.onnx and onnx/decoder_model_merged.onnx (or, without it, onnx/decoder_model.onnx and
// onnx/decoder_with_past_model.onnx). Variant files are chosen per session by transformers.js's dtype
// suffixes (Florence2Files): onnx/decoder_model_merged_q4.onnx for dtype "q4", and so on.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wgi/error.h"
#include "wgi/image.h"
#include "wgi/session.h"

namespace wgi {

// Hugging Face's early_stopping (True, False, "never"; docs/beam_search.md): when a beam search stops.
enum class EarlyStopping {
  No,    // False: once the best running beam, penalized at its current length, cannot beat the worst finished
  Yes,   // True: as soon as num_beams hypotheses are finished
  Never  // "never": as No, but the running beam is penalized at max_length (with length_penalty > 0)
};

// Every setting left unset comes from generation_config.json (then config.json, then Hugging Face's default).
struct Florence2GenerateOptions {
  // New tokens at most (the decoder start token not counted). Unset: generation_config.json's max_length
  // (else 20) bounds the whole decoder sequence, start token included, as transformers.js does.
  std::optional<int> max_new_tokens;
  // 1: greedy (transformers.js's answer; it ignores num_beams). More: Hugging Face's beam search, the beams
  // batched in one decoder run per step (default: generation_config.json's num_beams, else 1).
  std::optional<int> num_beams;
  std::optional<int> no_repeat_ngram_size;  // 0: off
  std::optional<double> length_penalty;     // beam search: finished scores / generated length ^ this (1.0)
  std::optional<EarlyStopping> early_stopping;  // beam search (default No)
};

// The task's answer, as transformers.js's Florence2Processor.post_process_generation returns it.
struct Florence2Parsed {
  // "pure_text", "description_with_bboxes", "bboxes", "phrase_grounding", "ocr", or "polygons" /
  // "description_with_bboxes_or_polygons" (not parsed, as in transformers.js 4.3: `text` holds the text).
  std::string type;
  std::string text;                               // pure_text: the text without <s> and </s>
  std::vector<std::string> labels;                // one per box or quadrilateral
  std::vector<std::array<double, 4>> boxes;       // x1, y1, x2, y2 in the image's pixels
  std::vector<std::array<double, 8>> quad_boxes;  // ocr: x1, y1, ..., x4, y4 in pixels
};

struct Florence2Result {
  std::string task;
  std::vector<int64_t> input_ids;      // the prompt's ids (<s> ... </s>)
  std::vector<int64_t> generated_ids;  // the decoder's sequence, its start token included
  int num_beams = 1;                   // the search that ran
  // Beam search: Hugging Face's sequences_scores (the sum of the processed log-probabilities divided by the
  // generated length, EOS included, ^ length_penalty); greedy: the sum of log-probabilities.
  double sequence_score = 0;
  int decode_steps = 0;  // decoder runs
  // Of those, the steps whose logits were downloaded: a forced token, or bans that left too few of the
  // decoder's token candidates (the others read only each row's 16 best logits, chosen on the GPU).
  int logits_downloads = 0;
  std::string generated_text;  // generated_ids decoded, special tokens kept
  Florence2Parsed parsed;
  // Where the call's wall time went, in ms: the image resized and normalised, the prompt embedded and the
  // vision encoder run (its features downloaded), the encoder run, every decoder step with the host's
  // search between them, and the answer decoded and parsed. Of decode_ms: the steps' embed_tokens runs, and
  // their decoder runs up to the candidates' download (the rest is the search and the beams' reordering).
  struct Stages {
    double preprocess_ms = 0, vision_ms = 0, encoder_ms = 0, decode_ms = 0, postprocess_ms = 0;
    double step_embed_ms = 0, step_decoder_ms = 0;
  };
  Stages stages;
};

// Which file of each session runs, by transformers.js's dtype names and their file suffixes: fp32 (none),
// fp16 (_fp16), q8 (_quantized), int8 (_int8), uint8 (_uint8), q4 (_q4), q4f16 (_q4f16), bnb4 (_bnb4).
// Sessions: embed_tokens, vision_encoder, encoder_model, decoder_model_merged (also names the split
// decoders' dtype: decoder_model and decoder_with_past_model).
struct Florence2Files {
  std::string dtype = "fp32";                      // every session not named below
  std::map<std::string, std::string> per_session;  // session -> dtype

  // Parses "q4" or "embed_tokens=fp16,decoder_model_merged=q4" (the CLI's --dtype); throws naming a bad part.
  static Florence2Files parse(const std::string& text);
  // "onnx/encoder_model_q4.onnx"'s name for a session.
  std::string file_name(const std::string& session) const;
};

class Florence2 {
 public:
  // Loads the folder (every file checked before any session is made: a missing one is named) and the
  // sessions, and checks that the configs agree with the sessions' inputs and outputs. `options` apply to
  // every session. The sessions share one Environment (one device; a kernel compiled once serves all four).
  static Florence2 from_folder(const std::filesystem::path& folder, const SessionOptions& options = {},
                               const Florence2Files& files = {});
  // The same on a given Environment (shared with other models too); `options`' device choice must be left
  // empty or equal the environment's.
  static Florence2 from_folder(const std::filesystem::path& folder, const Environment& environment,
                               const SessionOptions& options = {}, const Florence2Files& files = {});
  ~Florence2();
  Florence2(Florence2&&) noexcept;
  Florence2& operator=(Florence2&&) noexcept;

  // Runs `task` ("<CAPTION>", "<OD>", "<OCR_WITH_REGION>", ...; `text` for the tasks that take an input,
  // e.g. "<CAPTION_TO_PHRASE_GROUNDING>") on `image`, an RGB image of any size (resized to the processor's
  // size with its resample filter as PIL does, then rescaled and normalised). Greedy or beam search with
  // generation_config.json's forced BOS/EOS and no_repeat_ngram_size; past key/values stay on the GPU between
  // steps (a beam search reorders them there, Session::gather_rows).
  Florence2Result generate(const Image& image, const std::string& task, const std::string& text = {},
                           const Florence2GenerateOptions& options = {});

  // The processor's input size (preprocessor_config.json's size): images are resized to it.
  int image_width() const;
  int image_height() const;
  // Which decoder files run: "decoder_model_merged.onnx" or "decoder_model.onnx +
  // decoder_with_past_model.onnx" (with the dtype's suffix, e.g. "decoder_model_merged_q4.onnx").
  std::string decoder_files() const;

 private:
  struct Impl;
  explicit Florence2(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgi
