// Runs a configured model's ONNX export (zrt_model_export: input "input", output "output",
// a dynamic batch) in ONNX Runtime (onnxruntime-node, CPU) on a raw float32 input file and
// compares its output with zrt-model's --predict:
//   NODE_PATH=DIR/node_modules node run_model.js MODEL.onnx INPUT.f32 PREDICT.f32 SHAPE_JSON
// SHAPE_JSON is the input's per-sample shape, e.g. "[16]". Prints one JSON line:
// {samples, dims (the output's), max_abs_diff, max_rel_diff (|d| / max(|want|, 1e-3)),
//  max_abs_output}.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

function floats(file) {
  const raw = fs.readFileSync(file);
  return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
}

async function main() {
  const [model, inputPath, predictPath, shapeJson] = process.argv.slice(2);
  const perSample = JSON.parse(shapeJson);
  const input = floats(inputPath);
  const want = floats(predictPath);
  const n = perSample.reduce((a, b) => a * b, 1);
  const samples = input.length / n;
  const session = await ort.InferenceSession.create(path.resolve(model), {
    executionProviders: ['cpu'],
    logSeverityLevel: 3,
  });
  const out = await session.run({ input: new ort.Tensor('float32', input, [samples, ...perSample]) });
  const got = out.output;
  if (got.dims[0] !== samples || got.data.length !== want.length)
    throw new Error(`output of shape [${got.dims}] (${got.data.length} values), ` +
                    `but --predict wrote ${want.length} values for ${samples} samples`);
  let maxAbs = 0, maxRel = 0, maxOut = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got.data[i] - want[i]);
    if (!(d <= maxAbs)) maxAbs = Number.isNaN(d) ? Infinity : d;
    maxRel = Math.max(maxRel, d / Math.max(Math.abs(want[i]), 1e-3));
    maxOut = Math.max(maxOut, Math.abs(want[i]));
  }
  console.log(JSON.stringify({ samples, dims: got.dims, max_abs_diff: maxAbs, max_rel_diff: maxRel,
                               max_abs_output: maxOut }));
}

main().catch((e) => {
  console.error(`run_model: ${e.message}`);
  process.exit(1);
});
