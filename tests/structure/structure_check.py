#!/usr/bin/env python3
"""The structure check: no library file over MAX_FILE lines, no function over
MAX_FUNC lines (from its signature's first line to its closing brace), CUDA
kernels (__global__ functions and .cu files' device code) aside.

    structure_check.py ROOT [--max-file N] [--max-func N]

Library files are the layers' sources (core, kernels, memory, codecs, stages,
pipeline, capi): .hpp, .h, .cpp, .cu, .cuh. Prints each violation as
"path:line: ..." and exits 1 when there is one. tests/structure/fixture holds
one of each, to prove the check sees them (structure_check_detects_*).

It also checks the test cases' names under tests/ (the fixture's own aside):
none may hold a ';', which CTest takes for a list separator, so that
doctest_discover_tests registers two tests that match nothing and fail."""
import argparse
import os
import re
import sys

LAYERS = ("core", "kernels", "memory", "codecs", "stages", "pipeline", "capi")
EXTS = (".hpp", ".h", ".cpp", ".cu", ".cuh")
# A function's header ends with its parameter list, then qualifiers, a
# trailing return type or a constructor's initialiser list.
FUNC_END = re.compile(r"\)\s*((const|noexcept(\s*\([^)]*\))?|override|final|mutable|volatile|&&?|->\s*[^{;=]+)\s*)*$"
                      r"|\)\s*(const\s*|noexcept\s*)*:\s*[A-Za-z_].*\)$")
# A block whose header starts with one of these is not a function body.
NOT_FUNC = re.compile(r"^(if|for|while|switch|catch|do|else|try|namespace|class|struct|union|enum|extern|"
                      r"return|template\s*<[^>]*>\s*(class|struct|union))\b")


def strip(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c); i += 1; continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" "); i += 1; continue  # a digit separator (1'000)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function body at namespace or class scope."""
    s = strip(text)
    # Preprocessor lines do not end statements: blank them.
    s = re.sub(r"(?m)^[ \t]*#.*(\\\n.*)*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), s)
    stack = []  # "scope" (namespace/class/other non-function), "func", "inner"
    header_start = 0
    found = []
    line_of = lambda pos: s.count("\n", 0, pos) + 1
    for i, c in enumerate(s):
        if c in ";":
            if not stack or stack[-1] == "scope":
                header_start = i + 1
        elif c == "{":
            if stack and (isinstance(stack[-1], tuple) or stack[-1] == "inner"):
                stack.append("inner")
                continue
            header = s[header_start:i].strip()
            flat = " ".join(header.split())
            is_func = "(" in flat and not NOT_FUNC.match(flat) and bool(FUNC_END.search(flat))
            if is_func:
                # Skip leading access specifiers / labels in the header.
                flat2 = re.sub(r"^(public|private|protected)\s*:\s*", "", flat)
                first = header_start + (len(s[header_start:i]) - len(s[header_start:i].lstrip()))
                name = re.sub(r"\s*\(.*", "", flat2).split()[-1] if flat2 else "?"
                stack.append(("func", name, line_of(first), "__global__" in flat2))
            else:
                stack.append("scope")
            header_start = i + 1
        elif c == "}":
            if not stack:
                continue
            top = stack.pop()
            if isinstance(top, tuple):
                found.append((top[1], top[2], line_of(i), top[3]))
            if not stack or stack[-1] == "scope":
                header_start = i + 1
    return found


TEST_CASE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def test_case_names(root):
    """A 'path:line: ...' for each TEST_CASE name under root/tests with a ';'."""
    found = []
    tests = os.path.join(root, "tests")
    for d, _, files in os.walk(tests):
        if os.path.relpath(d, root).startswith(os.path.join("tests", "structure", "fixture")):
            continue  # the fixture's bad names prove the check in the fixture's own run
        for f in sorted(files):
            if not f.endswith((".cpp", ".cu", ".hpp")):
                continue
            p = os.path.join(d, f)
            with open(p, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in TEST_CASE.finditer(text):
                if ";" in m.group(1):
                    line = text.count("\n", 0, m.start()) + 1
                    found.append(f"{os.path.relpath(p, root)}:{line}: test case name holds a ';' "
                                 f"(CTest splits the name there and both halves fail)")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-func", type=int, default=100)
    a = ap.parse_args()
    problems = []
    for layer in LAYERS:
        for d, _, files in os.walk(os.path.join(a.root, layer)):
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                p = os.path.join(d, f)
                rel = os.path.relpath(p, a.root)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                n = text.count("\n")
                if n > a.max_file:
                    problems.append(f"{rel}:1: {n} lines (at most {a.max_file} a library file)")
                for name, first, last, kernel in functions(text):
                    if kernel or (f.endswith((".cu", ".cuh"))):
                        continue  # CUDA kernels and device code
                    if last - first + 1 > a.max_func:
                        problems.append(f"{rel}:{first}: {name} is {last - first + 1} lines "
                                        f"(at most {a.max_func} a function)")
    problems += test_case_names(a.root)
    for p in problems:
        print(p)
    if problems:
        print(f"structure check: {len(problems)} problem(s): split along responsibilities", file=sys.stderr)
        return 1
    print("structure check: no library file over %d lines, no function over %d" % (a.max_file, a.max_func))
    return 0


if __name__ == "__main__":
    sys.exit(main())
