// Seeded test strings for the tokenizer comparisons (tests/unit/test_unigram.cpp against transformers.js,
// tests/gpu/test_siglip_tokenizer.cpp against libsentencepiece): words of a vocabulary and others in every
// case, ASCII and Unicode punctuation, runs of each kind of whitespace, emoji (modifiers, flags, ZWJ
// sequences), other scripts, combining marks, Greek sigmas, special tokens inside text, SentencePiece's
// "\u2581", long words, texts past 64 ids and the empty string. Header-only: both test binaries use it.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wgi::test {

// `count` strings (at least the fixed ones); `words` are mixed in with the built-in pool (e.g. a
// vocabulary's pieces without their "\u2581").
inline std::vector<std::string> tokenizer_strings(size_t count, const std::vector<std::string>& words,
                                                  uint32_t seed) {
  std::vector<std::string> out = {"",
                                  " ",
                                  "  ",
                                  "\t\n",
                                  "a",
                                  "A",
                                  "This is a photo of cat.",
                                  "This is a photo of {}.",
                                  "a </s>  b<pad>c",
                                  "<unk>x",
                                  "x<unk>",
                                  "  </s>  ",
                                  "</s></s>",
                                  "<pad><pad> <unk>",
                                  "\u2581cat",
                                  "cat\u2581dog",
                                  "\u2581\u2581",
                                  "\u2581",
                                  "ΑΣ b",
                                  "ΟΔΟΣ.",
                                  "Σ",
                                  "aΣ",
                                  "aΣb",
                                  "İstanbul",
                                  "KELVIN \u212a",
                                  "ǅemal",
                                  "ﬃ",
                                  "ẞ straße",
                                  "\u3000cat\u00a0dog\ufeff",
                                  "cat\u2028dog\u0085x",
                                  "caf\u00e9 cafe\u0301",
                                  "東京の猫",
                                  "😀 emoji 😀😀",
                                  "👍🏽👨‍👩‍👧 🇫🇷❤️",
                                  "☃☃ x ☃",
                                  "x☃y☃☃z",
                                  "!!!",
                                  "a-b_c.d",
                                  "\"quoted\" (paren) [b] {c}",
                                  "«guillemets» „quotes“ — dash…",
                                  "100% $5 #1 @home",
                                  std::string("\x00\x01 ctrl\x7f", 8),
                                  "a\x1c"
                                  "b\x1f"
                                  "c",
                                  "cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat "
                                  "cat cat cat cat cat cat cat cat "
                                  "cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat "
                                  "cat cat cat cat cat cat cat cat "
                                  "cat cat cat cat cat cat cat cat cat cat cat cat cat cat",
                                  "supercalifragilisticexpialidocious",
                                  "pneumonoultramicroscopicsilicovolcanoconiosis"};
  std::vector<std::string> pool = {"a",
                                   "the",
                                   "photo",
                                   "of",
                                   "cat",
                                   "dog",
                                   "Cat",
                                   "DOG",
                                   "Photo",
                                   "THE",
                                   "Ünïcödé",
                                   "ÉCOLE",
                                   "Москва",
                                   "ΚΑΛΗΜΕΡΑ",
                                   "ω",
                                   "zebra",
                                   "quixotic",
                                   "jumped",
                                   "42",
                                   "3.14",
                                   "x",
                                   "ß",
                                   "ǈ",
                                   "Ⅻ",
                                   "①",
                                   "café",
                                   "naïve",
                                   "東京",
                                   "猫",
                                   "写真",
                                   "кошка",
                                   "עברית",
                                   "العربية",
                                   "हिन्दी",
                                   "한국어",
                                   "ไทย",
                                   "e\u0301",
                                   "a\u0308",
                                   "😀",
                                   "👍🏽",
                                   "🇫🇷",
                                   "❤️",
                                   "👨‍👩‍👧",
                                   "🐈",
                                   "\U0001F600\U0001F601",
                                   "𝔘𝔫𝔦",
                                   "\u200d",
                                   "\u00ad"};
  pool.insert(pool.end(), words.begin(), words.end());
  const std::vector<std::string> punctuation = {
      "!", "\"", "#", "$",  "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/",  ":",  ";", "<", "=", ">",
      "?", "@",  "[", "\\", "]", "^", "_", "`", "{", "|", "}", "~", "¡", "¿", "、", "。", "—", "…", "«", "»"};
  const std::vector<std::string> spaces = {" ",      "  ",     "\t",     "\n",     "\r\n",   "\u00a0",
                                           "\u2003", "\u3000", "\ufeff", "\u200b", "\u2028", "\u1680",
                                           "\x0b",   "\x0c",   "\u0085", "\u180e"};
  const std::vector<std::string> specials = {"</s>", "<pad>", "<unk>", "\u2581", "<s>"};
  std::mt19937 rng(seed);
  const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const auto chance = [&](double p) { return (rng() % 10000) < p * 10000; };
  const auto upper_ascii = [](std::string w) {
    for (char& c : w)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return w;
  };
  while (out.size() < count) {
    std::string text;
    const size_t words_in_text = 1 + pick(chance(0.05) ? 90 : 9);
    for (size_t i = 0; i < words_in_text; ++i) {
      std::string w = pool[pick(pool.size())];
      if (chance(0.15)) w = upper_ascii(w);
      if (chance(0.1) && !w.empty() && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 'a' + 'A');
      if (chance(0.05)) {  // a long word of letters
        const size_t n = 20 + pick(180);
        for (size_t k = 0; k < n; ++k) w += static_cast<char>('a' + pick(26));
      }
      if (chance(0.25)) w += punctuation[pick(punctuation.size())];
      if (chance(0.1)) w = punctuation[pick(punctuation.size())] + w;
      if (chance(0.05)) w += specials[pick(specials.size())];
      text += w;
      if (chance(0.6)) {
        text += " ";
      } else {
        for (size_t k = 1 + pick(3); k > 0; --k) text += spaces[pick(spaces.size())];
      }
    }
    if (chance(0.5)) {
      while (!text.empty() && text.back() == ' ') text.pop_back();
    }
    if (chance(0.2)) text = "This is a photo of " + text + ".";
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace wgi::test
