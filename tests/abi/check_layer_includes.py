#!/usr/bin/env python3
"""The layer rule, checked over every #include of the library and the programs.

The layers, bottom to top: runtime, memory, comm, optim, nn, api (HACKING.md, "Layers and
files"). nn (libzerort_nn: the layers and the configured models) is built on the public API
of the layers below it; its public headers include the folder zerort/nn/. Each owns its public headers in <layer>/include/zerort/ and its internal headers in
<layer>/. A file of a layer may include the public and internal headers of its own layer
and of the layers below it, never one of a layer above. The programs (apps/) and the
examples include public headers only. An internal header may not share its stem with a
public one (optim/engine.hpp beside zerort/engine.h), so the two cannot be mistaken.

    check_layer_includes.py SOURCE_DIR [--extra FILE LAYER]...

--extra adds a file as if it belonged to LAYER: the test hands it a file that breaks the
rule, to prove the check can fail.
"""
import argparse
import pathlib
import re
import sys

LAYERS = ["runtime", "memory", "comm", "optim", "nn", "api"]
SOURCES = {".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def public_owners(src):
    """zerort/<name>.h -> the layer whose include/zerort/ holds it."""
    owners = {}
    for layer in LAYERS:
        for header in (src / layer / "include" / "zerort").glob("*"):
            name = header.name.removesuffix(".in") + ("/" if header.is_dir() else "")
            if name in owners:
                sys.exit(f"zerort/{name} is public in both {owners[name]}/ and {layer}/")
            owners[name] = layer
    return owners


def owner_of(include, owners):
    """The layer an include names, 'public' for zerort/ headers, or None for others."""
    if include.startswith("zerort/"):
        name = include.removeprefix("zerort/")
        if "/" in name:  # a header of a public folder (zerort/nn/matmul.hpp)
            name = name.split("/", 1)[0] + "/"
        return owners.get(name, "unknown public header"), True
    top = include.split("/", 1)[0]
    if top in LAYERS and "/" in include:
        return top, False
    return None, False


def check_file(path, layer, owners, rel):
    problems = []
    text = path.read_text(errors="replace")
    for m in INCLUDE.finditer(text):
        include = m.group(1)
        owner, public = owner_of(include, owners)
        if owner is None:
            continue
        line = text.count("\n", 0, m.start()) + 1
        where = f"{rel}:{line}"
        if owner == "unknown public header":
            problems.append(f"{where}: includes {include}, which no layer's include/zerort/ holds")
        elif layer == "apps":
            if not public:
                problems.append(f"{where}: a program includes the internal header {include}; "
                                "programs use the public API only")
        elif LAYERS.index(owner) > LAYERS.index(layer):
            kind = "public" if public else "internal"
            problems.append(f"{where}: {layer}/ includes the {kind} header {include} of "
                            f"{owner}/, a layer above it")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=pathlib.Path)
    ap.add_argument("--extra", nargs=2, action="append", default=[],
                    metavar=("FILE", "LAYER"))
    args = ap.parse_args()
    src = args.src.resolve()
    owners = public_owners(src)
    if not owners:
        sys.exit(f"no public headers under {src}/<layer>/include/zerort")

    files = []
    for layer in LAYERS + ["apps"]:
        for path in sorted((src / layer).rglob("*")):
            if path.suffix in SOURCES and path.is_file() and "node_modules" not in path.parts:
                files.append((path, layer))
    files += [(pathlib.Path(f), layer) for f, layer in args.extra]

    problems = []
    for path, layer in files:
        rel = path.relative_to(src) if path.is_relative_to(src) else path
        problems += check_file(path, layer, owners, rel)

    # Internal headers named apart from the public ones.
    stems = {name.split(".")[0] for name in owners if not name.endswith("/")}
    for layer in LAYERS:
        for path in sorted((src / layer).rglob("*.hpp")):
            if "include" in path.relative_to(src / layer).parts:
                continue
            if path.stem in stems:
                problems.append(f"{path.relative_to(src)}: an internal header named like the "
                                f"public zerort/{path.stem}.h; name it for what it holds")

    for p in problems:
        print(p)
    if problems:
        print(f"FAILED: {len(problems)} include(s) break the layer rule", file=sys.stderr)
        return 1
    counts = {layer: sum(1 for _, l in files if l == layer) for layer in LAYERS + ["apps"]}
    print("layer rule holds: " + ", ".join(f"{l} {n} files" for l, n in counts.items()))
    print("public headers: " + ", ".join(f"{n} ({l})" for n, l in sorted(owners.items(),
                                                                      key=lambda x: LAYERS.index(x[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
