"""Test domains for rules: where each rule is smooth, as lists of ``(args, kwargs)`` points.

A domain is a function ``domain(rng) -> [(args, kwargs), ...]``; the rule tests evaluate the
rule there against finite differences. Helpers below build the common ones.
"""
from __future__ import annotations

import numpy as np

# Shape pairs exercising broadcasting in both directions, including Python scalars (None).
BROADCAST_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                   ((2, 3), None), (None, (2, 3)), (None, None), ((4, 1, 3), (2, 3))]


def draw(rng, shape, low=-2.0, high=2.0):
    """A float64 array of ``shape`` (a Python float when shape is None) in [low, high]."""
    if shape is None:
        return float(rng.uniform(low, high))
    return rng.uniform(low, high, size=shape)


def away_from(rng, shape, points, margin=0.2, low=-2.0, high=2.0):
    """Like ``draw`` but at least ``margin`` from each of ``points`` (kinks, poles)."""
    x = draw(rng, shape, low, high)
    for p in points:
        x = np.where(np.abs(np.asarray(x) - p) < margin, p + margin * 2, x)
    return float(x) if shape is None else x


def unary(low=-2.0, high=2.0, shapes=((), (3,), (2, 3)), avoid=()):
    """Domain of an elementwise function of one argument on [low, high]."""
    def domain(rng):
        return [((away_from(rng, s, avoid, low=low, high=high) if avoid
                  else draw(rng, s, low, high),), {}) for s in (None,) + tuple(shapes)]
    return domain


def binary(low=-2.0, high=2.0, low2=None, high2=None, pairs=BROADCAST_PAIRS):
    """Domain of an elementwise function of two broadcasting arguments."""
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def domain(rng):
        return [((draw(rng, a, low, high), draw(rng, b, low2, high2)), {}) for a, b in pairs]
    return domain
