#!/usr/bin/env python3
"""zrt-bert as a user runs it: a run at np 2 stopped by SIGUSR1 saves, exits with 75 and
resumes to the end; its metrics carry the MLM and NSP figures; bad input (GPT-2's data,
a missing vocabulary, a misspelt config key, a GPT-2 checkpoint) ends with status 1 and a
message naming the culprit, before any training.

    test_zrt_bert.py BUILD_DIR DATA_CACHE
"""
import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import time

build, cache = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
mpirun = os.path.join(here, "..", "..", "scripts", "mpirun-local")
bert = os.path.join(build, "apps", "zrt-bert")
gpt2 = os.path.join(build, "apps", "zrt-gpt2")
data = os.path.join(cache, "bert", "moby-dick")
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


shape = ["--config", "bert-tiny", "--batch", "4", "--seq", "32", "--eval-batches", "1"]
small = shape + ["--data", data]
with tempfile.TemporaryDirectory() as tmp:
    ckpt = os.path.join(tmp, "bert.h5")
    metrics = os.path.join(tmp, "metrics.jsonl")
    # A long run, stopped after its first progress lines as Slurm would before a time limit.
    p = subprocess.Popen([mpirun, "2", bert] + small + ["--steps", "100000", "--save", ckpt,
                         "--json-metrics", metrics], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    lines = []
    deadline = time.time() + 120  # never waits for 100000 steps if the line is not seen
    for line in p.stdout:
        lines.append(line)
        if time.time() > deadline:
            break
        if re.match(r"step +3/", line):
            os.killpg(p.pid, signal.SIGUSR1)  # mpirun forwards it to the ranks
            break
    out = "".join(lines) + p.stdout.read()
    rc = p.wait(timeout=120)
    check(rc == 75, f"SIGUSR1: exit status 75 (got {rc})")
    check("stopping after step" in out and "checkpoint: " in out,
          "SIGUSR1: the run says it stops and where it saved")
    check(os.path.exists(ckpt), "SIGUSR1: the checkpoint exists")
    records = [json.loads(l) for l in open(metrics)] if os.path.exists(metrics) else []
    steps = [r for r in records if r.get("type") == "step"]
    check(bool(steps) and all(k in steps[0] for k in ("mlm_loss", "nsp_loss", "mlm_accuracy",
                                                      "nsp_accuracy")),
          "metrics: step records carry mlm_loss, nsp_loss, mlm_accuracy, nsp_accuracy")
    end = [r for r in records if r.get("type") == "end"]
    check(bool(end) and end[0].get("reason") == "signal", "metrics: the end record says signal")
    done = len(steps)
    # Resumed at another stage, to a planned end just past the stop.
    r = run([mpirun, "2", bert] + small + ["--steps", str(done + 2), "--resume", ckpt,
                                          "--zero-stage", "3"])
    check(r.returncode == 0, f"resume: exit status 0 (got {r.returncode}) {r.stderr[-400:]}")
    check(f"resumed from {ckpt} at step {done}" in r.stdout,
          f"resume: continues at step {done}")
    check(f"step {done + 2}/{done + 2}" in r.stdout, "resume: runs to the planned end")

    def refused(args, words, what):
        r = run([bert] + args)
        check(r.returncode == 1 and words in r.stderr,
              f"{what}: status 1 and '{words}' (got {r.returncode}: {r.stderr.strip()[-300:]})")
        check("step 1/" not in r.stdout, f"{what}: nothing trained")

    refused(shape + ["--steps", "1", "--data", os.path.join(cache, "moby-dick")],
            "GPT-2 (llm.c) token file", "GPT-2's data")
    refused(small + ["--steps", "1", "--vocab", os.path.join(tmp, "none.txt")], "none.txt",
            "a missing vocabulary")
    r = run([bert] + small + ["--steps", "1", "--global-batch", "12"])
    check(r.returncode == 0 and "x 3 micro-step(s) x 1 rank(s) = 12 sequences per step" in r.stdout,
          f"--global-batch 12 with --batch 4 on 1 rank: 3 micro-steps ({r.stderr[-300:]})")
    refused(small + ["--steps", "1", "--global-batch", "6"],
            "--global-batch 6 does not split into 1 rank(s) x --batch 4", "a global batch that "
            "does not split")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"base": "bert-tiny", "num_hiden_layers": 3}, f)
    refused(["--config", bad, "--data", data, "--steps", "1"],
            'did you mean "num_hidden_layers"', "a misspelt config key")
    gpt2_ckpt = os.path.join(tmp, "gpt2.h5")
    g = run([gpt2, "--config", "d1", "--steps", "1", "--seq", "16", "--eval-batches", "1",
             "--sample-every", "-1", "--save", gpt2_ckpt, "--data",
             os.path.join(cache, "moby-dick")])
    check(g.returncode == 0, "a GPT-2 checkpoint to resume from")
    refused(small + ["--steps", "1", "--resume", gpt2_ckpt], "a checkpoint of zrt-gpt2, not of zrt-bert",
            "a GPT-2 checkpoint")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
