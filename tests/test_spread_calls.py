"""Calls that spread constants (``f(x, *spacing, **options)``) next to differentiable operands.

The spread operands' parameters are known only at run time. A rule's call keeps its form
(reverse and forward mode hand the spread operands through to its vjp and jvp); a call of a
differentiated Python function runs through the run-time dispatch. A differentiable value
inside the spread, or after it, is still refused: its parameter, and so its derivative, is
unknown when the code is generated.
"""
import numpy as np
import pytest

import srcgrad
from fdcheck import check_orders
from srcgrad.errors import SrcgradError

SPACING = (0.5, np.array([0.0, 1.0, 1.5, 3.0]))
OPTIONS = {"edge_order": 2}
SHAPE = (3, 4)
AXES = {"axis": (0, -1)}
EXTRA = [np.linspace(0.5, 1.5, 4)]


def spread_rule(x):
    gx, gy = np.gradient(x.reshape(SHAPE), *SPACING, **OPTIONS)
    return np.sum(np.sin(gx) * gy)


def spread_method(x):
    return np.sum(np.tanh(x.reshape(*SHAPE)) * np.arange(12.0).reshape(SHAPE))


def spread_keywords_only(x):
    parts = np.gradient(x.reshape(2, 3, 2), **AXES)
    return sum(np.sum(p * p) for p in parts)


def helper(a, b, scale=1.0):
    return np.sum(np.cos(a) * b) * scale


def spread_into_a_function(x):
    return helper(x, *EXTRA, **{"scale": 3.0})


def spread_broadcasting(x):
    # np.add(x, *EXTRA) broadcasts x (shape (1,)) against the spread (4,) array: the
    # cotangent of x must be summed back to its own shape
    return np.sum(np.sin(np.add(x[:1], *EXTRA)))


CASES = [spread_rule, spread_method, spread_keywords_only, spread_into_a_function,
         spread_broadcasting]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_orders_against_finite_differences(f):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, 12 if f is not spread_into_a_function and f is not
                    spread_broadcasting else 4)
    check_orders(f, x, direction=rng.standard_normal(x.shape), hessian=True)


def test_the_generated_code_hands_the_spread_to_the_rule():
    text = srcgrad.source(srcgrad.grad(spread_rule))
    assert "gradient_vjp(" in text and "*SPACING" in text and "**OPTIONS" in text


def spread_active(x):
    return np.sum(np.sin(np.add(*[x, 2.0 * x])))


def active_after_the_spread(x):
    return np.sum(np.sin(np.add(*EXTRA, x)))


def method_after_the_spread(x):
    return np.sum(np.sin(x.clip(*[-0.5], x * 0.9)))


@pytest.mark.parametrize("f", [spread_active, active_after_the_spread],
                         ids=lambda f: f.__name__)
def test_differentiable_operands_in_or_after_the_spread_dispatch_at_run_time(f):
    x = np.linspace(-1.0, 1.0, 4)
    check_orders(f, x, direction=np.arange(1.0, 5.0), hessian=True)


def test_a_method_with_a_differentiable_operand_after_the_spread_is_refused():
    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(method_after_the_spread)(np.linspace(-1.0, 1.0, 4))
    text = str(info.value)
    assert "test_spread_calls.py:" in text and "'*args' or '**kwargs'" in text, text
