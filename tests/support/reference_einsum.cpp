#include "support/reference_einsum.h"

#include <algorithm>
#include <map>

namespace wgi::test {

EinsumReference einsum_reference(const std::string& equation_in, const std::vector<Tensor>& inputs) {
  std::string equation;
  for (char c : equation_in) {
    if (c != ' ') equation += c;
  }
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  {
    std::string lhs = equation.substr(0, arrow), cur;
    for (char c : lhs) {
      if (c == ',') {
        terms.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    terms.push_back(cur);
  }
  // "..." becomes upper-case-free placeholder characters '0'..'9' (right-aligned across operands).
  size_t ellipsis = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    const size_t pos = terms[t].find("...");
    if (pos != std::string::npos) {
      ellipsis = std::max(ellipsis, static_cast<size_t>(inputs[t].rank()) - (terms[t].size() - 3));
    }
  }
  auto expand = [&](const std::string& term, size_t dims) {
    const size_t pos = term.find("...");
    if (pos == std::string::npos) return term;
    std::string e;
    for (size_t d = 0; d < dims; ++d) e += static_cast<char>('0' + (ellipsis - dims + d));
    return term.substr(0, pos) + e + term.substr(pos + 3);
  };
  std::map<char, int64_t> size;
  std::map<char, int> uses;
  for (size_t t = 0; t < terms.size(); ++t) {
    const size_t pos = terms[t].find("...");
    terms[t] =
        expand(terms[t],
               pos == std::string::npos ? 0 : static_cast<size_t>(inputs[t].rank()) - (terms[t].size() - 3));
    for (size_t d = 0; d < terms[t].size(); ++d) {
      const int64_t n = inputs[t].shape()[d];
      int64_t& s = size.try_emplace(terms[t][d], n).first->second;
      if (s == 1) s = n;
      ++uses[terms[t][d]];
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = expand(equation.substr(arrow + 2), ellipsis);
  } else {
    for (size_t d = 0; d < ellipsis; ++d) out += static_cast<char>('0' + d);
    for (const auto& [c, n] : uses) {  // std::map: ASCII order
      if (n == 1 && !(c >= '0' && c <= '9')) out += c;
    }
  }
  std::vector<char> letters;
  for (const auto& [c, n] : size) letters.push_back(c);
  EinsumReference r;
  for (char c : out) r.shape.push_back(size[c]);
  r.values.assign(static_cast<size_t>(element_count(r.shape)), 0.0);
  r.terms = 1;
  for (char c : letters) {
    if (out.find(c) == std::string::npos) r.terms *= size[c];
  }
  // Odometer over every letter.
  std::map<char, int64_t> at;
  for (char c : letters) at[c] = 0;
  int64_t combos = 1;
  for (char c : letters) combos *= size[c];
  for (int64_t step = 0; step < combos; ++step) {
    double p = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      int64_t offset = 0;
      for (size_t d = 0; d < terms[t].size(); ++d) {
        const int64_t n = inputs[t].shape()[d];
        offset = offset * n + (n == 1 ? 0 : at[terms[t][d]]);
      }
      p *= inputs[t].data<float>()[static_cast<size_t>(offset)];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    r.values[static_cast<size_t>(o)] += p;
    for (size_t l = letters.size(); l-- > 0;) {
      if (++at[letters[l]] < size[letters[l]]) break;
      at[letters[l]] = 0;
    }
  }
  return r;
}

}  // namespace wgi::test
