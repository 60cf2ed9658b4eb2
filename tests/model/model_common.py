"""What the configured-model tests share: zrt-model's paths, the data files, safetensors,
and the two models (an MLP and a small causal transformer) with their data.

Data files are raw little-endian float32 (zrt-model's --input / --target); each model's
data comes from a fixed numpy seed, so every run trains on the same samples.
"""
import json
import os
import struct
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
MPIRUN = os.path.join(SOURCE, "scripts", "mpirun-local")

# One BLAS thread per rank: the ranks share the cores.
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

# (a) an MLP: linear, gelu (erf), layernorm, a residual block (linear, tanh), gelu (tanh),
# linear; mse. Gradient clipping at 1.0 is active on the first steps (norms above 1).
MLP = {
    "model": {"input": [16], "layers": [
        {"type": "linear", "features": 32},
        {"type": "gelu"},
        {"type": "layernorm", "eps": 1e-5},
        {"type": "residual", "layers": [{"type": "linear", "features": 32}, {"type": "tanh"}]},
        {"type": "gelu", "approximate": "tanh"},
        {"type": "linear", "features": 4}]},
    "loss": {"type": "mse"},
    "seed": 3,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-8,
                                              "weight_decay": 0.01}},
    "zero_optimization": {"stage": 3},
    "zero": {"deterministic": True},
    "gradient_clipping": 1.0,
    "gradient_accumulation_steps": 1,
}

# (b) a small GPT: embedding (vocab 50, T 8, C 16), 2 causal transformer blocks of 2 heads,
# layernorm, linear to the vocabulary; cross_entropy on the next token.
VOCAB, T, C = 50, 8, 16
GPT = {
    "model": {"input": [T], "layers": [
        {"type": "embedding", "vocab": VOCAB, "positions": T, "features": C},
        {"type": "transformer", "heads": 2, "causal": True},
        {"type": "transformer", "heads": 2, "causal": True},
        {"type": "layernorm"},
        {"type": "linear", "features": VOCAB}]},
    "loss": {"type": "cross_entropy"},
    "seed": 5,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                                              "weight_decay": 0.1}},
    "zero_optimization": {"stage": 3},
    "zero": {"deterministic": True},
    "gradient_clipping": 1.0,
    "gradient_accumulation_steps": 1,
}

# (c) the other layers: linear, sigmoid, attention on (T, 3C) rows (not causal), a residual
# block (linear, relu), a non-causal transformer block (mlp_ratio 2), dropout of p 0, a
# linear layer without bias; l1. Clipping at 0.3: some steps above it, some below.
T3, C3 = 6, 8
OTHER = {
    "model": {"input": [T3, 12], "layers": [
        {"type": "linear", "features": 3 * C3},
        {"type": "sigmoid"},
        {"type": "attention", "heads": 2},
        {"type": "residual", "layers": [{"type": "linear", "features": C3}, {"type": "relu"}]},
        {"type": "transformer", "heads": 2, "mlp_ratio": 2},
        {"type": "dropout", "p": 0.0},
        {"type": "linear", "features": 3, "bias": False}]},
    "loss": {"type": "l1"},
    "seed": 7,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-8,
                                              "weight_decay": 0.01}},
    "zero_optimization": {"stage": 3},
    "zero": {"deterministic": True},
    "gradient_clipping": 0.3,
}


def mlp_data(samples=200):
    """Inputs (samples, 16) and targets (samples, 4) of a fixed smooth function."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((samples, 16))
    w = rng.standard_normal((16, 4))
    y = np.sin(x @ w) * 2.0 + 0.1 * rng.standard_normal((samples, 4))
    return x.astype("<f4"), y.astype("<f4")


def gpt_data(samples=96):
    """Token ids (samples, T) of a noisy counting sequence, and the next tokens as targets."""
    rng = np.random.default_rng(13)
    start = rng.integers(0, VOCAB, size=(samples, 1))
    step = rng.integers(1, 4, size=(samples, 1))
    seq = (start + step * np.arange(T + 1)) % VOCAB
    noise = rng.random(seq.shape) < 0.1
    seq = np.where(noise, rng.integers(0, VOCAB, size=seq.shape), seq)
    return seq[:, :T].astype("<f4"), seq[:, 1:].astype("<f4")


def other_data(samples=50):
    rng = np.random.default_rng(17)
    x = rng.standard_normal((samples, T3, 12))
    return x.astype("<f4"), np.tanh(x[:, :, :3]).astype("<f4")


def write(path, array):
    np.ascontiguousarray(array, dtype="<f4").tofile(path)
    return path


def write_config(path, config):
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    return path


def read_safetensors(path):
    """{name: float64 array} of an F32 safetensors file (no library needed)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", f"{path}: {name} is {t['dtype']}"
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[base + a:base + b], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return out


def zrt_model(build):
    return os.path.join(build, "apps", "zrt-model")


def run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV)


def said(r):
    """What a failed run said: zrt-model's own lines of stderr (not mpiexec's summary), or the
    end of stderr when it has none."""
    own = [line for line in r.stderr.splitlines() if line.startswith("zrt-model")]
    return (" | ".join(own) if own else r.stderr.strip())[-600:]


def losses_of(stdout):
    """{step: loss} from zrt-model --losses."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step" and parts[2] == "loss":
            out[int(parts[1])] = float(parts[3])
    return out
