#!/usr/bin/env node
// Writes a text in many scripts for the BERT tokenizer's parity test: hand-picked hard
// cases, then pseudo-random words drawn from Unicode blocks where lower-casing, NFD,
// accent stripping, canonical reordering, CJK spacing, punctuation and control characters
// all have work to do. Deterministic (a fixed linear congruential generator), so the
// file is the same on every run. Leaves out what the reference tokenizer is known to do
// otherwise than Google's (bert_reference.mjs): ideographs beyond U+FFFF and unassigned
// code points.
//   node bert_unicode_text.js OUT
'use strict';
const fs = require('fs');

const out = process.argv[2];
if (!out) {
  console.error('usage: bert_unicode_text.js OUT');
  process.exit(2);
}

const cases = [
  'Héllo, WÖRLD! naïve café résumé Ångström', 'ΟΔΟΣ ΟΔΟΣ. ΣΑΣ ΣΑΣ, Σ ΑΣ\u00ADΑ ΑΣ\u00AD',
  'İstanbul İİ ǅemal ǈ ǋ ß ẞ ŉ', 'unaffable [MASK] [CLS] [SEP] [UNK]', 'x'.repeat(100),
  'y'.repeat(101), 'é'.repeat(101), '中文字符和標點。日本語のテキスト', '한국어 텍스트 각',
  'a\u0000b\uFFFDc\u0001d\u200Be\uFEFFf\u2028g\u2029h\u00A0i\u3000j\tk\r\nl\vm\fn',
  'q\u0307\u0323 \u1E9B\u0323 \u0344 \u{1D15F}\u{1D165}\u{1D16D} a\u0F71\u0F72\u0F74',
  '\u{1D160}\u0301\u{1D16D}\u{1D165} \u302E\u302F\u0301 x\u{16FF0}\u0323\u1734 ｆｕｌｌｗｉｄｔｈ！',
  '“quoted” ‘single’ «guillemets» — – ‑ … ¿qué? ¡sí! $5 + 3 = 8 % ^ ` ~ | < >',
];

let state = 20240601;
const rnd = () => {
  state = (state * 1103515245 + 12345) % 2147483648;
  return state / 2147483648;
};
const blocks = [
  [0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x52f], [0x590, 0x5ff],
  [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0xf00, 0xfff], [0x10a0, 0x10ff],
  [0x1100, 0x11ff], [0x13a0, 0x13ff], [0x1e00, 0x1fff], [0x2000, 0x206f], [0x2100, 0x214f],
  [0x2c00, 0x2c5f], [0x3000, 0x30ff], [0x3400, 0x3420], [0x4e00, 0x4e80], [0xac00, 0xac40],
  [0xf900, 0xf920], [0xff00, 0xffef], [0x0, 0x1f], [0x80, 0x9f], [0xe000, 0xe010],
  [0x10400, 0x1044f], [0x1d15e, 0x1d172], [0x16ff0, 0x16ff1], [0x1e900, 0x1e94b],
  [0x1f300, 0x1f64f],
];
const ok = (cp) => !(cp >= 0xd800 && cp <= 0xdfff) && !/^\p{Cn}$/u.test(String.fromCodePoint(cp));
const words = [...cases];
for (let w = 0; w < 60000; w++) {
  const [lo, hi] = blocks[Math.floor(rnd() * blocks.length)];
  const len = 1 + Math.floor(rnd() * 8);
  let word = '';
  for (let i = 0; i < len; i++) {
    const cp = lo + Math.floor(rnd() * (hi - lo + 1));
    if (ok(cp)) word += String.fromCodePoint(cp);
  }
  words.push(word);
}
let text = '';
for (const word of words) text += word + (rnd() < 0.85 ? ' ' : rnd() < 0.5 ? '\n' : '');
fs.writeFileSync(out, text);
