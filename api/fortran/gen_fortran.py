#!/usr/bin/env python3
"""Generates the Fortran module `use zerort` from the C headers, as MPICH generates its
mpi_f08 binding: the constants (every enumerator and integer macro, the field bits with
them), a bind(C) type per handle and per struct, a raw bind(C) interface per function and
a wrapper with the optional `ierr` last. The hand-written part (zerort.F90.in: error
handling, strings, typed views, the functions whose Fortran form differs from the C one)
is the template; its `!@GENERATED ...@` lines are replaced here. Lines between
`!@IF header.h@` and `!@END header.h@` are kept only when header.h is one of the headers
(the model API of libzerort_nn, zerort/model.h, where that library is built); the markers
go.

    gen_fortran.py --template zerort.F90.in --out zerort.F90 HEADER...
    gen_fortran.py --check HEADER... --template zerort.F90.in   (report only)

Every ZRT_API function ends up in one of three places, or the generator fails, naming it:
generated, bound by hand in the template (a `bind(C, name="...")` there), or in C_ONLY below
with the reason a Fortran program does not need it. A C type the mapping below does not know
fails the generation too, so nothing is silently left out."""

import argparse
import os
import re
import sys

# What a Fortran program has no use for, and why.
C_ONLY = {
    "zrt_init_versioned": "takes a C MPI_Comm; Fortran's zrt_init calls zrt_init_fortran",
    "zrt_comm_create": "takes a C MPI_Comm; Fortran's zrt_comm_create calls "
                       "zrt_comm_create_fortran",
}
# Functions whose Fortran name differs: the C function that implements them. Fortran
# names ignore case, so zrt_optimizer_adam would be the enumerator ZRT_OPTIMIZER_ADAM.
FORTRAN_VARIANT = {"zrt_comm_create_fortran": "zrt_comm_create",
                   "zrt_optimizer_adam": "zrt_optimizer_adam_update"}
# Argument names that would shadow a type the wrappers use (mpi_comm is type(MPI_Comm)).
ARG_NAMES = {"mpi_comm": "communicator"}

SCALARS = {  # C type -> (Fortran kind type, iso_c_binding name to import)
    "int": ("integer(c_int)", "c_int"),
    "unsigned": ("integer(c_int)", "c_int"),
    "uint32_t": ("integer(c_int32_t)", "c_int32_t"),
    "int32_t": ("integer(c_int32_t)", "c_int32_t"),
    "int64_t": ("integer(c_int64_t)", "c_int64_t"),
    "uint64_t": ("integer(c_int64_t)", "c_int64_t"),
    "size_t": ("integer(c_size_t)", "c_size_t"),
    "double": ("real(c_double)", "c_double"),
    "float": ("real(c_float)", "c_float"),
    "MPI_Fint": ("integer(c_int)", "c_int"),
    "bool": ("logical(c_bool)", "c_bool"),
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


class Api:
    def __init__(self):
        self.constants = []  # (name, value, enum name)
        self.enum_types = set()
        self.handles = {}  # C typedef name -> Fortran type name
        self.structs = []  # (C typedef, Fortran name, [(ctype, name, array)])
        self.functions = []  # (name, return, [(ctype, name)])
        self.deprecated = {}  # name -> its replacement

    def parse(self, path):
        raw = open(path).read()
        text = strip_comments(raw)
        values = {c[0]: c[1] for c in self.constants}
        # Field bits: "@name zrt_x_field ... @{", a #define per bit (ZRT_BIT(n), and the
        # _ALL value (ZRT_BIT(n) - 1)), "@}". Macros, since an enum stops at bit 30.
        for m in re.finditer(r"@name\s+(zrt_\w+_field)\b[^@]*@\{(.*?)@\}", raw, re.S):
            for d in re.finditer(r"^#define\s+(ZRT_\w+)\s+(.*?)\s*(?:/\*.*)?$",
                                 m.group(2), re.M):
                name = d.group(1)
                py = re.sub(r"ZRT_BIT\((\d+)\)", r"(1 << \1)", d.group(2))
                value = eval(py, {"__builtins__": {}})  # our own headers' integer arithmetic
                values[name] = value
                self.constants.append((name, value, m.group(1)))
        # Integer macros (ZRT_TENSOR_MAX_DIMS, the length of an array member): constants too.
        for d in re.finditer(r"^\s*#\s*define\s+(ZRT_\w+)\s+(\d+)\s*$", text, re.M):
            values[d.group(1)] = int(d.group(2))
            self.constants.append((d.group(1), int(d.group(2)), None))
        for m in re.finditer(r"(typedef\s+)?enum\s+(\w+)\s*\{(.*?)\}\s*(\w*)\s*;", text, re.S):
            enum = m.group(2)
            if m.group(4):
                self.enum_types.add(m.group(4))
            nxt = 0
            for item in m.group(3).split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, expr = item.partition("=")
                name, expr = name.strip(), expr.strip()
                if expr:
                    py = re.sub(r"(\d+)u\b", r"\1", expr)
                    py = re.sub(r"\b(ZRT_\w+)\b", lambda k: str(values[k.group(1)]), py)
                    value = eval(py, {"__builtins__": {}})  # our own headers' integer arithmetic
                else:
                    value = nxt
                nxt = value + 1
                values[name] = value
                if not name.endswith("_FORCE_INT_"):
                    self.constants.append((name, value, enum))
        for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\*\s*(\w+_h)\s*;", text):
            self.handles[m.group(2)] = m.group(2)[:-2]
        for m in re.finditer(r"typedef\s+struct\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
            members = []
            for decl in m.group(1).split(";"):
                decl = " ".join(decl.split())
                if not decl:
                    continue
                dm = re.fullmatch(r"((?:const\s+)?[\w ]+?\s*\**)\s*(\w+(?:\s*\[\s*\w+\s*\])?"
                                  r"(?:\s*,\s*\**\s*\w+(?:\s*\[\s*\w+\s*\])?)*)", decl)
                if not dm:
                    sys.exit(f"gen_fortran: {path}: cannot read the member '{decl}' of {m.group(2)}")
                base = dm.group(1).strip()
                for one in dm.group(2).split(","):
                    one = one.strip()
                    stars = one.count("*")
                    one = one.replace("*", "").strip()
                    am = re.fullmatch(r"(\w+)\s*(?:\[\s*(\w+)\s*\])?", one)
                    members.append((base + "*" * stars, am.group(1), am.group(2)))
            self.structs.append((m.group(2), None, members))
        # A name kept one version for the old API (ZRT_DEPRECATED("its replacement")) is
        # not bound: Fortran programs get the new name only.
        for m in re.finditer(r"ZRT_API\s+ZRT_DEPRECATED\(\s*\"(\w+)\"\s*\)\s+(?:const\s+)?\w+"
                             r"\s*\**\s*(zrt_\w+)\s*\(", raw):
            self.deprecated[m.group(2)] = m.group(1)
        for m in re.finditer(r"ZRT_API\s+(?:ZRT_DEPRECATED\(\s*\"\w+\"\s*\)\s+)?"
                             r"((?:const\s+)?\w+\s*\**)\s*(zrt_\w+)\s*\(([^)]*)\)\s*;", text):
            args = []
            raw = " ".join(m.group(3).split())
            if raw and raw != "void":
                for a in raw.split(","):
                    am = re.fullmatch(r"\s*(.*?[\s*])(\w+)\s*", a)
                    if not am:
                        sys.exit(f"gen_fortran: {path}: cannot read the argument '{a}' "
                                 f"of {m.group(2)}")
                    args.append((" ".join(am.group(1).split()).replace(" *", "*"), am.group(2)))
            self.functions.append((m.group(2), " ".join(m.group(1).split()), args))


def fortran_struct_name(ctype, function_names):
    name = ctype[:-2] if ctype.endswith("_t") else ctype
    # A Fortran scope cannot hold a type and a procedure of one name (zrt_param_info is
    # both a struct and a function in C): such a type keeps its _t.
    return ctype if name in function_names else name


class Generator:
    def __init__(self, api):
        self.api = api
        fnames = {f[0] for f in api.functions}
        self.struct_names = {}
        for i, (ctype, _, members) in enumerate(api.structs):
            fname = fortran_struct_name(ctype, fnames)
            api.structs[i] = (ctype, fname, members)
            self.struct_names[ctype] = fname
        self.field_all = {c[0] for c in api.constants if c[0].endswith("_FIELD_ALL")}

    def member_decl(self, ctype, name, array):
        dims = f", dimension({array})" if array else ""
        if ctype.endswith("*"):
            return f"type(c_ptr){dims} :: {name} = c_null_ptr"
        base = ctype.replace("const ", "")
        if base == "char" and array:
            return f"character(kind=c_char) :: {name}({array}) = c_null_char"
        if base in self.api.enum_types:
            return f"integer(c_int){dims} :: {name} = 0"
        if base in self.api.handles:
            return f"type({self.api.handles[base]}){dims} :: {name}"
        if base in SCALARS:
            kind = SCALARS[base][0]
            zero = "0" if kind.startswith("integer") else "0"
            if name == "field_mask":
                return None  # written by the caller of member_decl
            return f"{kind}{dims} :: {name} = {zero}"
        sys.exit(f"gen_fortran: no Fortran form for the struct member type '{ctype}' ({name})")

    def types(self):
        out = []
        for cname, fname in sorted(self.api.handles.items()):
            out += [f"  type, bind(C), public :: {fname}  ! {cname}",
                    "    type(c_ptr) :: ptr = c_null_ptr", "  end type"]
        for ctype, fname, members in self.api.structs:
            out.append(f"  type, bind(C), public :: {fname}  ! {ctype}")
            for mtype, name, array in members:
                if name == "field_mask":
                    # Output structs ask for every field by default; input structs set none.
                    stem = ctype[:-2].upper().replace("_PARAMS", "_PARAM")
                    default = f"{stem}_FIELD_ALL" if (
                        f"{stem}_FIELD_ALL" in self.field_all and self.is_output(ctype)) else "0"
                    out.append(f"    integer(c_int64_t) :: field_mask = {default}")
                    continue
                out.append("    " + self.member_decl(mtype, name, array))
            out.append("  end type")
        return out

    def is_output(self, ctype):
        """A struct some function fills (passed as a non-const pointer)."""
        return any(a[0] == ctype + "*" for f in self.api.functions for a in f[2])

    def constants(self):
        out = []
        for name, value, enum in self.api.constants:
            kind = "c_int64_t" if "_FIELD_" in name else "c_int"
            out.append(f"  integer({kind}), parameter, public :: {name} = {value}")
        return out

    def map_arg(self, fname, ctype, name, args):
        """(raw declaration, wrapper declaration, call expression, needs, pre, post) for
        one argument, or None to leave it out of the wrapper's list (the string triple)."""
        base = ctype.replace("const ", "")
        const = ctype.startswith("const ")
        h = self.api.handles
        if base in h:
            return (f"type({h[base]}), value :: {name}", f"type({h[base]}), intent(in) :: {name}",
                    name)
        if base.endswith("*") and base[:-1] in h:
            return (f"type({h[base[:-1]]}) :: {name}", f"type({h[base[:-1]]}), intent(out) :: {name}",
                    name)
        if base.endswith("*") and base[:-1] in self.struct_names:
            t = self.struct_names[base[:-1]]
            if const and name == "params":
                # params may be NULL in C (every field its default): optional here, and an
                # absent optional reaches C as NULL (Fortran 2018, bind(C)).
                return (f"type({t}), intent(in), optional :: {name}",
                        f"type({t}), intent(in), optional :: {name}", name)
            if const:
                return (f"type({t}), intent(in) :: {name}", f"type({t}), intent(in) :: {name}",
                        name)
            return (f"type({t}) :: {name}", f"type({t}), intent(inout) :: {name}", name)
        if base in self.api.enum_types or base in ("int", "unsigned", "MPI_Fint"):
            return (f"integer(c_int), value :: {name}", f"integer, intent(in) :: {name}",
                    f"int({name}, c_int)")
        if base in SCALARS:
            kind = SCALARS[base][0]
            return (f"{kind}, value :: {name}", f"{kind}, intent(in) :: {name}", name)
        if base.endswith("*") and (base[:-1] in SCALARS or base[:-1] in self.api.enum_types):
            inner = base[:-1]
            if name in ("shape",) or const:
                kind = SCALARS[inner][0]
                return (f"{kind}, dimension(*), intent(in) :: {name}",
                        f"{kind}, dimension(*), intent(in) :: {name}", name)
            if inner == "float" and not name.endswith("_p"):
                return (f"real(c_float), dimension(*) :: {name}",
                        f"real(c_float), dimension(*) :: {name}", name)
            if inner in ("int", "unsigned") or inner in self.api.enum_types:
                # A default integer out-argument, as the hand-written wrappers take.
                return (f"integer(c_int) :: {name}", f"integer, intent(out) :: {name}",
                        ("int_out", name))
            kind = SCALARS[inner][0]
            return (f"{kind} :: {name}", f"{kind}, intent(out) :: {name}", name)
        if base == "char*" and const:
            return (f"character(kind=c_char), dimension(*), intent(in) :: {name}",
                    f"character(len=*), intent(in) :: {name}", f"trim({name}) // c_null_char")
        if base == "char**" and const:
            return ("type(c_ptr) :: " + name,
                    f"character(len=:), allocatable, intent(out) :: {name}", ("str_out", name))
        if base == "void*" and const:
            return (f"type(*), dimension(*), intent(in) :: {name}",
                    f"type(*), dimension(*), intent(in) :: {name}", name)
        if base == "void*":
            if name in ("ptr", "stream"):  # an address handed back, not a buffer
                return (f"type(c_ptr), value :: {name}", f"type(c_ptr), intent(in) :: {name}",
                        name)
            return (f"type(*), dimension(*) :: {name}", f"type(*), dimension(*) :: {name}", name)
        if base == "void**":
            return (f"type(c_ptr) :: {name}", f"type(c_ptr), intent(out) :: {name}", name)
        sys.exit(f"gen_fortran: {fname}: no Fortran form for the argument type '{ctype}' "
                 f"({name}); bind it by hand in zerort.F90.in or list it in C_ONLY")

    def function(self, fname, ret, args):
        """(raw interface lines, wrapper lines, public name, generic interface lines)."""
        if ret != "zrt_status_t":
            sys.exit(f"gen_fortran: {fname} returns {ret}: bind it by hand in zerort.F90.in")
        public = FORTRAN_VARIANT.get(fname, fname)
        names = [a[1] for a in args]
        # The snprintf-like triple (char *buf, size_t size, size_t *length_p) becomes one
        # allocatable string.
        text_out = names[-3:] == ["buf", "size", "length_p"]
        raw_lines = []
        for ctype, name in args:
            if ctype.replace("const ", "") == "MPI_Fint":
                raw_lines.append(f"integer(c_int), value :: {name}")
            elif text_out and name == "buf":
                raw_lines.append("character(kind=c_char), dimension(*) :: buf")
            elif text_out and name == "size":
                raw_lines.append("integer(c_size_t), value :: size")
            elif text_out and name == "length_p":
                raw_lines.append("integer(c_size_t) :: length_p")
            else:
                raw_lines.append(self.map_arg(fname, ctype, name, args)[0])
        raw = [f"    function c_{fname}({', '.join(names)}) bind(C, name=\"{fname}\") result(st)",
               "      import", "      implicit none"]
        raw += ["      " + d for d in raw_lines]
        raw += ["      integer(c_int) :: st", "    end function"]
        sized = [n for c, n in args if c == "size_t" and not (text_out and n == "size")]
        if not sized:
            return raw, self.wrapper(public, fname, args, text_out, None), public, []
        # Counts and sizes by value: a generic over default integers (as MPI's Fortran
        # bindings take them) and integer(c_size_t) (beyond 2**31 - 1).
        bodies = (self.wrapper(public + "_int", fname, args, text_out, "int")
                  + self.wrapper(public + "_size", fname, args, text_out, "size"))
        generic = [f"  interface {public}",
                   f"    module procedure {public}_int, {public}_size", "  end interface"]
        return raw, bodies, public, generic

    def wrapper(self, sub, fname, args, text_out, sizes):
        wrap, calls, post, locals_ = [], [], [], []
        for ctype, name in args:
            if text_out and name in ("buf", "size", "length_p"):
                continue
            arg = name[:-2] if name.endswith("_p") else name
            arg = ARG_NAMES.get(arg, arg)
            if ctype.replace("const ", "") == "MPI_Fint":
                wrap.append((f"type(MPI_Comm), intent(in) :: {arg}", arg))
                calls.append(f"int({arg}%MPI_VAL, c_int)")
                continue
            if ctype == "size_t" and sizes == "int":
                wrap.append((f"integer, intent(in) :: {arg}", arg))
                calls.append(f"int({arg}, c_size_t)")
                continue
            _, wrapd, call = self.map_arg(fname, ctype, name, args)
            wrapd = re.sub(rf":: {name}$", f":: {arg}", wrapd)
            wrap.append((wrapd, arg))
            if isinstance(call, tuple):
                kind, _ = call
                ctyp = "integer(c_int)" if kind == "int_out" else "type(c_ptr)"
                locals_.append(f"{ctyp} :: c_{arg}")
                calls.append(f"c_{arg}")
                conv = f"int(c_{arg})" if kind == "int_out" else f"from_c(c_{arg})"
                post.append(f"if (st == ZRT_SUCCESS) {arg} = {conv}")
                if kind == "str_out":
                    post.append(f"if (st /= ZRT_SUCCESS) {arg} = ''")
            else:
                calls.append(call if call != name else arg)
                if call != name:
                    calls[-1] = call.replace(name, arg)
        wnames = [w[1] for w in wrap] + (["text"] if text_out else []) + ["ierr"]
        body = [f"  subroutine {sub}({', '.join(wnames)})"]
        body += ["    " + w[0] for w in wrap]
        if text_out:
            body.append("    character(len=:), allocatable, intent(out) :: text")
        body.append("    integer, optional, intent(out) :: ierr")
        body.append("    integer(c_int) :: st")
        body += ["    " + l for l in locals_]
        if text_out:
            body += ["    character(kind=c_char) :: probe(1)",
                     "    character(kind=c_char), allocatable :: chars(:)",
                     "    integer(c_size_t) :: length"]
            pre = ", ".join(calls)
            pre = pre + ", " if pre else ""
            body += ["    length = 0",
                     f"    st = c_{fname}({pre}probe, 0_c_size_t, length)",
                     "    if (st == ZRT_SUCCESS) then",
                     "      allocate(chars(length + 1))",
                     f"      st = c_{fname}({pre}chars, length + 1, length)",
                     "    end if",
                     "    if (st == ZRT_SUCCESS) then",
                     "      allocate(character(len=length) :: text)",
                     "      text = transfer(chars(1:length), text)",
                     "    else",
                     "      text = ''",
                     "    end if"]
        else:
            body.append(f"    st = c_{fname}({', '.join(calls)})")
        body += ["    " + p for p in post]
        body += ["    call finish(st, ierr)", f"  end subroutine {sub}", ""]
        return body


def fold(lines, width=100):
    """Free-form Fortran lines are at most 132 characters: long ones continue with &."""
    out = []
    for line in lines:
        if len(line) <= width or line.lstrip().startswith("!"):
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip())
        rest = line
        while len(rest) > width:
            cut = rest.rfind(", ", indent + 10, width)
            if cut < 0:
                break
            out.append(rest[:cut + 1] + " &")
            rest = " " * (indent + 4) + rest[cut + 2:]
        out.append(rest)
    return out


def select_sections(template, headers):
    """The template with its !@IF h@ ... !@END h@ sections kept where h is among the
    headers (by file name), dropped elsewhere; the marker lines removed."""
    names = {os.path.basename(h) for h in headers}
    out, open_ = [], None
    for n, line in enumerate(template.splitlines(), 1):
        m = re.fullmatch(r"\s*!@(IF|END) ([\w.]+)@\s*", line)
        if m and m.group(1) == "IF":
            if open_:
                sys.exit(f"gen_fortran: template line {n}: !@IF {m.group(2)}@ inside !@IF {open_}@")
            open_ = m.group(2)
        elif m:
            if m.group(2) != open_:
                sys.exit(f"gen_fortran: template line {n}: !@END {m.group(2)}@ without its !@IF@")
            open_ = None
        elif open_ is None or open_ in names:
            out.append(line)
    if open_:
        sys.exit(f"gen_fortran: the template's !@IF {open_}@ has no !@END {open_}@")
    return "\n".join(out) + "\n"


def hand_bound(template):
    return set(re.findall(r'bind\(C,\s*name="(zrt_\w+)"\)', template))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", required=True)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true", help="report the coverage, write nothing")
    ap.add_argument("headers", nargs="+")
    a = ap.parse_args()

    api = Api()
    for h in a.headers:
        api.parse(h)
    template = select_sections(open(a.template).read(), a.headers)
    by_hand = hand_bound(template)
    gen = Generator(api)

    raws, bodies, publics, generics = [], [], [], []
    generated, missing = [], []
    for fname, ret, args in api.functions:
        if fname in by_hand or fname in C_ONLY or fname in api.deprecated:
            continue
        if ret != "zrt_status_t":
            missing.append(f"{fname} (returns {ret})")
            continue
        if any(c.replace("const ", "") == "MPI_Comm" for c, _ in args):
            missing.append(f"{fname} (takes an MPI_Comm: add a _fortran variant taking MPI_Fint)")
            continue
        raw, body, public, generic = gen.function(fname, ret, args)
        raws += raw
        bodies += body
        generics += generic
        publics.append(public)
        generated.append(fname)
    stale = sorted(set(C_ONLY) - {f[0] for f in api.functions})
    if missing or stale:
        for m in missing:
            print(f"gen_fortran: {m} is neither bound nor C-only", file=sys.stderr)
        for s in stale:
            print(f"gen_fortran: C_ONLY lists {s}, which no header declares", file=sys.stderr)
        return 1
    total = len(api.functions)
    report = (f"gen_fortran: {total} ZRT_API functions: {len(generated)} generated, "
              f"{len(by_hand & {f[0] for f in api.functions})} bound by hand, "
              f"{len(C_ONLY)} C-only, {len(api.deprecated)} deprecated (not bound)")
    if a.check:
        print(report)
        for name, why in sorted(C_ONLY.items()):
            print(f"  C-only {name}: {why}")
        for name, replacement in sorted(api.deprecated.items()):
            print(f"  deprecated {name}: use {replacement}")
        return 0

    # Fortran names ignore case: one name for two things does not compile, so say which.
    seen = {}
    things = [(c[0], "constant") for c in api.constants]
    things += [(t, "type") for t in api.handles.values()]
    things += [(st[1], "type") for st in api.structs]
    things += [(p, "procedure") for p in publics]
    for name, what in things:
        if name.lower() in seen:
            sys.exit(f"gen_fortran: the {what} {name} and the {seen[name.lower()]} of the same "
                     "name (Fortran ignores case): rename one in FORTRAN_VARIANT")
        seen[name.lower()] = what
    public_lines = []
    for i in range(0, len(publics), 3):
        public_lines.append("  public :: " + ", ".join(publics[i:i + 3]))
    parts = {
        "CONSTANTS": gen.constants(),
        "TYPES": gen.types(),
        "INTERFACES": raws,
        "PUBLIC": generics + public_lines,
        "WRAPPERS": bodies,
    }
    out = []
    for line in template.splitlines():
        m = re.fullmatch(r"\s*!@GENERATED (\w+)@\s*", line)
        if m:
            out += fold(parts.pop(m.group(1)))
        else:
            out.append(line)
    if parts:
        sys.exit(f"gen_fortran: the template lacks !@GENERATED {', '.join(parts)}@")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
