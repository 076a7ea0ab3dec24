"""Checkpointed loops (issue 11) on a long simulation: peak memory, time, body executions
against the Revolve optimum, and the gradient against the taped one.

The simulation is ``x = x + 1e-4 * a * sin(x)`` on a 100-vector, n steps (10^5 by default),
differentiated with respect to ``x`` and ``a``:

* taped: the plain loop, srcgrad's ordinary gradient (the tape grows with n);
* checkpointed(K): the same loop marked ``srcgrad.checkpointed(range(n), K)``;
* online(K): the loop as ``while srcgrad.checkpointed_while(i < n, K)`` (n unknown in
  advance).

Peak memory is what tracemalloc sees numpy allocate during one gradient call, in units of
one state (800 bytes); "runs" are body executions: untaped advances (measured, and the
theoretical count) plus the n taped steps.

    python benchmarks/bench_checkpoint.py [--steps N] [--ks 10,100,1000] [--markdown]

On a shared machine pin it (``taskset -c 1``).
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import srcgrad
from srcgrad.checkpoint import last_stats, online_advances, optimal_advances

DIM = 100
STATE_BYTES = DIM * 8


def taped(x, a, n, k):
    for i in range(n):
        x = x + 1e-4 * a * np.sin(x)
    return np.sum(x * x)


def checkpointed(x, a, n, k):
    for i in srcgrad.checkpointed(range(n), k):
        x = x + 1e-4 * a * np.sin(x)
    return np.sum(x * x)


def online(x, a, n, k):
    i = 0
    while srcgrad.checkpointed_while(i < n, k):
        x = x + 1e-4 * a * np.sin(x)
        i = i + 1
    return np.sum(x * x)


def measure(fn, args):
    """(gradient, seconds, peak bytes) of a gradient call: the peak under tracemalloc, the
    time of a second call without it (tracemalloc slows allocation down)."""
    g = srcgrad.grad(fn, wrt=(0, 1))
    g(args[0], args[1], 200, args[3])  # build and warm up outside the measurement
    tracemalloc.start()
    result = g(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    stats = last_stats()
    start = time.perf_counter()
    g(*args)
    seconds = time.perf_counter() - start
    return result, seconds, peak, stats


def untaped_seconds(n, x, a):
    start = time.perf_counter()
    taped(x, a, n, 0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--ks", default="10,100,1000")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    n = args.steps
    rng = np.random.default_rng(0)
    x, a = rng.standard_normal(DIM), 1.0 + 0.1 * rng.standard_normal(DIM)
    plain = untaped_seconds(n, x, a)
    reference, t_ref, m_ref, _ = measure(taped, (x, a, n, 0))
    rows = [("taped", "-", m_ref, t_ref, "-", n, 0.0)]
    for k in [int(v) for v in args.ks.split(",")]:
        for kind, fn, theory in (("for", checkpointed, optimal_advances),
                                 ("while", online, online_advances)):
            got, seconds, peak, stats = measure(fn, (x, a, n, k))
            assert stats.n == n and stats.taped == n and stats.max_live <= k
            assert stats.advances == theory(n, k), (stats.advances, theory(n, k))
            error = max(float(np.max(np.abs(g - r) / (np.abs(r) + 1e-300)))
                        for g, r in zip(got, reference))
            rows.append((f"{kind} K={k}", stats.max_live, peak, seconds, stats.advances,
                         stats.advances + n, error))
    header = ("loop", "live ckpts", "peak MB", "peak / state", "time s", "time / untaped",
              "advances (= theory)", "body runs / n", "max rel. diff vs taped")
    print(f"n = {n} steps of a {DIM}-vector; untaped forward {plain:.3f} s; one state "
          f"{STATE_BYTES} B; Revolve optimum for K: optimal_advances(n, K)")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    for name, live, peak, seconds, advances, runs, error in rows:
        cells = (name, str(live), f"{peak / 1e6:.2f}", f"{peak / STATE_BYTES:.0f}",
                 f"{seconds:.2f}", f"{seconds / plain:.1f}", str(advances),
                 f"{(runs / n) if isinstance(runs, int) else 0:.2f}", f"{error:.1e}")
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(f"{c:>12}" for c in cells))


if __name__ == "__main__":
    main()
