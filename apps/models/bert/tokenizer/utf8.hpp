// UTF-8 to code points and back, for the tokenizer. Invalid input is not an error: each
// byte that does not begin a well-formed sequence is dropped, which is what Google's BERT
// does (convert_to_unicode decodes with errors="ignore") and what its reference gives too
// (a decoder that replaces bad bytes with U+FFFD, which the basic tokenizer then drops).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bert {

/// Code points of @p text; ill-formed sequences (stray continuation bytes, overlong forms,
/// surrogates, values above U+10FFFF, truncated sequences) are dropped one byte at a time,
/// as the WHATWG decoder's "maximal subpart" rule splits them. Adds the number of dropped
/// bytes to @p dropped when it is given. Local, thread-safe.
std::u32string utf8_decode(std::string_view text, size_t *dropped = nullptr);

/// Appends the UTF-8 bytes of @p cp (a Unicode scalar value) to @p out.
void utf8_append(std::string &out, char32_t cp);

/// The UTF-8 bytes of @p text.
std::string utf8_encode(std::u32string_view text);

}  // namespace bert
