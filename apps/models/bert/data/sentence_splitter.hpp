// A rule-based sentence splitter for English prose, enough to give BERT's pretraining its
// sentences (Google's create_pretraining_data.py expects one sentence per line, made by
// some such tool). The rules, in order:
//   1. a blank line (two line ends with only spaces or tabs between) ends a sentence:
//      paragraphs never run together;
//   2. a run of ".", "!" or "?", then optional closing quotes or brackets (" ' ) ] ” ’ »),
//      then whitespace, then an upper-case letter or an opening quote or bracket
//      (" ' ( [ “ ‘ «) ends a sentence after the closing marks;
//   3. except after a single "." that ends a known abbreviation (Mr. Mrs. Ms. Dr. St. Jr.
//      Sr. Messrs. Mt. Capt. Col. Gen. Gov. Lt. Sgt. Rev. Hon. Prof. Co. vs. and a few
//      more; case-insensitive; the word is the ASCII letters just before the dot), an
//      initial (one letter: "J. Smith") or a dotted abbreviation ("U.S.", "e.g.").
// Single line ends are spaces: text wrapped at 72 columns is one paragraph.
#pragma once

#include <string_view>
#include <vector>

namespace bert {

/// The sentences of @p text (UTF-8), without their surrounding whitespace; empty ones are
/// left out. The views point into @p text. Local, thread-safe.
std::vector<std::string_view> split_sentences(std::string_view text);

}  // namespace bert
