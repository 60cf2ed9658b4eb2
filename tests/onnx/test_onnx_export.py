#!/usr/bin/env python3
"""Models out to ONNX: a GPT-2 and a BERT trained at stage 3 on 2 ranks, exported by
zrt-ckpt, pass ONNX's checker (full_check) and compute in ONNX Runtime what zrt-gpt2's and
zrt-bert's forward passes compute on a batch of real tokens.

    test_onnx_export.py BUILD_DIR DATA_CACHE ORT_DIR

- zrt-gpt2 --dump-logits: the logits of one validation batch and its token ids;
- zrt-ckpt export --format onnx, inline and with --external-data;
- onnx.checker.check_model(full_check=True) (Debian's python3-onnx) on each;
- compare_logits.js in onnxruntime-node: max |difference| <= 1e-4, the same argmax;
- BERT: a batch with padding; the pooled output within 1e-4, the MLM (at every real token)
  and NSP probabilities within 1e-5 of zrt-bert's, the same MLM argmax;
- bad input: a checkpoint without the model's shape, an output folder that does not exist,
  a full disk (the system's reason): exit status 2, the culprit named, no file left behind.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

build, cache, ort_dir = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.path.dirname(os.path.abspath(__file__))
mpirun = os.path.join(here, "..", "..", "scripts", "mpirun-local")
apps = os.path.join(build, "apps")
gpt2, ckpt_tool = os.path.join(apps, "zrt-gpt2"), os.path.join(apps, "zrt-ckpt")
env = dict(os.environ, OPENBLAS_NUM_THREADS="1", NODE_PATH=os.path.join(ort_dir, "node_modules"))
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args, timeout=300, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(cache, "moby-dick")
    shape = ["--config", "d2", "--seq", "64", "--batch", "2", "--data", data]
    ckpt = os.path.join(tmp, "d2.h5")
    r = run([mpirun, "2", gpt2] + shape + ["--steps", "6", "--zero-stage", "3", "--eval-batches",
                                           "1", "--sample-every", "-1", "--save", ckpt])
    check(r.returncode == 0, f"d2 trains 6 steps at stage 3 on 2 ranks ({r.stderr[-300:]})")
    logits = os.path.join(tmp, "logits.bin")
    r = run([gpt2] + shape + ["--init-from", ckpt, "--dump-logits", logits])
    check(r.returncode == 0 and os.path.getsize(logits) == 2 * 64 * 50257 * 4,
          f"zrt-gpt2 --dump-logits writes one batch's logits ({r.stderr[-300:]})")

    # fp16 weights (computed in fp32): 4.1e-4 measured here (logits up to 2.4), so 5e-3
    # leaves a margin.
    tolerance = {"inline": 1e-4, "external": 1e-4, "fp16": 5e-3}
    for variant, extra in (("inline", []), ("external", ["--external-data"]),
                           ("fp16", ["--dtype", "fp16"])):
        model = os.path.join(tmp, f"{variant}.onnx")
        r = run([ckpt_tool, "export", ckpt, "--format", "onnx", "-o", model] + extra)
        check(r.returncode == 0 and "input_ids [batch, seq] -> logits [batch, seq, 50257]" in r.stdout
              and ("fp16 weights" in r.stdout) == (variant == "fp16"),
              f"{variant}: zrt-ckpt export --format onnx ({r.stdout.strip()} {r.stderr.strip()})")
        side = model + ".data"
        check(os.path.exists(side) == (variant == "external"),
              f"{variant}: the weights {'beside' if variant == 'external' else 'inside'} the model")
        # The checker rewrites the file it checks (shape inference): check a copy, by path so
        # that external data resolves.
        copy_dir = os.path.join(tmp, f"check-{variant}")
        os.makedirs(copy_dir)
        shutil.copy(model, copy_dir)
        if os.path.exists(side):
            shutil.copy(side, copy_dir)
        r = run(["/usr/bin/python3", "-c",
                 "import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)",
                 os.path.join(copy_dir, os.path.basename(model))])
        check(r.returncode == 0, f"{variant}: onnx.checker.check_model(full_check=True) passes "
              f"{r.stderr.strip()[-300:]}")
        r = run(["node", os.path.join(here, "compare_logits.js"), model, logits])
        result = json.loads(r.stdout) if r.returncode == 0 else {}
        print(f"     {variant}: {result}")
        check(result.get("max_abs_diff", 1) <= tolerance[variant] and
              result.get("argmax_agree", 0) >= (1 if variant != "fp16" else 0.99),
              f"{variant}: ONNX Runtime's logits are zrt-gpt2's (max |difference| "
              f"{result.get('max_abs_diff')}, of logits up to {result.get('max_abs_logit')}) "
              f"{r.stderr.strip()[-300:]}")

    # BERT: a batch of 4 x 128 whose shorter sequences are padded.
    bert_app = os.path.join(apps, "zrt-bert")
    bshape = ["--config", "bert-tiny", "--seq", "128", "--batch", "4", "--data",
              os.path.join(cache, "bert", "moby-dick")]
    bckpt = os.path.join(tmp, "bert.h5")
    r = run([mpirun, "2", bert_app] + bshape + ["--steps", "3", "--zero-stage", "3",
                                               "--eval-batches", "1", "--save", bckpt])
    check(r.returncode == 0, f"bert-tiny trains 3 steps at stage 3 on 2 ranks ({r.stderr[-300:]})")
    bdump = os.path.join(tmp, "bert.bin")
    r = run([bert_app] + bshape + ["--init-from", bckpt, "--dump-logits", bdump])
    check(r.returncode == 0, f"zrt-bert --dump-logits ({r.stderr[-300:]})")
    bmodel = os.path.join(tmp, "bert.onnx")
    r = run([ckpt_tool, "export", bckpt, "--format", "onnx", "-o", bmodel])
    check(r.returncode == 0 and "-> mlm_logits [batch, seq, 30522], nsp_logits [batch, 2], "
          "pooled_output [batch, 128]" in r.stdout, f"bert: zrt-ckpt export --format onnx "
          f"({r.stdout.strip()} {r.stderr.strip()})")
    os.makedirs(os.path.join(tmp, "check-bert"))
    shutil.copy(bmodel, os.path.join(tmp, "check-bert"))
    r = run(["/usr/bin/python3", "-c",
             "import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)",
             os.path.join(tmp, "check-bert", "bert.onnx")])
    check(r.returncode == 0, f"bert: onnx.checker.check_model(full_check=True) passes "
          f"{r.stderr.strip()[-300:]}")
    r = run(["node", os.path.join(here, "compare_logits.js"), bmodel, bdump])
    result = json.loads(r.stdout) if r.returncode == 0 else {}
    print(f"     bert: {result}")
    check(0 < result.get("tokens", 0) < 4 * 128, f"bert: the batch has padding "
          f"({result.get('tokens')} real tokens of {4 * 128})")
    check(result.get("max_abs_diff", 1) <= 1e-4 and result.get("mlm_prob_diff", 1) <= 1e-5 and
          result.get("nsp_prob_diff", 1) <= 1e-5 and result.get("argmax_agree") == 1,
          f"bert: ONNX Runtime computes zrt-bert's outputs (pooled {result.get('max_abs_diff')}, "
          f"MLM probabilities {result.get('mlm_prob_diff')}, NSP {result.get('nsp_prob_diff')}) "
          f"{r.stderr.strip()[-300:]}")

    # Bad input.
    weights_only = os.path.join(tmp, "weights.h5")
    run([ckpt_tool, "export", ckpt, "--format", "hdf5-fp32", "-o", weights_only])
    out = os.path.join(tmp, "w.onnx")
    r = run([ckpt_tool, "export", weights_only, "--format", "onnx", "-o", out])
    check(r.returncode == 2 and "does not say which model it is" in r.stderr and
          not os.path.exists(out), f"a file without its model: refused ({r.stderr.strip()})")
    r = run([ckpt_tool, "export", weights_only, "--format", "onnx", "--model", "gpt2", "-o", out])
    check(r.returncode == 2 and "does not say the model's shape" in r.stderr and
          not os.path.exists(out), f"a file without the model's shape: refused ({r.stderr.strip()})")
    out = os.path.join(tmp, "b.onnx")
    r = run([ckpt_tool, "export", bckpt, "--format", "onnx", "--model", "gpt2", "-o", out])
    check(r.returncode == 2 and "was saved by zrt-bert, not a GPT-2 program" in r.stderr and
          not os.path.exists(out), f"BERT's checkpoint as GPT-2: refused ({r.stderr.strip()})")
    r = run([ckpt_tool, "export", ckpt, "--format", "onnx", "--model", "t5", "-o", out])
    check(r.returncode == 2 and "unknown model 't5' (gpt2 or bert)" in r.stderr and
          not os.path.exists(out), f"an unknown --model: refused ({r.stderr.strip()})")
    out = os.path.join(tmp, "missing", "m.onnx")
    r = run([ckpt_tool, "export", ckpt, "--format", "onnx", "-o", out])
    check(r.returncode == 2 and "missing/m.onnx" in r.stderr and not os.listdir(tmp).count("missing"),
          f"an output folder that does not exist: refused, naming it ({r.stderr.strip()})")

    # A full disk: a 1 MiB tmpfs where mounting is allowed (root), else a file size limit of
    # 1 MiB with SIGXFSZ ignored (writes fail with "File too large").
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "zrt-test-full", full],
                             capture_output=True).returncode == 0
    reason = "No space left on device" if mounted else "File too large"

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    try:
        for variant, extra in (("inline", []), ("external", ["--external-data"])):
            out = os.path.join(full, f"{variant}.onnx")
            r = subprocess.run([ckpt_tool, "export", ckpt, "--format", "onnx", "-o", out] + extra,
                               capture_output=True, text=True, timeout=300, env=env,
                               preexec_fn=None if mounted else limited)
            check(r.returncode == 2 and reason in r.stderr and not os.listdir(full),
                  f"{variant}: onto a full disk: status 2, '{reason}', no file left "
                  f"({r.returncode}: {r.stderr.strip()[-300:]}; left {os.listdir(full)})")
    finally:
        if mounted:
            subprocess.run(["umount", full])

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
