#!/usr/bin/env python3
"""scripts/gpu-check on this build: without a GPU it must refuse (exit 2) unless told
--allow-no-gpu, and then report the cuda tests skipped with the tests' own reason, run the
benchmark on the emulated device, and call the whole a FAIL (exit 1), never a pass. On a
machine with a GPU the same run must agree with itself: PASS exactly when every test passed.

    check_gpu_check.py SOURCE_DIR BUILD_DIR"""

import json
import pathlib
import subprocess
import sys

src, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
script = src / "scripts" / "gpu-check"
common = ["--build-dir", str(build), "--no-configure", "--no-build", "--bench-steps", "1"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED: " + what)


plain = subprocess.run([script] + common, capture_output=True, text=True)
summary_file = build / "gpu-check" / "summary.json"
if plain.returncode == 2:
    # No GPU: refused before building anything, saying why.
    check("no GPU here" in plain.stdout, "the refusal names the missing GPU: " + plain.stdout)
    p = subprocess.run([script] + common + ["--allow-no-gpu"], capture_output=True, text=True)
    print(p.stdout[-3000:])
    s = json.loads(summary_file.read_text())
    check(p.returncode == 1, f"without a GPU the check fails (exit {p.returncode})")
    check(s["verdict"] == "FAIL", "verdict FAIL without a GPU")
    check(s["gpu"].startswith("none:"), "the summary says there is no GPU")
    names = {t["name"] for t in s["tests"]}
    check({"unit_cuda", "mpi_cuda_np1", "mpi_cuda_np2"} <= names, f"cuda tests ran: {names}")
    for t in s["tests"]:
        check(t["status"] == "skipped" and "no device here" in t["why"],
              f"{t['name']} skipped with its reason: {t}")
    for name in ("bench", "bench_offload"):
        rows = s["bench"].get(name, [])
        check([r["stage"] for r in rows] == [0, 1, 2, 3], f"{name}: stages 0-3 measured")
        check(all(r["memory_space"] == "emulated" for r in rows), f"{name} on the emulated device")
    check(all("offload_hidden_share" in r for r in s["bench"]["bench_offload"] if r["stage"]),
          "the offload benchmark reports the hidden share")
    check("== gpu-check summary" in p.stdout and "emulated device, not a GPU" in p.stdout,
          "the summary says the benchmark did not run on a GPU")
else:
    print(plain.stdout[-3000:])
    s = json.loads(summary_file.read_text())
    passed = s["tests"] and all(t["status"] == "passed" for t in s["tests"])
    check((plain.returncode == 0) == bool(passed and s["verdict"] == "PASS"),
          "on a GPU: exit 0 exactly when every cuda test passed")
if failures:
    sys.exit(1)
print("gpu-check behaved")
