"""Builtins met in everyday numerical code whose derivative srcgrad did not know: ``divmod``
(and ``np.divmod``), and ``sum(items, start)`` with a differentiable ``start``. Each program
is checked against central differences in every mode (gradient, jvp, Hessian, grad of grad);
the rules themselves are checked on their domains by test_rules (vjp, jvp, second order)."""
from __future__ import annotations

import numpy as np
import pytest

from test_language import check_all_orders

rng = np.random.default_rng(3107)
X4 = rng.uniform(0.4, 1.2, 4)


def divmod_by_a_constant(x):
    q, r = divmod(x[0] * 10, 3.0)
    return r * x[1] + q * x[2]


def divmod_by_a_variable(x):
    q, r = divmod(x[0] * 10, x[1])
    return r ** 2 + q * x[3]


def divmod_kept_as_a_tuple(x):
    t = divmod(x[0] * 10, x[1])
    return t[1] * x[2] + t[0]


def np_divmod_of_arrays(x):
    q, r = np.divmod(x * 10, x[::-1] + 1)
    return np.sum(r ** 2 + q * x)


def sum_with_a_differentiable_start(x):
    return sum([x[0], x[1]], x[2]) * x[3]


def sum_of_arrays_from_an_array(x):
    return sum([x[0] * x, x[1] * x], x ** 2)[1] + sum((v for v in x), 1.0) * x[3]


@pytest.mark.parametrize("f", [divmod_by_a_constant, divmod_by_a_variable,
                               divmod_kept_as_a_tuple, np_divmod_of_arrays,
                               sum_with_a_differentiable_start, sum_of_arrays_from_an_array],
                         ids=lambda f: f.__name__)
def test_every_order(f):
    check_all_orders(f, X4)
