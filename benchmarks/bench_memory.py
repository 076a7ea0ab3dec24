"""Generated gradients against hand-written numpy ones, in time and peak memory (issue 11).

For each workload: the time of ``srcgrad.grad(f)(*args)`` over the time of a hand-written
numpy gradient measured in alternation in the same run (median of the per-round ratios), and
the peak memory the call allocates (tracemalloc, which numpy reports its buffers to) over the
hand-written gradient's.

    python benchmarks/bench_memory.py [--quick] [--rounds N] [--show] [--only TEXT]

``--show`` prints the generated source each gradient runs (``grad``'s lean variant of the
sweeps ``srcgrad.source`` shows: see api.LeanAdjoint). Times are the process's CPU time
(user + system, page faults included), which other processes on a shared machine disturb
far less than the wall clock; ``--wall`` measures the wall clock instead. ``--only TEXT``
runs the workloads whose name contains TEXT.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grad import (
    doubling,
    doubling_by_hand,
    elementwise,
    elementwise_by_hand,
    mlp_grad_by_hand,
    mlp_loss,
    rnn_grad_by_hand,
    rnn_loss,
)

import srcgrad
from srcgrad.api import get_lean_adjoint


class Workload(NamedTuple):
    name: str
    fn: Callable
    by_hand: Callable
    args: tuple
    wrt: tuple
    number: int  # calls per timing


def workloads() -> list[Workload]:
    rng = np.random.default_rng(0)
    out = []
    for hidden in (128, 1024):
        W1 = rng.standard_normal((784, hidden)) * 0.05
        b1 = np.zeros(hidden)
        W2 = rng.standard_normal((hidden, 10)) * 0.1
        b2 = np.zeros(10)
        x = rng.standard_normal((64, 784))
        y = rng.standard_normal((64, 10))
        out.append(Workload(f"MLP 784-{hidden}-10, batch 64", mlp_loss, mlp_grad_by_hand,
                            (W1, b1, W2, b2, x, y), (0, 1, 2, 3), 20 if hidden == 128 else 4))
    Wh = rng.standard_normal((64, 64)) * 0.1
    Wx = rng.standard_normal((32, 64)) * 0.1
    b = np.zeros(64)
    xs = rng.standard_normal((50, 16, 32))
    h0 = np.zeros((16, 64))
    out.append(Workload("RNN 50 steps, hidden 64, batch 16", rnn_loss, rnn_grad_by_hand,
                        (Wh, Wx, b, xs, h0), (0, 1, 2), 10))
    out.append(Workload("sum(tanh(x)*x + exp(-x*x)), 1e6", elementwise, elementwise_by_hand,
                        (rng.standard_normal(10 ** 6),), (0,), 2))
    out.append(Workload("while norm(y) < 1000: y = y * 2", doubling, doubling_by_hand,
                        (np.array([0.3, -1.2, 0.5]),), (0,), 2000))
    return out


def check(w: Workload, g) -> None:
    got, want = g(*w.args), w.by_hand(*w.args)
    if len(w.wrt) == 1:
        got, want = (got,), (want,)
    for a, b in zip(got, want):
        assert np.allclose(a, b), w.name


def peak_bytes(fn, args) -> int:
    """Peak bytes allocated while ``fn(*args)`` runs, above what was allocated before."""
    fn(*args)  # warm up caches
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1] - before
        del result
    finally:
        tracemalloc.stop()
    return peak


def time_ratio(a, b, number: int, rounds: int, timer=time.process_time):
    """Median over rounds of (best-of-3 time of a) / (best-of-3 time of b), alternating."""
    ratios, ta_all, tb_all = [], [], []
    for _ in range(rounds):
        ta = min(timeit.Timer(a, timer=timer).repeat(number=number, repeat=3)) / number
        tb = min(timeit.Timer(b, timer=timer).repeat(number=number, repeat=3)) / number
        ratios.append(ta / tb)
        ta_all.append(ta)
        tb_all.append(tb)
    return statistics.median(ta_all), statistics.median(tb_all), statistics.median(ratios)


def main(quick: bool = False, rounds: int = 7, show: bool = False, wall: bool = False,
         only: str = "") -> None:
    rows = []
    for w in workloads():
        if only not in w.name:
            continue
        wrt = w.wrt[0] if len(w.wrt) == 1 else w.wrt
        g = srcgrad.grad(w.fn, wrt=wrt)
        check(w, g)
        if show:  # what grad runs: the lean variant of the sweeps srcgrad.source shows
            print(get_lean_adjoint(w.fn, w.wrt, value=False).source)
        ta, tb, ratio = time_ratio(lambda g=g, w=w: g(*w.args), lambda w=w: w.by_hand(*w.args),
                                   max(1, w.number // (3 if quick else 1)),
                                   3 if quick else rounds,
                                   time.perf_counter if wall else time.process_time)
        ma, mb = peak_bytes(g, w.args), peak_bytes(w.by_hand, w.args)
        rows.append((w.name, ta, tb, ratio, ma, mb))
    print(f"{'workload':<36}{'srcgrad':>11}{'by hand':>11}{'time':>7}"
          f"{'srcgrad':>11}{'by hand':>11}{'memory':>8}")
    for name, ta, tb, ratio, ma, mb in rows:
        print(f"{name:<36}{ta * 1e6:>9.1f}us{tb * 1e6:>9.1f}us{ratio:>7.2f}"
              f"{ma / 1024:>9.0f}kB{mb / 1024:>9.0f}kB{ma / max(mb, 1):>8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--wall", action="store_true")
    parser.add_argument("--only", default="", help="the workloads whose name contains this")
    opts = parser.parse_args()
    main(opts.quick, opts.rounds, opts.show, opts.wall, opts.only)
