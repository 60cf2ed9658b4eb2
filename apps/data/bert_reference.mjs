#!/usr/bin/env node
// The reference for the C++ WordPiece tokenizer's parity test: Hugging Face's BERT
// tokenizer in tokenizers.js (@huggingface/tokenizers, pure JavaScript, run offline) given
// a tokenizer.json built here from the converted vocabulary, as transformers' BertTokenizer
// would write it: BertNormalizer (clean_text, handle_chinese_chars, lowercase,
// strip_accents), BertPreTokenizer, WordPiece ("##", max_input_chars_per_word 100, [UNK]).
//   node bert_reference.mjs TOKENIZERS_MJS VOCAB_TXT OUT_PREFIX FILE...
// Writes OUT_PREFIX.bin (every file's ids as uint16, one file after another) and
// OUT_PREFIX.json ({"files": [{"name", "count", "deviations"}]}, names relative to
// OUT_PREFIX's folder).
//
// Where tokenizers.js departs from Google's tokenization.py (checked in its source):
//   - it spaces CJK ideographs by UTF-16 code unit, so the ideographs beyond U+FFFF
//     (Extensions B-F, the compatibility supplement) are not spaced;
//   - its control test is \p{Cc}|\p{Cf}|\p{Co}|\p{Cs}, without Cn, so it keeps unassigned
//     code points that Google drops.
// The C++ follows Google. "deviations" counts such code points in each file; the test
// compares the files that have none (Moby Dick and the State of the Union have none).
// No added tokens: Google's tokenizer reads "[MASK]" in a text as three words, so must this.
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [mjs, vocabTxt, outPrefix, ...files] = process.argv.slice(2);
if (!mjs || !vocabTxt || !outPrefix || files.length === 0) {
  console.error('usage: bert_reference.mjs TOKENIZERS_MJS VOCAB_TXT OUT_PREFIX FILE...');
  process.exit(2);
}
const { Tokenizer } = await import(pathToFileURL(mjs).href);

const tokens = fs.readFileSync(vocabTxt, 'utf8').split('\n');
if (tokens[tokens.length - 1] === '') tokens.pop();
const tokenizerJson = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [],
  normalizer: {
    type: 'BertNormalizer',
    clean_text: true,
    handle_chinese_chars: true,
    strip_accents: null,  // follows lowercase, as BertTokenizerFast writes it
    lowercase: true,
  },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: null,
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: {
    type: 'WordPiece',
    unk_token: '[UNK]',
    continuing_subword_prefix: '##',
    max_input_chars_per_word: 100,
    vocab: Object.fromEntries(tokens.map((t, id) => [t, id])),
  },
};
const tokenizer = new Tokenizer(tokenizerJson, {});

const astralCjk = (cp) => (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
                          (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
                          (cp >= 0x2f800 && cp <= 0x2fa1f);
const manifest = { reference: '@huggingface/tokenizers', files: [] };
const chunks = [];
let total = 0;
for (const file of files) {
  const text = fs.readFileSync(file, 'utf8');
  let deviations = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (astralCjk(cp) || /^\p{Cn}$/u.test(ch)) deviations++;
  }
  const { ids } = tokenizer.encode(text, { add_special_tokens: false });
  const u16 = Uint16Array.from(ids);
  if (u16.some((v, i) => v !== ids[i])) throw new Error(`${file}: an id beyond uint16`);
  chunks.push(Buffer.from(u16.buffer));
  // Named relative to the output's folder, where the test looks.
  const name = path.relative(path.dirname(path.resolve(outPrefix)), path.resolve(file));
  manifest.files.push({ name, count: ids.length, deviations });
  total += ids.length;
}
fs.writeFileSync(outPrefix + '.bin.tmp', Buffer.concat(chunks));
fs.writeFileSync(outPrefix + '.json.tmp', JSON.stringify(manifest, null, 1) + '\n');
fs.renameSync(outPrefix + '.bin.tmp', outPrefix + '.bin');
fs.renameSync(outPrefix + '.json.tmp', outPrefix + '.json');
console.error(`prepare: reference ids of ${files.length} files: ${total} tokens`);
