"""Programs calling scipy functions whose rules are checked one by one in test_rules.py:
here through a whole differentiated program, at first and second order and in forward mode,
against finite differences (the idioms of autograd's scipy tests, written anew)."""
import functools

import numpy as np
import pytest

import srcgrad
from fdcheck import check_orders

pytest.importorskip("scipy")
import scipy.linalg as sla  # noqa: E402
import scipy.signal as ss  # noqa: E402
from scipy.stats import multivariate_normal as mvn  # noqa: E402

KERNEL = np.array([0.25, 0.5, 0.25])
SINGULAR = np.diag([1.0, 2.0, 0.0, 0.0])


def smoothed_energy(x):
    smooth = ss.convolve(np.tanh(x), KERNEL, mode="same")
    rough = ss.correlate(x, smooth, mode="valid")
    return np.sum(smooth ** 2) + np.sum(np.sin(rough))


def tridiagonal_solve(x):
    n = x.size
    ab = np.stack([np.concatenate([[0.0], 0.3 * np.cos(x[1:])]),
                   4.0 + x ** 2,
                   np.concatenate([0.2 * np.sin(x[:-1]), [0.0]])])
    y = sla.solve_banded((1, 1), ab, np.exp(0.3 * x) + np.arange(n))
    return np.sum(y * y)


def gaussian_entropy(x):
    cov = np.outer(x, x) + 2.0 * np.eye(x.size)
    return mvn.entropy(np.zeros(x.size), cov) * np.sum(x)


def density_on_a_degenerate_support(x):
    # the covariance has rank 2: the density lives on the plane of the first two axes
    point = np.concatenate([x[:2], np.zeros(2)])
    return mvn.logpdf(point, np.array([0.1, -0.2, 0.0, 0.0]), SINGULAR, allow_singular=True)


@pytest.mark.parametrize("f, n", [(smoothed_energy, 7), (tridiagonal_solve, 6),
                                  (gaussian_entropy, 3), (density_on_a_degenerate_support, 2)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_orders_against_finite_differences(f, n):
    rng = np.random.default_rng(11)
    x = rng.uniform(-1.0, 1.0, n)
    check_orders(f, x, direction=rng.standard_normal(n), hessian=True)


def test_singular_covariance_gradient_is_nan_not_a_number_that_looks_right():
    # perturbing a singular covariance off its rank changes the density's support: the
    # derivative in the covariance does not exist, and must not come out as a number
    x = np.array([0.3, -0.4, 0.0, 0.0])

    def logpdf_of_cov(c):
        return mvn.logpdf(x, np.zeros(4), c, allow_singular=True)

    g = srcgrad.grad(logpdf_of_cov)(SINGULAR)
    assert np.all(np.isnan(g))
    gx = srcgrad.grad(lambda y: mvn.logpdf(y, np.zeros(4), SINGULAR, allow_singular=True))(x)
    np.testing.assert_allclose(gx[:2], -x[:2] / np.array([1.0, 2.0]), rtol=1e-12)


def _symmetrized(fun, argnum):
    def run(*args, **kwargs):
        args = list(args)
        args[argnum] = 0.5 * (args[argnum] + np.swapaxes(args[argnum], -1, -2))
        return fun(*args, **kwargs)
    return run


def _degenerate_density(x, mean, cov):
    point = np.concatenate([x[:2], mean[2:]])
    return _symmetrized(functools.partial(mvn.pdf, allow_singular=True), 2)(point, mean, cov)


def _scalarized(x, mean):
    return _degenerate_density(x, mean, SINGULAR) * 0.7


_INNER = srcgrad.grad(_scalarized, wrt=(0, 1))
_W = (np.array([0.5, -1.0, 0.3, 0.2]), np.array([0.2, 0.4, -0.6, 1.0]))


def _gradient_along_w(x, mean):
    gx, gmean = _INNER(x, mean)
    return np.sum(gx * _W[0]) + np.sum(gmean * _W[1])


def test_second_order_along_a_degenerate_support_is_not_poisoned_by_the_nan():
    # (autograd's test_mvn_sing_cov, rev over rev) the rule's NaN cotangent of the
    # covariance must not reach the next order's cotangents of x and mean through the rule's
    # own backward sweep: NaN times a zero cotangent is NaN
    x = np.array([0.3, -0.4, 0.0, 0.0])
    mean = np.array([0.1, 0.2, 0.0, 0.0])
    g = srcgrad.grad(_gradient_along_w, wrt=(0, 1))(x, mean)
    eps = 1e-6
    for k, arg in enumerate((x, mean)):
        for e in np.eye(4)[:2]:
            args_p, args_m = [x, mean], [x, mean]
            args_p[k], args_m[k] = arg + eps * e, arg - eps * e
            fd = (_gradient_along_w(*args_p) - _gradient_along_w(*args_m)) / (2 * eps)
            np.testing.assert_allclose(g[k] @ e, fd, rtol=1e-5, atol=1e-8)
