#include "unicode_classes.hpp"

#include <algorithm>
#include <iterator>

namespace gpt2 {
namespace {

struct CodePointRange {
  char32_t first, last;  // inclusive
};

#include "unicode_classes_table.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  // The first range whose last code point is >= cp is the only one that can hold it.
  auto it = std::lower_bound(std::begin(ranges), std::end(ranges), cp,
                             [](const CodePointRange &r, char32_t c) { return r.last < c; });
  return it != std::end(ranges) && it->first <= cp;
}

}  // namespace

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';  // the common case
  return in_ranges(kLetterRanges, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(kNumberRanges, cp);
}

bool is_whitespace(char32_t cp) {
  // Unicode's White_Space property (PropList.txt); it has not changed since Unicode 6.3.
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

}  // namespace gpt2
