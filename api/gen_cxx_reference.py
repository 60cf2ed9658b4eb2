#!/usr/bin/env python3
"""docs/cxx-reference.md from api/include/zerort/zerort.hpp: every class, struct and free
function of namespace zrt (detail excluded), every public member, one line each, with the C
functions it calls (directly, or through the member, class or owner it uses).

    gen_cxx_reference.py SOURCE_DIR            writes SOURCE_DIR/docs/cxx-reference.md
    gen_cxx_reference.py SOURCE_DIR --check    fails, with a diff, if the file differs

The test cxx_reference runs --check, so the committed file cannot drift from the header.
"""
import argparse
import difflib
import pathlib
import re
import sys

CALL = re.compile(r"\b(zrt_\w+)\s*\(")
IDENT_CALL = re.compile(r"(?<![\w:.>])(\w+)\s*(?:<[^<>()]*>)?\s*\(")
OWNER = re.compile(r"\bowner\s*<\s*\w+\s*,\s*([\w:]+)\s*>\s*(\w+)")
RELEASES = {"detail::wait_and_free": ["zrt_request_wait", "zrt_request_free"]}


def blank_comments(text):
    """(text with comments and literals' insides blanked, [(end offset, doc comment)])."""
    out, docs, i, n = [], [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.index("*/", i) + 2
            if text.startswith("/**", i):
                docs.append((j, text[i:j]))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + re.sub(r"[^\n]", "_", text[i + 1:j]) + q)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out), docs


def matching(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise SystemExit("unbalanced braces in zerort.hpp")


def first_sentence(doc):
    body = re.sub(r"^/\*\*|\*/$", "", doc.strip())
    body = " ".join(line.strip().lstrip("*").strip() for line in body.splitlines()).strip()
    m = re.match(r"(.+?\.)(\s+[A-Z]|$)", body)
    return (m.group(1) if m else body).strip()


class Scope:
    def __init__(self, kind, name, doc):
        self.kind, self.name, self.doc = kind, name, doc
        self.members = []  # dicts: name, decl, body, doc, deprecated, public
        self.owners = {}  # member variable -> release function


def parse_scope(scope, clean, raw, start, end, docs, default_public, classes):
    """Members of the body clean[start:end] (depth 0 inside it)."""
    public = default_public
    i, decl_start = start, start
    while i < end:
        c = clean[i]
        if c in "{;":
            decl = clean[decl_start:i]
            rawdecl = raw[decl_start:i]
            for m in re.finditer(r"\b(public|private|protected)\s*:(?!:)", decl):
                public = m.group(1) == "public"
            cut = max([m.end() for m in re.finditer(r"\b(?:public|private|protected)\s*:(?!:)",
                                                    decl)] or [0])
            decl, rawdecl = decl[cut:], rawdecl[cut:]
            body_end = matching(clean, i) if c == "{" else i
            # the doc comment inside the declaration's text (a member's /**< ... */ is the
            # previous field's)
            doc = next((d for e, d in reversed(docs)
                        if decl_start <= e <= i and not d.startswith("/**<")), None)
            m = re.match(r"\s*(class|struct)\s+(\w+)\s*(?::[^{]*)?$", decl)
            if c == "{" and m:
                if classes is not None:
                    sub = Scope(m.group(1), m.group(2), doc)
                    classes.append(sub)
                    parse_scope(sub, clean, raw, i + 1, body_end, docs, m.group(1) == "struct",
                                None)
            elif c == "{" and re.match(r"\s*namespace\b", decl):
                pass  # namespace detail: not part of the interface
            else:
                add_member(scope, decl, rawdecl, clean[i:body_end + 1] if c == "{" else "", doc,
                           public)
            i = body_end + 1
            if c == "{" and i < end and clean[i] == ";":
                i += 1
            decl_start = i
            continue
        i += 1


def add_member(scope, decl, rawdecl, body, doc, public):
    owner = OWNER.search(decl)
    if owner and not body:
        scope.owners[owner.group(2)] = owner.group(1)
        return
    text = " ".join(decl.split()).replace("( ", "(")
    deprecated = re.search(r'\[\[deprecated\("([^"]*)"\)\]\]', rawdecl)
    if "(" not in text:
        if scope.kind == "struct" and public and text:
            scope.members.append(dict(name=None, decl=text, body="", doc=doc, deprecated=None,
                                      public=True, field=True))
        return
    text = re.sub(r"\[\[[^\]]*\]\]\s*", "", text)
    head = text[:text.index("(")]
    name = re.findall(r"~?\w+", head)[-1]
    if "operator" in head or not public:
        return
    # the signature up to the end of the parameter list (no initializers, no "= delete")
    depth, k = 0, text.index("(")
    for k in range(text.index("("), len(text)):
        depth += text[k] == "("
        depth -= text[k] == ")"
        if depth == 0:
            break
    signature = text[:k + 1] + (" const" if re.match(r"\s*const\b", text[k + 1:]) else "")
    deleted = re.search(r"=\s*(delete|default)\s*$", text)
    scope.members.append(dict(name=name, decl=signature, body=body, doc=doc,
                              deprecated=deprecated.group(1) if deprecated else None,
                              public=True, field=False, deleted=bool(deleted)))


def resolve(scopes, free, c_names):
    """Each member's C functions: its own calls, else those of what it uses."""
    by_class = {s.name: s for s in scopes}
    memo = {}

    def calls_of(scope, member, seen):
        key = (scope.name if scope else "", member["name"], member["decl"])
        if key in memo:
            return memo[key]
        if key in seen:
            return []
        seen = seen | {key}
        body = member["body"]
        direct = [c for c in dict.fromkeys(CALL.findall(body)) if c in c_names]
        if scope:
            for var, release in scope.owners.items():
                if re.search(rf"\b{var}\.release_checked\s*\(", body):
                    direct += RELEASES.get(release, [release])
        if not direct:
            for ident in dict.fromkeys(IDENT_CALL.findall(body)):
                targets = []
                if scope:
                    targets += [(scope, m) for m in scope.members if m["name"] == ident]
                if ident in by_class:
                    targets += [(by_class[ident], m) for m in by_class[ident].members
                                if m["name"] == ident]
                targets += [(None, m) for m in free if m["name"] == ident]
                for s, m in targets:
                    if m is not member:
                        direct += [c for c in calls_of(s, m, seen) if c not in direct]
        memo[key] = list(dict.fromkeys(direct))
        return memo[key]

    return calls_of


def generate(src):
    hpp = src / "api" / "include" / "zerort" / "zerort.hpp"
    raw = hpp.read_text()
    clean, docs = blank_comments(raw)
    # Preprocessor lines (the #if around zrt::model) are not declarations: blanked, offsets kept.
    clean = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), clean)
    ns = re.search(r"\bnamespace\s+zrt\s*\{", clean)
    ns_end = matching(clean, ns.end() - 1)
    top = Scope("namespace", "zrt", None)
    classes = []
    parse_scope(top, clean, raw, ns.end(), ns_end, docs, True, classes)
    headers = [h for layer in ["runtime", "memory", "comm", "optim", "api"]
               for h in (src / layer / "include" / "zerort").glob("*.h")]
    c_names = set(re.findall(r"\b(zrt_\w+)\s*\(", "".join(h.read_text() for h in headers)))
    calls_of = resolve(classes, top.members, c_names)

    def line(scope, m, label):
        calls = calls_of(scope, m, set())
        note = f"deprecated: {m['deprecated']}" if m["deprecated"] else (
            first_sentence(m["doc"]) if m["doc"] else "")
        called = ", ".join(f"`{c}`" for c in calls) or "—"
        sig = m["decl"].replace("|", "\\|")
        return f"| `{label}` | `{sig}` | {called} | {note.replace('|', '/')} |"

    out = ["# zerort.hpp reference", "",
           "Every class, struct and function of `namespace zrt` in "
           "`api/include/zerort/zerort.hpp`, one line",
           "each, with the C functions it calls. Generated by `api/gen_cxx_reference.py` "
           "(the test", "`cxx_reference` fails when this file differs from what it "
           "generates); the naming scheme is", "in the header's top comment.", ""]
    out += ["## Free functions", "", "| name | signature | calls | note |", "|---|---|---|---|"]
    for m in top.members:
        if not m["field"] and not m.get("deleted"):
            out.append(line(None, m, f"zrt::{m['name']}"))
    for s in classes:
        out += ["", f"## zrt::{s.name} ({s.kind})", ""]
        if s.doc:
            out += [first_sentence(s.doc), ""]
        fields = [m for m in s.members if m["field"]]
        if fields:
            out += ["Fields: " + "; ".join(f"`{f['decl']}`" for f in fields) + ".", ""]
        methods = [m for m in s.members if not m["field"] and not m.get("deleted")]
        if not methods and not s.owners:
            continue
        out += ["| member | signature | calls | note |", "|---|---|---|---|"]
        for m in methods:
            out.append(line(s, m, f"{s.name}::{m['name']}"))
        if s.owners and not any(m["name"] == f"~{s.name}" for m in methods):
            released = [c for r in s.owners.values() for c in RELEASES.get(r, [r])]
            out.append(f"| `{s.name}::~{s.name}` | `~{s.name}()` | "
                       + ", ".join(f"`{c}`" for c in released)
                       + " | releases what it owns; the status is dropped |")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=pathlib.Path)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    src = args.src.resolve()
    text = generate(src)
    target = src / "docs" / "cxx-reference.md"
    if args.check:
        old = target.read_text() if target.exists() else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), str(target), "generated"))
            print(f"FAILED: {target} differs from zerort.hpp: run api/gen_cxx_reference.py "
                  f"{args.src}", file=sys.stderr)
            return 1
        print(f"{target.name} matches zerort.hpp")
        return 0
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
