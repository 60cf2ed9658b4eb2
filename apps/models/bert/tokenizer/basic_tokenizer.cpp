#include "tokenizer/basic_tokenizer.hpp"

#include "tokenizer/unicode_properties.hpp"
#include "tokenizer/utf8.hpp"

namespace bert {

std::vector<std::u32string> basic_tokenize(std::string_view text, size_t *dropped) {
  const std::u32string decoded = utf8_decode(text, dropped);
  std::u32string cleaned;
  cleaned.reserve(decoded.size() + decoded.size() / 8);
  for (char32_t cp : decoded) {
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      cleaned.push_back(' ');
    } else if (is_chinese_char(cp)) {
      cleaned.push_back(' ');
      cleaned.push_back(cp);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(cp);
    }
  }
  const std::u32string normalized = strip_accents(to_lower(cleaned));

  std::vector<std::u32string> words;
  std::u32string word;
  auto end_word = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : normalized) {
    // Lower-casing and NFD make no whitespace of other characters, but the reference's
    // pre-tokenizer splits on whitespace after them, so this does too.
    if (is_whitespace(cp)) {
      end_word();
    } else if (is_punctuation(cp)) {
      end_word();
      words.emplace_back(1, cp);
    } else {
      word.push_back(cp);
    }
  }
  end_word();
  return words;
}

}  // namespace bert
