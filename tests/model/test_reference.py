#!/usr/bin/python3
"""Configured models against PyTorch: zrt-model trains, on 2 ranks,
- mlp: an MLP (linear, gelu erf and tanh, layernorm, a residual block, tanh; mse), stage 3;
- mlp-accumulate: the same with gradient accumulation over 2 micro-steps and TorchFort's
  cosine lr_scheduler, stage 2;
- gpt: a small causal transformer (embedding vocab 50, T 8, C 16, 2 blocks of 2 heads,
  layernorm, linear to the vocabulary; cross_entropy), stage 3;
- mlp-adam-sum-*: PyTorch's Adam (L2 weight decay) on a summed loss, under each of TorchFort's
  step, multistep, polynomial and linear schedules;
- torchfort-mlp: a file in TorchFort's form (its MLP, adam, a step schedule, verbose), whose
  weight decay applies to every tensor;
- other: sigmoid, attention on [q | k | v] rows, relu, a non-causal transformer block,
  dropout p 0, linear without bias; l1, stage 3;
the same models, built here in PyTorch float64 from the configuration alone
(torch_reference.py) and started from the weights zrt-model exported before training
(--export-initial), train on the same batches with torch.optim.AdamW (weight decay on
linear weights and embeddings only), clip_grad_norm_ and the same schedule. Every step's
loss must agree; clipping must have acted on some steps of each model.

    test_reference.py BUILD_DIR

Tolerance: relative 1e-6 on every step's loss. zerort computes in float32 and the
reference in float64; measured here, the worst step of the 10 differs by 3.9e-8 (mlp),
2.0e-8 (mlp-accumulate), 1.1e-7 (gpt) and 1.7e-8 (other): a margin of 9x or more. A
tolerance must be this tight to see the optimizer's details: against the same zrt-model run,
a reference that changes one of them is off by (mlp / gpt)
  weight decay on every tensor (biases, LayerNorm too)   7.4e-5 / 8.2e-5
  no weight decay                                        9.1e-5 / 1.0e-4
  AdamW eps 1e-6 instead of 1e-8                         4.1e-5 / 1.8e-5
  beta2 0.99 instead of the configured one               2.2e-4 / 2.6e-4
  no gradient clipping                                   8.7e-3 / 3.6e-3
(and mlp-accumulate without its schedule 6.1e-2, without accumulation 7.4e-2);
a tolerance of 1e-4 would let most of the first four through; 1e-6 catches every one.
"""
import copy
import os
import sys
import tempfile
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_common as mc  # noqa: E402
import torch_reference as ref  # noqa: E402

TOLERANCE = 1e-6
STEPS = 10

build = sys.argv[1]
tool = mc.zrt_model(build)
failures = []
torch.set_num_threads(1)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def compare(name, config, x, y, batch, tmp, file_config=None, decay_all=False, clips=True,
            expect=None):
    """file_config: what zrt-model reads instead of config (TorchFort's form of it)."""
    cfg = mc.write_config(os.path.join(tmp, f"{name}.json"), file_config or config)
    xf, yf = mc.write(os.path.join(tmp, f"{name}_x.f32"), x), mc.write(os.path.join(tmp, f"{name}_y.f32"), y)
    w0 = os.path.join(tmp, f"{name}_w0.safetensors")
    start = time.monotonic()
    r = mc.run([mc.MPIRUN, "2", tool, "train", cfg, "--input", xf, "--target", yf, "--batch",
                str(batch), "--steps", str(STEPS), "--losses", "--export-initial", w0])
    got = mc.losses_of(r.stdout)
    if expect:
        check(expect in r.stdout, f"{name}: the output shows {expect!r}")
    check(r.returncode == 0 and sorted(got) == list(range(1, STEPS + 1)),
          f"{name}: zrt-model trains {STEPS} steps at stage {config['zero_optimization']['stage']} on 2 ranks in "
          f"{time.monotonic() - start:.1f} s ({mc.said(r)})")
    if r.returncode != 0 or not os.path.exists(w0):
        return
    params, decay = ref.declare(config, mc.read_safetensors(w0))
    if decay_all:
        decay = {n: True for n in decay}
    want, norms = ref.train(config, params, decay, x.astype(np.float64), y.astype(np.float64), batch, STEPS)
    worst = 0.0
    for s in range(STEPS):
        rel = abs(got[s + 1] - want[s]) / abs(want[s])
        worst = max(worst, rel)
        print(f"     step {s + 1:2d}  zerort {got[s + 1]:.9e}  torch {want[s]:.9e}  rel {rel:.2e}")
    clipped = sum(n > config.get("gradient_clipping", 0) > 0 for n in norms)
    print(f"     {name}: worst relative difference {worst:.3e} (tolerance {TOLERANCE:g}); "
          f"{clipped} of {len(norms)} optimizer steps clipped")
    check(worst <= TOLERANCE, f"{name}: every step's loss within relative {TOLERANCE:g} of "
          f"PyTorch float64's (worst {worst:.3e})")
    check(clipped > 0 or not clips, f"{name}: clipping is exercised ({clipped} steps with |grad| > "
          f"{config.get('gradient_clipping', 0)})")


# Gradient accumulation over 2 micro-steps and TorchFort's cosine schedule, at stage 2.
ACCUMULATE = dict(copy.deepcopy(mc.MLP), gradient_accumulation_steps=2,
                  zero_optimization={"stage": 2},
                  lr_scheduler={"type": "cosine_annealing", "parameters": {"T_max": 4, "eta_min": 1e-3}})

with tempfile.TemporaryDirectory() as tmp:
    x, y = mc.mlp_data()
    compare("mlp", mc.MLP, x, y, 32, tmp)
    compare("mlp-accumulate", ACCUMULATE, x, y, 32, tmp)
    # PyTorch's Adam (weight decay added to the gradient) with a summed loss, and each of
    # TorchFort's other schedules.
    for schedule, parameters in [("step", {"step_size": 3, "gamma": 0.5}),
                                 ("multistep", {"milestones": [2, 5], "gamma": 0.3}),
                                 ("polynomial", {"total_iters": 8, "power": 2.0}),
                                 ("linear", {"total_iters": 6, "start_factor": 0.2, "end_factor": 1.0})]:
        config = copy.deepcopy(mc.MLP)
        config["optimizer"] = {"type": "Adam", "params": {"lr": 1e-2, "weight_decay": 0.05,
                                                          "adam_w_mode": False}}
        config["loss"] = {"type": "mse", "reduction": "sum"}
        config["lr_scheduler"] = {"type": schedule, "parameters": parameters}
        compare(f"mlp-adam-sum-{schedule}", config, x, y, 32, tmp)
    # TorchFort's own form: its MLP (linear, relu, linear), adam with weight decay on every
    # tensor (its optimizer takes model.parameters()), a step schedule, verbose.
    torchfort = {"general": {"verbose": True, "report_frequency": 0},
                 "model": {"type": "MLP", "parameters": {"layer_sizes": [16, 24, 4], "dropout": 0.0}},
                 "loss": {"type": "MSE"},
                 "optimizer": {"type": "adam", "parameters": {"learning_rate": 1e-2, "beta1": 0.9,
                                                              "beta2": 0.99, "weight_decay": 0.05}},
                 "lr_scheduler": {"type": "step", "parameters": {"step_size": 4, "gamma": 0.5}}}
    same = {"model": {"input": [16], "layers": [{"type": "linear", "features": 24}, {"type": "relu"},
                                                {"type": "linear", "features": 4}]},
            "loss": {"type": "mse"},
            "optimizer": {"type": "Adam", "params": {"lr": 1e-2, "betas": [0.9, 0.99], "eps": 1e-8,
                                                     "weight_decay": 0.05, "adam_w_mode": False}},
            "lr_scheduler": torchfort["lr_scheduler"], "zero_optimization": {"stage": 2}}
    compare("torchfort-mlp", same, x, y, 32, tmp, file_config=torchfort, decay_all=True, clips=False,
            expect="linear 16 -> 24")  # general.verbose: the model at its creation
    x, y = mc.gpt_data()
    compare("gpt", mc.GPT, x, y, 16, tmp)
    x, y = mc.other_data()
    compare("other", mc.OTHER, x, y, 10, tmp)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
