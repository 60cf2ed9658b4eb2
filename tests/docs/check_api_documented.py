#!/usr/bin/env python3
"""Checks that every public function zrt_* of the public headers is documented.

  check_api_documented.py DOXYGEN DOXYFILE WORK_DIR HEADER_DIR...

Runs Doxygen with the API reference's own configuration (docs/Doxyfile.in, as CMake
configured it), XML only, into WORK_DIR, then compares two lists:
  - the functions the headers declare: every `ZRT_API ... zrt_name(` and every
    `static inline ... zrt_name(` of HEADER_DIR/*.h, read as text with comments removed;
  - the functions Doxygen documents: its XML's function members with a brief or detailed
    description.
A declared function that Doxygen does not document (no comment, or a plain `//` or
`/* */` comment) fails, named with its header and line; so does a Doxygen warning that a
zrt_* function is not documented.
"""
import glob
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def declared(header_dirs):
    found = {}
    for d in header_dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.h"))):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            # Comments out, line breaks kept, so line numbers stay right.
            code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text,
                          flags=re.S)
            code = re.sub(r"//[^\n]*", "", code)
            for m in re.finditer(r"\b(?:ZRT_API|static\s+inline)\b[^;{]*?\b(zrt_\w+)\s*\(",
                                 code):
                line = code.count("\n", 0, m.start(1)) + 1
                found.setdefault(m.group(1), f"{os.path.basename(path)}:{line}")
    return found


def text_of(element):
    return "".join(element.itertext()).strip() if element is not None else ""


def documented(xml_dir):
    names = set()
    for path in glob.glob(os.path.join(xml_dir, "*.xml")):
        if os.path.basename(path) in ("index.xml", "Doxyfile.xml"):
            continue
        root = ET.parse(path).getroot()
        for member in root.iter("memberdef"):
            if member.get("kind") != "function":
                continue
            name = text_of(member.find("name"))
            if text_of(member.find("briefdescription")) or text_of(
                    member.find("detaileddescription")):
                names.add(name)
    return names


def main():
    doxygen, doxyfile, work = sys.argv[1:4]
    header_dirs = sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    warnings = os.path.join(work, "warnings.log")
    with open(doxyfile, encoding="utf-8") as f:
        config = f.read()
    # The reference's configuration with XML only, into the work folder.
    config += (f'\nOUTPUT_DIRECTORY = "{work}"\nGENERATE_HTML = NO\nGENERATE_MAN = NO\n'
               f'GENERATE_XML = YES\nXML_OUTPUT = xml\nXML_PROGRAMLISTING = NO\n'
               f'WARN_LOGFILE = "{warnings}"\n')
    run = subprocess.run([doxygen, "-"], input=config, text=True, capture_output=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        print(f"FAIL: doxygen exited with {run.returncode}")
        return 1
    decl = declared(header_dirs)
    docs = documented(os.path.join(work, "xml"))
    bad = [f"{where}: {name} is not documented (a /** ... */ comment before it)"
           for name, where in sorted(decl.items(), key=lambda x: x[1]) if name not in docs]
    with open(warnings, encoding="utf-8") as f:
        for line in f:
            if re.search(r"Member zrt_\w+\(.*\(function\).*is not documented", line):
                bad.append("doxygen: " + line.strip())
    if not decl:
        bad.append(f"no zrt_* function found in {' '.join(header_dirs)}")
    for b in bad:
        print(f"FAIL: {b}")
    if bad:
        return 1
    print(f"ok: all {len(decl)} public zrt_* functions are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
