"""``list(ws)``, ``[*ws]`` and starred unpacking (``v, *rest = ws``) of a list passed in, a
list display or a tuple of one item type, compiled (issue 12's fuzzer: ``as_list`` and
``items_adjoint`` were the most frequent first refusals with dict loops): ``_rt.as_list``
is a new list of the same items, the rule helper ``items_adjoint`` gives the list (or tuple)
of the items' adjoints, and ``add_at`` of a list at a slice adds them item by item.
Against the interpreted gradient (rtol 1e-12) and central differences; what stays refused
is refused at its line."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

from fdcheck import check_grad  # noqa: E402


def starred_head(x, ws):
    v, *rest = ws
    return np.sum(x * v + rest[1] * x ** 2)


def starred_tail(x, ws):
    *init, last = ws
    return np.sum(np.sin(init[0] * x) + last * x) + np.sum(init[-1] ** 2)


def copies(x, ws):
    lst = list(ws)
    lst2 = [*ws]
    return np.sum(x * lst[0] + lst2[2] * x + lst[2] * lst2[0])


def starred_display(x):
    a, *rest = [x[0], x[1] * 2.0, x[2] ** 2]
    return a * rest[1] + np.sin(rest[0])


def tuple_unpacked(x, pair):
    first, *others = pair
    return np.sum(first * x) + np.sum(others[0] ** 2 * x)


def starred_in_loop(x, ws):
    s = 0.0
    for i in range(2):
        head, *tail = ws
        s = s + np.sum(head * x) * tail[i]
    return s


def mixed_tuple(x, pair):
    first, *others = pair  # (the rest of the tuple, (0.5,), is one item type)
    return np.sum(first * x) + others[0] * 2.0


X = np.array([0.3, -0.5, 0.7])
FLOATS = [1.5, 2.0, -0.5]
ARRAYS = [np.array([0.2, 0.4, -1.0]), np.array([1.1, -0.3, 0.6]), np.array([0.5, 0.9, 0.1])]
PAIR = (np.array([0.2, 0.4, -1.0]), np.array([1.1, -0.3, 0.6]))
CASES = [(starred_head, (X, FLOATS), (0, 1)), (starred_head, (X, ARRAYS), (0, 1)),
         (starred_tail, (X, ARRAYS), (0, 1)), (starred_tail, (0.4, FLOATS), (0, 1)),
         (copies, (X, FLOATS), (0, 1)), (copies, (X, ARRAYS), (0, 1)),
         (starred_display, (X,), (0,)), (tuple_unpacked, (X, PAIR), (0,)),
         (starred_in_loop, (X, FLOATS), (0, 1)),
         (mixed_tuple, (X, (np.array([1.0, 2.0, 3.0]), 0.5)), (0,))]


def _close(got, want):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for a, b in zip(got, want):
            _close(a, b)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn, args, wrt", CASES)
def test_compiled_equals_interpreted_and_finite_differences(fn, args, wrt):
    want = srcgrad.grad(fn, wrt=wrt)(*args)
    got = srcgrad.grad(fn, wrt=wrt, jit=True)(*args)
    _close(got, want)
    check_grad(fn, args, wrt=wrt, grads=got)


def test_compiled_vjp_equals_interpreted():
    value, pullback = srcgrad.vjp(starred_head, X, ARRAYS, jit=True)
    want_value, want_pullback = srcgrad.vjp(starred_head, X, ARRAYS)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    _close(pullback(1.5), want_pullback(1.5))


def test_compiled_text_copies_the_list():
    g = srcgrad.grad(starred_head, wrt=(0, 1), jit=True)
    g(X, FLOATS)
    shown = srcgrad.source(g)
    assert "_rt.as_list(" in shown and "items_adjoint(" in shown


def list_of_ints(x, ks):
    k, *rest = ks
    return np.sum(x * k) + rest[0]


# (a tuple's adjoint at a slice, ``add_at`` of a tuple with a slice, has no compiled form)
@pytest.mark.parametrize("fn, args, wrt", [
    (list_of_ints, (X, [2, 3]), (0,)), (tuple_unpacked, (X, PAIR), (0, 1))])
def test_other_items_stay_refused_at_their_line(fn, args, wrt):
    with pytest.raises(JitUnsupportedError, match=r"test_jit_list_copies\.py:\d+"):
        srcgrad.grad(fn, wrt=wrt, jit=True)(*args)
    want = srcgrad.grad(fn, wrt=wrt)(*args)
    with pytest.warns(RuntimeWarning):
        got = srcgrad.grad(fn, wrt=wrt, jit="auto")(*args)
    _close(got, want)
