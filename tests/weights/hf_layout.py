#!/usr/bin/env python3
"""Rewrites a safetensors file of zrt-gpt2's or zrt-bert's weights in zerort's names (what
`zrt-ckpt export --format safetensors` writes) the way Hugging Face's files hold them, from
Hugging Face's own conventions, not from zerort's tables:

    hf_layout.py gpt2|bert IN OUT

GPT-2 (GPT2LMHeadModel's state dict): "transformer.h.0.attn.c_attn.weight" and so on, the
Conv1D weights [in, out] (zrt-gpt2's transposed), the attention-mask buffers
"h.N.attn.bias" (lower-triangular [1, 1, P, P]) and "lm_head.weight" (a copy of wte).
BERT (an old BertModel checkpoint): no "bert." prefix, LayerNorm "gamma"/"beta", and the
"embeddings.position_ids" buffer; the heads (cls.*) keep their names.
Pure Python (struct, json, array): no numpy here.
"""
import array
import json
import re
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", f"{name}: {t['dtype']}"
        b, e = t["data_offsets"]
        values = array.array("f")
        values.frombytes(data[8 + n + b:8 + n + e])
        out[name] = (t["shape"], values)
    return out


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values, dtype) in tensors.items():
        blob = values.tobytes()
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            f.write(blob)


def transpose(shape, values):
    rows, cols = shape
    out = array.array("f", bytes(4 * rows * cols))
    for r in range(rows):
        out[r::rows] = values[r * cols:(r + 1) * cols]  # row r becomes column r
    return [cols, rows], out


def gpt2(tensors):
    conv1d = {"attn.qkv.weight": "attn.c_attn.weight", "attn.proj.weight": "attn.c_proj.weight",
              "mlp.fc.weight": "mlp.c_fc.weight", "mlp.proj.weight": "mlp.c_proj.weight"}
    plain = {"attn.qkv.bias": "attn.c_attn.bias", "attn.proj.bias": "attn.c_proj.bias",
             "mlp.fc.bias": "mlp.c_fc.bias", "mlp.proj.bias": "mlp.c_proj.bias",
             "ln_1.weight": "ln_1.weight", "ln_1.bias": "ln_1.bias",
             "ln_2.weight": "ln_2.weight", "ln_2.bias": "ln_2.bias"}
    out, layers = {}, set()
    positions = tensors["wpe"][0][0]
    for name, (shape, values) in tensors.items():
        m = re.fullmatch(r"h(\d+)\.(.+)", name)
        if name in ("wte", "wpe"):
            out[f"transformer.{name}.weight"] = (shape, values, "F32")
        elif name.startswith("ln_f."):
            out[f"transformer.{name}"] = (shape, values, "F32")
        elif m and m.group(2) in conv1d:
            shape, values = transpose(shape, values)
            out[f"transformer.h.{m.group(1)}.{conv1d[m.group(2)]}"] = (shape, values, "F32")
        elif m and m.group(2) in plain:
            out[f"transformer.h.{m.group(1)}.{plain[m.group(2)]}"] = (shape, values, "F32")
        else:
            raise SystemExit(f"not a zrt-gpt2 tensor: {name}")
        if m:
            layers.add(m.group(1))
    # The causal mask Hugging Face keeps as a buffer in each layer (1.0 on and below the
    # diagonal), and the LM head tied to wte.
    mask = array.array("f", bytes(4 * positions * positions))
    for r in range(positions):
        mask[r * positions:r * positions + r + 1] = array.array("f", [1.0]) * (r + 1)
    for l in layers:
        out[f"transformer.h.{l}.attn.bias"] = ([1, 1, positions, positions], mask, "F32")
    out["lm_head.weight"] = out["transformer.wte.weight"]
    return out


def bert(tensors):
    out = {}
    for name, (shape, values) in tensors.items():
        if name.startswith("bert."):
            name = name[5:]
        name = re.sub(r"LayerNorm\.weight$", "LayerNorm.gamma", name)
        name = re.sub(r"LayerNorm\.bias$", "LayerNorm.beta", name)
        out[name] = (shape, values, "F32")
    positions = tensors["bert.embeddings.position_embeddings.weight"][0][0]
    out["embeddings.position_ids"] = ([1, positions], array.array("q", range(positions)), "I64")
    return out


if __name__ == "__main__":
    kind, src, dst = sys.argv[1:4]
    write(dst, (gpt2 if kind == "gpt2" else bert)(read(src)))
