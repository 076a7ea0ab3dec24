"""Helpers that change an argument by augmented assignment alone (``W -= lr * g``), issue 9.

Python changes the caller's object when it has an in-place operator (an array, a list) and
only rebinds the helper's parameter on a number or a tuple. The call site takes the new value
back only in the first case (desugar.write_back, ``_rt.updated_in_place``). Checked at first
order, in forward mode and at second order both ways against central differences
(test_language.check_all_orders); what numpy aliasing makes impossible stays refused, located.
"""
import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders


def _update(W, g):
    W -= 0.1 * g


def _scale(W, k):
    W *= k
    return np.sum(W)


def _two_steps(W, g):
    W -= 0.1 * g
    W *= 1.0 + g ** 2
    return W[0] if np.ndim(W) else W


def array_changed_by_a_helper(x):
    W = x * 2.0
    _update(W, np.sin(x))
    return np.sum(W ** 2)


def number_rebound_by_the_helper(x):
    W = np.sum(x) * 2.0  # a float: the helper rebinds its own W, the caller's is unchanged
    _update(W, np.sin(x[0]))
    return W ** 2 + x[1] * W


def _append_to(t, u):
    t += (u,)


def tuple_rebound_by_the_helper(x):
    t = (x[0] * x[2],)
    _append_to(t, x[1])  # a tuple has no in-place '+=': the caller's t is unchanged
    return t[0] * len(t)


def items_of_a_list_and_a_dict(x):
    ws = [x * 2.0, np.sum(x)]
    r = _scale(ws[1], x[0])  # a float item: unchanged
    r2 = _scale(ws[0], x[1])  # an array item: changed
    p = {"W": x ** 2}
    _update(p["W"], np.cos(x))
    return np.sum(ws[0]) * ws[1] + r * r2 + np.sum(p["W"] * x)


def in_a_loop_with_a_result(x):
    W, s = x * 1.0, x[0] * 1.0
    total = 0.0
    for i in range(3):
        total = total + _two_steps(W, x * (i + 1))
        total = total + _two_steps(s, x[1] * i)
    return total * np.sum(W) + s


CASES = [array_changed_by_a_helper, number_rebound_by_the_helper, tuple_rebound_by_the_helper,
         items_of_a_list_and_a_dict, in_a_loop_with_a_result]
X = np.array([0.3, 0.5, 0.9])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_augmented_helper_at_all_orders(f):
    check_all_orders(f, X)


def test_values_are_pythons():
    """The caller sees what Python shows it: the changed array, the unchanged number."""
    for f in CASES:
        value, _ = srcgrad.jvp(f, (X,), (np.ones(3),))
        assert np.isclose(value, f(X)), f.__name__


# -- what stays refused, where numpy aliasing would show the change to another name ----------
def _alias_sees_the_change(x):
    W = x * 2.0
    V = W
    _update(W, np.sin(x))
    return np.sum(V * x)


def test_an_alias_of_the_changed_array_is_refused():
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(_alias_sees_the_change)(X)
    assert "test_augmented_helpers.py" in str(info.value)


class _Model:
    def __init__(self, W):
        self.W = W


def _attribute_changed(m, x):
    _update(m.W, np.sin(x))
    return np.sum(m.W * x)


def test_an_attribute_changed_by_a_helper_is_refused_with_a_hint():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(_attribute_changed, wrt=1)(_Model(X * 2.0), X)
    message = str(info.value)
    assert "test_augmented_helpers.py" in message and "_update()" in message
    assert "m.W.copy()" in message
