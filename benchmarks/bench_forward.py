"""Cost of forward mode and second order relative to first order, measured in the same run:
``jvp`` against the function itself (target <= 2x) and ``hvp`` (forward over the generated
gradient) against ``grad`` (target <= 4x), on the MLP loss and the 1,000-step Euler loop.

    python benchmarks/bench_forward.py [--quick]
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import srcgrad


# -- (a) 2-layer tanh MLP loss, batch 64, 784 -> 128 -> 10 ----------------------------------
def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


# -- (b) 1,000 Euler steps on floats ----------------------------------------------------------
def euler(x, a):
    for _ in range(1000):
        x = x + 0.001 * a * np.sin(x)
    return x


def measure(name, f, args, tangents, number, n):
    """Times of f, jvp, grad and hvp with respect to every argument that has a tangent."""
    wrt = tuple(i for i, t in enumerate(tangents) if t is not None)
    full = tuple(tangents)  # None: that argument is not varied
    g = srcgrad.grad(f, wrt=wrt)
    g(*args)
    srcgrad.jvp(f, args, full)
    srcgrad.jvp(g, args, full)  # builds (and caches) every generated function once
    runs = {"f": lambda: f(*args), "jvp": lambda: srcgrad.jvp(f, args, full),
            "grad": lambda: g(*args), "hvp": lambda: srcgrad.jvp(g, args, full)}
    # interleaved, best of several rounds: the ratios stay meaningful on a busy machine
    times = {k: float("inf") for k in runs}
    for _ in range(n):
        for k, run in runs.items():
            times[k] = min(times[k], timeit.timeit(run, number=number) / number)
    return name, times["f"], times["jvp"], times["grad"], times["hvp"]


def main(quick: bool = False):
    rng = np.random.default_rng(0)
    n = 5 if quick else 15
    W1 = rng.standard_normal((784, 128)) * 0.05
    b1 = np.zeros(128)
    W2 = rng.standard_normal((128, 10)) * 0.1
    b2 = np.zeros(10)
    x = rng.standard_normal((64, 784))
    y = rng.standard_normal((64, 10))
    params = (W1, b1, W2, b2)
    directions = tuple(rng.standard_normal(p.shape) for p in params)
    rows = [measure("MLP 784-128-10, batch 64", mlp_loss, params + (x, y),
                    directions + (None, None), 20, n),
            measure("1,000 Euler steps on floats", euler, (0.5, 2.0), (1.0, 0.3), 3, n)]

    print(f"{'benchmark':<30}{'f':>10}{'jvp':>10}{'grad':>10}{'hvp':>10}"
          f"{'jvp/f':>8}{'hvp/grad':>10}")
    for name, t_f, t_jvp, t_grad, t_hvp in rows:
        print(f"{name:<30}{t_f * 1e3:>8.2f}ms{t_jvp * 1e3:>8.2f}ms{t_grad * 1e3:>8.2f}ms"
              f"{t_hvp * 1e3:>8.2f}ms{t_jvp / t_f:>8.2f}{t_hvp / t_grad:>10.2f}")
    print("targets: jvp/f <= 2, hvp/grad <= 4")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
