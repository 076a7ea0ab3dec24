"""Rules of the ``statistics`` module's means, variances and standard deviations.

Python computes these exactly with fractions (``statistics._ss``), code srcgrad cannot follow;
the rules give their derivatives directly. The data is a sequence of numbers (list, tuple or
1-D array: its cotangent is the same kind of container). The variances' optional centre
(``mu``, ``xbar``) is differentiable: Python then sums the squared deviations from it, so the
partials are 2 (x_i - c) / D for the data and -2 sum(x_i - c) / D for the centre, with D = n
(population) or n - 1 (sample); the standard deviations divide them by 2 * result (nan where
the data are all equal, like ``np.linalg.norm`` at 0). ``median`` needs no rule: srcgrad
differentiates Python's own code (a sort and an index).
"""
import math
import statistics
import sys

import numpy as np

from ..runtime import ZERO, densify
from ._helpers import like_sequence
from .domains import draw
from .registry import defrule


def mean_vjp(g, ans, data):
    count = len(data)
    return (like_sequence(data, [g / count for _ in range(count)]),)


def mean_jvp(ddata, ans, data):
    return (math.fsum(densify(ddata, data)) / len(data),)


def fmean_vjp(g, ans, data, weights=None):
    if weights is None:
        return mean_vjp(g, ans, data)[0], ZERO
    total = math.fsum(weights)
    return (like_sequence(data, [g * weights[i] / total for i in range(len(data))]),
            like_sequence(weights, [g * (data[i] - ans) / total for i in range(len(data))]))


def fmean_jvp(ddata, dweights, ans, data, weights=None):
    if weights is None:
        return mean_jvp(ddata, ans, data)[0], ZERO
    total = math.fsum(weights)
    dx, dw = densify(ddata, data), densify(dweights, weights)
    return (math.fsum([dx[i] * weights[i] for i in range(len(data))]) / total,
            math.fsum([dw[i] * (data[i] - ans) for i in range(len(data))]) / total)


def deviations(data, c):
    """The data minus their centre ``c`` (their mean when ``c`` is None), as an array."""
    values = np.asarray(data)
    return values - (np.mean(values) if c is None else c)


def spread_deviations(g, data, c, denominator):
    """Cotangents of the data and the centre of sum((x - c)**2) / denominator."""
    dev = deviations(data, c) * (2.0 / denominator)
    return (like_sequence(data, [g * dev[i] for i in range(len(data))]),
            ZERO if c is None else -g * np.sum(dev))


def deviation_tangents(ddata, dc, data, c, denominator):
    dev = deviations(data, c) * (2.0 / denominator)
    return (np.sum(np.asarray(densify(ddata, data)) * dev),
            ZERO if c is None else -dc * np.sum(dev))


def pvariance_vjp(g, ans, data, mu=None):
    return spread_deviations(g, data, mu, len(data))


def pvariance_jvp(ddata, dmu, ans, data, mu=None):
    return deviation_tangents(ddata, dmu, data, mu, len(data))


def variance_vjp(g, ans, data, xbar=None):
    return spread_deviations(g, data, xbar, len(data) - 1)


def variance_jvp(ddata, dxbar, ans, data, xbar=None):
    return deviation_tangents(ddata, dxbar, data, xbar, len(data) - 1)


def pstdev_vjp(g, ans, data, mu=None):
    return spread_deviations(g / (2.0 * ans), data, mu, len(data))


def pstdev_jvp(ddata, dmu, ans, data, mu=None):
    return tuple([t / (2.0 * ans) for t in deviation_tangents(ddata, dmu, data, mu,
                                                              len(data))])


def stdev_vjp(g, ans, data, xbar=None):
    return spread_deviations(g / (2.0 * ans), data, xbar, len(data) - 1)


def stdev_jvp(ddata, dxbar, ans, data, xbar=None):
    return tuple([t / (2.0 * ans) for t in deviation_tangents(ddata, dxbar, data, xbar,
                                                              len(data) - 1)])


def _data_points(rng, centred=False):
    points = [(([draw(rng, None) for _ in range(n)],), {}) for n in (2, 4)]
    points += [(((draw(rng, None), draw(rng, None), draw(rng, None)),), {}),
               ((draw(rng, (5,)),), {})]
    if centred:
        points += [(([draw(rng, None) for _ in range(3)], draw(rng, None)), {})]
    return points


def _weighted_points(rng):
    if sys.version_info < (3, 11):  # (fmean's weights are new in Python 3.11)
        return _data_points(rng)
    return _data_points(rng) + [(([draw(rng, None) for _ in range(3)],
                                  [draw(rng, None, 0.5, 2.0) for _ in range(3)]), {})]


defrule(statistics.mean, mean_vjp, jvp=mean_jvp, linear=True, domain=_data_points)
defrule(statistics.fmean, fmean_vjp, diff_args=(0, 1), jvp=fmean_jvp,
        domain=_weighted_points)
for _fn, _vjp, _jvp in [(statistics.pvariance, pvariance_vjp, pvariance_jvp),
                        (statistics.variance, variance_vjp, variance_jvp),
                        (statistics.pstdev, pstdev_vjp, pstdev_jvp),
                        (statistics.stdev, stdev_vjp, stdev_jvp)]:
    defrule(_fn, _vjp, diff_args=(0, 1), jvp=_jvp,
            domain=lambda rng: _data_points(rng, centred=True))
del _fn, _vjp, _jvp
