#include "data/sentence_splitter.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "tokenizer/unicode_properties.hpp"
#include "tokenizer/utf8.hpp"

namespace bert {
namespace {

// Titles and the like that a capitalised name follows. Not "No." or "Vol.": a number
// follows them, which rule 2 does not split before anyway, and "no." ends many sentences.
constexpr std::array<std::string_view, 32> kAbbreviations = {
    "mr",   "mrs", "ms",  "dr",   "st", "jr",  "sr",  "messrs", "mme", "mlle", "mt",
    "capt", "col", "gen", "gov",  "lt", "sgt", "maj", "rev",    "hon", "prof", "co",
    "corp", "inc", "ltd", "bros", "vs", "esq", "viz", "cf",     "ft",  "sen"};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The code point at text[i] and its length in bytes (1 for a bad byte).
std::pair<char32_t, size_t> code_point_at(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (i + len > text.size()) return {0xFFFD, 1};
  const std::u32string cp = utf8_decode(text.substr(i, len));
  return cp.size() == 1 ? std::pair{cp[0], len} : std::pair{char32_t{0xFFFD}, size_t{1}};
}

bool is_closing(char32_t cp) {
  return cp == '"' || cp == '\'' || cp == ')' || cp == ']' || cp == 0x201D || cp == 0x2019 ||
         cp == 0xBB;
}

bool is_opening(char32_t cp) {
  return cp == '"' || cp == '\'' || cp == '(' || cp == '[' || cp == 0x201C || cp == 0x2018 ||
         cp == 0xAB;
}

bool is_upper(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  const std::u32string one(1, cp);
  return to_lower(one) != one && !is_punctuation(cp);
}

// Whether the "." at text[dot] ends an abbreviation or an initial rather than a sentence.
// The word is the run of ASCII letters and dots just before it, so "boat—Mr." and "(Dr."
// are read as "Mr" and "Dr".
bool abbreviation_before(std::string_view text, size_t dot) {
  size_t begin = dot;
  while (begin > 0 &&
         (std::isalpha(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '.'))
    --begin;
  std::string_view word = text.substr(begin, dot - begin);
  if (word.empty()) return false;
  if (word.find('.') != std::string_view::npos) return true;  // U.S. e.g.
  if (word.size() == 1) return true;                          // an initial
  std::string lower(word);
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(kAbbreviations.begin(), kAbbreviations.end(), lower) != kAbbreviations.end();
}

}  // namespace

std::vector<std::string_view> split_sentences(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  auto emit = [&](size_t end) {
    size_t b = start, e = end;
    while (b < e && is_space(text[b]))
      ++b;
    while (e > b && is_space(text[e - 1]))
      --e;
    if (e > b) out.push_back(text.substr(b, e - b));
    start = end;
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r'))
        ++j;
      if (j < text.size() && text[j] == '\n') {
        emit(i);
        i = j + 1;
        continue;
      }
      ++i;
      continue;
    }
    if (c != '.' && c != '!' && c != '?') {
      ++i;
      continue;
    }
    const size_t first = i;
    size_t j = i;
    while (j < text.size() && (text[j] == '.' || text[j] == '!' || text[j] == '?'))
      ++j;
    const bool single_dot = j == first + 1 && c == '.';
    while (j < text.size()) {
      auto [cp, len] = code_point_at(text, j);
      if (!is_closing(cp)) break;
      j += len;
    }
    const size_t end = j;
    size_t k = j;
    while (k < text.size() && is_space(text[k]))
      ++k;
    if (k == j || k == text.size()) {
      i = std::max(end, i + 1);
      continue;
    }
    auto [next, len] = code_point_at(text, k);
    (void)len;
    if ((is_upper(next) || is_opening(next)) && !(single_dot && abbreviation_before(text, first)))
      emit(end);
    i = end;
  }
  emit(text.size());
  return out;
}

}  // namespace bert
