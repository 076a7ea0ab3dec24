"""Lists of ints as indices that indices.py used to leave as lists (issue 12's fuzzer):
a list display written as the index itself (``y[[0, 2]]`` in an ``if`` or ``while``
condition, which the sweeps keep as written), a list held in a variable and read by an
element store (``v[[0, 2]] = e``: ``_rt.setitem``, ``setitem_zeroed``, ``last_writes``), and a
list a helper's forward sweep saves for its backward sweep. Each compiles as indexing with
the int64 array, against the interpreted gradient (rtol 1e-12) and finite differences; a
list read otherwise stays a list, refused at its line."""
import ast

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402
from srcgrad.jit.indices import constant_index_lists  # noqa: E402

from fdcheck import check_grad  # noqa: E402


def in_condition(x, y):
    if x[[0, 2]] @ y[:, [1, 2]][0] > 0.0:
        return np.sum(np.sin(x) * y[1][[2, 0]][0])
    return np.sum(x ** 3)


def in_while(x):
    k = 0
    while np.sum(x[[1, 2]]) * k < 3.0 and k < 5:
        x = x * 1.1 + x[[2, 0, 1]] * 0.1
        k += 1
    return np.sum(x ** 2)


def condition_only(x, y):
    if x[[0, 2]] @ y[:, [1, 2]][0] > 0.0:
        return np.sum(np.sin(x) * y[1, 0])
    return np.sum(x ** 3 * y[0, 1])


def stored(x):
    v = np.zeros(3)
    v[[0, 2]] = x[:2] * 2.0
    u = np.ones(4)
    u[[3, 1, 3]] = np.cos(x)  # (3 repeated: numpy keeps the last write)
    return np.sum(v * x) + np.sum(u * u)


def gather(x, y):
    v = np.dot(x[[2, 0, 1]], x) * y[[0, 2]]
    x = np.sin(x[[1, 2]])  # (x rebound: the helper's sweeps keep a stack of it)
    return v + x


def through_helper(x, y):
    return np.sum(np.sin(gather(x, y)))


def saved_and_counted(x):
    idx = [2, 0]
    return np.sum(x[idx] ** 2) * len(idx)


def helper_counts(x):
    return saved_and_counted(x) * 2.0


X = np.array([0.3, -0.5, 0.7])
Y = np.arange(6.0).reshape(2, 3) / 7 - 0.2
Z = np.array([1.0, 2.0, 3.0])
CASES = [(in_condition, (X, Y), (0, 1)), (in_condition, (-X, Y), (0, 1)),
         (condition_only, (X, Y), (0, 1)),
         (in_while, (X,), (0,)), (stored, (X,), (0,)), (through_helper, (X, Z), (0, 1))]


@pytest.mark.parametrize("fn, args, wrt", CASES)
def test_compiled_equals_interpreted_and_finite_differences(fn, args, wrt):
    want = srcgrad.grad(fn, wrt=wrt)(*args)
    got = srcgrad.grad(fn, wrt=wrt, jit=True)(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    check_grad(fn, args, wrt=wrt, grads=got)


@pytest.mark.parametrize("x", [X, -X])
def test_hvp_of_a_display_in_a_condition(x):
    # (the compiled hvp indexes with lists only where they are displays written as the
    # index: a list in a variable has a tangent there, refused as before)
    args = (x, Y)
    v = tuple(np.linspace(0.2, 1.0, np.size(a)).reshape(np.shape(a)) for a in args)
    want = srcgrad.hvp(condition_only, args, v)
    got = srcgrad.hvp(condition_only, args, v, jit=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    g = srcgrad.grad(condition_only, wrt=(0, 1))
    plus = g(*(a + eps * d for a, d in zip(args, v)))
    minus = g(*(a - eps * d for a, d in zip(args, v)))
    for a, p, m in zip(got, plus, minus):
        np.testing.assert_allclose(a, (p - m) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_compiled_text_indexes_with_arrays():
    g = srcgrad.grad(in_condition, wrt=(0, 1), jit=True)
    g(X, Y)
    shown = srcgrad.source(g)
    assert "x[_rt.index_array((0, 2))]" in shown
    assert "y[:, _rt.index_array((1, 2))]" in shown
    h = srcgrad.grad(through_helper, wrt=(0, 1), jit=True)
    h(X, Z)
    assert "_rt.index_array((2, 0, 1))" in srcgrad.source(h)


def test_out_of_bounds_store_raises_as_numpy_does():
    def far(x):
        v = np.zeros(3)
        v[[0, 3]] = x[:2]
        return np.sum(v)
    with pytest.raises(IndexError):
        srcgrad.grad(far)(X)
    with pytest.raises(IndexError):
        srcgrad.grad(far, jit=True)(X)


def test_a_list_the_backward_sweep_reads_otherwise_stays_refused():
    with pytest.raises(JitUnsupportedError, match=r"test_jit_index_displays\.py:\d+"):
        srcgrad.grad(helper_counts, jit=True)(X)


def _rewritten(text):
    return ast.unparse(constant_index_lists(ast.parse(text)))


def test_pair_rewrite_needs_the_backward_sweep_to_index_only():
    pair = """
def _make(_rt):
    def h_fwd(x):
        _t1 = [2, 0]
        _t2 = x[_t1]
        return (_t2, (x, _t1))
    def h_bwd(_saved, b):
        x, _t1 = _saved
        return (_rt.add_at(0.0, x, _t1, b),)
    return (h_fwd, h_bwd)
"""
    assert "_t1 = _rt.index_array((2, 0))" in _rewritten(pair)
    counted = pair.replace("return (_rt.add_at(0.0, x, _t1, b),)",
                           "return (_rt.add_at(0.0, x, _t1, b) * len(_t1),)")
    assert "_t1 = [2, 0]" in _rewritten(counted)
    rebound = pair.replace("x, _t1 = _saved", "x, _t1 = _saved\n        _t1 = [0, 1]")
    assert "_t1 = [2, 0]" in _rewritten(rebound)
    returned = pair.replace("return (_t2, (x, _t1))", "return (_t1, (x, _t1))")
    assert "_t1 = [2, 0]" in _rewritten(returned)
    stacks = pair.replace("return (_t2, (x, _t1))", "return (_t2, ((_stack_x,), x, _t1))") \
        .replace("x, _t1 = _saved", "(_stack_x,), x, _t1 = _saved")
    assert "_t1 = _rt.index_array((2, 0))" in _rewritten(stacks)
    nested = stacks.replace("((_stack_x,), x, _t1)", "((_stack_x, _t1), x, _t1)") \
        .replace("(_stack_x,), x, _t1 = _saved", "(_stack_x, _t1), x, _t3 = _saved")
    assert "_t1 = [2, 0]" in _rewritten(nested)


def test_displays_of_non_ints_stay_refused():
    def mask(x):
        if np.sum(x[[True, False, True]]) > 0.0:
            return np.sum(x ** 2)
        return np.sum(x)
    with pytest.raises(JitUnsupportedError, match=r"test_jit_index_displays\.py:\d+"):
        srcgrad.grad(mask, jit=True)(X)
