"""Module globals named like the temporaries srcgrad's passes bind (`_t1`, `_t2`, ...).

At 162a78e the resolution pass looked such a temporary up among the module's globals: in
`make()(x)`, ANF's `_t1 = make(); _t2 = _t1(x)` was resolved to this module's `_t1 = np.sin`
and differentiated as a sine, a silent wrong gradient (cos(x) instead of 2x). Temporaries are
locals now, whatever the module holds.
"""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from fdcheck import check_orders

_t1 = np.sin  # noqa: the point of this module
_t2 = np.cos
_t3 = np.exp
_v1 = np.tanh
_l1 = [np.sin]

X = np.array([0.1, 0.2, 0.3])


def _make():
    return lambda v: v * v


def call_of_a_returned_function(x):
    return np.sum(_make()(x))


def comprehension_and_map(x):
    return np.sum(sum(u * x for u in [x, 2 * x])) + sum(map(lambda a: np.sum(a * a), [x]))


def _inner(x):
    return x * x


def nested_jacobian(x):
    return np.sum(srcgrad.jacfwd(_inner)(x) ** 2)


@pytest.mark.parametrize("fn", [call_of_a_returned_function, comprehension_and_map,
                                nested_jacobian])
def test_temporaries_are_never_module_globals(fn):
    check_orders(fn, X, np.array([0.3, -0.1, 0.7]), hessian=True)


def test_the_wrong_gradient_it_gave():
    assert np.allclose(srcgrad.grad(call_of_a_returned_function)(X), 2 * X)
