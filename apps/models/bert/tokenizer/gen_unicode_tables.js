#!/usr/bin/env node
// Writes unicode_tables.inc: the Unicode data BERT's basic tokenizer needs, taken from the
// JavaScript engine's own tables so that the C++ tokenizer agrees with its reference
// (Hugging Face's tokenizers.js, which runs on the same engine's \p{...}, toLowerCase and
// normalize('NFD')). Rerun when moving to a newer Unicode version:
//   node apps/models/bert/tokenizer/gen_unicode_tables.js > apps/models/bert/tokenizer/unicode_tables.inc
'use strict';

const MAX = 0x10ffff;
const isSurrogate = (cp) => cp >= 0xd800 && cp <= 0xdfff;
const chr = (cp) => String.fromCodePoint(cp);
const cps = (s) => [...s].map((c) => c.codePointAt(0));

function ranges(test) {
  const out = [];
  let start = -1;
  for (let cp = 0; cp <= MAX + 1; cp++) {
    const inside = cp <= MAX && test(cp);
    if (inside && start < 0) start = cp;
    if (!inside && start >= 0) {
      out.push([start, cp - 1]);
      start = -1;
    }
  }
  return out;
}
const property = (re) => ranges((cp) => !isSurrogate(cp) && re.test(chr(cp)));

const hex = (x) => '0x' + x.toString(16).toUpperCase().padStart(4, '0');
function emitRanges(name, doc, list) {
  const lines = list.map(([a, b]) => `    {${hex(a)}, ${hex(b)}},`);
  return `// ${doc}\ninline constexpr CodePointRange ${name}[] = {\n${lines.join('\n')}\n};\n`;
}

// Hangul syllables decompose by arithmetic (Unicode 3.12), which the C++ does; check here
// that the engine agrees with that arithmetic for every syllable, so the table can omit them.
const SBase = 0xac00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11a7, SCount = 11172;
for (let s = 0; s < SCount; s++) {
  const want = [LBase + Math.floor(s / 588), VBase + Math.floor((s % 588) / 28)];
  if (s % 28) want.push(TBase + (s % 28));
  const got = cps(chr(SBase + s).normalize('NFD'));
  if (got.join() !== want.join()) throw new Error(`Hangul ${hex(SBase + s)} decomposes otherwise`);
}
const isHangul = (cp) => cp >= SBase && cp < SBase + SCount;

// Full canonical decompositions of single code points (already in canonical order).
const decomp = [];
for (let cp = 0; cp <= MAX; cp++) {
  if (isSurrogate(cp) || isHangul(cp)) continue;
  const d = cps(chr(cp).normalize('NFD'));
  if (d.length !== 1 || d[0] !== cp) decomp.push([cp, d]);
}

// Full lower-case mappings (toLowerCase of the code point alone: SpecialCasing's
// unconditional mappings included, so U+0130 'İ' becomes "i̇", two code points, as in
// Python 3's str.lower). The one context-dependent mapping, final sigma, is the C++'s.
const lower = [];
for (let cp = 0; cp <= MAX; cp++) {
  if (isSurrogate(cp)) continue;
  const l = cps(chr(cp).toLowerCase());
  if (l.length !== 1 || l[0] !== cp) lower.push([cp, l]);
}
const sigmaAlone = cps('Σ'.toLowerCase()), sigmaFinal = cps('AΣ'.toLowerCase()).slice(1);
if (sigmaAlone[0] !== 0x3c3 || sigmaFinal[0] !== 0x3c2) throw new Error('final sigma rule changed');

// Canonical ordering (NFD sorts each run of non-starters by combining class). BERT drops
// the nonspacing marks (Mn) afterwards, so only the order among the non-starters that are
// not Mn can show in its output: find them, and rank them by the order NFD gives them.
// Probes: U+0334 has the lowest non-zero class (1), U+0345 the highest (240).
const isMn = (cp) => /^\p{Mn}$/u.test(chr(cp));
const reorders = (a, b) => cps((chr(a) + chr(b)).normalize('NFD'))[0] === b;  // class(a) > class(b) > 0
const nonStarters = [];
for (let cp = 0; cp <= MAX; cp++) {
  if (isSurrogate(cp) || isHangul(cp) || isMn(cp)) continue;
  const d = cps(chr(cp).normalize('NFD'));
  if (d.length !== 1 || d[0] !== cp) continue;  // replaced by its decomposition
  if (reorders(cp, 0x334) || reorders(0x345, cp)) nonStarters.push(cp);
}
// Insertion sort by the engine's own comparison; equal classes get equal ranks.
const sorted = [];
for (const cp of nonStarters) {
  let i = sorted.length;
  while (i > 0 && reorders(sorted[i - 1], cp)) i--;
  sorted.splice(i, 0, cp);
}
const rank = new Map();
let r = 1;
sorted.forEach((cp, i) => {
  if (i > 0 && reorders(cp, sorted[i - 1])) r++;
  rank.set(cp, r);
});
const rankList = [...rank].sort((a, b) => a[0] - b[0]);
// Mn marks of class 0 are starters: a run of non-starters ends at them.
const starterMarks = ranges((cp) => !isSurrogate(cp) && isMn(cp) &&
                                    cps(chr(cp).normalize('NFD')).length === 1 &&
                                    !reorders(cp, 0x334) && !reorders(0x345, cp));

function emitMappings(name, doc, list) {
  const pool = [];
  const rows = list.map(([cp, to]) => {
    const row = `    {${hex(cp)}, ${pool.length}, ${to.length}},`;
    pool.push(...to);
    return row;
  });
  const poolLines = [];
  for (let i = 0; i < pool.length; i += 8)
    poolLines.push('    ' + pool.slice(i, i + 8).map(hex).join(', ') + ',');
  return `// ${doc}\ninline constexpr CodePointMapping ${name}[] = {\n${rows.join('\n')}\n};\n` +
         `inline constexpr char32_t ${name}Pool[] = {\n${poolLines.join('\n')}\n};\n`;
}

const uni = process.versions.unicode || 'unknown';
process.stdout.write(
    `// Generated by gen_unicode_tables.js from Unicode ${uni} (node ${process.version}).\n` +
    '// Do not edit by hand. Ranges are sorted, disjoint and inclusive; mappings sorted.\n' +
    '// clang-format off\n' +
    emitRanges('kPunctuationRanges', 'General category P (\\p{P})', property(/^\p{P}$/u)) +
    emitRanges('kOtherRanges', 'General category C: Cc, Cf, Cn, Co, Cs (\\p{C})',
               property(/^\p{C}$/u).concat([[0xd800, 0xdfff]]).sort((a, b) => a[0] - b[0])) +
    emitRanges('kSeparatorRanges', 'General category Z: Zs, Zl, Zp (\\p{Z})', property(/^\p{Z}$/u)) +
    emitRanges('kNonspacingMarkRanges', 'General category Mn (\\p{Mn})', property(/^\p{Mn}$/u)) +
    emitRanges('kStarterMarkRanges', 'Mn marks of canonical combining class 0', starterMarks) +
    emitRanges('kCasedRanges', 'Derived property Cased (\\p{Cased})', property(/^\p{Cased}$/u)) +
    emitRanges('kCaseIgnorableRanges', 'Derived property Case_Ignorable (\\p{Case_Ignorable})',
               property(/^\p{Case_Ignorable}$/u)) +
    emitMappings('kLowerCase', 'toLowerCase() of each code point it changes', lower) +
    emitMappings('kDecomposition',
                 "normalize('NFD') of each code point it changes, Hangul syllables aside",
                 decomp) +
    '// Non-starters that are not Mn, ranked by canonical combining class (1 = lowest).\n' +
    'inline constexpr CodePointRank kNonStarterRanks[] = {\n' +
    rankList.map(([cp, k]) => `    {${hex(cp)}, ${k}},`).join('\n') + '\n};\n' +
    '// clang-format on\n');
