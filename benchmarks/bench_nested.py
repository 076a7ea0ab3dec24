"""grad called inside differentiated code (issue 9), on autograd's negative_binomial_maxlike.

The example fits a negative binomial by Newton's method on ``rprime(r) = grad(loglike)(r,
p(r))``, so it needs ``grad(rprime)`` and ``grad(grad(rprime))``. Measured in one run, as
ratios: srcgrad against the same derivatives written out by hand (digamma, polygamma) and
differentiated once less, and against autograd when it is installed.

    python benchmarks/bench_nested.py [--rounds N]
"""
from __future__ import annotations

import argparse
import statistics
import timeit

import numpy as np
from scipy.special import digamma, gammaln

import srcgrad

rng = np.random.default_rng(0)
DATA = rng.poisson(rng.gamma(5.0, 0.3 / (1 - 0.3), size=100)).astype(float)


def negbin_loglike(r, p, x):
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def loglike(r, p):
    return np.sum(negbin_loglike(r, p, DATA))


def p_of(r):
    return np.sum(DATA) / np.sum(r + DATA)


def rprime(r):
    return srcgrad.grad(loglike)(r, p_of(r))


def rprime_written(r):
    """d loglike / dr at p = p(r), written out."""
    return np.sum(digamma(r + DATA) - digamma(r) + np.log(1 - p_of(r)))


def autograd_versions():
    try:
        import autograd
        import autograd.numpy as anp
        from autograd.scipy.special import gammaln as agammaln
    except ImportError:
        return None

    def a_loglike(r, p):
        return anp.sum(agammaln(r + DATA) - agammaln(r) - agammaln(DATA + 1)
                       + DATA * anp.log(p) + r * anp.log(1 - p))

    def a_rprime(r):
        return autograd.grad(a_loglike)(r, anp.sum(DATA) / anp.sum(r + DATA))

    first = autograd.grad(a_rprime)
    return a_rprime, first, autograd.grad(first)


def best(fn, r, number):
    return min(timeit.repeat(lambda: fn(r), number=number, repeat=3)) / number


def main(rounds: int = 5) -> None:
    r = 2.0
    first = srcgrad.grad(rprime)
    ours = [rprime, first, srcgrad.grad(first)]
    written_first = srcgrad.grad(rprime_written)
    written = [rprime_written, written_first, srcgrad.grad(written_first)]
    theirs = autograd_versions()
    for a, b in zip(ours, written):
        assert np.isclose(a(r), b(r), rtol=1e-9), (a(r), b(r))
    names = ["rprime (grad inside)", "grad(rprime)", "grad(grad(rprime))"]
    print(f"{'':24}{'srcgrad':>11}{'written':>11}{'ratio':>7}"
          + (f"{'autograd':>11}{'ratio':>7}" if theirs else ""))
    for k, name in enumerate(names):
        rows = []
        for _ in range(rounds):
            ts, tw = best(ours[k], r, 200), best(written[k], r, 200)
            ta = best(theirs[k], r, 200) if theirs else None
            rows.append((ts, tw, ta))
        ts = statistics.median(t[0] for t in rows)
        tw = statistics.median(t[1] for t in rows)
        line = (f"{name:24}{ts * 1e6:>9.1f}us{tw * 1e6:>9.1f}us"
                f"{statistics.median(t[0] / t[1] for t in rows):>7.2f}")
        if theirs:
            ta = statistics.median(t[2] for t in rows)
            line += (f"{ta * 1e6:>9.1f}us"
                     f"{statistics.median(t[0] / t[2] for t in rows):>7.2f}")
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    main(parser.parse_args().rounds)
