#!/usr/bin/python3
"""Configured models out to ONNX: zrt-model trains three models a few steps at stage 3 on 2
ranks and exports them (--onnx) with their predictions (--predict); each file passes ONNX's
checker (full_check) and computes in ONNX Runtime what zrt-model predicted.

    test_model_onnx.py BUILD_DIR ORT_DIR

- the MLP of tests/model (linear, gelu erf and tanh, layernorm, a residual block, tanh);
- the small GPT of tests/model (embedding: token ids as float input, 2 causal transformer
  blocks, layernorm, linear to the vocabulary);
- the "other" model of tests/model: sigmoid, attention on (T, 3C) rows, relu in a residual
  block, a non-causal transformer block, dropout, a linear layer without bias;
each on a batch other than the training batch (the export's batch is dynamic).

Tolerance: max |ONNX Runtime - zrt-model| <= 1e-5 absolute on every output value. Both
compute in float32, in other orders (OpenBLAS against MLAS, their own softmax, erf, tanh);
measured here: 3.6e-7 (MLP, outputs up to 1.3), 6.6e-7 (GPT, logits up to 1.8), 1.6e-7
(other, outputs up to 0.4), a margin of 15x or more.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(here, "..", "model"))
import model_common as mc  # noqa: E402

build, ort_dir = sys.argv[1], sys.argv[2]
tool = mc.zrt_model(build)
env_node = dict(mc.ENV, NODE_PATH=os.path.join(ort_dir, "node_modules"))
TOLERANCE = 1e-5
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    for name, config, (x, y), batch in (("mlp", mc.MLP, mc.mlp_data(), 32),
                                        ("gpt", mc.GPT, mc.gpt_data(), 16),
                                        ("other", mc.OTHER, mc.other_data(), 10)):
        cfg = mc.write_config(os.path.join(tmp, f"{name}.json"), config)
        xf = mc.write(os.path.join(tmp, f"{name}_x.f32"), x)
        yf = mc.write(os.path.join(tmp, f"{name}_y.f32"), y)
        model, predict = os.path.join(tmp, f"{name}.onnx"), os.path.join(tmp, f"{name}_p.f32")
        r = mc.run([mc.MPIRUN, "2", tool, "train", cfg, "--input", xf, "--target", yf, "--batch",
                    str(batch), "--steps", "3", "--onnx", model, "--predict", predict])
        check(r.returncode == 0 and os.path.exists(model) and os.path.exists(predict),
              f"{name}: 3 steps at stage 3 on 2 ranks, --onnx and --predict {mc.said(r)}")
        if r.returncode != 0:
            continue
        # The checker rewrites the file it checks (shape inference): check a copy.
        os.makedirs(os.path.join(tmp, f"check-{name}"))
        copy_path = os.path.join(tmp, f"check-{name}", os.path.basename(model))
        shutil.copy(model, copy_path)
        r = subprocess.run(["/usr/bin/python3", "-c",
                            "import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)",
                            copy_path], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"{name}: onnx.checker.check_model(full_check=True) passes "
              f"{mc.said(r)}")
        r = subprocess.run(["node", os.path.join(here, "run_model.js"), model, xf, predict,
                            json.dumps(config["model"]["input"])],
                           capture_output=True, text=True, timeout=120, env=env_node)
        result = json.loads(r.stdout) if r.returncode == 0 else {}
        print(f"     {name}: {result}")
        check(result.get("samples") == len(x) and result.get("max_abs_diff", 1) <= TOLERANCE,
              f"{name}: ONNX Runtime computes zrt-model's predictions of {len(x)} samples within "
              f"{TOLERANCE:g} absolute (max |difference| {result.get('max_abs_diff')}, outputs up to "
              f"{result.get('max_abs_output')}) {mc.said(r)}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
