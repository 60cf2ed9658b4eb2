// Runs an exported model in ONNX Runtime (onnxruntime-node, CPU) on the inputs zrt-gpt2 or
// zrt-bert dumped (--dump-logits), and compares its outputs with the app's own:
//   NODE_PATH=DIR/node_modules node compare_logits.js MODEL.onnx LOGITS
// Prints one JSON line: GPT-2 {batch, seq, vocab, max_abs_diff, max_abs_logit, argmax_agree};
// BERT {batch, seq, tokens, max_abs_diff (the pooled output), mlm_prob_diff, nsp_prob_diff,
// argmax_agree (MLM at every real token)}, probabilities being what zrt-bert's heads keep.
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
  if (meta.model === 'bert') return bert(session, meta, want);
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

// The largest |softmax(row) - p| over @p n values of logits at @p at, and whether the
// argmax agrees.
function softmaxDiff(logits, at, n, p, pAt) {
  let max = -Infinity, best = 0, bestP = 0, sum = 0, diff = 0;
  for (let v = 0; v < n; v++) max = Math.max(max, logits[at + v]);
  for (let v = 0; v < n; v++) sum += Math.exp(logits[at + v] - max);
  for (let v = 0; v < n; v++) {
    diff = Math.max(diff, Math.abs(Math.exp(logits[at + v] - max) / sum - p[pAt + v]));
    if (logits[at + v] > logits[at + best]) best = v;
    if (p[pAt + v] > p[pAt + bestP]) bestP = v;
  }
  return { diff, agree: best === bestP };
}

async function bert(session, meta, want) {
  const { batch, seq, vocab, hidden, mlm_rows: rows } = meta;
  const tensor = (name) => new ort.Tensor('int64', BigInt64Array.from(meta[name], (v) => BigInt(v)), [batch, seq]);
  const out = await session.run({ input_ids: tensor('input_ids'),
                                  token_type_ids: tensor('token_type_ids'),
                                  attention_mask: tensor('attention_mask') });
  const P = rows.length, nspAt = P * vocab, pooledAt = nspAt + batch * 2;
  let mlm = 0, agree = 0, nsp = 0, pooled = 0;
  rows.forEach((row, i) => {
    const r = softmaxDiff(out.mlm_logits.data, row * vocab, vocab, want, i * vocab);
    mlm = Math.max(mlm, r.diff);
    agree += r.agree ? 1 : 0;
  });
  for (let b = 0; b < batch; b++)
    nsp = Math.max(nsp, softmaxDiff(out.nsp_logits.data, b * 2, 2, want, nspAt + b * 2).diff);
  for (let i = 0; i < batch * hidden; i++)
    pooled = Math.max(pooled, Math.abs(out.pooled_output.data[i] - want[pooledAt + i]));
  console.log(JSON.stringify({ batch, seq, tokens: P, max_abs_diff: pooled, mlm_prob_diff: mlm,
                               nsp_prob_diff: nsp, argmax_agree: agree / P }));
}

main().catch((e) => {
  console.error(`compare_logits: ${e.message}`);
  process.exit(1);
});
