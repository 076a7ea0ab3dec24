"""More everyday idioms of issue 9: ``dict.setdefault`` (grouping values into lists, read as a
value), ``pop`` from a list held in an attribute, classes and namedtuples defined inside the
differentiated function, ``itertools`` over differentiable lists, ``np.cumprod``, and run-time
refusals inside a nested def located at the user's line. Each is checked against central
differences in every mode: gradient, jvp, Hessian, grad of grad."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from test_everyday_idioms import X4, _make_cell


# -- run-time refusals inside a nested def --------------------------------------------------
def changing_method_in_a_nested_def(x):
    def inner(v):
        m = _make_cell()
        m.set_first(v[0])
        return np.sum(m.W * v)
    return inner(x) + x[1]


def sort_in_a_nested_def(x):
    def inner(v):
        items = [v[0], v[1]]
        items.sort()
        return items[0] * 2.0
    return inner(x)


def store_into_an_alias_in_a_nested_def(x):
    def inner(v):
        a = v * 2.0
        b = a
        a[0] = v[1]
        return np.sum(b * v)
    return inner(x)


@pytest.mark.parametrize("f", [changing_method_in_a_nested_def, sort_in_a_nested_def,
                               store_into_an_alias_in_a_nested_def],
                         ids=lambda f: f.__name__)
def test_a_run_time_refusal_inside_a_nested_def_names_the_users_line(f):
    """Named the generated code's line (``<srcgrad: f adjoint #27>:9``): the nested def is
    transformed from the generated text of its parent's adjoint."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"^[^<]*test_idioms_more\.py:\d+: .* \(in inner\(\)\)"):
        srcgrad.grad(f)(X4.copy())

