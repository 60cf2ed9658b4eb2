#!/usr/bin/env python3
"""zrt-plan against the programs it plans for: zrt-gpt2 (d2, AdamW) and zrt-bert (bert-tiny,
LAMB) train one step at np 1, 2 and 4 and ZeRO stages 0-3 (bf16 and a bucket size at one of
them), and zrt-plan, given the same model, stage, ranks and micro-batch, must print their
"model states per rank" line word for word and give, in --json, their metrics' model-state
and activation bytes to the byte. Bad input ends with status 2 and a message naming the
field.

    test_zrt_plan.py BUILD_DIR DATA_CACHE
"""
import json
import os
import re
import subprocess
import sys
import tempfile

build, cache = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
mpirun = os.path.join(here, "..", "..", "scripts", "mpirun-local")
plan = os.path.join(build, "apps", "zrt-plan")
programs = {"gpt2": os.path.join(build, "apps", "zrt-gpt2"),
            "bert": os.path.join(build, "apps", "zrt-bert")}
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args, timeout=300):
    # A sample of an untrained model is any bytes.
    return subprocess.run(args, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=env)


def states_line(text):
    m = re.search(r"^model states per rank: .*$", text, re.M)
    return m.group(0) if m else None


# (program, np, stage, extra training flags, the same for zrt-plan)
cases = []
for np in (1, 2, 4):
    for stage in range(4):
        cases.append(("gpt2", np, stage, [], []))
        cases.append(("bert", np, stage, [], []))
cases += [("gpt2", 2, 1, ["--dtype", "bf16"], ["--dtype", "bf16"]),
          ("gpt2", 4, 2, ["--bucket-mb", "1"], ["--reduce-bucket-bytes", "1MiB"]),
          ("bert", 4, 3, ["--dtype", "bf16"], ["--dtype", "bf16"]),
          ("gpt2", 2, 2, ["--grad-accum", "2"], ["--accumulation", "2"])]

with tempfile.TemporaryDirectory() as tmp:
    for program, np, stage, train_flags, plan_flags in cases:
        what = f"{program} np {np} stage {stage} {' '.join(train_flags)}".strip()
        metrics = os.path.join(tmp, "metrics.jsonl")
        if program == "gpt2":
            model, shape = "d2", ["--config", "d2", "--batch", "2", "--seq", "32",
                                  "--sample-every", "-1",
                                  "--data", os.path.join(cache, "moby-dick")]
            planned = ["--model", "d2", "--micro-batch", "2", "--seq", "32"]
        else:
            model, shape = "bert-tiny", ["--config", "bert-tiny", "--batch", "2", "--seq", "32",
                                         "--data", os.path.join(cache, "bert", "moby-dick")]
            planned = ["--model", "bert-tiny", "--optimizer", "lamb", "--micro-batch", "2",
                       "--seq", "32"]
        r = run([mpirun, str(np), programs[program]] + shape +
                ["--steps", "1", "--eval-every", "0", "--zero-stage", str(stage),
                 "--json-metrics", metrics] + train_flags)
        if r.returncode != 0:
            check(False, f"{what}: the program ran ({r.returncode}): {r.stderr[-400:]}")
            continue
        step = next(json.loads(line) for line in open(metrics)
                    if json.loads(line).get("type") == "step")
        base = planned + ["--stage", str(stage), "--ranks-per-node", str(np)] + plan_flags
        p = run([plan] + base + ["--json"])
        text = run([plan] + base)
        if p.returncode != 0 or text.returncode != 0:
            check(False, f"{what}: zrt-plan ran: {p.stderr}{text.stderr}")
            continue
        per_rank = json.loads(p.stdout.splitlines()[0])["per_rank"]
        check(per_rank["model_states_bytes"] == step["mem_model_states"],
              f"{what}: model states {per_rank['model_states_bytes']} planned, "
              f"{step['mem_model_states']} held")
        check(per_rank["activations_bytes"] == step["mem_activations"],
              f"{what}: activations {per_rank['activations_bytes']} planned, "
              f"{step['mem_activations']} allocated")
        check(states_line(text.stdout) == states_line(r.stdout) is not None,
              f"{what}: the same 'model states per rank' line ({states_line(r.stdout)})")

    # --plot: a PNG, and beside it the numbers --json gives, every stage by rank count.
    png = os.path.join(tmp, "d2.png")
    r = run([plan, "--model", "d2", "--nodes", "4", "--ranks-per-node", "2", "--plot", png])
    rows = [line.split() for line in open(png[:-4] + ".tsv") if not line.startswith("#")] \
        if r.returncode == 0 else []
    check(r.returncode == 0 and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
          f"--plot: a PNG ({r.returncode} {r.stderr.strip()})")
    check([row[0] for row in rows] == ["2", "4", "8"], "--plot: ranks 2, 4, 8 (nodes 1, 2, 4)")
    for row in rows:
        for stage in range(4):
            j = json.loads(run([plan, "--model", "d2", "--stage", str(stage), "--nodes",
                                str(int(row[0]) // 2), "--ranks-per-node", "2", "--json"]).stdout)
            check(abs(float(row[stage + 1]) * 2**30 - j["per_rank"]["model_states_bytes"]) < 2**10,
                  f"--plot: stage {stage} on {row[0]} ranks is --json's model states")

    # The step time: the plan's collectives through a profile's fits, t = calls x alpha +
    # beta x bytes, compute and optimizer at the rates given; nothing hidden with a profile.
    profile = os.path.join(tmp, "profile.jsonl")
    with open(profile, "w") as f:
        for op, alpha_us, beta in [("reduce_scatter", 20.0, 0.5), ("all_gather_in_place", 10.0, 0.25),
                                   ("all_reduce", 30.0, 1.0)]:
            f.write(json.dumps({"bench": "comm_fit", "op": op, "backend": "shm+mem", "np": 4,
                                "sound": True, "alpha_us": alpha_us, "beta_ns_per_byte": beta}) + "\n")
        f.write(json.dumps({"bench": "comm_fit", "op": "reduce_scatter", "backend": "mpi", "np": 4,
                            "sound": False, "problem": "one message size only", "alpha_us": None,
                            "beta_ns_per_byte": None}) + "\n")
    timed = ["--model", "d2", "--ranks-per-node", "4", "--micro-batch", "2", "--seq", "32",
             "--profile", profile, "--compute-tflops", "0.05", "--optimizer-gbs", "10", "--json"]
    for stage in range(4):
        j = json.loads(run([plan, "--stage", str(stage)] + timed).stdout)
        c, st = j["collectives"], j["step"]
        reduce_s = (c["reduce_scatter_calls"] * 20e-6 + 0.5e-9 * c["reduce_scatter_bytes"] +
                    c["all_reduce_calls"] * 30e-6 + 1e-9 * c["all_reduce_bytes"])
        gather_s = c["all_gather_calls"] * 10e-6 + 0.25e-9 * c["all_gather_bytes"]
        flops = (6 * j["parameters"] + 12 * 2 * 128 * 32) * 2 * 32
        elements = j["parameters"] if stage == 0 else j["parameters"] / 4
        check(abs(st["reduce_seconds"] - reduce_s) < 1e-9 and abs(st["gather_seconds"] - gather_s) < 1e-9
              and abs(st["exposed_comm_seconds"] - reduce_s - gather_s) < 1e-9
              and abs(st["compute_seconds"] - flops / 0.05e12) < 1e-9
              and abs(st["optimizer_seconds"] - elements * 28 / 10e9) < 1e-9
              and abs(st["seconds"] - st["compute_seconds"] - st["optimizer_seconds"] - reduce_s - gather_s) < 1e-9,
              f"stage {stage}: the step time is the profile's fits over the plan's collectives "
              f"({st['seconds'] * 1e3:.1f} ms)")

    # Partial offload on the GPU: the share on the CPU is the host's bytes against the whole
    # offload's, at least the ratio; the step time adds the CPU's update of its share, hidden
    # behind backward up to backward's time, to the GPU's of the rest.
    gpu = ["--model", "gpt2-xl", "--gpus", "--stage", "2", "--dtype", "bf16",
           "--offload-optimizer", "--micro-batch", "8", "--activations", "recompute",
           "--compute-tflops", "400", "--optimizer-gbs", "3000", "--cpu-optimizer-gbs", "40",
           "--json"]
    def gpu_plan(ratio, extra=()):
        r = run([plan] + gpu + ["--offload-ratio", str(ratio)] + list(extra))
        return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}
    whole = gpu_plan(1)
    times = {}
    for ratio in [k / 20 for k in range(1, 21)]:
        j = gpu_plan(ratio)
        if "error" in j:
            check(False, f"--offload-ratio {ratio}: {j['error']}")
            continue
        share, st = j["offload_share"], j["step"]
        times[ratio] = st["seconds"]
        host_share = j["per_rank"]["host_bytes"] / whole["per_rank"]["host_bytes"]
        elements = j["parameters"]  # one rank
        cpu = elements * 28 * share / 40e9
        device = elements * 28 * (1 - share) / 3000e9
        backward = st["compute_seconds"] * 2 / 3
        hidden = min(cpu, backward)
        check(ratio <= share <= 1 and abs(share - host_share) < 1e-12
              and abs(st["cpu_optimizer_seconds"] - cpu) < 1e-9
              and abs(st["cpu_optimizer_hidden_seconds"] - hidden) < 1e-9
              and abs(st["optimizer_seconds"] - (cpu - hidden + device)) < 1e-9,
              f"--offload-ratio {ratio}: share {share:.3f}, CPU {cpu * 1e3:.1f} ms of which "
              f"{hidden * 1e3:.1f} hidden, GPU {device * 1e3:.1f} ms")
    # auto: with a step time the fastest share; with memory only the least that fits.
    best = gpu_plan("auto")
    check(best.get("step", {}).get("seconds", 1e9) <= min(times.values()) + 1e-12
          and "fastest" in best.get("offload_choice", ""),
          f"--offload-ratio auto: the fastest step ({best.get('offload_ratio')}, "
          f"{best.get('step', {}).get('seconds')} s against {min(times.values())} s)")
    memory_only = [a for a in gpu if a not in ("--compute-tflops", "400", "--optimizer-gbs",
                                               "3000", "--cpu-optimizer-gbs", "40")]
    fits = {}
    for ratio in [k / 20 for k in range(1, 21)]:
        j = json.loads(run([plan] + memory_only + ["--offload-ratio", str(ratio),
                                                   "--memory-per-rank", "30GB"]).stdout)
        fits[ratio] = (j["fits"], j["offload_share"])
    j = json.loads(run([plan] + memory_only + ["--offload-ratio", "auto",
                                               "--memory-per-rank", "30GB"]).stdout)
    least = min(share for ok, share in fits.values() if ok)
    check(j["fits"] and j["offload_share"] == least and
          any(not ok for ok, _ in fits.values()),
          f"--offload-ratio auto --memory-per-rank 30GB: the least share that fits "
          f"({j['offload_share']:.3f}, ratio {j['offload_ratio']})")

    # Bad input: status 2, the field named, nothing else printed.
    bad_gpt2 = os.path.join(tmp, "bad.json")
    with open(bad_gpt2, "w") as f:
        json.dump({"model_type": "gpt2", "n_layer": 2, "n_head": 5, "n_embd": 64,
                   "vocab_size": 50257, "n_positions": 1024}, f)
    for args, words in [
            (["--model", bad_gpt2], "n_head = 5 does not divide n_embd = 64"),
            (["--model", "gpt3"], "unknown model config 'gpt3'"),
            (["--params", "8B", "--layers", "32", "--hidden", "4095", "--heads", "32"],
             "--heads 32 does not divide --hidden 4095"),
            (["--params", "1M", "--layers", "32", "--hidden", "4096"], "--params 1000000 is less"),
            (["--params", "1B", "--layers", "-2", "--hidden", "64"], "each positive"),
            (["--ranks-per-node", "0"], "--ranks-per-node is 0"),
            (["--nodes", "0"], "--nodes is 0"),
            (["--stage", "4"], "stage"),
            (["--dtype", "fp8"], "--dtype fp8"),
            (["--model", "bert-tiny", "--activations", "recompute"], "zrt-bert keeps every"),
            (["--micro-batch", "0"], "--micro-batch is 0"),
            (["--ranks-per-node", "4", "--compute-tflops", "1"], "give --optimizer-gbs"),
            (["--ranks-per-node", "4", "--compute-tflops", "1", "--optimizer-gbs", "1"],
             "needs --profile"),
            (["--ranks-per-node", "4", "--compute-tflops", "1", "--optimizer-gbs", "1", "--fabric",
              "ethernet"], "the presets are nvlink4-ib400"),
            (["--ranks-per-node", "4", "--compute-tflops", "1", "--optimizer-gbs", "1", "--profile",
              bad_gpt2], "not zrt-bench comm --json output"),
            (["--ranks-per-node", "4", "--compute-tflops", "1", "--optimizer-gbs", "1", "--backend",
              "mpi", "--profile", profile], "reduce_scatter on mpi at np 4 in fp32 is not sound (one message"),
            (["--ranks-per-node", "8", "--compute-tflops", "1", "--optimizer-gbs", "1", "--profile",
              profile], "no fit of reduce_scatter on shm+mem at np 8 in fp32 (it has"),
            (["--profile", profile], "--profile is for the step time: give --compute-tflops"),
            (["--model", "gpt2", "--heads", "8"], "--heads is for a model given by its size"),
            (["--stage", "2", "--sweep"], "--stage with --sweep or --plot"),
            (["--accumulation", "0"], "--accumulation is 0"),
            (["--offload-ratio", "0.5"], "--offload-ratio is the share of an offloaded"),
            (["--gpus", "--offload-optimizer", "--offload-ratio", "half"],
             "--offload-ratio half: a number in (0, 1], or auto"),
            (["--gpus", "--offload-optimizer", "--offload-ratio", "0"],
             "zero_optimization.offload_optimizer.ratio is 0"),
            (["--gpus", "--offload-optimizer", "--offload-ratio", "auto"],
             "--offload-ratio auto balances the GPU's memory (--memory-per-rank) or the step"),
            (["--gpus", "--offload-optimizer", "--offload-ratio", "auto", "--sweep"],
             "not with --sweep or --plot"),
            (["--gpus", "--offload-optimizer", "--offload-ratio", "auto", "--memory-per-rank",
              "1MB"], "no share of the optimizer state offloaded fits"),
            (["--gpus", "--offload-optimizer", "--compute-tflops", "1", "--optimizer-gbs", "1"],
             "needs --cpu-optimizer-gbs")]:
        r = run([plan] + args)
        check(r.returncode == 2 and words in r.stderr and r.stdout == "",
              f"zrt-plan {' '.join(args)}: status 2 naming '{words}' (got {r.returncode}: "
              f"{r.stderr.strip()})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
