#include "pipelines/florence2_text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "core/json.h"
#include "pipelines/unicode.h"
#include "wgi/error.h"

namespace wgi::pipelines::florence2 {

namespace {

constexpr double kBinsPerAxis = 1000;

constexpr Task kTasks[] = {
    {"<OCR>", "What is the text in the image?", false, AnswerType::PureText},
    {"<OCR_WITH_REGION>", "What is the text in the image, with regions?", false, AnswerType::Ocr},
    {"<CAPTION>", "What does the image describe?", false, AnswerType::PureText},
    {"<DETAILED_CAPTION>", "Describe in detail what is shown in the image.", false, AnswerType::PureText},
    {"<MORE_DETAILED_CAPTION>", "Describe with a paragraph what is shown in the image.", false,
     AnswerType::PureText},
    {"<OD>", "Locate the objects with category name in the image.", false, AnswerType::DescriptionWithBoxes},
    {"<DENSE_REGION_CAPTION>", "Locate the objects in the image, with their descriptions.", false,
     AnswerType::DescriptionWithBoxes},
    {"<REGION_PROPOSAL>", "Locate the region proposals in the image.", false, AnswerType::Boxes},
    {"<CAPTION_TO_PHRASE_GROUNDING>", "Locate the phrases in the caption: {input}", true,
     AnswerType::PhraseGrounding},
    {"<REFERRING_EXPRESSION_SEGMENTATION>", "Locate {input} in the image with mask", true,
     AnswerType::Polygons},
    {"<REGION_TO_SEGMENTATION>", "What is the polygon mask of region {input}", true, AnswerType::Polygons},
    {"<OPEN_VOCABULARY_DETECTION>", "Locate {input} in the image.", true, AnswerType::BoxesOrPolygons},
    {"<REGION_TO_CATEGORY>", "What is the region {input}?", true, AnswerType::PureText},
    {"<REGION_TO_DESCRIPTION>", "What does the region {input} describe?", true, AnswerType::PureText},
    {"<REGION_TO_OCR>", "What text is in the region {input}?", true, AnswerType::PureText},
};

// `count` tokens <loc_DIGITS> at text[pos]: their numbers, and where they end.
std::optional<size_t> read_locations(std::string_view text, size_t pos, size_t count,
                                     std::vector<double>& values) {
  values.clear();
  for (size_t k = 0; k < count; ++k) {
    if (text.substr(pos, 5) != "<loc_") return std::nullopt;
    size_t end = pos + 5;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == pos + 5 || end >= text.size() || text[end] != '>') return std::nullopt;
    // Digits only, so strtod reads them as JavaScript's Number() does (correctly rounded).
    values.push_back(std::strtod(std::string(text.substr(pos + 5, end - pos - 5)).c_str(), nullptr));
    pos = end + 1;
  }
  return pos;
}

// A location bin's centre in pixels: x bins scale with the width, y bins with the height.
double to_pixels(double bin, size_t index, ImageSize size) {
  return (bin + 0.5) / kBinsPerAxis * (index % 2 == 0 ? size.width : size.height);
}

void add_label(Answer& answer, std::optional<std::string_view> label) {
  // A box without a phrase of its own belongs to the previous phrase (grounding gives several boxes per
  // phrase).
  answer.labels.push_back(label                   ? std::string(unicode::trim(*label))
                          : answer.labels.empty() ? std::string()
                                                  : answer.labels.back());
}

// transformers.js's /([^<]+)?<loc_(\d+)><loc_(\d+)><loc_(\d+)><loc_(\d+)>/g, match by match. A label run that
// is not followed by four locations fails at every position inside it, so the scan resumes at its end.
void parse_boxes(std::string_view text, ImageSize size, Answer& answer) {
  std::vector<double> values;
  for (size_t pos = 0; pos < text.size();) {
    std::optional<std::string_view> label;
    size_t start = pos;
    if (text[pos] != '<') {
      start = std::min(text.find('<', pos), text.size());
      label = text.substr(pos, start - pos);
    }
    std::optional<size_t> end = read_locations(text, start, 4, values);
    if (!end) {
      pos = label ? start : pos + 1;
      continue;
    }
    add_label(answer, label);
    std::array<double, 4> box;
    for (size_t i = 0; i < 4; ++i) box[i] = to_pixels(values[i], i, size);
    answer.boxes.push_back(box);
    pos = *end;
  }
}

// transformers.js's /(.+?)<loc_(\d+)>{8 times}/g: the shortest label of one character or more that eight
// locations follow, within a line (`.` stops at line terminators). Failing at a position fails at every later
// one of the same line, so the scan resumes on the next line.
void parse_quad_boxes(std::string_view text, ImageSize size, Answer& answer) {
  const std::vector<char32_t> cps = unicode::decode_utf8(text, "Florence-2 post-processing: the text");
  std::vector<size_t> offsets;
  offsets.reserve(cps.size() + 1);
  for (size_t pos = 0, i = 0; i <= cps.size(); ++i) {
    offsets.push_back(pos);
    if (i < cps.size()) pos += unicode::utf8_length(cps[i]);
  }
  std::vector<double> values;
  for (size_t first = 0; first < cps.size();) {
    std::optional<size_t> match_end;
    size_t last = first;  // One past the label's last character.
    while (last < cps.size() && !unicode::is_line_terminator(cps[last])) {
      ++last;
      if ((match_end = read_locations(text, offsets[last], 8, values))) break;
    }
    if (!match_end) {
      first = last + 1;
      continue;
    }
    add_label(answer, text.substr(offsets[first], offsets[last] - offsets[first]));
    std::array<double, 8> quad;
    for (size_t i = 0; i < 8; ++i) quad[i] = to_pixels(values[i], i, size);
    answer.quad_boxes.push_back(quad);
    // The match ends at a character boundary (after a '>').
    while (offsets[first] < *match_end) ++first;
  }
}

void check_image_size(ImageSize size) {
  if (!(std::isfinite(size.width) && std::isfinite(size.height) && size.width > 0 && size.height > 0)) {
    throw Error("Florence-2: the image size must be positive, found " + json::number(size.width) + " x " +
                json::number(size.height));
  }
}

}  // namespace

std::span<const Task> tasks() {
  return kTasks;
}

const Task& find_task(std::string_view name) {
  for (const Task& t : kTasks) {
    if (t.name == name) return t;
  }
  std::string known;
  for (const Task& t : kTasks) known += (known.empty() ? "" : ", ") + std::string(t.name);
  throw Error("Florence-2: unknown task '" + std::string(name) + "' (the tasks are " + known + ")");
}

std::string construct_prompt(std::string_view task_name, std::string_view text_input) {
  const Task& task = find_task(task_name);
  if (!task.takes_input) {
    if (!text_input.empty()) {
      throw Error("Florence-2: task " + std::string(task.name) + " takes no text input, but was given \"" +
                  std::string(text_input) + "\"");
    }
    return std::string(task.prompt);
  }
  if (text_input.empty()) {
    throw Error("Florence-2: task " + std::string(task.name) + " needs a text input (" +
                (task.answer == AnswerType::PhraseGrounding ? "the caption whose phrases to locate"
                                                            : "a region, <loc_x1><loc_y1><loc_x2><loc_y2>") +
                ")");
  }
  for (const Task& t : kTasks) {
    if (text_input.find(t.name) != std::string_view::npos) {
      throw Error("Florence-2: the text input of " + std::string(task.name) + " holds the task token " +
                  std::string(t.name));
    }
  }
  // As the processor builds it: {input} becomes task + input, then the task token goes.
  return unicode::replace_all(
      unicode::replace_all(task.prompt, "{input}", std::string(task.name) + std::string(text_input)),
      task.name, "");
}

std::string region_input(const std::array<double, 4>& box, ImageSize image_size) {
  check_image_size(image_size);
  std::string text;
  for (size_t i = 0; i < 4; ++i) {
    if (!std::isfinite(box[i])) throw Error("Florence-2: region coordinate " + json::number(box[i]));
    const double bin_size = (i % 2 == 0 ? image_size.width : image_size.height) / kBinsPerAxis;
    const double bin = std::clamp(std::floor(box[i] / bin_size), 0.0, kBinsPerAxis - 1);
    text += "<loc_" + std::to_string(static_cast<int>(bin)) + ">";
  }
  return text;
}

Answer post_process_generation(std::string_view generated, std::string_view task_name, ImageSize image_size) {
  const Task& task = find_task(task_name);
  check_image_size(image_size);
  unicode::decode_utf8(generated, "Florence-2 post-processing: the text");
  Answer answer;
  answer.task = std::string(task.name);
  answer.type = task.answer;
  const std::string text = unicode::replace_all(unicode::replace_all(generated, "<s>", ""), "</s>", "");
  switch (task.answer) {
    case AnswerType::PureText:
      answer.text = text;
      break;
    case AnswerType::DescriptionWithBoxes:
    case AnswerType::Boxes:
    case AnswerType::PhraseGrounding:
      parse_boxes(text, image_size, answer);
      break;
    case AnswerType::Ocr:
      parse_quad_boxes(text, image_size, answer);
      break;
    case AnswerType::Polygons:
    case AnswerType::BoxesOrPolygons:
      throw Error("Florence-2: post-processing of " + std::string(task.name) +
                  " (polygons) is not implemented (transformers.js 4.3 does not implement it either)");
  }
  return answer;
}

}  // namespace wgi::pipelines::florence2
