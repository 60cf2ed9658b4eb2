#!/usr/bin/env python3
"""The CUDA build of the trainers (preset gpu-kokkos, which `make test` builds wherever nvcc
is): zrt-gpt2 and zrt-bert carry device code, and on a machine where CUDA cannot run they
refuse at once on every rank, saying why, and end (no hang, no fallback to the host).

Here no GPU driver is installed, so the trainers are run against the CUDA toolkit's own
driver stub (lib64/stubs/libcuda.so, what a node with the toolkit and no driver offers):
every driver call answers "stub library", as a missing driver would. On a machine with a
real driver this test has nothing to check (exit 77, skipped): scripts/gpu-check runs the
trainers there.

    check_cuda_trainers.py SOURCE_DIR MPIRUN_LOCAL"""

import ctypes
import os
import pathlib
import subprocess
import sys
import tempfile

src, mpirun = pathlib.Path(sys.argv[1]), sys.argv[2]
bindir = src / "build-gpu-kokkos" / "apps"
SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED: " + what)


programs = [bindir / "zrt-gpt2", bindir / "zrt-bert"]
if not all(p.exists() for p in programs):
    print(f"skipped: the CUDA build of the trainers is not in {bindir} (no nvcc, or no Kokkos "
          "with CUDA and no source to build it: see scripts/build-gpu-trainers' message)")
    sys.exit(SKIP)

# Device code for the layers: the .nv_fatbin section (the host build has none).
for p in programs:
    out = subprocess.run(["readelf", "-SW", str(p)], capture_output=True, text=True).stdout
    size = 0
    for line in out.splitlines():
        if ".nv_fatbin" in line:
            size = int(line.split()[line.split().index("PROGBITS") + 3], 16)
    check(size > 100_000, f"{p.name} carries CUDA device code (.nv_fatbin {size} bytes)")

try:
    real = ctypes.CDLL("libcuda.so.1")
    driver = ctypes.c_int(0)
    if real.cuDriverGetVersion(ctypes.byref(driver)) == 0 and driver.value > 0:
        print(f"skipped: a CUDA driver ({driver.value}) is installed; scripts/gpu-check runs "
              "the trainers on the GPU")
        sys.exit(SKIP)
except OSError:
    pass

cuda = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
stub = cuda / "lib64" / "stubs" / "libcuda.so"
if not stub.exists():
    print(f"skipped: no driver stub at {stub}")
    sys.exit(SKIP)

with tempfile.TemporaryDirectory() as tmp:
    (pathlib.Path(tmp) / "libcuda.so.1").symlink_to(stub)
    env = dict(os.environ, LD_LIBRARY_PATH=tmp + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    for p, args in ((programs[0], ["--config", "d2"]), (programs[1], ["--config", "bert-tiny"])):
        for np in (1, 2):
            cmd = [mpirun, str(np), str(p)] + args + ["--steps", "1", "--device", "device"]
            try:
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)
            except subprocess.TimeoutExpired:
                check(False, f"{' '.join(cmd)} ended (it hung for 90 s)")
                continue
            text = r.stdout + r.stderr
            check(r.returncode != 0, f"{p.name} at np {np} fails (exit {r.returncode})")
            for rank in range(np):
                check(f"{p.name}: rank {rank}: this build computes on CUDA" in text and
                      "no CUDA driver" in text,
                      f"{p.name} at np {np}: rank {rank} says why: {text[-600:]}")

print("cuda_trainers: " + ("FAIL" if failures else "PASS"))
sys.exit(1 if failures else 0)
