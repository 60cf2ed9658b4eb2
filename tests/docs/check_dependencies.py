#!/usr/bin/env python3
"""Checks that README.md's dependency list is what scripts/install-deps installs.

  check_dependencies.py SOURCE_DIR

Every package of install-deps' lists (`pkgs=(...)`, `pkgs+=(...)`, and npm, which it adds
when missing) must appear in README.md's "Dependencies" section as `name`, and every
`name` there that looks like a Debian package (lower case, digits, + - .) must be one of
them or an option; exit status 1, naming each difference.
"""
import os
import re
import sys


def main():
    src = sys.argv[1]
    with open(os.path.join(src, "scripts", "install-deps"), encoding="utf-8") as f:
        script = f.read()
    # Comments out first: they hold parentheses of their own.
    code = re.sub(r"(^|\s)#[^\n]*", r"\1", script)
    pkgs = set()
    for m in re.finditer(r"\bpkgs\+?=\((.*?)\)", code, re.S):
        pkgs.update(m.group(1).split())
    if "missing+=(npm)" in script:
        pkgs.add("npm")
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    m = re.search(r"^## Dependencies\n(.*?)^## ", readme, re.S | re.M)
    if not m:
        print("FAIL: README.md has no Dependencies section")
        return 1
    section = m.group(1)
    named = set(re.findall(r"`([^`\s]+)`", section))
    bad = [f"README.md does not name {p}, which scripts/install-deps installs"
           for p in sorted(pkgs - named)]
    for n in sorted(named - pkgs):
        if re.fullmatch(r"lib[a-z0-9+.\-]+-dev|[a-z0-9]+(-[a-z0-9]+)*-dev", n):
            bad.append(f"README.md names {n}, which scripts/install-deps does not install")
    for b in bad:
        print(f"FAIL: {b}")
    if bad:
        return 1
    print(f"ok: README.md names all {len(pkgs)} packages of scripts/install-deps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
