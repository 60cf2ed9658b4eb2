#!/usr/bin/python3
"""Configured models across ZeRO stages and rank counts (zrt-model, 2 ranks):

- deterministic mode ("zero": {"deterministic": true}): stages 0, 1, 2 and 3 train to the
  same bytes: the exported final weights (safetensors) are identical, and so is every
  step's printed loss (the MLP, the small GPT, and the "other" model with dropout p 0.2,
  whose masks depend on neither the stage nor the configuration's file name);
- a checkpoint saved on 2 ranks at stage 3 (--save) loads on 1 rank (zrt-model predict
  --load) and predicts what the 2-rank model predicted (--predict): bitwise equal, as the
  forward pass of one sample does not depend on the rank count.

    test_stages.py BUILD_DIR
"""
import copy
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_common as mc  # noqa: E402

build = sys.argv[1]
tool = mc.zrt_model(build)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def stages(name, config, x, y, batch, steps, tmp):
    xf, yf = mc.write(os.path.join(tmp, f"{name}_x.f32"), x), mc.write(os.path.join(tmp, f"{name}_y.f32"), y)
    exported, losses = {}, {}
    for stage in (0, 1, 2, 3):
        c = copy.deepcopy(config)
        c["zero_optimization"] = {"stage": stage}
        cfg = mc.write_config(os.path.join(tmp, f"{name}_s{stage}.json"), c)
        out = os.path.join(tmp, f"{name}_s{stage}.safetensors")
        start = time.monotonic()
        r = mc.run([mc.MPIRUN, "2", tool, "train", cfg, "--input", xf, "--target", yf, "--batch",
                    str(batch), "--steps", str(steps), "--losses", "--export", out])
        check(r.returncode == 0 and os.path.exists(out),
              f"{name}: stage {stage} trains {steps} steps on 2 ranks ({time.monotonic() - start:.1f} s) "
              f"{mc.said(r)}")
        if r.returncode == 0 and os.path.exists(out):
            with open(out, "rb") as f:
                exported[stage] = f.read()
            losses[stage] = mc.losses_of(r.stdout)
    for stage in (1, 2, 3):
        if stage in exported and 0 in exported:
            same = exported[stage] == exported[0]
            detail = ""
            if not same:
                a, b = mc.read_safetensors(os.path.join(tmp, f"{name}_s0.safetensors")), \
                    mc.read_safetensors(os.path.join(tmp, f"{name}_s{stage}.safetensors"))
                detail = ", ".join(f"{k}: max |diff| {np.abs(a[k] - b[k]).max():.3g}"
                                   for k in a if k in b and not np.array_equal(a[k], b[k]))
            check(same, f"{name}: stage {stage}'s final weights are stage 0's, byte for byte "
                  f"({len(exported[stage])} bytes) {detail}")
            check(losses[stage] == losses[0] and len(losses[0]) == steps,
                  f"{name}: stage {stage}'s losses are stage 0's")


def checkpoint(name, config, x, y, batch, steps, tmp):
    cfg = mc.write_config(os.path.join(tmp, f"{name}_ckpt.json"), config)
    xf, yf = mc.write(os.path.join(tmp, f"{name}_x.f32"), x), mc.write(os.path.join(tmp, f"{name}_y.f32"), y)
    ckpt = os.path.join(tmp, f"{name}.h5")
    p2, p1 = os.path.join(tmp, f"{name}_p2.f32"), os.path.join(tmp, f"{name}_p1.f32")
    # train --predict: the trained model in memory, on 2 ranks, predicts every sample of --input.
    r = mc.run([mc.MPIRUN, "2", tool, "train", cfg, "--input", xf, "--target", yf, "--batch",
                str(batch), "--steps", str(steps), "--save", ckpt, "--predict", p2])
    check(r.returncode == 0 and os.path.exists(ckpt) and os.path.exists(p2),
          f"{name}: 2 ranks at stage 3 train, save a checkpoint and predict {mc.said(r)}")
    r = mc.run([tool, "predict", cfg, "--load", ckpt, "--input", xf, "--predict", p1])
    check(r.returncode == 0, f"{name}: 1 rank loads the 2-rank checkpoint and predicts "
          f"{mc.said(r)}")
    if os.path.exists(p1) and os.path.exists(p2):
        a, b = np.fromfile(p1, dtype="<f4"), np.fromfile(p2, dtype="<f4")
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
        check(a.shape == b.shape and a.size > 0 and np.array_equal(a, b),
              f"{name}: 1 rank's predictions are the 2 ranks' ({a.size} values, max |diff| {diff:.3g})")


with tempfile.TemporaryDirectory() as tmp:
    x, y = mc.mlp_data()
    stages("mlp", mc.MLP, x, y, 32, 6, tmp)
    checkpoint("mlp", mc.MLP, x, y, 32, 6, tmp)
    x, y = mc.gpt_data()
    stages("gpt", mc.GPT, x, y, 16, 4, tmp)
    checkpoint("gpt", mc.GPT, x, y, 16, 4, tmp)
    # Dropout's masks do not depend on the stage either.
    other = copy.deepcopy(mc.OTHER)
    other["model"]["layers"][5]["p"] = 0.2
    x, y = mc.other_data()
    stages("other-dropout", other, x, y, 10, 4, tmp)
    # Nor on where the configuration comes from: given as JSON text rather than a file, the
    # same training (the masks once hashed the file's path).
    out = os.path.join(tmp, "other-dropout_text.safetensors")
    text = json.dumps(dict(other, zero_optimization={"stage": 0}))
    r = mc.run([mc.MPIRUN, "2", tool, "train", text, "--input", os.path.join(tmp, "other-dropout_x.f32"),
                "--target", os.path.join(tmp, "other-dropout_y.f32"), "--batch", "10", "--steps", "4",
                "--export", out])
    with open(os.path.join(tmp, "other-dropout_s0.safetensors"), "rb") as f:
        from_file = f.read()
    check(r.returncode == 0 and os.path.exists(out) and open(out, "rb").read() == from_file,
          f"other-dropout: the configuration as JSON text trains to its file's bytes {mc.said(r)}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
