"""The configured models rebuilt in PyTorch, independently of zerort's code: an interpreter
of the configuration's "model" block over a dict of named tensors (zerort's parameter names,
docs/models.md), with the loss, AdamW and clipping that the configuration asks for.

    params, decay = declare(config, initial)        # from zrt-model --export-initial
    losses = train(config, params, decay, x, y, batch, steps)

PyTorch's own layers where they are the same thing (F.linear, F.layer_norm, F.gelu,
F.cross_entropy); attention written out (PyTorch 1.13 has no scaled_dot_product_attention).
"""
import math

import torch
import torch.nn.functional as F


def _walk(layers, prefix, shape, declare):
    """Declares each parameter (name, decay?) of @p layers in zerort's naming; returns the
    output shape."""
    for i, spec in enumerate(layers):
        name = f"{prefix}{i}."
        t = spec["type"]
        if t == "linear":
            declare(name + "weight", True)
            if spec.get("bias", True):
                declare(name + "bias", False)
            shape = shape[:-1] + [spec["features"]]
        elif t == "layernorm":
            declare(name + "weight", False)
            declare(name + "bias", False)
        elif t == "residual":
            _walk(spec["layers"], name, shape, declare)
        elif t == "embedding":
            declare(name + "wte", True)
            declare(name + "wpe", True)
            shape = [shape[0], spec["features"]]
        elif t == "transformer":
            for sub in ("attn.ln", "attn.qkv", "attn.proj", "mlp.ln", "mlp.fc", "mlp.proj"):
                declare(f"{name}{sub}.weight", not sub.endswith(".ln"))
                declare(f"{name}{sub}.bias", False)
        elif t == "attention":
            shape = shape[:-1] + [shape[-1] // 3]
    return shape


def declare(config, initial, dtype=torch.float64):
    """The parameters named as zerort names them, from @p initial ({name: numpy array});
    returns (params {name: tensor requiring grad}, decay {name: bool})."""
    params, decay = {}, {}

    def add(name, wd):
        assert name in initial, f"zerort exported no {name} (it has {sorted(initial)})"
        params[name] = torch.tensor(initial[name], dtype=dtype, requires_grad=True)
        decay[name] = wd

    _walk(config["model"]["layers"], "", list(config["model"]["input"]), add)
    extra = set(initial) - set(params)
    assert not extra, f"zerort exported parameters the reference does not know: {sorted(extra)}"
    return params, decay


def attention(qkv, heads, causal):
    """(B, T, 3C) rows [q | k | v] -> (B, T, C)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // heads
    q, k, v = qkv.split(C, dim=-1)
    q, k, v = (z.reshape(B, T, heads, hs).transpose(1, 2) for z in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    y = scores.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, T, C)


def forward(layers, x, P, prefix=""):
    for i, spec in enumerate(layers):
        name = f"{prefix}{i}."
        t = spec["type"]
        if t == "linear":
            x = F.linear(x, P[name + "weight"], P.get(name + "bias"))
        elif t == "relu":
            x = torch.relu(x)
        elif t == "tanh":
            x = torch.tanh(x)
        elif t == "sigmoid":
            x = torch.sigmoid(x)
        elif t == "gelu":
            x = F.gelu(x, approximate=spec.get("approximate", "none"))
        elif t == "layernorm":
            x = F.layer_norm(x, x.shape[-1:], P[name + "weight"], P[name + "bias"], spec.get("eps", 1e-5))
        elif t == "dropout":
            assert spec.get("p", 0.5) == 0, "the reference has no dropout (its masks are zerort's own)"
        elif t == "residual":
            x = x + forward(spec["layers"], x, P, name)
        elif t == "attention":
            x = attention(x, spec["heads"], spec.get("causal", False))
        elif t == "embedding":
            ids = x.long()
            x = P[name + "wte"][ids] + P[name + "wpe"][: ids.shape[1]]
        elif t == "transformer":
            eps = spec.get("eps", 1e-5)

            def lin(sub, z):
                return F.linear(z, P[f"{name}{sub}.weight"], P[f"{name}{sub}.bias"])

            def ln(sub, z):
                return F.layer_norm(z, z.shape[-1:], P[f"{name}{sub}.weight"], P[f"{name}{sub}.bias"], eps)

            x = x + lin("attn.proj", attention(lin("attn.qkv", ln("attn.ln", x)), spec["heads"],
                                               spec.get("causal", False)))
            x = x + lin("mlp.proj", F.gelu(lin("mlp.fc", ln("mlp.ln", x)), approximate="tanh"))
        else:
            raise ValueError(f"the reference has no layer {t}")
    return x


def loss_of(config, out, target):
    kind = config.get("loss", {}).get("type", "mse").lower()
    reduction = config.get("loss", {}).get("reduction", "mean")
    if kind == "mse":
        return F.mse_loss(out, target, reduction=reduction)
    if kind == "l1":
        return F.l1_loss(out, target, reduction=reduction)
    if kind in ("cross_entropy", "crossentropy"):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1).long(),
                               reduction=reduction)
    raise ValueError(f"the reference has no loss {kind}")


def scheduler(config, opt):
    """TorchFort's "lr_scheduler" as PyTorch's own scheduler (None without one)."""
    s = config.get("lr_scheduler")
    if not s:
        return None
    t, p = s["type"].lower(), s.get("parameters", {})
    sch = torch.optim.lr_scheduler
    if t == "step":
        return sch.StepLR(opt, p.get("step_size", 1), p.get("gamma", 0.1))
    if t == "multistep":
        return sch.MultiStepLR(opt, p.get("milestones", []), p.get("gamma", 0.1))
    if t == "cosine_annealing":
        return sch.CosineAnnealingLR(opt, p.get("T_max", 1), p.get("eta_min", 0.0))
    if t == "polynomial":
        return sch.PolynomialLR(opt, p.get("total_iters", 5), p.get("power", 1.0))
    if t == "linear":
        return sch.LinearLR(opt, p.get("start_factor", 1.0 / 3), p.get("end_factor", 1.0),
                            p.get("total_iters", 5))
    raise ValueError(f"the reference has no lr_scheduler {t}")


def train(config, params, decay, x, y, batch, steps, dtype=torch.float64, ranks=2):
    """zrt-model train's steps: step s takes samples (s * batch + j) % len(x), j < batch (the
    ranks' parts, one after another). With gradient_accumulation_steps k, a step is a
    micro-step: the optimizer steps on every k-th, on the mean of the k gradients.
    Returns each step's loss (before its update) and the gradient norms (before clipping,
    of each optimizer step)."""
    p = config["optimizer"]["params"]
    kind = config["optimizer"]["type"].lower()
    # DeepSpeed's "Adam" is AdamW unless adam_w_mode is false: then PyTorch's Adam (L2).
    l2 = kind == "adam" and p.get("adam_w_mode", True) is False
    assert kind == "adamw" or kind == "adam"
    names = list(params)
    groups = [{"params": [params[n] for n in names if decay[n]], "weight_decay": p.get("weight_decay", 0.0)},
              {"params": [params[n] for n in names if not decay[n]], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    optimizer = torch.optim.Adam if l2 else torch.optim.AdamW
    opt = optimizer(groups, lr=p["lr"], betas=tuple(p.get("betas", (0.9, 0.999))),
                    eps=p.get("eps", 1e-8))
    lr = scheduler(config, opt)
    clip = config.get("gradient_clipping", 0.0)
    accumulate = config.get("gradient_accumulation_steps", 1)
    X = torch.tensor(x, dtype=dtype)
    Y = torch.tensor(y, dtype=dtype)
    losses, norms = [], []
    opt.zero_grad()
    for s in range(steps):
        idx = torch.tensor([(s * batch + j) % len(x) for j in range(batch)])
        loss = loss_of(config, forward(config["model"]["layers"], X[idx], params), Y[idx])
        if config.get("loss", {}).get("reduction") == "sum":
            # Each rank sums its own part and the engine averages the ranks' gradients (as
            # DDP does): the sum over the whole batch divided by the ranks.
            loss = loss / ranks
        (loss / accumulate).backward()
        losses.append(float(loss))
        if (s + 1) % accumulate:
            continue
        grads = [params[n].grad for n in names]
        norms.append(float(torch.sqrt(sum((g * g).sum() for g in grads))))
        if clip > 0:
            torch.nn.utils.clip_grad_norm_([params[n] for n in names], clip)
        opt.step()
        opt.zero_grad()
        if lr is not None:
            lr.step()
    return losses, norms
