#!/usr/bin/env node
// Encodes a text file with the npm package gpt-3-encoder (a JavaScript port of OpenAI's
// encoder.py) and writes the ids as raw uint16: the reference the C++ tokenizer's tests
// compare against.
//   node reference_encode.js GPT3_ENCODER_DIR TEXT_FILE OUT_FILE
//
// The package's encode() concatenates arrays in a loop, quadratic in the text's length
// (minutes for a book), so the text is split into words with GPT-2's pattern first and
// each word is encoded on its own: a word encodes to the same tokens alone as in context,
// since the pattern never merges across word boundaries.
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, input, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: reference_encode.js GPT3_ENCODER_DIR TEXT_FILE OUT_FILE');
  process.exit(2);
}
const {encode} = require(path.resolve(dir, 'Encoder.js'));
const text = fs.readFileSync(input, 'utf8');
const pat = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const ids = [];
for (const m of text.matchAll(pat))
  for (const id of encode(m[0])) ids.push(id);
fs.writeFileSync(output + '.tmp', Buffer.from(Uint16Array.from(ids).buffer));
fs.renameSync(output + '.tmp', output);
console.log(`reference_encode: ${ids.length} tokens -> ${output}`);
