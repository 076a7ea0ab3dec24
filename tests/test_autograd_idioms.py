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
