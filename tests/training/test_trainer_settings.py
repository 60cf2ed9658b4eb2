#!/usr/bin/env python3
"""The trainers take their engine settings from ZRT_CONFIG (a DeepSpeed ds_config.json
included) unless a command-line option overrides it, and say which won: a file that sets
stage 3, SGD and accumulation 2 runs stage 3, SGD and 2 micro-steps; an option overrides
it; the environment overrides both and the line says so; the Hugging Face Trainer's zero2
and zero3 files load, their scheduler drives the rate (DeepSpeed's WarmupLR, checked
against its formula), and the trainer's own schedule options set it aside; "auto" where no
value follows from the job, batch sizes that do not multiply out and refused keys end the
run before training with a message naming the key.

    test_trainer_settings.py BUILD_DIR DATA_CACHE
"""
import json
import math
import os
import subprocess
import sys
import tempfile

build, cache = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
gpt2 = os.path.join(build, "apps", "zrt-gpt2")
bert = os.path.join(build, "apps", "zrt-bert")
failures = []
# The shortest runs that train: d2 (7M parameters), a few steps of 32 tokens.
short = ["--config", "d2", "--seq", "32", "--batch", "2", "--eval-batches", "1",
         "--sample-every", "-1", "--data", os.path.join(cache, "moby-dick")]


def check(ok, what, out=""):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
        print(out[-3000:])


def run(program, args, config=None, extra_env=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("ZRT_CONFIG", None)
    if config:
        env["ZRT_CONFIG"] = config
    env.update(extra_env or {})
    r = subprocess.run([program] + args, capture_output=True, text=True, timeout=300, env=env)
    return r.returncode, r.stdout + r.stderr


with tempfile.TemporaryDirectory() as tmp:
    def config(name, data):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    s3 = config("s3.json", {"zero_optimization": {"stage": 3},
                            "optimizer": {"type": "SGD", "params": {"lr": 0.01}},
                            "gradient_accumulation_steps": 2})

    # The file acts, and the start-up lines say where each setting came from.
    rc, out = run(gpt2, short + ["--steps", "2"], s3)
    check(rc == 0, f"s3.json: zrt-gpt2 trains (exit {rc})", out)
    for line in ("zero_optimization.stage 3 (from s3.json)", "optimizer.type sgd (from s3.json)",
                 "gradient_accumulation_steps 2 (from s3.json)",
                 "optimizer.params.lr 0.01 (from s3.json)",
                 "x 2 micro-step(s)", "ZeRO stage 3 on 1 rank(s), fp32, SGD"):
        check(line in out, f"s3.json: '{line}'", out)

    # The command line overrides the file, and says so.
    rc, out = run(gpt2, short + ["--steps", "1", "--zero-stage", "1", "--optimizer", "adamw",
                                 "--grad-accum", "1"], s3)
    check(rc == 0, f"s3.json with options: zrt-gpt2 trains (exit {rc})", out)
    for line in ("zero_optimization.stage 1 (--zero-stage)", "optimizer.type adamw (--optimizer)",
                 "gradient_accumulation_steps 1 (--grad-accum)", "x 1 micro-step(s)",
                 "ZeRO stage 1 on 1 rank(s), fp32, AdamW"):
        check(line in out, f"options over s3.json: '{line}'", out)

    # The environment wins over both (zerort's precedence), and the line says over what.
    rc, out = run(gpt2, short + ["--steps", "1", "--zero-stage", "3"], s3,
                  {"ZRT_ZERO_STAGE": "0"})
    check(rc == 0 and "zero_optimization.stage 0 (ZRT_ZERO_STAGE, over --zero-stage)" in out
          and "ZeRO stage 0" in out, "ZRT_ZERO_STAGE over --zero-stage and the file", out)

    # --offload-optimizer cpu reaches the engine (ZeRO-Offload on the emulated device), over
    # the file, and stage 0 with it is refused before training, naming why.
    rc, out = run(gpt2, short + ["--steps", "1", "--device", "emulated", "--zero-stage", "2",
                                 "--offload-optimizer", "cpu"], s3)
    check(rc == 0 and "zero_optimization.offload_optimizer.device cpu (--offload-optimizer)"
          in out and "(optimizer state and step offloaded to the CPU)" in out,
          f"--offload-optimizer cpu: ZeRO-Offload on the device (exit {rc})", out)
    rc, out = run(gpt2, short + ["--steps", "1", "--device", "emulated", "--zero-stage", "0",
                                 "--offload-optimizer", "cpu"])
    check(rc != 0 and "optimizer offload needs stage 1, 2 or 3" in out,
          f"--offload-optimizer cpu at stage 0 is refused (exit {rc})", out)

    # zrt-bert, the other trainer, takes the same file.
    rc, out = run(bert, ["--config", "bert-tiny", "--batch", "2", "--seq", "16", "--steps", "1",
                         "--eval-batches", "1",
                         "--data", os.path.join(cache, "bert", "moby-dick")], s3)
    check(rc == 0 and "zero_optimization.stage 3 (from s3.json)" in out
          and "x 2 micro-step(s)" in out and "ZeRO stage 3 on 1 rank(s), fp32, SGD" in out,
          f"s3.json: zrt-bert runs stage 3, SGD, 2 micro-steps (exit {rc})", out)

    # The Hugging Face Trainer's files: "auto" filled, WarmupLR drives the rate. They offload
    # the optimizer, which moves a device engine's state: on the host the key is refused
    # before training, naming the file; on the (emulated) device they train.
    rc, out = run(gpt2, short + ["--steps", "1"], os.path.join(here, "ds_zero2_hf.json"))
    check(rc != 0 and "zero_optimization.offload_optimizer.device cpu (from " in out
          and "ds_zero2_hf.json) moves a device engine's state to host memory" in out,
          f"ds_zero2_hf.json on a host engine: offload refused (exit {rc})", out)
    for name in ("ds_zero2_hf.json", "ds_zero3_hf.json"):
        metrics = os.path.join(tmp, name + ".jsonl")
        rc, out = run(gpt2, short + ["--steps", "4", "--lr", "0.002", "--device", "emulated",
                                     "--json-metrics", metrics],
                      os.path.join(here, name))
        check(rc == 0, f"{name}: zrt-gpt2 trains (exit {rc})", out)
        stage = "3" if "zero3" in name else "2"
        for line in (f"ZeRO stage {stage} on 1 rank(s), fp32, AdamW",
                     "scheduler.type warmuplr (from " + name,
                     "optimizer.params.lr 0.002 (--lr)",
                     "lr WarmupLR (from " + name + "): warmup 10 steps (log) from 0 to 0.002",
                     "zero_optimization.offload_optimizer.device cpu (from " + name,
                     "train_micro_batch_size_per_gpu 2 (--batch)"):
            check(line in out, f"{name}: '{line}'", out)
        if stage == "3":
            check("zero_optimization.reduce_bucket_size 16384 (auto from ds_zero3_hf.json: "
                  "zrt-gpt2's hidden size squared, 16384)" in out,
                  f"{name}: reduce_bucket_size auto is the hidden size squared", out)
        records = map(json.loads, open(metrics)) if os.path.exists(metrics) else []
        rates = [r["lr"] for r in records if r.get("type") == "step"]
        # DeepSpeed's WarmupLR (log, 10 steps, 0 to the peak): update n runs at
        # peak * log(n) / log(10), 0 for the first two (its scheduler starts at -1).
        want = [0.0, 0.0] + [0.002 * math.log(n) / math.log(10) for n in (2, 3)]
        check(len(rates) == 4 and all(abs(a - b) < 1e-12 for a, b in zip(rates, want)),
              f"{name}: the rates {rates} follow WarmupLR {want}", out)

    # The trainer's own schedule options set the file's scheduler aside, and say so.
    rc, out = run(gpt2, short + ["--steps", "1", "--warmup", "2", "--device", "emulated"],
                  os.path.join(here, "ds_zero2_hf.json"))
    check(rc == 0 and "lr schedule: the scheduler warmuplr (from ds_zero2_hf.json) set aside "
          "for --warmup" in out and "lr 3.0e-03 (warmup 2, cosine to 3.0e-04)" in out
          and "step 1/1 | loss" in out and "| lr 1.50e-03 |" in out,
          "--warmup over the file's scheduler", out)

    # Batch sizes: two make the third; three that do not multiply out are named.
    rc, out = run(gpt2, short[:4] + short[6:] + ["--steps", "1"],
                  config("batch.json", {"train_batch_size": 8,
                                        "train_micro_batch_size_per_gpu": 2}))
    check(rc == 0 and "batch 2 x 32 tokens x 4 micro-step(s)" in out,
          "train_batch_size 8 of micro batches of 2: 4 micro-steps", out)
    rc, out = run(gpt2, short + ["--steps", "1"],
                  config("bad_batch.json", {"train_batch_size": 8,
                                            "gradient_accumulation_steps": 3}))
    check(rc == 1 and "train_batch_size 8 (from " in out and "bad_batch.json" in out
          and "is not train_micro_batch_size_per_gpu 2" in out
          and "gradient_accumulation_steps 3" in out and "1 rank(s) = 6" in out,
          "batch sizes that do not multiply out are named with their values", out)

    # "auto" where nothing follows from the job, and refused keys: named, before training.
    rc, out = run(gpt2, short + ["--steps", "1"],
                  config("auto_stage.json", {"zero_optimization": {"stage": "auto"}}))
    check(rc == 1 and "zero_optimization.stage is \"auto\"" in out and "auto_stage.json" in out
          and "step 1/" not in out, "\"auto\" stage is refused naming the key and the file", out)
    rc, out = run(gpt2, short + ["--steps", "1"],
                  config("nvme.json", {"zero_optimization": {"offload_optimizer":
                                                             {"device": "cpu",
                                                              "nvme_path": "/nvme"}}}))
    check(rc == 1 and "zero_optimization.offload_optimizer.nvme_path" in out
          and "is not supported: zerort has no NVMe offload" in out,
          "an NVMe path is refused with its reason", out)
    rc, out = run(gpt2, short + ["--steps", "1"],
                  config("clock.json", {"wall_clock_breakdown": True}))
    check(rc == 1 and "wall_clock_breakdown is true" in out
          and "zerort supports only false" in out,
          "wall_clock_breakdown true is refused naming what zerort supports", out)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
