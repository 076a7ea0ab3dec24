"""An in-place update of an array another variable aliases or views (issue 9): numpy changes
both, which srcgrad's functional rewrite would not, so it is refused when the other variable
is read afterwards, and differentiated when nothing reads it any more (it sees the change no
more than the rewrite's old value)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedSyntaxError
from test_language import check_all_orders

X = np.array([0.3, 0.7, 1.1])


def alias_unread_after(x):
    y = x * 2.0
    v = y  # noqa: F841 (the point: nothing reads it)
    y += 1.0
    return np.sum(y * x)


def view_unread_after_an_element_store(x):
    y = x * 2.0
    v = y[1:]  # noqa: F841 (the point: nothing reads it)
    y[0] = 5.0 * x[0]
    return np.sum(y ** 2)


def alias_bound_before_a_loop_it_is_not_read_in(x):
    y = x * 2.0
    v = y  # noqa: F841 (the point: nothing reads it)
    for i in range(3):
        y += x * y
    return np.sum(y)


def view_rebound_after(x):
    y = x * 2.0
    v = y.reshape(3, 1)
    y *= x
    v = None  # noqa: F841 (the point: nothing reads it)
    return np.sum(y)


def alias_read_by_the_update_itself_each_iteration(x):
    y = x * 2.0
    for i in range(3):
        v = y
        y += v * 0.1
    return np.sum(y ** 2)


@pytest.mark.parametrize("f", [alias_unread_after, view_unread_after_an_element_store,
                               alias_bound_before_a_loop_it_is_not_read_in, view_rebound_after,
                               alias_read_by_the_update_itself_each_iteration])
def test_aliases_nothing_reads_after_the_update_at_every_order(f):
    assert np.isclose(srcgrad.value_and_grad(f)(X)[0], f(X.copy()))
    check_all_orders(f, X)


def alias_read_after(x):
    y = x * 2.0
    v = y
    y += 1.0
    return np.sum(v * y)


def view_read_after_an_element_store(x):
    y = x * 2.0
    v = y[1:]
    y[0] = 5.0 * x[0]
    return np.sum(v ** 2)


def alias_read_later_in_the_loop(x):
    y = x * 2.0
    v = y
    for i in range(3):
        y += x * v
    return np.sum(y)


def alias_read_earlier_in_the_loop(x):
    y = x * 2.0
    v = y
    s = 0.0
    for i in range(2):
        s = s + np.sum(v * x)
        y += 1.0
    return s + np.sum(y)


def alias_read_by_the_loop_test(x):
    y = x * 2.0
    v = y
    while np.sum(v) < 10.0:
        y += x
    return np.sum(y)


def alias_of_an_alias_read_after(x):
    y = x * 2.0
    v = y
    w = v
    y += 1.0
    return np.sum(w * x)


def held_by_a_list_read_after(x):
    y = x * 2.0
    d = [y]
    y += 1.0
    return np.sum(d[0] * x)


@pytest.mark.parametrize("f", [alias_read_after, view_read_after_an_element_store,
                               alias_read_later_in_the_loop, alias_read_earlier_in_the_loop,
                               alias_read_by_the_loop_test, alias_of_an_alias_read_after,
                               held_by_a_list_read_after])
def test_aliases_read_after_the_update_are_refused_at_its_line(f):
    lines, start = inspect.getsourcelines(f)
    at = start + next(i for i, text in enumerate(lines)
                      if "+= " in text or "*= " in text or "y[0] =" in text)
    with pytest.raises(UnsupportedSyntaxError, match=rf"test_unread_aliases\.py:{at}:"):
        srcgrad.grad(f)(X)
