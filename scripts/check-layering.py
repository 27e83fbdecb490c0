#!/usr/bin/env python3
"""The include and call graph of lib/ has no circle.

Two graphs over the source files of lib/ (a .cpp and the .h beside it are
one unit):
  * includes: unit A includes a header of unit B;
  * calls: A's object file uses a symbol (a function, a vtable) that B's
    object file defines, read with nm from a build tree.
Each must be acyclic; a cycle is printed and the exit status is 1. Run by
scripts/test.sh after the build:

  scripts/check-layering.py [--build build]
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unit_of(path):
    """The unit a source or header path belongs to: lib/X/Y.cpp and
    lib/X/Y.h (or include/Tang/X/Y.h) are unit X/Y."""
    rel = os.path.relpath(path, ROOT)
    rel = re.sub(r"^(lib|include/Tang)/", "", rel)
    return os.path.splitext(rel)[0]


def include_graph():
    units = {}
    for top in ("lib",):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cpp", ".h")):
                    units.setdefault(unit_of(os.path.join(dirpath, f)), []).append(
                        os.path.join(dirpath, f))
    headers = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "include", "Tang")):
        for f in files:
            if f.endswith(".h"):
                p = os.path.join(dirpath, f)
                headers[os.path.relpath(p, os.path.join(ROOT, "include"))] = unit_of(p)
    graph = {u: set() for u in units}
    for u, paths in units.items():
        for p in paths:
            for line in open(p, encoding="utf-8"):
                m = re.match(r'#include "([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                target = headers.get(inc)
                if target is None:
                    local = os.path.join(os.path.dirname(p), inc)
                    if os.path.exists(local):
                        target = unit_of(local)
                if target and target != u and target in graph:
                    graph[u].add(target)
    return graph


def call_graph(build):
    # Each source's object file (in the object library add_mlir_library
    # builds the static one from).
    objects = {}
    for dirpath, _, files in os.walk(os.path.join(build, "lib")):
        for f in files:
            if f.endswith(".cpp.o"):
                src = os.path.relpath(dirpath.split("/CMakeFiles")[0],
                                      os.path.join(build, "lib"))
                objects[os.path.join(src, f[: -len(".cpp.o")])] = os.path.join(dirpath, f)
    if not objects:
        sys.exit(f"error: no object files under {build}/lib: build tang first")
    defined, undefined = {}, {}
    for unit, obj in objects.items():
        out = subprocess.run(["nm", "--format=posix", obj], check=True,
                             capture_output=True, text=True).stdout
        d, u = set(), set()
        for line in out.splitlines():
            # posix format: name type [value size]; mangled names have no
            # spaces.
            fields = line.split()
            if len(fields) < 2:
                continue
            name, kind = fields[0], fields[1]
            if kind == "U":
                u.add(name)
            elif kind in "TDBR":  # strong definitions (not weak/inline)
                d.add(name)
        defined[unit], undefined[unit] = d, u
    owner = {}
    for unit, names in defined.items():
        for n in names:
            owner.setdefault(n, unit)
    graph = {u: set() for u in objects}
    for unit, names in undefined.items():
        for n in names:
            o = owner.get(n)
            if o and o != unit:
                graph[unit].add(o)
    return graph


def find_cycle(graph):
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                c = visit(v)
                if c:
                    return c
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state:
            c = visit(u)
            if c:
                return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    ok = True
    for name, graph in (("include", include_graph()),
                        ("call", call_graph(args.build))):
        cycle = find_cycle(graph)
        edges = sum(len(v) for v in graph.values())
        if cycle:
            ok = False
            print(f"error: the {name} graph of lib/ has a circle: "
                  + " -> ".join(cycle), file=sys.stderr)
        else:
            print(f"[tang] layering: the {name} graph of lib/ "
                  f"({len(graph)} units, {edges} edges) has no circle")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
