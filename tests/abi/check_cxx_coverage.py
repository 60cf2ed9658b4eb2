#!/usr/bin/env python3
"""The C++ header covers the C API: every ZRT_API function of the public headers is called
by zerort.hpp, or listed below with the reason it is not.

    check_cxx_coverage.py SOURCE_DIR [--extra-header FILE]...

A function counts as called when zerort.hpp has `zrt_name(` outside comments, or passes it
as the release call of an owner (`detail::owner<zrt_x_h, zrt_x_destroy>`), which the owner
calls. --extra-header reads FILE as one more public header: the test hands it a fake
declaration, to prove the check fails naming it.
"""
import argparse
import pathlib
import re
import sys

LAYERS = ["runtime", "memory", "comm", "optim", "nn", "api"]

# C functions that zerort.hpp leaves out on purpose, each with its reason.
EXCLUDED = {
    # zrt_init (static inline in context.h) passes the header's API version to it;
    # zrt::context calls zrt_init.
    "zrt_init_versioned": "called through zrt_init, which zrt::context calls",
    # Fortran handles (MPI_Fint) are for the Fortran module; C++ passes MPI_Comm.
    "zrt_init_fortran": "the Fortran module's entry point (MPI_Fint communicator)",
    "zrt_comm_create_fortran": "the Fortran module's entry point (MPI_Fint communicator)",
    # API 2's background save, deprecated (ZRT_DEPRECATED): engine::checkpoint_save_post
    # returns a zrt::request instead.
    "zrt_checkpoint_save_async": "deprecated API 2 name of zrt_checkpoint_save_post",
    "zrt_checkpoint_test": "deprecated API 2 name: zrt::request::test",
    "zrt_checkpoint_wait": "deprecated API 2 name: zrt::request::wait",
    # C++ reports errors as zrt::error; a library layered on zerort sets the message in C.
    "zrt_last_error_set": "for C libraries layered on zerort; C++ throws zrt::error",
}

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# A declaration: ZRT_API, maybe ZRT_DEPRECATED(...), the return type, the name, "(".
DECLARATION = re.compile(
    r"\bZRT_API\b\s+(?:ZRT_DEPRECATED\s*\([^)]*\)\s*)?[\w\s\*]*?\b(zrt_\w+)\s*\(")
CALL = re.compile(r"\b(zrt_\w+)\s*\(")
OWNER_RELEASE = re.compile(r"\bowner\s*<\s*\w+\s*,\s*(zrt_\w+)\s*>")


def c_functions(headers):
    """name -> the header that declares it, for every ZRT_API function."""
    found = {}
    for header in headers:
        text = COMMENT.sub(" ", header.read_text())
        text = re.sub(r"^\s*#\s*define[^\n]*", " ", text, flags=re.M)
        for m in DECLARATION.finditer(text):
            found.setdefault(m.group(1), header)
    return found


def cxx_calls(hpp):
    text = COMMENT.sub(" ", hpp.read_text())
    return set(CALL.findall(text)) | set(OWNER_RELEASE.findall(text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=pathlib.Path)
    ap.add_argument("--extra-header", action="append", default=[], type=pathlib.Path)
    args = ap.parse_args()
    src = args.src.resolve()
    headers = sorted(h for layer in LAYERS for h in (src / layer / "include" / "zerort").glob("*.h"))
    headers += args.extra_header
    hpp = src / "api" / "include" / "zerort" / "zerort.hpp"

    functions = c_functions(headers)
    if len(functions) < 50:
        sys.exit(f"only {len(functions)} ZRT_API functions found under {src}: is the parser wrong?")
    calls = cxx_calls(hpp)

    problems = []
    for name, header in sorted(functions.items()):
        if name in calls and name in EXCLUDED:
            problems.append(f"{name}: zerort.hpp calls it, but it is excluded "
                            f"({EXCLUDED[name]}): drop it from EXCLUDED")
        elif name not in calls and name not in EXCLUDED:
            rel = header.relative_to(src) if header.is_relative_to(src) else header
            problems.append(f"{name} ({rel}): zerort.hpp neither calls it nor lists it in "
                            "EXCLUDED of tests/abi/check_cxx_coverage.py with a reason")
    for name in sorted(set(EXCLUDED) - set(functions)):
        problems.append(f"{name}: excluded, but no public header declares it: drop it")
    # (zrt_status_t (*Release)(H) is a type before "(", not a call.)
    for name in sorted(c for c in calls if c not in functions and not c.endswith(("_t", "_h"))):
        # static inline functions of the headers (zrt_init) are not ZRT_API; anything
        # else would be a call to nothing.
        if not re.search(rf"\b{name}\s*\(", "".join(h.read_text() for h in headers)):
            problems.append(f"{name}: zerort.hpp calls it, but no public header declares it")

    for p in problems:
        print(p)
    covered = sum(1 for n in functions if n in calls)
    if problems:
        print(f"FAILED: {len(problems)} problem(s); {covered} of {len(functions)} C functions "
              "covered by zerort.hpp", file=sys.stderr)
        return 1
    print(f"zerort.hpp covers {covered} of {len(functions)} ZRT_API functions; "
          f"{len(EXCLUDED)} excluded:")
    for name, reason in sorted(EXCLUDED.items()):
        print(f"  {name}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
