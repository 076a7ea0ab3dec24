"""Transform time of reverse mode against loop nesting depth (issue 14): how long building
the adjoint of a function with ``depth`` nested loops takes, in ms, best of several runs.
The backward sweep is generated once, so the time should grow linearly with the depth.

    python benchmarks/bench_transform.py [--depths 3 4 5 6] [--repeat 7]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time

import srcgrad
import srcgrad.api


def nested_source(depth: int) -> str:
    """A function whose loop nest is ``depth`` deep, overwriting ``x`` at every level."""
    lines = ["import numpy as np", "", "", "def nested(x, w):", "    y = x"]
    for level in range(depth):
        pad = "    " * (level + 1)
        lines.append(f"{pad}for i{level} in range(2):")
        lines.append(f"{pad}    y = y * w + np.sin(x)")
    lines.append("    return y")
    return "\n".join(lines) + "\n"


def load(depth: int, folder: str):
    """The function of ``nested_source(depth)``, loaded from a real file (srcgrad reads it)."""
    path = os.path.join(folder, f"nested_{depth}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(nested_source(depth))
    spec = importlib.util.spec_from_file_location(f"nested_{depth}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.nested


def transform_ms(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        srcgrad.api._CACHE.clear()  # generate from scratch every time
        start = time.perf_counter()
        srcgrad.source(srcgrad.grad(fn, wrt=(0, 1)))
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 4, 5, 6])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for depth in args.depths:
            ms = transform_ms(load(depth, folder), args.repeat)
            print(f"depth {depth}: {ms:7.1f} ms")


if __name__ == "__main__":
    main()
