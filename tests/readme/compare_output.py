#!/usr/bin/env python3
"""Checks that an output block quoted in the manual (README.md, docs/*.md) is what the
program prints today.

    compare_output.py QUOTED ACTUAL

Lines of QUOTED are matched against ACTUAL in order, each to the next line of ACTUAL:
- a line "..." skips any number of lines;
- a line ending in "..." (after " | " or ", ") must begin the actual line;
- every other line must equal it.
Figures that change from run to run (milliseconds, tokens/s, the ETA, seconds of a save,
resident sizes, Slurm's job ids) are compared as placeholders; every other figure (losses, norms, learning
rates, model-state bytes, token counts) must be the one printed. Notes about the machine
rather than the program (OpenBLAS not recognizing the CPU, which depends on the VM the test
runs on) are dropped from ACTUAL before matching.
"""
import re
import sys

VOLATILE = [
    (re.compile(r"\b\d+ ms\b"), "<ms>"),
    (re.compile(r"\b\d+ tok/s\b"), "<tok/s>"),
    (re.compile(r"\beta \d+:\d+(:\d+)?"), "eta <time>"),
    (re.compile(r", \d+(\.\d+)? s\)"), ", <s>)"),
    (re.compile(r"\b(mem/rank|peak resident) \d+(\.\d+)? [KMGT]?i?B\b"), r"\1 <bytes>"),
    # Slurm's job ids, which grow with every job the cluster ran.
    (re.compile(r"\b(job |gpt2-|bert-)\d+\b"), r"\1<id>"),
]

MACHINE_NOTES = [
    re.compile(r"^zrt-(gpt2|bert): note: OpenBLAS did not recognize this CPU"),
    # srun's own notes when the previous block's job still holds the nodes for a moment
    # (seen 2026-12-06 in docs/multinode.md): the scheduler's, not the program's output.
    re.compile(r"^srun: job \d+ queued and waiting for resources$"),
    re.compile(r"^srun: job \d+ has been allocated resources$"),
]


def normalize(line):
    for pattern, placeholder in VOLATILE:
        line = pattern.sub(placeholder, line)
    return line.rstrip()


def main():
    quoted = [normalize(l) for l in open(sys.argv[1], encoding="utf-8").read().splitlines()]
    actual = [normalize(l) for l in open(sys.argv[2], encoding="utf-8", errors="replace")
              .read().splitlines() if not any(n.match(l) for n in MACHINE_NOTES)]
    pos = 0
    skipping = False
    for number, q in enumerate(quoted, 1):
        if q == "...":
            skipping = True
            continue
        prefix = q.endswith("...")
        want = q[:-3].rstrip() if prefix else q

        def matches(a):
            return a.startswith(want) if prefix else a == want

        found = None
        candidates = range(pos, len(actual)) if skipping else range(pos, min(pos + 1, len(actual)))
        for i in candidates:
            if matches(actual[i]):
                found = i
                break
        if found is None:
            near = actual[pos] if pos < len(actual) else "(end of output)"
            first = want.split(" ")[0]
            for a in actual[pos:]:
                if a.split(" ")[0] == first:
                    near = a
                    break
            print(f"FAIL: line {number} of the quoted block is not what the program prints\n"
                  f"  quoted:  {q}\n  printed: {near}")
            return 1
        pos = found + 1
        skipping = False
    print(f"ok: {len(quoted)} quoted lines match the output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
