#!/usr/bin/env python3
"""Print a config with dotted keys set: the W1 variants of samples/bench/gpu_suite.sh.

  python3 samples/bench/w1_config.py BASE.yaml KEY=VALUE [KEY=VALUE ...] > variant.yaml

KEY is dotted (decode.where, transform.resize.where, staging.transfer, ...);
VALUE is read as YAML (gpu -> string, 3 -> int, [1, 2] -> list). Missing
sections are created; nothing is checked here: imgpipe rejects an unknown key
with exit 2 (`imgpipe validate --config variant.yaml`).
"""
import sys

import yaml


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
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
