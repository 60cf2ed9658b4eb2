#!/usr/bin/env python3
"""Models in: --init-from and zrt-ckpt's Hugging Face names, as a user meets them.

    test_init_from.py BUILD_DIR DATA_CACHE

For zrt-gpt2 (a d1 trained at stage 3 on 2 ranks) and zrt-bert (bert-tiny):
- hf_layout.py, a script of this test's own, rewrites the exported weights the way Hugging
  Face's files hold them (GPT-2: "transformer." names, Conv1D weights transposed, mask
  buffers, the tied LM head; BERT: a BertModel's names with LayerNorm gamma/beta);
- a run started from that file (--init-from) has the first losses of a run started from the
  checkpoint itself, and not those of a fresh one;
- zrt-ckpt export --names hf writes the tensors the script wrote, and import-safetensors
  --names hf reads them back bitwise (zrt-ckpt diff exit 0);
- bad input: another model's file, another configuration, a missing file, a FIFO (refused
  at once), --resume with --init-from: status 1 (or CLI11's 108), the culprit named,
  nothing trained.
"""
import array
import json
import os
import struct
import subprocess
import sys
import tempfile

build, cache = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
mpirun = os.path.join(here, "..", "..", "scripts", "mpirun-local")
apps = os.path.join(build, "apps")
ckpt_tool = os.path.join(apps, "zrt-ckpt")
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["shape"], data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in header.items()}


def losses(metrics):
    return [json.loads(l)["loss"] for l in open(metrics) if '"type":"step"' in l]


MODELS = {
    "gpt2": dict(program="zrt-gpt2", data=os.path.join(cache, "moby-dick"),
                 shape=["--config", "d1", "--seq", "32", "--batch", "2", "--eval-batches", "1",
                        "--sample-every", "-1"],
                 other=["--config", "d2"]),
    "bert": dict(program="zrt-bert", data=os.path.join(cache, "bert", "moby-dick"),
                 shape=["--config", "bert-tiny", "--seq", "32", "--batch", "4",
                        "--eval-batches", "1"],
                 other=["--config", "bert-mini"]),
}

with tempfile.TemporaryDirectory() as tmp:
    files = {}
    for kind, m in MODELS.items():
        program = os.path.join(apps, m["program"])
        base = m["shape"] + ["--data", m["data"]]
        ckpt = os.path.join(tmp, f"{kind}.h5")
        # The original: a few steps at stage 3 on 2 ranks (GPT-2), or 1 rank (BERT).
        launch = [mpirun, "2"] if kind == "gpt2" else []
        r = run(launch + [program] + base + ["--steps", "4", "--zero-stage", "3", "--save", ckpt])
        check(r.returncode == 0, f"{kind}: the original trains and saves ({r.stderr[-300:]})")
        ours = os.path.join(tmp, f"{kind}-zerort.safetensors")
        hf = os.path.join(tmp, f"{kind}-hf.safetensors")
        run([ckpt_tool, "export", ckpt, "--format", "safetensors", "-o", ours])
        r = run([sys.executable, os.path.join(here, "hf_layout.py"), kind, ours, hf])
        check(r.returncode == 0, f"{kind}: hf_layout.py writes Hugging Face's layout {r.stderr[-300:]}")
        files[kind] = hf

        # The first steps from the Hugging Face file, from the checkpoint, and fresh.
        first = {}
        for start, extra in (("hf", ["--init-from", hf]), ("checkpoint", ["--init-from", ckpt]),
                             ("fresh", [])):
            metrics = os.path.join(tmp, f"{kind}-{start}.jsonl")
            r = run([program] + base + ["--steps", "2", "--json-metrics", metrics] + extra)
            check(r.returncode == 0, f"{kind}: a run from {start} ({r.stderr[-300:]})")
            first[start] = losses(metrics) if r.returncode == 0 else []
            if start == "hf":
                check("in Hugging Face's names" in r.stdout and "optimizer state fresh, step 0"
                      in r.stdout, f"{kind}: it says where its weights came from")
        check(len(first["hf"]) == 2 and first["hf"] == first["checkpoint"],
              f"{kind}: from the Hugging Face file, the losses of the checkpoint's weights "
              f"({first['hf']} vs {first['checkpoint']})")
        check(bool(first["fresh"]) and bool(first["hf"]) and
              first["hf"][0] < first["fresh"][0] - 0.05,
              f"{kind}: not those of a fresh model ({first['hf'][:1]} vs {first['fresh'][:1]})")

        # zrt-ckpt's own Hugging Face export: the script's tensors, and back bitwise.
        exported = os.path.join(tmp, f"{kind}-exported.safetensors")
        r = run([ckpt_tool, "export", ckpt, "--format", "safetensors", "--names", "hf", "-o",
                 exported])
        check(r.returncode == 0, f"{kind}: zrt-ckpt export --names hf ({r.stderr.strip()})")
        script, mine = tensors(hf), tensors(exported) if r.returncode == 0 else {}
        prefix = "transformer." if kind == "gpt2" else ""
        if kind == "bert":  # the script wrote a BertModel's spelling; ours is BertForPreTraining's
            script = {("bert." + k if not k.startswith("cls.") else k)
                      .replace("LayerNorm.gamma", "LayerNorm.weight")
                      .replace("LayerNorm.beta", "LayerNorm.bias"): v for k, v in script.items()}
        same = all(script.get(prefix + k if kind == "gpt2" else k) == v for k, v in mine.items())
        check(bool(mine) and same, f"{kind}: its tensors are the script's ({len(mine)} tensors)")
        back = os.path.join(tmp, f"{kind}-back.h5")
        weights = os.path.join(tmp, f"{kind}-weights.h5")
        r = run([ckpt_tool, "import-safetensors", exported, back, "--names", "hf", "--model", kind])
        run([ckpt_tool, "export", ckpt, "--format", "hdf5-fp32", "-o", weights])
        d = run([ckpt_tool, "diff", weights, back])
        check(r.returncode == 0 and d.returncode == 0,
              f"{kind}: import-safetensors --names hf gives the weights back bitwise "
              f"({d.stdout.strip().splitlines()[-1:]})")
        r = run([ckpt_tool, "import-safetensors", hf, back, "--names", "hf", "--model", kind])
        check(r.returncode == 0 and "skipped" in r.stdout,
              f"{kind}: the script's file imports, its buffers skipped ({r.stdout.strip()})")

    # Bad input.
    def refused(kind, args, words, what, status=1, timeout=300):
        m = MODELS[kind]
        try:
            r = run([os.path.join(apps, m["program"])] + m["shape"] + ["--data", m["data"],
                                                                       "--steps", "1"] + args,
                    timeout=timeout)
        except subprocess.TimeoutExpired:
            check(False, f"{what}: still running after {timeout} s")
            return
        check(r.returncode == status and words in r.stderr,
              f"{what}: status {status} and '{words}' (got {r.returncode}: {r.stderr.strip()[-300:]})")
        check("step 1/" not in r.stdout, f"{what}: nothing trained")

    refused("bert", ["--init-from", files["gpt2"]], "does not fit this BERT model: ",
            "GPT-2's weights into BERT")
    gpt2_other = MODELS["gpt2"]["shape"][2:] + MODELS["gpt2"]["other"]
    m = MODELS["gpt2"]
    r = run([os.path.join(apps, "zrt-gpt2")] + gpt2_other + ["--data", m["data"], "--steps", "1",
                                                            "--init-from", files["gpt2"]])
    check(r.returncode == 1 and "shape(s) of another configuration: " in r.stderr and
          "transformer.h.0.attn.c_attn.bias is [192], the model's h0.attn.qkv.bias needs [384]"
          in r.stderr,
          f"d1's weights into d2: the shapes named ({r.stderr.strip()[-300:]})")
    refused("gpt2", ["--init-from", os.path.join(tmp, "none.safetensors")],
            "none.safetensors: cannot open: No such file or directory", "a missing file")
    fifo = os.path.join(tmp, "weights.fifo")
    os.mkfifo(fifo)  # opening one for reading waits for a writer: refused before that
    refused("gpt2", ["--init-from", fifo],
            f"{fifo}: cannot open: it is a FIFO (named pipe), not a regular file",
            "a FIFO", timeout=60)
    refused("gpt2", ["--init-from", files["gpt2"], "--resume", files["gpt2"]], "excludes",
            "--init-from with --resume", status=108)
    r = run([ckpt_tool, "export", os.path.join(tmp, "gpt2.h5"), "--format", "safetensors",
             "--names", "hf", "--model", "bert", "-o", os.path.join(tmp, "x.safetensors")])
    check(r.returncode == 2 and "was saved by zrt-gpt2, not a BERT program" in r.stderr and
          not os.path.exists(os.path.join(tmp, "x.safetensors")),
          f"export --names hf of another model's checkpoint: refused, no file ({r.stderr.strip()})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
