"""Compiled gradients of lists: list displays joined by np.stack and its kin (jit/joined.py).

Each construct is compared with the interpreted gradient (rtol 1e-12) and central finite
differences; what numba would compute otherwise, or cannot type, stays refused at its line.
"""
import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

from fdcheck import check_grad  # noqa: E402


def stacked_rows(x):
    v = x[0, :]
    s = np.stack([v, v ** 2])
    w = np.vstack([v, -v, np.sin(v)])
    return np.sum(s * w[:2]) + np.sum(w[2])


def stacked_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.stack([x * i, np.sin(x)], axis=1) ** 2)
    return s


def joined_constants(x):
    c = np.concatenate([np.ones(2), np.zeros(1)])
    h = np.hstack([np.arange(2.0), np.ones(1)])
    return np.sum(x * c * h)


def stacked_ints_and_floats(x):
    k = np.arange(3)
    return np.sum(np.stack([x, k]) ** 2) + np.sum(np.vstack([k, x, k]) * x)


def _compare(f, *args):
    want = srcgrad.value_and_grad(f)(*args)
    g = srcgrad.value_and_grad(f, jit=True)
    got = g(*args)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
    check_grad(f, args, grads=(got[1],))
    return srcgrad.source(g)


@pytest.mark.parametrize("f, shape", [(stacked_rows, (2, 3)), (stacked_in_a_loop, (4,)),
                                      (joined_constants, (3,)),
                                      (stacked_ints_and_floats, (3,))])
def test_list_displays_joined_compile_as_tuples(f, shape):
    # before: numba has no np.stack/np.vstack/np.concatenate/np.hstack of a list (refused)
    x = np.random.default_rng(7).normal(size=shape)
    text = _compare(f, x)
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if re.search(r"\[[^]]", line.split("=")[-1])
                and ("= [" in line or "([" in line)]  # (no list display left)


def test_joined_list_displays_in_a_compiled_vjp():
    # (forward mode joins the tangents through _rt.densify(d_t2, _t2), a read that keeps
    # the lists: a compiled jvp of these stays refused)
    x = np.random.default_rng(8).normal(size=(2, 3))
    value, pullback = srcgrad.vjp(stacked_rows, x, jit=True)
    np.testing.assert_allclose(pullback(2.0)[0], 2.0 * srcgrad.grad(stacked_rows)(x),
                               rtol=1e-12)


def stacked_and_counted(x):
    xs = [x, x ** 2]
    return np.sum(np.stack(xs)) * len(xs)  # (len reads the list: it stays one)


def stacked_ranks(x):
    return np.sum(np.vstack([x, x[None, :] * 2]))  # (numpy joins them; numba does not)


def stacked_number(x):
    return np.sum(np.stack([x[0], 2.0]))


def stacked_then_changed(x):
    xs = [x, x * 2]
    xs[0] = x ** 3  # (an item store: compiled in place, tests/test_jit_fuzz_constructs.py)
    return np.sum(np.stack(xs))


def side_by_side(x):
    return np.sum(np.hstack([x, x ** 2]) ** 2)  # (hstack's adjoint: no compiled form)


@pytest.mark.parametrize("f", [stacked_and_counted, stacked_ranks, stacked_number,
                               side_by_side])
def test_lists_read_otherwise_or_items_numba_joins_otherwise_stay_refused(f):
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(JitUnsupportedError, match=r"test_jit_lists\.py:\d+"):
        srcgrad.grad(f, jit=True)(x)
    with pytest.warns(RuntimeWarning):
        got = srcgrad.grad(f, jit="auto")(x)
    np.testing.assert_array_equal(got, srcgrad.grad(f)(x))


def test_a_list_display_with_an_item_stored_compiles():
    # (refused until item stores into lists built in the body compiled)
    x = np.array([0.3, -1.2, 0.7])
    np.testing.assert_allclose(srcgrad.grad(stacked_then_changed, jit=True)(x),
                               srcgrad.grad(stacked_then_changed)(x), rtol=1e-12)
