"""Targeted tests of control flow in generated adjoints: loops with data-dependent trip counts,
the tape's life cycle (including calls that raise), threads, recursion, nested grad, and the
shapes of broadcasting binary operations."""
import gc
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import srcgrad
import srcgrad.runtime
from fdcheck import check_grad


def _live_tapes():
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, srcgrad.runtime.Tape)]


# -- the tutorial's doubling loop -------------------------------------------------------------
def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


@pytest.mark.parametrize("x", [np.array([1.0, 2.0, -0.5]), np.array([300.0, 0.0, 1.0]),
                               np.array([1e-3, 2e-3, 0.0]), np.array([600.0, 0.0, 0.0])])
def test_doubling_loop_vjp_is_v_times_power_of_two(x):
    value, pullback = srcgrad.vjp(doubling, x)
    k = 1
    while np.linalg.norm(x * 2 ** k) < 1000:
        k += 1
    np.testing.assert_array_equal(value, x * 2 ** k)
    v = np.array([0.5, -1.0, 3.0])
    (g,) = pullback(v)
    np.testing.assert_array_equal(g, v * 2 ** k)
    assert g.shape == x.shape


def test_doubling_loop_different_trip_counts_share_one_adjoint():
    _, pb_short = srcgrad.vjp(doubling, np.array([400.0, 0.0, 0.0]))
    _, pb_long = srcgrad.vjp(doubling, np.array([1.0, 0.0, 0.0]))
    assert pb_short.__srcgrad_adjoint__() is pb_long.__srcgrad_adjoint__()
    v = np.ones(3)
    np.testing.assert_array_equal(pb_long(v)[0], v * 1024)
    np.testing.assert_array_equal(pb_short(v)[0], v * 4)


# -- tape life cycle --------------------------------------------------------------------------
def raises_on_large(x, limit):
    s = 0.0
    for i in range(6):
        s = s + x * math.sin(s + i)
        if s > limit:
            raise ValueError(f"diverged at step {i}")
    return s * s


def test_tape_is_empty_after_the_backward_sweep():
    from srcgrad.api import get_adjoint
    adj = get_adjoint(raises_on_large, (0,))
    before = {id(t) for t in _live_tapes()}
    value, saved = adj.fwd(0.3, 100.0)
    mine = [t for t in _live_tapes() if id(t) not in before]
    assert mine and any(len(t) > 0 for t in mine), "the forward sweep should record a tape"
    adj.bwd(saved, 1.0)
    assert all(len(t) == 0 for t in mine), "the backward sweep must pop every entry it pushed"
    del saved, mine
    assert not [t for t in _live_tapes() if id(t) not in before]


def test_pullback_pops_a_copy_and_releases_everything():
    before = {id(t) for t in _live_tapes()}
    value, pullback = srcgrad.vjp(raises_on_large, 0.3, 100.0)
    first = pullback(1.0)
    assert pullback(1.0) == first
    del pullback
    assert not [t for t in _live_tapes() if id(t) not in before]


def test_nothing_leaks_after_a_call_that_raised():
    g = srcgrad.grad(raises_on_large)
    expected = g(0.3, 100.0)
    before = {id(t) for t in _live_tapes()}
    for _ in range(5):
        with pytest.raises(ValueError, match="diverged"):
            g(3.0, 0.5)
    # the exception info (holding the frames) is gone: no tape may survive
    leaked = [t for t in _live_tapes() if id(t) not in before]
    assert leaked == []
    assert g(0.3, 100.0) == expected
    check_grad(raises_on_large, (0.3, 100.0), wrt=(0,))


def test_exception_in_a_callee_does_not_corrupt_later_calls():
    def outer(x):
        y = x * 2
        for _ in range(3):
            y = _may_raise(y) + x
        return y

    g = srcgrad.grad(outer)
    good = g(0.1)
    with pytest.raises(ValueError):
        g(10.0)
    assert g(0.1) == good
    check_grad(outer, (0.1,))


def _may_raise(v):
    if v > 5:
        raise ValueError("too big")
    return v * v


def test_grad_call_leaves_no_tape_alive():
    before = {id(t) for t in _live_tapes()}
    for x in np.linspace(0.1, 0.9, 5):
        srcgrad.grad(raises_on_large)(float(x), 100.0)
    assert not [t for t in _live_tapes() if id(t) not in before]


def test_pullback_can_be_called_twice_or_says_why_not():
    _, pullback = srcgrad.vjp(doubling, np.array([1.0, 2.0, 3.0]))
    first = pullback(np.ones(3))[0]
    try:
        second = pullback(np.ones(3))[0]
    except srcgrad.SrcgradError:
        return  # a clear error is acceptable
    np.testing.assert_array_equal(second, first)


# -- threads ----------------------------------------------------------------------------------
def threaded_target(w, x):
    h = x
    for _ in range(3):
        h = np.tanh(h @ w)
        if np.sum(h) > 0:
            h = h * 1.5
        else:
            h = h - 0.1
    return np.sum(h ** 2)


def test_many_threads_give_the_single_threaded_results():
    rng = np.random.default_rng(7)
    inputs = [(rng.standard_normal((3, 3)), rng.standard_normal((2, 3))) for _ in range(40)]
    g = srcgrad.grad(threaded_target, wrt=(0, 1))
    expected = [g(w, x) for w, x in inputs]
    barrier = threading.Barrier(8)

    def worker(offset):
        barrier.wait()
        out = []
        for rep in range(25):
            k = (offset * 7 + rep) % len(inputs)
            out.append((k, g(*inputs[k])))
        return out

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(worker, range(8)))
    for out in results:
        for k, (gw, gx) in out:
            np.testing.assert_array_equal(gw, expected[k][0])
            np.testing.assert_array_equal(gx, expected[k][1])


def test_threads_building_the_adjoint_at_the_same_time():
    def fresh(x, y):
        s = 0.0
        for i in range(4):
            s = s + x ** 2 * y + i
        return s

    barrier = threading.Barrier(8)

    def worker(k):
        barrier.wait()
        return srcgrad.grad(fresh, wrt=(0, 1))(0.1 * k, 2.0)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(worker, range(8)))
    for k, (gx, gy) in enumerate(results):
        x = 0.1 * k
        assert gx == pytest.approx(4 * 2 * x * 2.0)
        assert gy == pytest.approx(4 * x * x)


# -- recursion --------------------------------------------------------------------------------
def _tree_sum(xs, lo, hi):
    if hi - lo == 1:
        return xs[lo] * xs[lo]
    mid = (lo + hi) // 2
    return _tree_sum(xs, lo, mid) + np.sin(_tree_sum(xs, mid, hi))


def divide_and_conquer(xs):
    return _tree_sum(xs, 0, len(xs))


def _halve_until_small(x, depth):
    if x < 1.0 or depth > 50:
        return x
    return 0.5 * _halve_until_small(x * 0.7, depth + 1) + x * 0.1


def data_dependent_recursion(x):
    return _halve_until_small(x, 0)


def _is_even_sum(x, n):
    if n == 0:
        return x
    return _is_odd_sum(x * 1.1, n - 1) + x


def _is_odd_sum(x, n):
    if n == 0:
        return -x
    return _is_even_sum(np.sin(x), n - 1)


def mutual_recursion(x):
    return _is_even_sum(x, 5)


@pytest.mark.parametrize("fn, args", [
    (divide_and_conquer, (np.array([0.3, -0.2, 0.9, 0.5, -0.7]),)),
    (data_dependent_recursion, (37.0,)),
    (data_dependent_recursion, (0.4,)),
    (mutual_recursion, (0.8,)),
], ids=["divide_and_conquer", "data_dependent_deep", "data_dependent_shallow", "mutual"])
def test_recursion(fn, args):
    check_grad(fn, args)


def test_deep_recursion_of_differentiated_function():
    def countdown(x, n):
        if n == 0:
            return x
        return countdown(x * 1.01, n - 1)

    g = srcgrad.grad(countdown)(1.0, 150)
    assert g == pytest.approx(1.01 ** 150)


# -- nested srcgrad.grad ----------------------------------------------------------------------
def _cube(x):
    return x ** 3


def calls_grad_inside(x):
    d = srcgrad.grad(_cube)
    return d(x) * x


def test_grad_of_a_function_that_calls_grad():
    # d/dx (3 x^2 * x) = 9 x^2; an explicit SrcgradError would also be acceptable
    try:
        g = srcgrad.grad(calls_grad_inside)(2.0)
    except srcgrad.SrcgradError as e:
        assert "grad" in str(e)
        return
    assert g == pytest.approx(36.0)


def test_grad_of_grad_value_outside_is_fine():
    # calling a gradient function outside differentiated code still works
    assert calls_grad_inside(2.0) == pytest.approx(24.0)


# -- shapes of broadcasting binary operations -------------------------------------------------
def _bin_div(a, b):
    return np.sum((a / b) ** 2)


def _bin_pow(a, b):
    return np.sum(a ** b)


def _bin_mul(a, b):
    return np.sum(np.sin(a * b))


def _bin_sub(a, b):
    return np.sum((a - b) ** 2)


def _bin_add(a, b):
    return np.sum(np.exp(a + b))


def _np_divide(a, b):
    return np.sum(np.divide(a, b) ** 2)


def _np_power(a, b):
    return np.sum(np.power(a, b))


def _np_maximum(a, b):
    return np.sum(np.maximum(a, b) ** 2)


_SHAPE_PAIRS = [((), (3,)), ((3,), ()), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                ((4, 1, 3), (2, 1)), ((1,), (2, 2)), ((2, 3), (1, 1)), ((1, 3), (2, 3)),
                ((2, 3), (2, 3))]


def _draw(shape, rng):
    if shape == ():
        return float(rng.uniform(0.5, 1.5))
    return rng.uniform(0.5, 1.5, size=shape)


@pytest.mark.parametrize("op", [_bin_div, _bin_pow, _bin_mul, _bin_sub, _bin_add, _np_divide,
                                _np_power, _np_maximum], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("shapes", _SHAPE_PAIRS, ids=lambda s: f"{s[0]}-{s[1]}")
def test_broadcasting_binary_op_gradients_have_input_shapes(op, shapes):
    rng = np.random.default_rng(3)
    a, b = _draw(shapes[0], rng), _draw(shapes[1], rng)
    ga, gb = srcgrad.grad(op, wrt=(0, 1))(a, b)
    assert np.shape(ga) == np.shape(a)
    assert np.shape(gb) == np.shape(b)
    check_grad(op, (a, b), wrt=(0, 1), grads=(ga, gb))


def test_vjp_of_broadcasting_op_returns_input_shapes():
    def f(a, b):
        return a / b + a ** b

    a, b = np.full((2, 1, 3), 1.3), np.full((4, 1), 0.7)
    value, pullback = srcgrad.vjp(f, a, b)
    ga, gb = pullback(np.ones(value.shape))
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(gb, np.full((4, 1), 2 * 3 * (-1.3 / 0.49 + 1.3 ** 0.7
                                                            * math.log(1.3))))


def test_integer_power_zero_at_zero():
    def powers(x, n):
        s = 0.0
        for i in range(n):
            s = s + x ** i
        return s

    assert srcgrad.grad(powers)(0.0, 3) == 1.0
    assert srcgrad.grad(powers)(np.float64(0.0), 3) == 1.0


# -- loops whose structure depends on data ----------------------------------------------------
def bisect_style(x):
    lo, hi = 0.0, 4.0
    y = x
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if mid * mid > 2.0:
            hi = mid
        else:
            lo = mid
        y = y * 0.9 + lo * x * 0.01
    return y


def nested_while_data_dependent(x):
    total = 0.0
    outer = x
    while outer < 4.0:
        inner = outer
        while inner < 2 * outer:
            inner = inner * 1.3
            total = total + inner * 0.1
        outer = outer * 1.7
    return total


def break_inside_while_inside_for(x):
    s = x
    for i in range(4):
        k = 0
        while True:
            s = s * 1.05 + 0.01 * i
            k += 1
            if s > 1.0 + i or k >= 5:
                break
    return s


@pytest.mark.parametrize("fn, x", [(bisect_style, 0.7), (nested_while_data_dependent, 0.45),
                                   (nested_while_data_dependent, 5.0),
                                   (break_inside_while_inside_for, 0.3)],
                         ids=["bisect", "nested_while", "nested_while_zero_trips",
                              "break_while_in_for"])
def test_data_dependent_loops(fn, x):
    check_grad(fn, (x,))


def test_zero_trip_loop_gradient_is_identity_part():
    def f(x, n):
        y = x * 3
        for _ in range(n):
            y = y * y
        return y

    assert srcgrad.grad(f)(0.5, 0) == 3.0
    assert srcgrad.grad(f)(0.5, 1) == pytest.approx(2 * 1.5 * 3)


# -- adjoints that are the lazy zero on one path only ----------------------------------------
_W = np.ones((3, 2))


def _matmul_in_one_branch(x, flag):
    a = x @ _W
    if flag > 0:
        r = np.sum(a)
    else:
        r = np.sum(x)
    return r


def _matmul_in_a_loop_branch(x, n):
    s = 0.0
    a = x @ _W
    for i in range(n):
        if i % 2 == 0:
            s = s + np.sum(a * i)
    return s + np.sum(x)


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_adjoint_zero_on_one_branch_reaches_a_matmul(flag):
    check_grad(_matmul_in_one_branch, (np.ones((4, 3)), flag))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_adjoint_zero_on_some_iterations_reaches_a_matmul(n):
    check_grad(_matmul_in_a_loop_branch, (np.ones((4, 3)), n))
