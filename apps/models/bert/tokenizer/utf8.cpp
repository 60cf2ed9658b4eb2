#include "tokenizer/utf8.hpp"

namespace bert {

std::u32string utf8_decode(std::string_view text, size_t *dropped) {
  std::u32string out;
  out.reserve(text.size());
  size_t bad = 0;
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    // Length and the allowed range of the second byte (Unicode Table 3-7), which rules out
    // overlong forms, surrogates and code points above U+10FFFF.
    int len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    if (len == 0) {
      ++bad, ++i;
      continue;
    }
    int k = 1;
    for (; k < len && i + static_cast<size_t>(k) < n; ++k) {
      const unsigned char b = s[i + static_cast<size_t>(k)];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (k < len) {
      // The maximal subpart (the bytes read so far) goes as one unit, as U+FFFD would.
      bad += static_cast<size_t>(k), i += static_cast<size_t>(k);
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  if (dropped) *dropped += bad;
  return out;
}

void utf8_append(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text)
    utf8_append(out, cp);
  return out;
}

}  // namespace bert
