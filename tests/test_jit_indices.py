"""Compiled gradients indexing with lists of ints (srcgrad/jit/indices.py): ``x[[2, 0, 1]]``
compiles as indexing with the int64 array, as numpy reads it; against the interpreted
gradient and finite differences; what numpy reads otherwise stays refused."""
import ast

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402
from srcgrad.jit.indices import constant_index_lists  # noqa: E402

from fdcheck import check_grad  # noqa: E402


def gathers(x, y):
    a = x[[2, 0, 1, 2]] * y[[-1]][0, 1]  # (2 repeated: its adjoint accumulates)
    b = y[[-1, 0]]
    s = 0.0
    for i in range(2):
        s = s + np.sum(x[[i, 2]] * x[[0, -1]])
    return np.sum(a) + np.sum(b * b) + s


def columns(y):
    return np.sum(np.sin(y[:, [2, 0]]) * y[:, [1, 1]])


def out_of_bounds(x):
    return np.sum(x[[0, 5]] * 2.0)


def mask_list(x):
    return np.sum(x[[True, False, True]] ** 2)


def float_item(x):
    return np.sum(x[[0, 1.0]])


def list_also_counted(x):
    idx = [2, 0]
    return np.sum(x[idx]) * len(idx)


X = np.array([0.3, -0.5, 0.7])
Y = np.arange(6.0).reshape(2, 3) / 7 - 0.2


@pytest.mark.parametrize("fn, args, wrt", [(gathers, (X, Y), (0, 1)),
                                           (list_also_counted, (X,), (0,))])
def test_compiled_equals_interpreted_and_finite_differences(fn, args, wrt):
    want = srcgrad.grad(fn, wrt=wrt)(*args)
    try:
        got = srcgrad.grad(fn, wrt=wrt, jit=True)(*args)
    except JitUnsupportedError as e:  # (len() of the list: it stays a list, refused)
        assert fn is list_also_counted and "test_jit_indices.py:" in str(e)
        return
    assert fn is gathers
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    check_grad(fn, args, wrt=wrt, grads=got)


def test_compiled_code_indexes_with_arrays():
    g = srcgrad.grad(gathers, wrt=(0, 1), jit=True)
    g(X, Y)
    shown = srcgrad.source(g)
    assert "_rt.index_array((2, 0, 1, 2))" in shown and "_rt.index_array((i, 2))" in shown


def test_adjoint_of_columns_stays_refused_forward_compiles():
    with pytest.raises(JitUnsupportedError, match="test_jit_indices.py:"):
        srcgrad.grad(columns, jit=True)(Y)
    value, _ = srcgrad.vjp(columns, Y, jit=True)
    assert value == pytest.approx(columns(Y), rel=1e-14)


def test_out_of_bounds_raises_as_numpy_does():
    with pytest.raises(IndexError):
        srcgrad.grad(out_of_bounds)(X)
    with pytest.raises(IndexError):
        srcgrad.grad(out_of_bounds, jit=True)(X)


@pytest.mark.parametrize("fn", [mask_list, float_item])
def test_items_other_than_ints_are_not_compiled(fn):
    try:
        want = srcgrad.grad(fn)(X)
    except Exception as e:  # noqa: BLE001 (numpy refuses a float index)
        want = type(e)
    try:
        got = srcgrad.grad(fn, jit=True)(X)
    except JitUnsupportedError as e:
        assert "test_jit_indices.py:" in str(e)
        return
    except Exception as e:  # noqa: BLE001
        assert type(e) is want
        return
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _rewritten(src: str) -> str:
    return ast.unparse(constant_index_lists(ast.parse(src)))


def test_rewrite_only_lists_read_as_indices():
    out = _rewritten("def f(x, y):\n"
                     "    a = [1, -2]\n"
                     "    b = [0]\n"
                     "    c = [i, 0]\n"
                     "    d = [3]\n"
                     "    e = []\n"
                     "    return x[a] + y[:, c] + _rt.add_at(0.0, x, b, g) + len(d) + x[e]\n")
    assert "a = _rt.index_array((1, -2))" in out and "b = _rt.index_array((0,))" in out
    assert "c = _rt.index_array((i, 0))" in out
    assert "d = [3]" in out and "e = []" in out


def test_rewrite_keeps_a_list_rebound_or_changed():
    out = _rewritten("def f(x, z):\n"
                     "    a = [1, 2]\n"
                     "    a = z\n"
                     "    b = [1, 2]\n"
                     "    b.append(0)\n"
                     "    c = [0, 1]\n"
                     "    c += [2]\n"
                     "    return x[a] + x[b] + x[c]\n")
    assert "index_array" not in out


def test_rewrite_follows_a_stack_holding_only_the_list():
    out = _rewritten("def f(x):\n"
                     "    _stack_t1 = []\n"
                     "    _t1 = None\n"
                     "    for i in range(2):\n"
                     "        _stack_t1.append(_t1)\n"
                     "        _t1 = [i, 0]\n"
                     "        y = x[_t1]\n"
                     "    _t1 = _stack_t1.pop()\n"
                     "    _stack_t1.append(x)\n"  # (the stack holds something else too)
                     "    return y\n")
    assert "index_array" not in out


def test_rewrite_keeps_a_list_nobody_indexes_with():
    out = _rewritten("def f(x):\n"
                     "    rows = [x, x + 1.0]\n"
                     "    _stack_t1 = []\n"
                     "    _t1 = [0, 1]\n"
                     "    _stack_t1.append(_t1)\n"
                     "    _t1 = _stack_t1.pop()\n"
                     "    return x\n")
    assert "index_array" not in out


def dead_list_of_arrays(x):
    rows = [x * 2.0, x + 1.0]  # noqa: F841 (never read: numba compiles the list as it is)
    return np.sum(x * x)


def test_dead_list_of_arrays_still_compiles():
    got = srcgrad.grad(dead_list_of_arrays, jit=True)(X)
    np.testing.assert_allclose(got, 2 * X, rtol=1e-14)


def _int_out_of_bounds(x):
    return x[5] * 2.0


def _array_index_out_of_bounds(x, idx):
    return np.sum(x[idx] ** 2)


def _loop_past_the_end(x):
    s = 0.0
    for i in range(4):
        s += x[i] * 2.0
    return s


@pytest.mark.parametrize("f, extra", [(_int_out_of_bounds, ()),
                                      (_array_index_out_of_bounds, (np.array([0, 7]),)),
                                      (_loop_past_the_end, ())])
def test_an_index_past_the_end_raises_as_numpy_does(f, extra):
    # numba unchecked read past the array: [0, 0, 0], [2, 0, 0] and [2, 2, 2] where the
    # interpreted gradient raises numpy's IndexError
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(IndexError):
        srcgrad.grad(f)(x, *extra)
    with pytest.raises(IndexError):
        srcgrad.grad(f, jit=True)(x, *extra)
