#!/usr/bin/env python3
"""Checks that every relative link of the manual (README.md and docs/*.md) resolves.

  check_links.py SOURCE_DIR

A link `[text](path)` must name a file or folder that exists, relative to the page; a link
`[text](path#anchor)` or `[text](#anchor)` must also name a heading of that page (GitHub's
anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 ... for repeats).
Links inside code blocks and code spans are not links; http(s) and mailto links are not
checked (the tests run offline). Every page of docs/ must be linked from README.md, so no
chapter is out of a newcomer's reach. Exit status 1, naming each bad link, if any fails.
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def prose_lines(text):
    """(line number, line without its code spans) for every line outside fenced blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, line


def slug(heading):
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    with open(path, encoding="utf-8") as f:
        for _, line in prose_lines(f.read()):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else f"{base}-{n}")
    return result


def main():
    src = os.path.abspath(sys.argv[1])
    docs = os.path.join(src, "docs")
    pages = [os.path.join(src, "README.md")]
    pages += sorted(os.path.join(docs, p) for p in os.listdir(docs) if p.endswith(".md"))
    bad, checked = [], 0
    linked_from_readme = set()
    cache = {}
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        rel_page = os.path.relpath(page, src)
        # The prose (code blocks blanked, code spans dropped, line breaks kept), so that a
        # link whose text wraps is found too.
        lines = dict(prose_lines(text))
        prose = "\n".join(lines.get(n, "") for n in range(1, text.count("\n") + 2))
        prose = re.sub(r"`+[^`]*`+", lambda c: "\n" * c.group(0).count("\n"), prose)
        for m in list(LINK.finditer(prose)) + list(IMAGE.finditer(prose)):
            number = prose.count("\n", 0, m.start()) + 1
            target = m.group(2)
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            checked += 1
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = f"{rel_page}:{number}: [{' '.join(m.group(1).split())}]({target})"
            if not os.path.exists(full):
                bad.append(f"{where}: {os.path.relpath(full, src)} does not exist")
                continue
            if page == pages[0]:
                linked_from_readme.add(full)
            if anchor:
                if not full.endswith(".md"):
                    bad.append(f"{where}: an anchor into a file that is not markdown")
                    continue
                if full not in cache:
                    cache[full] = anchors(full)
                if anchor not in cache[full]:
                    bad.append(f"{where}: {os.path.relpath(full, src)} has no heading "
                               f"#{anchor}")
    for page in pages[1:]:
        if page not in linked_from_readme:
            bad.append(f"{os.path.relpath(page, src)}: not linked from README.md")
    for b in bad:
        print(f"FAIL: {b}")
    if bad:
        return 1
    print(f"ok: {checked} relative links in {len(pages)} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
