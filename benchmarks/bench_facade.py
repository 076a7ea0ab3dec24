"""Per-operation overhead of the Tensor facade on tiny tensors, against PyTorch eager.

The workload is the autograd tutorial's: ``x = ones(2, 2)``, ``y = x + 2``,
``z = y * y * 3``, ``out = z.mean()``, ``out.backward()``. Each case reports microseconds per
operation, forward and backward together, the best of several repeats.

    python benchmarks/bench_facade.py [--repeat 7] [--number 2000]
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _facade():
    import srcgrad
    return srcgrad if hasattr(srcgrad, "Tensor") else importlib.import_module(
        "srcgrad.torch_api")


def _cases(torch) -> dict[str, tuple[int, Callable[[], None]]]:
    """name -> (operations per call, call)."""
    x = torch.ones(2, 2, requires_grad=True)
    w = torch.ones(2, 2, requires_grad=True)

    def tutorial():
        y = x + 2
        z = y * y * 3
        out = z.mean()
        out.backward()

    def add():
        (x + 2).sum().backward()

    def mul():
        (x * w).sum().backward()

    def matmul():
        (x @ w).sum().backward()

    def exp():
        x.exp().sum().backward()

    def forward_only():
        with torch.no_grad():
            y = x + 2
            z = y * y * 3
            z.mean()

    return {
        "tutorial (add, mul, mul, mean + backward)": (4, tutorial),
        "add + sum + backward": (2, add),
        "mul + sum + backward": (2, mul),
        "matmul + sum + backward": (2, matmul),
        "exp + sum + backward": (2, exp),
        "tutorial forward under no_grad": (4, forward_only),
    }


def _run(fn: Callable[[], None], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def _time(fns: list, ops: int, number: int, repeat: int) -> list[float]:
    """Best microseconds per operation of each function over ``repeat`` runs.

    The functions take turns within each repeat, so that a noisy machine slows them alike.
    """
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], _run(fn, number))
    return [b / number / ops * 1e6 for b in best]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args(argv)
    ours = _cases(_facade())
    try:
        import torch
        torch.set_num_threads(1)
        theirs = _cases(torch)
    except ImportError:
        theirs = {}
    results = {}
    print(f"{'case':44} {'srcgrad us/op':>14} {'torch us/op':>12} {'ratio':>7}")
    for name, (ops, fn) in ours.items():
        fns = [fn] + ([theirs[name][1]] if name in theirs else [])
        times = _time(fns, ops, args.number, args.repeat)
        mine, ref = times[0], (times[1] if len(times) > 1 else None)
        ratio = f"{mine / ref:7.2f}" if ref else "      -"
        ref_text = f"{ref:12.2f}" if ref else f"{'-':>12}"
        print(f"{name:44} {mine:14.2f} {ref_text} {ratio}")
        results[name] = (mine, ref)
    return results


if __name__ == "__main__":
    main()
