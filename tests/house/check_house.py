#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house rules of docs/ARCHITECTURE.md, checked on the source tree:

- server/'s top holds at most three loose .c files (main and what truly spans the daemon);
- every folder of server/ opens with a README.md;
- no hand-written source file (C, shell, Python, SQL, JavaScript, CMake) is past 1,000 lines,
  and each starts with its SPDX line (after a #! line);
- no include loop between the folders of server/: a folder includes a header of another
  only along the arrows its README's "May include:" line allows, and the arrows form no
  circle.

Usage: check_house.py SRC_DIR. Prints each breach and exits 1, or prints the folder graph
and exits 0. With --graph it prints the graph (folder -> folders it includes) and nothing
else."""

import os
import re
import sys

MAX_LINES = 1000
MAX_LOOSE = 3
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def server_files(server):
    for root, dirs, files in os.walk(server):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(root, f)


def folder_of(server, path):
    rel = os.path.relpath(os.path.dirname(path), server)
    return "server" if rel == "." else rel


def resolve(server, including, name):
    """The server file an include names: beside the includer, else from server/."""
    for base in (os.path.dirname(including), server):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p) and p.startswith(server + os.sep):
            return p
    return None


def graph(server):
    edges = {}
    for f in server_files(server):
        src = folder_of(server, f)
        edges.setdefault(src, {})
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            target = resolve(server, f, name)
            if target is None:
                continue
            dst = folder_of(server, target)
            if dst != src:
                edges[src].setdefault(dst, []).append(
                    "%s -> %s" % (os.path.relpath(f, server), name))
    return edges


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


SOURCE_EXT = (".c", ".h", ".sh", ".py", ".sql", ".js", ".cmake", ".awk", ".css")
SOURCE_DIRS = ("server", "common", "agent", "cli", "tests", "deploy", "cmake", "schema")
NOT_SOURCE = ("node_modules", "corpus")
DATA_DIRS = ("tests/fixtures",)  # files shaped as real hosts show them, not ours


def sources(src):
    """The project's hand-written source files (not build trees, fixtures, fuzz corpora)."""
    for part in SOURCE_DIRS:
        for root, dirs, files in os.walk(os.path.join(src, part)):
            if os.path.relpath(root, src).startswith(DATA_DIRS):
                continue
            dirs[:] = sorted(d for d in dirs if d not in NOT_SOURCE)
            for f in sorted(files):
                if f.endswith(SOURCE_EXT) or f == "CMakeLists.txt":
                    yield os.path.join(root, f)
    yield os.path.join(src, "CMakeLists.txt")


def may_include(readme):
    """The folders a README's "May include: a, b" line names (nothing: none), or None."""
    with open(readme, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("May include:"):
                rest = line.split(":", 1)[1].strip()
                if rest == "nothing":
                    return set()
                return {w.strip() for w in rest.split(",") if w.strip()}
    return None


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    src = os.path.abspath(args[0] if args else ".")
    server = os.path.join(src, "server")
    edges = graph(server)
    if "--graph" in argv:
        for v in sorted(edges):
            print("%-14s -> %s" % (v, " ".join(sorted(edges[v])) or "-"))
        return 0
    breaches = []

    loose = sorted(f for f in os.listdir(server) if f.endswith(".c"))
    if len(loose) > MAX_LOOSE:
        breaches.append("server/ holds %d loose .c files (at most %d): %s"
                        % (len(loose), MAX_LOOSE, " ".join(loose)))

    for root, dirs, files in os.walk(server):
        dirs[:] = sorted(d for d in dirs if d != "ui" or root != server)
        if root != server and any(f.endswith((".c", ".h")) for f in files) \
                and "README.md" not in files:
            breaches.append("%s has no README.md" % os.path.relpath(root, src))

    for p in sources(src):
        with open(p, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        rel = os.path.relpath(p, src)
        if len(lines) - (lines[-1] == "") > MAX_LINES:
            breaches.append("%s: %d lines (at most %d)" % (rel, len(lines) - 1, MAX_LINES))
        head = lines[1:2] if lines[0].startswith("#!") else lines[0:1]
        if not head or "SPDX-License-Identifier: Apache-2.0" not in head[0]:
            breaches.append("%s: does not start with its SPDX line" % rel)

    for folder in sorted(edges):
        if folder == "server":
            continue
        readme = os.path.join(server, folder, "README.md")
        if not os.path.isfile(readme):
            continue
        allowed = may_include(readme)
        if allowed is None:
            breaches.append("server/%s/README.md has no 'May include:' line" % folder)
            continue
        for dst in sorted(edges[folder]):
            if dst not in allowed:
                breaches.append("server/%s includes %s, which its README does not allow: %s"
                                % (folder, dst, edges[folder][dst][0]))

    for comp in cycles(edges):
        lines = ["include loop between folders: %s" % " ".join(comp)]
        for v in comp:
            for w in sorted(edges[v]):
                if w in comp:
                    lines.append("    %s -> %s: %s" % (v, w, edges[v][w][0]))
        breaches.append("\n".join(lines))

    for b in breaches:
        print("FAIL: " + b)
    if breaches:
        return 1
    print("ok: %d folders, no include loop, %d source files none past %d lines and each with"
          " its SPDX line, %d loose .c at server/'s top"
          % (len(edges), len(list(sources(src))), MAX_LINES, len(loose)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
