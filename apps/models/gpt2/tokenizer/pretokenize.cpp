#include "pretokenize.hpp"

#include <cstdint>

#include "unicode_classes.hpp"

namespace gpt2 {
namespace {

constexpr char32_t kInvalid = 0xFFFD;  // category So: "other", like the replacement char

// Decodes one UTF-8 character at @p s[i]; returns its code point and advances @p i.
// Overlong forms, surrogates and truncated sequences decode as one invalid byte.
char32_t decode_utf8(std::string_view s, size_t &i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + static_cast<size_t>(len) > s.size()) {
    ++i;
    return kInvalid;
  }
  char32_t cp = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    uint8_t b = byte(i + static_cast<size_t>(k));
    if ((b & 0xC0) != 0x80) {
      ++i;
      return kInvalid;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return kInvalid;
  }
  i += static_cast<size_t>(len);
  return cp;
}

bool is_other(char32_t c) {
  return !is_whitespace(c) && !is_letter(c) && !is_number(c);
}

}  // namespace

std::vector<std::string_view> pretokenize(std::string_view text) {
  // Characters and the byte offset where each begins; offset[n] is the text's length.
  std::vector<char32_t> c;
  std::vector<size_t> offset;
  c.reserve(text.size());
  offset.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    offset.push_back(i);
    c.push_back(decode_utf8(text, i));
  }
  const size_t n = c.size();
  offset.push_back(text.size());

  std::vector<std::string_view> words;
  auto emit = [&](size_t from, size_t to) {
    words.push_back(text.substr(offset[from], offset[to] - offset[from]));
  };
  // ` ?X+` for a class X: the optional space is tried first, as the regex engine does.
  auto run_of = [&](size_t i, bool (*in_class)(char32_t)) -> size_t {
    size_t j = i;
    if (c[j] == U' ' && j + 1 < n && in_class(c[j + 1])) ++j;
    if (!in_class(c[j])) return i;
    while (j < n && in_class(c[j]))
      ++j;
    return j;
  };

  size_t i = 0;
  while (i < n) {
    // 's|'t|'re|'ve|'m|'ll|'d  (lower case only, as in GPT-2)
    if (c[i] == U'\'' && i + 1 < n) {
      char32_t a = c[i + 1];
      char32_t b = i + 2 < n ? c[i + 2] : 0;
      size_t len = (a == U's' || a == U't' || a == U'm' || a == U'd')                    ? 2
                   : ((a == U'r' || a == U'v') && b == U'e') || (a == U'l' && b == U'l') ? 3
                                                                                         : 0;
      if (len) {
        emit(i, i + len);
        i += len;
        continue;
      }
    }
    size_t j = run_of(i, is_letter);
    if (j == i) j = run_of(i, is_number);
    if (j == i) j = run_of(i, is_other);
    if (j == i) {
      // c[i] is white space: \s+(?!\S) takes the run but leaves its last character to the
      // next word when a non-space follows; a lone space before a non-space falls to \s+.
      j = i;
      while (j < n && is_whitespace(c[j]))
        ++j;
      if (j < n && j - i >= 2) --j;
    }
    emit(i, j);
    i = j;
  }
  return words;
}

}  // namespace gpt2
