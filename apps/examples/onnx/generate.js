// Greedy generation in ONNX Runtime with a GPT-2 that zrt-ckpt exported:
//   NODE_PATH=ORT/node_modules node generate.js MODEL.onnx '[464, 1893]' [TOKENS]
// prints the prompt's ids and TOKENS (default 8) more, as one JSON array.
const ort = require('onnxruntime-node');

async function main() {
  const [model, prompt, count = '8'] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);  // by path: finds external data
  const ids = JSON.parse(prompt);
  for (let n = 0; n < Number(count); n++) {
    const input = new ort.Tensor('int64', BigInt64Array.from(ids, (t) => BigInt(t)), [1, ids.length]);
    const { logits } = await session.run({ input_ids: input });  // [1, seq, vocab]
    const vocab = logits.dims[2];
    const last = logits.data.subarray((ids.length - 1) * vocab);
    let best = 0;
    for (let v = 1; v < vocab; v++) if (last[v] > last[best]) best = v;
    ids.push(best);
  }
  console.log(JSON.stringify(ids));
}
main().catch((e) => { console.error(`generate: ${e.message}`); process.exit(1); });
