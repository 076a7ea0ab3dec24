"""Idioms found failing by a survey of published autograd example programs (issue 9),
each written anew for this suite and checked against central differences at first and
second order and in forward mode. None is copied from those programs."""
import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad, check_orders

rng = np.random.default_rng(27)
EPS = 1e-6


def _fd_grad_along(f, x, v, eps=EPS):
    """Central difference of srcgrad.grad(f) along v (the Hessian-vector product)."""
    g = srcgrad.grad(f)
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


# -- np.linalg.solve whose matrix is built inside the function from constants ---------------
# Forward mode handed the solve rule the lazy zero as the matrix's tangent, and the rule
# multiplied it as a matrix (a bare numpy error). A GP's predictive mean at the query points,
# with its kernel matrix of the (constant) training inputs, differentiated in the queries.
_TRAIN = np.linspace(-1.0, 1.0, 5)
_TARGETS = np.cos(3 * _TRAIN)


def _kernel(a, b):
    return np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / 0.3)


def predictive_mean(queries):
    k_tt = _kernel(_TRAIN, _TRAIN) + 0.01 * np.eye(len(_TRAIN))
    k_tq = _kernel(_TRAIN, queries)
    return np.sum(np.linalg.solve(k_tt, k_tq).T @ _TARGETS)


def solve_vector_rhs(b):
    m = np.diag(np.arange(1.0, 4.0)) + 0.1
    return np.sum(np.linalg.solve(m, b * b) ** 2)


def solve_both_active(x):
    m = np.outer(x, x) + 2.0 * np.eye(3)
    return np.sum(np.linalg.solve(m, np.sin(x)))


@pytest.mark.parametrize("f", [predictive_mean, solve_vector_rhs, solve_both_active])
def test_solve_with_a_constant_matrix_forward_and_second_order(f):
    x = rng.uniform(-0.9, 0.9, 3)
    check_orders(f, x, direction=rng.standard_normal(3), hessian=True)
    v = rng.standard_normal(3)
    assert np.allclose(srcgrad.hvp(f, (x,), (v,)), _fd_grad_along(f, x, v), rtol=1e-5, atol=1e-6)


# -- hvp of a loss whose integer argument picks the data batch ------------------------------
# hvp differentiated with respect to every primal, the integer too, so the batch index
# computed from it became active and indexing the data with it was refused.
_DATA = rng.standard_normal((6, 3))


def _batch(step):
    k = step % 3
    return slice(2 * k, 2 * k + 2)


def batch_loss(w, step):
    rows = _DATA[_batch(step)]
    return np.sum(np.tanh(rows @ w) ** 2)


def scaled_loss(w, step):
    return np.sum(w ** 3) * step


def test_hvp_leaves_an_unvaried_integer_argument_out():
    w, v = rng.standard_normal(3), rng.standard_normal(3)
    hw, hstep = srcgrad.hvp(batch_loss, (w, 4), (v, None))
    assert hstep is None
    g = srcgrad.grad(batch_loss)
    fd = (g(w + EPS * v, 4) - g(w - EPS * v, 4)) / (2 * EPS)
    assert np.allclose(hw, fd, rtol=1e-5, atol=1e-7)
    # the integer still scales the product; 0.0 marks it unvaried as None does
    hw2, none = srcgrad.hvp(scaled_loss, (w, 5), (v, 0.0))
    assert none is None and np.allclose(hw2, 5 * 6 * w * v)


def test_hvp_of_a_float_argument_without_tangent_is_still_computed():
    def f(x, y):
        return np.sum(x * x * y)
    x, y, v = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(2)
    hx, hy = srcgrad.hvp(f, (x, y), (v, None))
    assert np.allclose(hx, 2 * y * v) and np.allclose(hy, 2 * x * v)
