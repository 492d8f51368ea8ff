// Florence-2's text around the model, as transformers.js 4.3's Florence2Processor does it: the prompt each
// task asks the model with, and the parsing of the generated text into text, boxes with labels, or OCR lines
// with quadrilaterals in the original image's pixels. The task tables are Florence-2's processor's
// (microsoft/Florence-2 processing_florence2.py; transformers.js reads them from preprocessor_config.json).
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgi::pipelines::florence2 {

// How a task's generated text is parsed (the processor's tasks_answer_post_processing_type).
enum class AnswerType {
  PureText,              // The text itself.
  DescriptionWithBoxes,  // label<loc_x1><loc_y1><loc_x2><loc_y2> ... (<OD>, <DENSE_REGION_CAPTION>).
  Boxes,                 // Boxes, labels mostly empty (<REGION_PROPOSAL>).
  PhraseGrounding,       // Phrases with one or more boxes each (<CAPTION_TO_PHRASE_GROUNDING>).
  Ocr,                   // Text lines with 8 locations each, a quadrilateral (<OCR_WITH_REGION>).
  Polygons,              // Not parsed: transformers.js 4.3 does not implement it either.
  BoxesOrPolygons,       // Not parsed: as Polygons.
};

struct Task {
  std::string_view name;    // The task token a user passes, e.g. "<OD>".
  std::string_view prompt;  // What the model is asked; "{input}" stands for the user's text.
  bool takes_input;
  AnswerType answer;
};

// Every task Florence-2's processor knows, in its order.
std::span<const Task> tasks();
// wgi::Error naming the known tasks for an unknown one.
const Task& find_task(std::string_view name);

// The prompt for `task` (the text the tokenizer encodes). Tasks that take an input need a non-empty
// `text_input` (a caption for grounding, "<loc_x1><loc_y1><loc_x2><loc_y2>" for the region tasks); the others
// take none. Errors for an unknown task, a missing or unexpected input, and an input holding a task token.
std::string construct_prompt(std::string_view task, std::string_view text_input = {});

struct ImageSize {
  double width = 0, height = 0;  // Of the original image, in pixels.
};

struct Answer {
  std::string task;
  AnswerType type = AnswerType::PureText;
  std::string text;                               // PureText: the generated text without <s> and </s>.
  std::vector<std::string> labels;                // One per box: its phrase, or the previous box's.
  std::vector<std::array<double, 4>> boxes;       // x1, y1, x2, y2 in pixels (the box types).
  std::vector<std::array<double, 8>> quad_boxes;  // x1, y1, ..., x4, y4 in pixels (Ocr).
};

// The text input of the region tasks for a box x1, y1, x2, y2 in pixels: "<loc_x1><loc_y1><loc_x2><loc_y2>",
// each the bin floor(x / (width / 1000)) clamped to [0, 999], as Florence-2's BoxQuantizer ('floor') makes
// them. The bin's centre, which post_process_generation gives back, is within half a bin of the input.
std::string region_input(const std::array<double, 4>& box, ImageSize image_size);

// Parses the text the model generated for `task` (decoded without skipping special tokens, so that the
// <loc_> tokens stay). Locations are bin centres: (bin + 0.5) / 1000 of the width or height. The image size
// must be positive and finite.
Answer post_process_generation(std::string_view text, std::string_view task, ImageSize image_size);

}  // namespace wgi::pipelines::florence2
