#!/usr/bin/env python3
"""Prints the learning rates DeepSpeed's own schedulers give, for test_lr_scheduler.cpp.

    lr_scheduler_reference.py PATH/TO/deepspeed/runtime/lr_schedules.py

Runs DeepSpeed's file itself (torch and deepspeed.utils replaced by the few names it
uses) the way DeepSpeed's engine drives it: the scheduler is made (which sets the rate),
then each optimizer step runs at the optimizer's rate and is followed by
scheduler.step(). Each case prints the rate of updates 0, 1, 2, ... as a C++ array.
The constants in test_lr_scheduler.cpp were made by this script from DeepSpeed at
commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (github.com/deepspeedai/DeepSpeed).
"""
import sys
import types

torch = types.ModuleType("torch")
torch_optim = types.ModuleType("torch.optim")


class Optimizer:
    def __init__(self, lr):
        self.param_groups = [{"lr": lr}]


torch_optim.Optimizer = Optimizer
torch.optim = torch_optim
torch.is_tensor = lambda x: False
deepspeed = types.ModuleType("deepspeed")
deepspeed_utils = types.ModuleType("deepspeed.utils")
deepspeed_utils.logger = types.SimpleNamespace(warning=lambda *a, **k: None,
                                               info=lambda *a, **k: None)
deepspeed.utils = deepspeed_utils
sys.modules.update({"torch": torch, "torch.optim": torch_optim, "deepspeed": deepspeed,
                    "deepspeed.utils": deepspeed_utils})

schedules = {}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), schedules)


def rates(name, optimizer_lr, updates, **params):
    opt = Optimizer(optimizer_lr)
    scheduler = schedules[name](opt, **params)
    out = []
    for _ in range(updates):
        out.append(opt.param_groups[0]["lr"])  # the optimizer step runs at this rate
        scheduler.step()
    return out


cases = [
    ("kWarmupLog", "WarmupLR", 1.0, 9,
     dict(warmup_min_lr=1e-4, warmup_max_lr=3e-3, warmup_num_steps=5)),
    ("kWarmupLinear", "WarmupLR", 1.0, 7,
     dict(warmup_min_lr=0.0, warmup_max_lr=1e-3, warmup_num_steps=4, warmup_type="linear")),
    ("kWarmupMaxFromOptimizer", "WarmupLR", 5e-4, 5, dict(warmup_num_steps=3)),
    ("kDecayLog", "WarmupDecayLR", 1.0, 13,
     dict(total_num_steps=10, warmup_min_lr=1e-5, warmup_max_lr=1e-3, warmup_num_steps=3)),
    ("kDecayLinearShortWarmup", "WarmupDecayLR", 1.0, 10,
     dict(total_num_steps=8, warmup_min_lr=0.0, warmup_max_lr=2e-3, warmup_num_steps=1,
          warmup_type="linear")),
    ("kCosineLinear", "WarmupCosineLR", 2e-3, 15,
     dict(total_num_steps=12, warmup_min_ratio=0.1, warmup_num_steps=4, cos_min_ratio=0.05,
          warmup_type="linear")),
    ("kCosineLog", "WarmupCosineLR", 1e-3, 11, dict(total_num_steps=8, warmup_num_steps=3)),
]
for const, name, optimizer_lr, updates, params in cases:
    values = rates(name, optimizer_lr, updates, **params)
    print(f"// {name}, optimizer lr {optimizer_lr!r}, {params}")
    print(f"constexpr double {const}[] = {{" + ", ".join(repr(float(v)) for v in values) + "};")
