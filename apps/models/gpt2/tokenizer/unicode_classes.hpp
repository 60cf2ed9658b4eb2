// The three character classes of GPT-2's pre-tokenization regex: \p{L}, \p{N} and \s.
#pragma once

namespace gpt2 {

/// Unicode general category L (Lu, Ll, Lt, Lm, Lo): what the regex calls \p{L}.
bool is_letter(char32_t cp);
/// Unicode general category N (Nd, Nl, No): \p{N}.
bool is_number(char32_t cp);
/// The Unicode White_Space property: what \s means in GPT-2's regex (Python's `regex`
/// module on str patterns).
bool is_whitespace(char32_t cp);

}  // namespace gpt2
