#include "tokenizer/unicode_properties.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace bert {
namespace {

struct CodePointRange {
  char32_t first, last;  // inclusive
};
struct CodePointMapping {
  char32_t from;
  uint32_t offset, length;  // into the table's pool
};
struct CodePointRank {
  char32_t cp;
  int rank;
};

#include "tokenizer/unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  // The first range whose last code point is >= cp is the only one that can hold it.
  auto it = std::lower_bound(std::begin(ranges), std::end(ranges), cp,
                             [](const CodePointRange &r, char32_t c) { return r.last < c; });
  return it != std::end(ranges) && it->first <= cp;
}

template <size_t N>
const CodePointMapping *find_mapping(const CodePointMapping (&table)[N], char32_t cp) {
  auto it = std::lower_bound(std::begin(table), std::end(table), cp,
                             [](const CodePointMapping &m, char32_t c) { return m.from < c; });
  return it != std::end(table) && it->from == cp ? it : nullptr;
}

bool is_cased(char32_t cp) {
  return in_ranges(kCasedRanges, cp);
}
bool is_case_ignorable(char32_t cp) {
  return in_ranges(kCaseIgnorableRanges, cp);
}

// Unicode's Final_Sigma condition (Table 3-17): a cased letter before, skipping
// case-ignorable ones, and none after.
bool final_sigma(std::u32string_view text, size_t i) {
  size_t j = i;
  bool before = false;
  while (j > 0) {
    const char32_t c = text[--j];
    if (is_case_ignorable(c)) continue;
    before = is_cased(c);
    break;
  }
  if (!before) return false;
  for (size_t k = i + 1; k < text.size(); ++k) {
    const char32_t c = text[k];
    if (is_case_ignorable(c)) continue;
    return !is_cased(c);
  }
  return true;
}

// How strip accents treats a code point of the decomposed text: kept or dropped (Mn), and
// whether it is a starter (class 0, which ends a run of non-starters) or its rank among
// the non-starters that are kept (they are sorted by it within their run).
struct OrderClass {
  bool keep;
  int rank;  // 0 for a starter
};
OrderClass order_class(char32_t cp) {
  if (cp < 0x300) return {true, 0};
  if (is_nonspacing_mark(cp)) return {false, in_ranges(kStarterMarkRanges, cp) ? 0 : 1};
  auto it = std::lower_bound(std::begin(kNonStarterRanks), std::end(kNonStarterRanks), cp,
                             [](const CodePointRank &r, char32_t c) { return r.cp < c; });
  return {true, it != std::end(kNonStarterRanks) && it->cp == cp ? it->rank : 0};
}

void decompose(char32_t cp, std::u32string &out) {
  constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr char32_t kSCount = 11172, kNCount = 588, kTCount = 28;
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (const CodePointMapping *m = find_mapping(kDecomposition, cp)) {
    out.append(kDecompositionPool + m->offset, m->length);
    return;
  }
  out.push_back(cp);
}

}  // namespace

bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126))
    return true;
  if (cp < 0x80) return false;
  return in_ranges(kPunctuationRanges, cp);
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return in_ranges(kOtherRanges, cp);
}

bool is_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x80) return false;
  return in_ranges(kSeparatorRanges, cp);
}

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t cp) {
  if (cp < 0x300) return false;
  return in_ranges(kNonspacingMarkRanges, cp);
}

std::u32string to_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    } else if (cp == 0x3A3 && final_sigma(text, i)) {
      out.push_back(0x3C2);
    } else if (const CodePointMapping *m = find_mapping(kLowerCase, cp)) {
      out.append(kLowerCasePool + m->offset, m->length);
    } else {
      out.push_back(cp);
    }
  }
  return out;
}

std::u32string strip_accents(std::u32string_view text) {
  std::u32string decomposed;
  decomposed.reserve(text.size());
  for (char32_t cp : text) {
    if (cp < 0xC0)
      decomposed.push_back(cp);  // nothing below U+00C0 decomposes
    else
      decompose(cp, decomposed);
  }
  // Stable sort of each run of non-starters by class; the Mn among them are then dropped,
  // so they are left out of the run's order (only the ranked ones move among themselves).
  std::u32string out;
  out.reserve(decomposed.size());
  std::vector<std::pair<int, char32_t>> run;
  auto flush = [&] {
    std::stable_sort(run.begin(), run.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &r : run)
      out.push_back(r.second);
    run.clear();
  };
  for (char32_t cp : decomposed) {
    const OrderClass c = order_class(cp);
    if (c.rank == 0) flush();
    if (!c.keep) continue;
    if (c.rank == 0)
      out.push_back(cp);
    else
      run.emplace_back(c.rank, cp);
  }
  flush();
  return out;
}

}  // namespace bert
