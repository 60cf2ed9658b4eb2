#!/usr/bin/python3
"""Configured models refuse what they cannot train, saying why (zrt-model describe for the
configuration's errors, train for the data's):

- an unknown layer type names the nearest known one ("lineer" -> "linear"); so does an
  unknown key of a layer, of the loss, and of the engine's settings;
- shapes that do not chain name the layer and the dimension: a residual block whose body
  changes the width, transformer heads that do not divide the features, attention whose
  input is not 3 x features, an embedding that is not first;
- data files: an input file that is not a whole number of samples, a target file of the
  wrong size, a token id outside the vocabulary, a class index outside the classes, a
  batch that does not divide among the ranks: a non-zero exit on every rank, within the
  time limit (no rank left waiting in a collective).

    test_bad_input.py BUILD_DIR
"""
import copy
import os
import sys
import tempfile

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


def with_layers(base, layers, **top):
    c = copy.deepcopy(base)
    c["model"]["layers"] = layers
    c.update(top)
    return c


def refused(tmp, label, config, *needles, np_=1):
    cfg = mc.write_config(os.path.join(tmp, f"bad_{len(failures)}_{abs(hash(label))}.json"), config)
    args = ([mc.MPIRUN, str(np_)] if np_ > 1 else []) + [tool, "describe", cfg]
    r = mc.run(args, timeout=60)
    missing = [n for n in needles if n not in r.stderr]
    check(r.returncode != 0 and not missing,
          f"{label}: refused ({r.returncode}), naming {', '.join(map(repr, needles))}: {mc.said(r)}")


with tempfile.TemporaryDirectory() as tmp:
    mlp = mc.MLP
    # A good configuration first: what the others change.
    cfg = mc.write_config(os.path.join(tmp, "good.json"), mlp)
    r = mc.run([tool, "describe", cfg])
    check(r.returncode == 0 and "linear" in r.stdout and "(batch, 4)" in r.stdout,
          f"describe prints the model {r.stdout.strip()[:400]} {mc.said(r)}")

    refused(tmp, "unknown layer type 'lineer'",
            with_layers(mlp, [{"type": "lineer", "features": 4}]), "layers[0]", '"lineer"', '"linear"')
    refused(tmp, "unknown layer type on 2 ranks",
            with_layers(mlp, [{"type": "lineer", "features": 4}]), '"linear"', np_=2)
    refused(tmp, "unknown key 'featurs' of a linear layer",
            with_layers(mlp, [{"type": "linear", "featurs": 4}]), "layers[0]", '"featurs"', '"features"')
    refused(tmp, "unknown key in a residual block's body",
            with_layers(mlp, [{"type": "residual", "layers": [{"type": "layernorm", "esp": 1e-5}]}]),
            "layers[0].layers[0]", '"esp"', '"eps"')
    refused(tmp, "unknown loss 'cross_entropi'",
            dict(copy.deepcopy(mlp), loss={"type": "cross_entropi"}), '"cross_entropi"', '"cross_entropy"')
    bad_engine = copy.deepcopy(mlp)
    bad_engine["gradient_clippin"] = bad_engine.pop("gradient_clipping")
    refused(tmp, "unknown engine key 'gradient_clippin'", bad_engine, "gradient_clippin", "gradient_clipping")
    refused(tmp, "a residual body that changes the width",
            with_layers(mlp, [{"type": "linear", "features": 8},
                              {"type": "residual", "layers": [{"type": "linear", "features": 6}]}]),
            "layers[1]", "(8)", "(6)", "dimension 0")
    gpt = mc.GPT
    layers = copy.deepcopy(gpt["model"]["layers"])
    layers[1]["heads"] = 3
    refused(tmp, "transformer heads (3) that do not divide the features (16)",
            with_layers(gpt, layers), "layers[1]", "heads (3)", "16", "dimension 1")
    refused(tmp, "attention on rows that are not 3 x features",
            with_layers(gpt, [gpt["model"]["layers"][0], {"type": "attention", "heads": 2}]),
            "layers[1]", "dimension 1", "16", "multiple of 3")
    refused(tmp, "an embedding that is not the first layer",
            with_layers(gpt, [{"type": "linear", "features": 8}, gpt["model"]["layers"][0]]),
            "layers[1]", "embedding")
    refused(tmp, "an embedding of fewer positions than the input's",
            with_layers(gpt, [dict(gpt["model"]["layers"][0], positions=4)] + gpt["model"]["layers"][1:]),
            "layers[0]", "8 positions", "dimension 0")
    refused(tmp, "a transformer on a flat input",
            with_layers(mlp, [{"type": "transformer", "heads": 2}]), "layers[0]", "(16)")

    # Data files (train on 2 ranks: every rank must leave, none hangs).
    x, y = mc.mlp_data(40)
    good_x, good_y = mc.write(os.path.join(tmp, "x.f32"), x), mc.write(os.path.join(tmp, "y.f32"), y)

    def train_refused(label, xf, yf, *needles, config=cfg, batch=8):
        r = mc.run([mc.MPIRUN, "2", tool, "train", config, "--input", xf, "--target", yf,
                    "--batch", str(batch), "--steps", "2"], timeout=60)
        missing = [n for n in needles if n not in r.stderr]
        check(r.returncode != 0 and not missing,
              f"{label}: refused ({r.returncode}), naming {', '.join(map(repr, needles))}: "
              f"{mc.said(r)}")

    r = mc.run([mc.MPIRUN, "2", tool, "train", cfg, "--input", good_x, "--target", good_y,
                "--batch", "8", "--steps", "2"])
    check(r.returncode == 0, f"the good data trains {mc.said(r)}")
    ragged = os.path.join(tmp, "ragged.f32")
    with open(ragged, "wb") as f:
        f.write(x.tobytes() + b"\0\0\0\0")  # one float more than 40 samples of 16
    train_refused("an input file of 40 samples and a float", ragged, good_y, "ragged.f32",
                  "not a whole number of samples of 16 floats")
    short_y = mc.write(os.path.join(tmp, "short_y.f32"), y[:, :3])  # 3 targets a sample, not 4
    train_refused("a target file of 3 values a sample for an output of 4", good_x, short_y, "target")
    ragged_y = os.path.join(tmp, "ragged_y.f32")
    with open(ragged_y, "wb") as f:
        f.write(y.tobytes() + b"\0\0\0\0")  # 40 samples of 4 and a float
    train_refused("a target file of 40 samples and a float", good_x, ragged_y, "ragged_y.f32")
    train_refused("a batch of 7 on 2 ranks", good_x, good_y, "--batch 7", batch=7)
    empty = os.path.join(tmp, "empty.f32")
    open(empty, "wb").close()
    train_refused("an empty input file", empty, good_y, "empty.f32")

    gcfg = mc.write_config(os.path.join(tmp, "gpt.json"), gpt)
    tx, ty = mc.gpt_data(16)
    bad_ids = tx.copy()
    bad_ids[3, 5] = mc.VOCAB  # one past the vocabulary
    train_refused("a token id outside the vocabulary", mc.write(os.path.join(tmp, "ids.f32"), bad_ids),
                  mc.write(os.path.join(tmp, "next.f32"), ty), "token ids", "[0, 50)", config=gcfg)
    bad_classes = ty.copy()
    bad_classes[0, 0] = 2.5
    train_refused("a class index that is not whole", mc.write(os.path.join(tmp, "ids2.f32"), tx),
                  mc.write(os.path.join(tmp, "classes.f32"), bad_classes), "class indices", "2.5",
                  config=gcfg)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
