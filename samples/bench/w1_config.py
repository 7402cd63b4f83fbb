#!/usr/bin/env python3
"""Print a config with dotted keys set: the W1 variants of samples/bench/gpu_suite.sh.

  python3 samples/bench/w1_config.py BASE.yaml KEY=VALUE [KEY=VALUE ...] > variant.yaml

KEY is dotted (decode.where, transform.resize.where, staging.transfer, ...);
VALUE is read as YAML (gpu -> string, 3 -> int, [1, 2] -> list). Missing
sections are created; nothing is checked here: imgpipe rejects an unknown key
with exit 2 (`imgpipe validate --config variant.yaml`).
"""
import re
import sys

try:
    import yaml
except ImportError:  # the GPU machine's Python may lack PyYAML
    yaml = None


def set_in_text(text, key, val):
    """Without PyYAML: `key`'s line in a block-style config that states it
    (configs/pipeline.yaml states every key) gets `val`, its comment kept."""
    want = key.split(".")
    path = []  # (indent, name) of the enclosing keys
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z_][A-Za-z0-9_]*):(\s*)(.*)$", line)
        if not m:
            continue
        indent, name, rest = len(m.group(1)), m.group(2), m.group(4)
        while path and path[-1][0] >= indent:
            path.pop()
        if [n for _, n in path] + [name] == want:
            comment = rest[rest.index(" #"):] if " #" in rest else ""
            lines[i] = f"{m.group(1)}{name}: {val}{comment}"
            return "\n".join(lines)
        path.append((indent, name))
    sys.exit(f"w1_config.py: {key} is not in the base config (PyYAML is not installed to add it)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if yaml is None:
        text = open(sys.argv[1]).read()
        for kv in sys.argv[2:]:
            key, sep, val = kv.partition("=")
            if not sep or not key:
                sys.exit(f"w1_config.py: expected KEY=VALUE, got {kv!r}")
            text = set_in_text(text, key, val)
        sys.stdout.write(f"# {sys.argv[1]} with {' '.join(sys.argv[2:])}\n{text}")
        return
    with open(sys.argv[1]) as f:
        cfg = yaml.safe_load(f) or {}
    for kv in sys.argv[2:]:
        key, sep, val = kv.partition("=")
        if not sep or not key:
            sys.exit(f"w1_config.py: expected KEY=VALUE, got {kv!r}")
        node = cfg
        *path, leaf = key.split(".")
        for p in path:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[leaf] = yaml.safe_load(val)
    sys.stdout.write(f"# {sys.argv[1]} with {' '.join(sys.argv[2:])}\n")
    yaml.safe_dump(cfg, sys.stdout, sort_keys=False, default_flow_style=None)


if __name__ == "__main__":
    main()
