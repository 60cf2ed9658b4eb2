#!/usr/bin/env python3
"""Rewrites the quoted outputs that run_readme_examples.sh found different (run it with
README_REFRESH_DIR=DIR) from what the programs printed in that run:

    refresh_quoted.py DIR

Each quoted line is matched against the printed ones as compare_output.py matches them; a
line that matches stays as written (its placeholders and "..." included), a line that does
not becomes the printed line at its place (after "...", the next printed line that begins
with the same two words). The page must still contain the quote word for
word. Prints what changed; a quote whose lines no longer line up (a line printed or not
printed) is left alone and reported, to be rewritten by hand.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_output import MACHINE_NOTES, normalize  # noqa: E402


def refresh(quoted_text, printed_text):
    printed = [l for l in printed_text.splitlines() if not any(n.match(l) for n in MACHINE_NOTES)]
    out, pos, skipping = [], 0, False
    for raw in quoted_text.splitlines():
        q = normalize(raw)
        if q == "...":
            out.append(raw)
            skipping = True
            continue
        prefix = q.endswith("...")
        want = q[:-3].rstrip() if prefix else q
        span = range(pos, len(printed)) if skipping else range(pos, min(pos + 1, len(printed)))
        found = next((i for i in span if (normalize(printed[i]).startswith(want) if prefix
                                          else normalize(printed[i]) == want)), None)
        if found is not None:
            out.append(raw)
            pos, skipping = found + 1, False
            continue
        # After "..." the printed line it stands for begins with the same two words
        # ("step 200/200"); otherwise it is the next one.
        key = raw.split()[:2]
        at = next((i for i in span if printed[i].split()[:2] == key), None) if skipping \
            else (pos if pos < len(printed) else None)
        if at is None:
            return None  # where the line belongs is not known: by hand
        out.append(printed[at])
        pos, skipping = at + 1, False
    return "\n".join(out) + "\n"


def main():
    folder = sys.argv[1]
    bad = 0
    for n in sorted(int(f[:-5]) for f in os.listdir(folder) if f.endswith(".page")):
        page = open(os.path.join(folder, f"{n}.page")).read().strip()
        quoted = open(os.path.join(folder, f"{n}.quoted")).read()
        printed = open(os.path.join(folder, f"{n}.printed"), errors="replace").read()
        new = refresh(quoted, printed)
        text = open(page).read()
        if new is None or text.count(quoted) != 1:
            print(f"by hand: {page}: the quote beginning {quoted.splitlines()[0]!r}")
            bad += 1
            continue
        open(page, "w").write(text.replace(quoted, new))
        print(f"refreshed: {page}: {sum(a != b for a, b in zip(quoted.splitlines(), new.splitlines()))} line(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
