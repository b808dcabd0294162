#!/usr/bin/env python3
"""Hold the code to the module graph that docs/architecture.md draws.

    scripts/check_architecture.py [REPO_ROOT]

Run by every build (CMake target check_architecture); exits 1 naming each
violation. Checks:
  1. The graph in docs/architecture.md (the block between the
     `module-graph` markers) is the graph the build links: every
     kcache_module(NAME PUBLIC_DEPS ... DEPS ...) in lib/kcache/*/CMakeLists.txt
     and the modules tools/kcache links.
  2. The graph has no cycle.
  3. Every `#include "kcache/M/..."` crosses an arrow that exists: a module's
     headers may include its PUBLIC_DEPS, its sources also its DEPS, the CLI
     what it links. A `*_internal.hpp` is included only inside its module,
     so it may include what the module's sources may.
  4. nlohmann/json is included only by lib/kcache/report (the one renderer),
     and by lib/kcache/remote/oci.cpp, which speaks the OCI distribution
     API, whose manifests are JSON on the wire.
Python 3 standard library only.
"""
from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def words(text: str) -> list[str]:
    return [w for w in text.split() if w]


def built_graph() -> dict[str, tuple[set[str], set[str]]]:
    graph = {}
    for cm in sorted((ROOT / "lib/kcache").glob("*/CMakeLists.txt")):
        text = cm.read_text()
        m = re.search(r"kcache_module\((\w+)(.*?)\)\s*$", text, re.S | re.M)
        if not m:
            continue
        body = re.sub(r"#.*", "", m.group(2))
        sections = {"SOURCES": [], "PUBLIC_DEPS": [], "DEPS": [], "LIBS": []}
        current = None
        for w in words(body):
            if w in sections:
                current = w
            elif current:
                sections[current].append(w)
        graph[m.group(1)] = (set(sections["PUBLIC_DEPS"]), set(sections["DEPS"]))
    cli = (ROOT / "tools/kcache/CMakeLists.txt").read_text()
    m = re.search(r"target_link_libraries\(kcache PRIVATE(.*?)\)", cli, re.S)
    graph["cli"] = (set(), {w[len("kcache_"):] for w in words(m.group(1)) if w.startswith("kcache_")} if m else set())
    return graph


def documented_graph() -> dict[str, tuple[set[str], set[str]]]:
    text = (ROOT / "docs/architecture.md").read_text()
    m = re.search(r"<!-- module-graph -->(.*?)<!-- /module-graph -->", text, re.S)
    if not m:
        sys.exit("check_architecture: docs/architecture.md has no <!-- module-graph --> block")
    graph = {}
    for line in m.group(1).splitlines():
        row = re.match(r"\s*\|\s*(\w+)\s*\|\s*([\w -]*?)\s*\|\s*([\w -]*?)\s*\|\s*$", line)
        if row and row.group(1) != "module":
            pub = set(words(row.group(2))) - {"-"}
            priv = set(words(row.group(3))) - {"-"}
            graph[row.group(1)] = (pub, priv)
    return graph


def cycle(graph: dict[str, tuple[set[str], set[str]]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for d in sorted(graph.get(n, (set(), set()))[0] | graph.get(n, (set(), set()))[1]):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        state[n] = 2
        path.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def main() -> int:
    errors: list[str] = []
    built, documented = built_graph(), documented_graph()
    for name in sorted(set(built) | set(documented)):
        if built.get(name) != documented.get(name):
            errors.append(f"graph: module {name}: built {fmt(built.get(name))}, "
                          f"docs/architecture.md says {fmt(documented.get(name))}")
    if (c := cycle(built)):
        errors.append("graph: cycle " + " → ".join(c))

    def check(path: pathlib.Path, module: str, allowed: set[str]) -> None:
        rel = path.relative_to(ROOT)
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            if inc.startswith("nlohmann/") and module != "report" and rel.as_posix() != "lib/kcache/remote/oci.cpp":
                errors.append(f"{rel}: includes {inc}; only lib/kcache/report renders JSON")
            m = re.match(r"kcache/(\w+)/(.+)", inc)
            if not m:
                continue
            target, file = m.group(1), m.group(2)
            if target == module:
                continue
            if file.endswith("_internal.hpp"):
                errors.append(f"{rel}: includes {inc}, internal to module {target}")
            elif target not in allowed:
                errors.append(f"{rel}: includes {inc} but {module} does not depend on {target} "
                              f"(add it to its CMakeLists.txt and docs/architecture.md, or move the code)")

    for name, (pub, priv) in built.items():
        folder = ROOT / ("tools/kcache" if name == "cli" else f"lib/kcache/{name}")
        for f in sorted(folder.iterdir()):
            if f.suffix in (".hpp", ".h"):
                internal = f.name.endswith("_internal.hpp")
                check(f, name, pub | priv if internal or name == "cli" else pub)
            elif f.suffix in (".cpp", ".c"):
                check(f, name, pub | priv)
    for e in errors:
        print(f"check_architecture: {e}", file=sys.stderr)
    return 1 if errors else 0


def fmt(deps: tuple[set[str], set[str]] | None) -> str:
    if deps is None:
        return "(absent)"
    return f"public [{' '.join(sorted(deps[0]))}] private [{' '.join(sorted(deps[1]))}]"


if __name__ == "__main__":
    sys.exit(main())
