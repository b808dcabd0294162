#!/usr/bin/env python3
"""Checks that the project's citations resolve (ctest: lint.docs).

    check_docs.py [SOURCE_DIR]

Code and docs cite sections as FILE "Section" (docs/design.md "Settings",
FORMAT.md "Memory", README "Exit codes") and files by their path from the
top (lib/kcache/remote/http_client.hpp). A citation is only as good as what
it points at, and a renamed heading or a moved file breaks them silently;
this check makes that loud, as check_architecture.py does for the module
graph.

  - A section citation resolves when the file has a Markdown heading whose
    text contains the section (case-insensitive), or, in a table, a row
    whose first cell names it. A bare file name (FORMAT.md) is looked up
    beside the citing file first, then anywhere in the tree; README is the
    top README.md.
  - A path citation (lib/..., docs/..., tests/..., scripts/..., tools/...,
    cmake/..., examples/..., bundles/..., with a file extension) must exist,
    from the top or from the citing file's folder (CMake's paths).

Prints one line per broken citation (FILE:LINE: what, why) and exits 1 if
there is any.
"""
import os
import re
import sys

SKIP_DIRS = {".git", "third_party", "node_modules", "corpus"}
# This check and its own test, whose citations are made up on purpose.
SELF = {os.path.join("scripts", "check_docs.py"), os.path.join("tests", "lint", "docs.sh")}
SCANNED = (".md", ".cpp", ".hpp", ".h", ".c", ".sh", ".py", ".txt", ".cmake", ".toml")
SECTION = re.compile(r'(?P<file>\bREADME(?:\.md)?|(?:[\w.-]+/)*[\w-]+\.md) "(?P<section>[^"\n]{2,80})"')
PATH = re.compile(r"(?<![\w./-])(?P<path>(?:lib|docs|tests|scripts|tools|cmake|examples|bundles)/[\w./-]*[\w-]"
                  r"\.(?:cpp|hpp|h|c|md|sh|py|txt|toml|cmake|json|supp))(?![\w/]|\.\w)")


def walk(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not (rel == "." and d.startswith("build"))]
        # Test fixtures are data, not citations.
        if top.startswith("build") or rel.startswith(os.path.join("tests", "data")):
            continue
        for name in filenames:
            if name.endswith(SCANNED) or name == "CMakeLists.txt":
                yield os.path.join(dirpath, name)


def headings(path, cache={}):
    if path not in cache:
        out = []
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line.startswith("#"):
                        out.append(line.lstrip("#").strip().strip("`").lower())
                    elif line.startswith("| "):
                        cell = line[2:].split("|")[0].strip().strip("`").lower()
                        if cell:
                            out.append(cell)
        except OSError:
            pass
        cache[path] = out
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    markdown = {}
    for path in walk(root):
        if path.endswith(".md"):
            markdown.setdefault(os.path.basename(path), []).append(path)
    broken = []
    for path in walk(root):
        rel = os.path.relpath(path, root)
        if rel in SELF:
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for m in SECTION.finditer(line):
                cited, section = m.group("file"), m.group("section")
                if cited.startswith("README"):
                    candidates = [os.path.join(root, "README.md")]
                elif "/" in cited:
                    candidates = [os.path.join(root, cited), os.path.join(os.path.dirname(path), cited)]
                else:
                    beside = os.path.join(os.path.dirname(path), cited)
                    candidates = [beside] if os.path.exists(beside) else markdown.get(cited, [])
                candidates = [c for c in candidates if os.path.exists(c)]
                if not candidates:
                    broken.append(f"{rel}:{number}: {cited} \"{section}\": no such file")
                    continue
                want = section.lower()
                if not any(want in h for c in candidates for h in headings(c)):
                    where = ", ".join(sorted({os.path.relpath(c, root) for c in candidates}))
                    broken.append(f"{rel}:{number}: {cited} \"{section}\": no such section in {where}")
            for m in PATH.finditer(line):
                cited = m.group("path").rstrip(".")
                if "*" in cited or "<" in cited or "XX" in cited:
                    continue
                if not any(os.path.exists(os.path.join(base, cited)) for base in (root, os.path.dirname(path))):
                    broken.append(f"{rel}:{number}: {cited}: no such file")
    for b in broken:
        print(b)
    if broken:
        print(f"check_docs: {len(broken)} citations do not resolve", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
