// The first half of BERT's uncased tokenizer: Google's BasicTokenizer(do_lower_case=True)
// from tokenization.py, which turns text into words before WordPiece splits them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bert {

/// The words of @p text (UTF-8), in the order of Google's BasicTokenizer.tokenize:
///   1. clean: drop NUL, U+FFFD and control characters; whitespace becomes a space
///   2. put spaces around CJK ideographs (is_chinese_char)
///   3. lower case (to_lower), then strip accents (NFD, drop Mn)
///   4. split on whitespace, then each punctuation character is a word of its own
/// Google lower-cases word by word after the whitespace split, its reference the whole
/// text before: the same, since whitespace ends a word's final-sigma context either way.
/// Invalid UTF-8 bytes are dropped (utf8_decode) and counted in @p dropped when given.
/// Local, thread-safe.
std::vector<std::u32string> basic_tokenize(std::string_view text, size_t *dropped = nullptr);

}  // namespace bert
