"""Issue 9's idioms the last session left refused, each differentiated as written and checked
against central differences (gradient, jvp, Hessian, Hessian-vector product; third order
where the idiom was refused there): a call in a comprehension's first source of a nested
function reading a name the comprehension's variable reuses, a one-line nested ``def`` at
third order, ..."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

X4 = np.array([0.9, 0.5, 0.7, 0.6])


def _check_third_order(f, x):
    g2 = srcgrad.grad(lambda y: srcgrad.grad(f)(y)[0])
    third = srcgrad.grad(lambda y: g2(y)[1])(x)
    numeric = np.array([(g2(x + 1e-5 * e)[1] - g2(x - 1e-5 * e)[1]) / 2e-5 for e in np.eye(4)])
    assert np.allclose(third, numeric, rtol=1e-5, atol=1e-6), (third, numeric)


# -- a comprehension's first source is evaluated where its variables hide nothing ------------
def call_in_a_first_source(x):
    def g(t):
        u = t * x
        return u * 2.0
    return sum([x * 2.0 for x in g(x[0])]) * x[1]


def call_in_a_nested_first_source(x):
    def g(t):
        u = t * x
        return np.sin(u)
    return sum(np.sum(x) for x in [g(v) for v in x[:2]])


def one_line_def_in_a_first_source(x):
    def g(t):
        return t * x
    return sum([x * 2.0 for x in g(x[0])]) * x[1]


@pytest.mark.parametrize("f", [call_in_a_first_source, call_in_a_nested_first_source,
                               one_line_def_in_a_first_source], ids=lambda f: f.__name__)
def test_a_call_in_a_comprehensions_first_source(f):
    """(Refused before: the comprehension's variable ``x`` was taken to hide the function's
    ``x`` that ``g`` reads, but the first source is evaluated outside the comprehension.)"""
    check_all_orders(f, X4.copy())


def test_a_one_line_def_in_a_first_source_at_third_order():
    _check_third_order(one_line_def_in_a_first_source, X4.copy())


def call_where_the_variable_hides(x):
    def g(t):
        return t * x
    return sum(np.sum(g(x)) for x in x[:2])


def test_a_call_where_the_comprehensions_variable_hides_a_read_name_is_still_refused():
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_left2\.py:\d+: a call of 'g' inside a "
                             r"comprehension whose variable 'x' hides"):
        srcgrad.grad(call_where_the_variable_hides)(X4.copy())


# -- a nested one-line def at third order ----------------------------------------------------
def nested_def_in_a_generator(x):
    def g(t):
        return t * x
    return np.sum(sum(g(v) for v in x))


def nested_def_in_a_loop(x):
    def g(t):
        """Scaled."""
        return t * x[0] * np.cos(t)
    total = 0.0
    for v in x:
        total = total + g(v)
    return total * x[3]


@pytest.mark.parametrize("f", [nested_def_in_a_generator, nested_def_in_a_loop],
                         ids=lambda f: f.__name__)
def test_a_nested_one_line_def_at_third_order(f):
    """``def g(t): return expr`` is written at its calls like a named lambda
    (transforms/lambda_calls.py); as a call of a function known only at run time a third
    derivative was refused."""
    check_all_orders(f, X4.copy())
    _check_third_order(f, X4.copy())
