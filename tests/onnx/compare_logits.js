// Runs an exported GPT-2 in ONNX Runtime (onnxruntime-node, CPU) on the token ids zrt-gpt2
// dumped (--dump-logits), and compares its logits with zrt-gpt2's own:
//   NODE_PATH=DIR/node_modules node compare_logits.js MODEL.onnx LOGITS
// Prints one JSON line {batch, seq, vocab, max_abs_diff, max_abs_logit, argmax_agree}.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

async function main() {
  const [model, logitsPath] = process.argv.slice(2);
  const meta = JSON.parse(fs.readFileSync(logitsPath + '.json', 'utf8'));
  const raw = fs.readFileSync(logitsPath);
  const want = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  const { batch, seq, vocab } = meta;
  // By path: external data is found beside the model.
  const session = await ort.InferenceSession.create(path.resolve(model), {
    executionProviders: ['cpu'],
    logSeverityLevel: 3,
  });
  const ids = BigInt64Array.from(meta.input_ids, (v) => BigInt(v));
  const out = await session.run({ input_ids: new ort.Tensor('int64', ids, [batch, seq]) });
  const got = out.logits;
  if (got.dims.join(',') !== [batch, seq, vocab].join(','))
    throw new Error(`logits of shape [${got.dims}], expected [${batch}, ${seq}, ${vocab}]`);
  let maxDiff = 0, maxLogit = 0, agree = 0;
  for (let row = 0; row < batch * seq; row++) {
    let best = 0, bestWant = 0;
    for (let v = 0; v < vocab; v++) {
      const i = row * vocab + v;
      maxDiff = Math.max(maxDiff, Math.abs(got.data[i] - want[i]));
      maxLogit = Math.max(maxLogit, Math.abs(want[i]));
      if (got.data[i] > got.data[row * vocab + best]) best = v;
      if (want[i] > want[row * vocab + bestWant]) bestWant = v;
    }
    if (best === bestWant) agree++;
  }
  console.log(JSON.stringify({ batch, seq, vocab, max_abs_diff: maxDiff, max_abs_logit: maxLogit,
                               argmax_agree: agree / (batch * seq) }));
}

main().catch((e) => {
  console.error(`compare_logits: ${e.message}`);
  process.exit(1);
});
