// GPT-2's pre-tokenization: the text is split into words by the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// before byte-pair encoding, so merges never cross word boundaries. This is a hand-written
// scanner with the regex's exact semantics (alternatives tried in order, leftmost first,
// greedy, and the lookahead that leaves the last space of a run to the next word).
#pragma once

#include <string_view>
#include <vector>

namespace gpt2 {

/// Splits UTF-8 @p text into GPT-2's pre-tokens. The pieces are views into @p text and
/// concatenate to it exactly. A byte that is not valid UTF-8 counts as one character that
/// is neither a letter, a number nor white space (so arbitrary bytes still round-trip).
std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace gpt2
