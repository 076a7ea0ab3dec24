"""Compiled gradients of lists built in the body by appending (jit/built_lists.py).

``xs.append(v)``, list comprehensions and ``sum(... for ...)`` reach the sweeps as
functional appends (``_rt.list_append``); the compiled form appends in place, pushing a copy.
Each construct is compared with the interpreted gradient (rtol 1e-12) and central finite
differences; what numba would compute otherwise, or a list read in a way that may keep it,
stays refused at its line.
"""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

from fdcheck import check_grad  # noqa: E402


def floats_appended(x):
    xs = []
    for i in range(4):
        xs.append(x * i + np.sin(x))
    return sum(xs)


def comprehension_stacked(x):
    xs = [np.sin(x) * i for i in range(3)]
    return np.sum(np.stack(xs) ** 2)


def generator_summed(x):
    return np.sum(sum(np.tanh(x * i) for i in range(4)))


def read_twice(x):
    xs = []
    for i in range(3):
        xs.append(x * (i + 1.0) + x ** 2)
    return np.sum(np.stack(xs) * 2.0) + np.sum(sum(xs) ** 2)


def appended_in_a_while_loop(x):
    xs = []
    y = x
    while y < 10.0:
        y = y * 1.5 + 0.1
        xs.append(y)
    return sum(xs) * len(xs)


def appended_in_branches(x):
    xs = [x]
    for i in range(5):
        if i % 2 == 0:
            xs.append(np.cos(x) * i)
        else:
            xs.append(x * x)
    return np.sum(np.stack(xs))


def only_counted(x):
    xs = []
    for i in range(3):
        xs.append(x * i)
    return np.sum(x) * len(xs)  # (nothing differentiates through the list: no copy pushed)


def two_lists(x):
    xs = []
    ys = []
    for i in range(3):
        xs.append(x * i)
        ys.append(np.sum(x ** 2) * i)
    return np.sum(np.stack(xs)) * sum(ys)


def running_sums(x):
    # (each sum reads the list as it was then: the pushed copies, restored by the pops)
    xs = []
    s = 0.0
    for i in range(4):
        xs.append(np.sin(x) * (i + 1.0))
        s = s + np.sum(sum(xs) ** 2)
    return s


def broadcast_items(x):
    xs = []
    xs.append(x[None, :] * 2.0)
    xs.append(x[:, None] + 1.0)
    return np.sum(sum(xs) ** 2)


def _summed_by_a_helper(x):
    xs = []
    for i in range(4):
        xs.append(np.sum(x) * i + x[0])
    return sum(xs)


def helper_building_a_list(x):
    # (the helper's compiled pair: its stack of copies goes to its backward sweep)
    return _summed_by_a_helper(x) * 3.0 + _summed_by_a_helper(x * 2.0)


def indexed_items(x):
    # (an item read keeps the item, not the list: the same object in both lists)
    xs = []
    for i in range(3):
        xs.append(x * (i + 1.0))
    return np.sum(xs[1] * xs[-1]) + np.sum(xs[0])


def last_item_in_a_loop(x):
    xs = [x]
    for i in range(3):
        xs.append(np.sin(xs[-1]) * 1.5 + xs[i])
    return np.sum(xs[-1] ** 2)


def iterated_items(x):
    xs = [np.cos(x) * k for k in range(3)]
    s = x * 0.0
    for v in xs:
        s = s + v * v
    return np.sum(s) + np.sum(sum(xs))


def iterated_numbers(x):
    xs = []
    for i in range(3):
        xs.append(x * i + x * x)
    s = 0.0
    for v in xs:
        s = s * v + v
    return s + xs[-1]


ARRAY = np.array([0.3, -1.2, 0.7])
CASES = [(indexed_items, ARRAY), (last_item_in_a_loop, ARRAY), (iterated_items, ARRAY),
         (iterated_numbers, 0.7), (helper_building_a_list, ARRAY), (floats_appended, 0.7), (comprehension_stacked, ARRAY), (generator_summed, ARRAY),
         (read_twice, ARRAY), (appended_in_a_while_loop, 1.3), (appended_in_branches, ARRAY),
         (only_counted, ARRAY), (two_lists, ARRAY), (running_sums, ARRAY),
         (broadcast_items, ARRAY)]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_lists_built_in_the_body_compile(f, x):
    # before: refused at the append ("this needs srcgrad.runtime.list_append")
    want = srcgrad.value_and_grad(f)(x)
    g = srcgrad.value_and_grad(f, jit=True)
    got = g(x)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
    check_grad(f, (x,), grads=(got[1],))
    assert "_rt.list_append" not in srcgrad.source(g)  # (appended in place)
    if f is running_sums:  # (the list is read as it was at each step: copies pushed)
        assert "_stack_xs.append(xs.copy())" in srcgrad.source(g)


def test_a_list_built_in_the_body_in_a_compiled_vjp():
    value, pullback = srcgrad.vjp(running_sums, ARRAY, jit=True)
    assert value == pytest.approx(running_sums(ARRAY), rel=1e-12)
    np.testing.assert_allclose(pullback(2.0)[0], 2.0 * srcgrad.grad(running_sums)(ARRAY),
                               rtol=1e-12)


def test_compiled_list_helpers_agree_with_the_interpreted_ones():
    from srcgrad import runtime as rt
    from srcgrad.jit import runtime as jrt

    @numba.njit
    def helpers(a_rows, b_rows, g):
        a = [a_rows[k].copy() for k in range(3)]  # (lists made in compiled code)
        b = [b_rows[k].copy() for k in range(3)]
        empty = jrt.list_zero(a)
        both = jrt.add(a, b)
        return (jrt.is_zero(empty), jrt.is_zero(a), jrt.add(empty, b), both,
                jrt.list_slice(both, 1, 3), jrt.spread_list(g, a), jrt.stack_list(a),
                jrt.list_sum(a, "here:1"), jrt.unstack_list(jrt.stack_list(b), b))

    a = [np.arange(3.0), np.ones(3), np.full(3, -2.0)]
    b = [np.sin(np.arange(3.0)), np.zeros(3), np.ones(3) * 0.5]
    g = np.array([1.0, 2.0, -1.0])
    zero, nonzero, added_to_zero, both, sliced, spread, stacked, total, cut = \
        helpers(np.stack(a), np.stack(b), g)
    assert zero and not nonzero
    np.testing.assert_array_equal(np.stack(added_to_zero), np.stack(b))
    np.testing.assert_array_equal(np.stack(both), np.stack(rt.add(a, b)))
    np.testing.assert_array_equal(np.stack(sliced), np.stack(rt.list_slice(rt.add(a, b), 1, 3)))
    np.testing.assert_array_equal(np.stack(spread), np.stack([g, g, g]))
    np.testing.assert_array_equal(stacked, np.stack(a))
    np.testing.assert_array_equal(total, sum(a))
    np.testing.assert_array_equal(np.stack(cut), np.stack(b))
    with pytest.raises(ValueError, match="same shape"):
        numba.njit(lambda n: jrt.stack_list([np.ones(2), np.ones(n)]))(3)


def ignores_a_list_argument(x, ws):
    return x * 2.0


def sums_a_list_argument(x, ws):
    return x * sum(ws)


def test_lists_passed_in_stay_refused():
    # lists passed in (numba's reflected lists) meet no compiled list helper of built lists
    with pytest.raises(JitUnsupportedError, match=r"test_jit_built_lists\.py:\d+"):
        srcgrad.grad(sums_a_list_argument, wrt=(0, 1), jit=True)(0.5, [1.0, 2.0, 3.0])


def test_an_unread_list_argument_gets_one_zero_per_item():
    # fuzzer seed 100 program 16, found on the way: a compiled zero of a list argument's
    # adjoint was the empty list, a gradient of 0 items where the argument has 3 (refused
    # since; now one zero per item, as interpreted: tests/test_jit_fuzz_constructs.py)
    want = srcgrad.grad(ignores_a_list_argument, wrt=(0, 1))(0.5, [1.0, 2.0, 3.0])
    got = srcgrad.grad(ignores_a_list_argument, wrt=(0, 1), jit=True)(0.5, [1.0, 2.0, 3.0])
    assert got[0] == want[0] and got[1] == want[1] == [0.0, 0.0, 0.0]


def mixed_items(x):
    xs = []
    xs.append(1)  # (numba would make the int a float: sum(xs) of big ints would differ)
    xs.append(x)
    return sum(xs)


def sliced(x):
    xs = []
    for i in range(3):
        xs.append(x * i)
    return sum(xs[1:])  # (a slice is a new list holding the items: not compiled)


def ranks(x):
    xs = [x]
    xs.append(x[None, :])  # (numpy's sum broadcasts them; numba's list cannot hold both)
    return np.sum(sum(xs))


def bound_to_none_first(x):
    s = 0.0
    for k in range(3):
        xs = []  # (the sweeps first bind xs to None: an optional list, not compiled)
        for i in range(2):
            xs.append(x * k + i)
        s = s + sum(xs)
    return s


def summed_when_empty(x):
    xs = []
    for i in range(int(x > 100.0)):
        xs.append(x)
    return sum(xs) + x  # (Python's sum of no items is the int 0)


def _stacked_by_a_helper(x):
    xs = []
    for i in range(3):
        xs.append(np.sin(x) * (i + 1.0))
    return np.stack(xs) * 2.0


def helper_stacking_a_list(x):
    # (the lazy zero of an item's adjoint in the helper's backward sweep has no primal
    # there to take its shape from: refused by numba's typing, not guessed)
    return np.sum(_stacked_by_a_helper(x) ** 2)


@pytest.mark.parametrize("f, x", [(helper_stacking_a_list, ARRAY),
                                  (mixed_items, 0.5), (sliced, 0.5),
                                  (ranks, ARRAY), (bound_to_none_first, 0.5),
                                  (summed_when_empty, 0.5)])
def test_lists_numba_would_hold_otherwise_stay_refused(f, x):
    with pytest.raises(JitUnsupportedError, match=r"test_jit_built_lists\.py:\d+"):
        srcgrad.grad(f, jit=True)(x)
    with pytest.warns(RuntimeWarning):
        got = srcgrad.grad(f, jit="auto")(x)
    np.testing.assert_array_equal(got, srcgrad.grad(f)(x))


def item_updated_after_an_append(x):
    xs = []
    xs.append(x * 2.0)
    v = xs[0]
    xs.append(x + 1.0)
    v[0] = 5.0  # (writes the item both lists hold)
    return np.sum(np.stack(xs) ** 2)


def item_scaled_in_place(x):
    xs = []
    for i in range(3):
        xs.append(x * (i + 1.0))
    v = xs[-1]
    v *= 3.0
    return np.sum(np.stack(xs) ** 2) + np.sum(v)


@pytest.mark.parametrize("f", [item_updated_after_an_append, item_scaled_in_place])
def test_items_read_then_updated_in_place_stay_refused(f):
    # an item read is the list's own array (in Python and in numba alike): updating it in
    # place would change the list's item and its pushed copies; refused at its line, as the
    # interpreted transformation refuses it
    with pytest.raises(srcgrad.SrcgradError, match=r"test_jit_built_lists\.py:\d+"):
        srcgrad.grad(f, jit=True)(ARRAY.copy())
