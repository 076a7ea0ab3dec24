"""grad called inside differentiated code (issue 9): values at every order against written-out
derivatives and finite differences, and what each optimisation of that path keeps.

The functions are module globals on purpose: ``srcgrad.grad(f)(x)`` of a global ``f`` is
made at transform time (transforms/gradient_calls.py); closures and locals are not.
"""
import os
import sys

import numpy as np
import pytest
from scipy.special import polygamma

import srcgrad
from srcgrad import runtime
from srcgrad.call_records import UserCall

# benchmarks/bench_nested.py: autograd's negative_binomial_maxlike, whose rprime(r) calls
# srcgrad.grad(loglike)(r, p(r)), and the same derivative written out (rprime_written)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from bench_nested import DATA, loglike, p_of, rprime, rprime_written


def rprime_local(r):
    g = srcgrad.grad(loglike)  # a local: dispatched at run time, not folded
    return g(r, p_of(r))


def central(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# -- values at every order ---------------------------------------------------------------------
def test_negative_binomial_derivatives_match_the_written_out_ones():
    n, s = len(DATA), np.sum(DATA)
    for r in (0.7, 2.0, 5.5):
        p = s / (n * r + s)
        dp = -s * n / (n * r + s) ** 2
        assert rprime(r) == pytest.approx(rprime_written(r), rel=1e-12)
        second = np.sum(polygamma(1, r + DATA)) - n * polygamma(1, r) - n * dp / (1 - p)
        assert srcgrad.grad(rprime)(r) == pytest.approx(second, rel=1e-10)
        assert srcgrad.grad(srcgrad.grad(rprime))(r) == pytest.approx(
            srcgrad.grad(srcgrad.grad(rprime_written))(r), rel=1e-10)
        assert srcgrad.grad(srcgrad.grad(rprime))(r) == pytest.approx(
            central(srcgrad.grad(rprime_written), r), rel=1e-6)


def test_fourth_order_through_the_inner_gradient():
    g3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(rprime)))
    w3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(rprime_written)))
    assert g3(2.0) == pytest.approx(w3(2.0), rel=1e-9)


def test_local_gradient_function_gives_the_same_derivatives():
    for order in (1, 2):
        mine, local = rprime, rprime_local
        for _ in range(order):
            mine, local = srcgrad.grad(mine), srcgrad.grad(local)
        assert local(1.3) == pytest.approx(mine(1.3), rel=1e-12)


def quartic(x, y):
    return x ** 4 * y + np.sin(x * y)


def value_times_slope(x, y):
    v, g = srcgrad.value_and_grad(quartic)(x, y)  # the inner value IS used
    return v * g


def value_times_slope_written(x, y):
    v = x ** 4 * y + np.sin(x * y)
    g = 4 * x ** 3 * y + y * np.cos(x * y)
    return v * g


def test_value_and_grad_inside_with_its_value_used():
    x, y = 0.8, 1.7
    for wrt in (0, 1):
        got = srcgrad.grad(value_times_slope, wrt=wrt)(x, y)
        written = srcgrad.grad(value_times_slope_written, wrt=wrt)(x, y)
        assert got == pytest.approx(written, rel=1e-12)
    second = srcgrad.grad(srcgrad.grad(value_times_slope))(x, y)
    assert second == pytest.approx(
        central(lambda t: srcgrad.grad(value_times_slope_written)(t, y), x), rel=1e-6)


def two_args(x, y):
    return np.sum(np.exp(x * y) + x ** 2 * np.cos(y))


def by_argnums(x, y):
    return srcgrad.grad(two_args, argnums=1)(x, y) * x


def by_positional_wrt(x, y):
    return srcgrad.grad(two_args, 1)(x, y) * x


def by_both(x, y):
    gx, gy = srcgrad.grad(two_args, wrt=(0, 1))(x, y)
    return gx * gy


def test_inner_grad_with_argnums_and_a_tuple_of_wrt():
    x, y = 0.6, 1.1
    dy = x * np.exp(x * y) - x ** 2 * np.sin(y)
    dx = y * np.exp(x * y) + 2 * x * np.cos(y)
    assert by_argnums(x, y) == pytest.approx(dy * x, rel=1e-12)
    assert by_positional_wrt(x, y) == pytest.approx(dy * x, rel=1e-12)
    assert by_both(x, y) == pytest.approx(dx * dy, rel=1e-12)
    for f in (by_argnums, by_positional_wrt, by_both):
        assert srcgrad.grad(f, wrt=0)(x, y) == pytest.approx(
            central(lambda t, f=f: f(t, y), x), rel=1e-6)
        assert srcgrad.grad(f, wrt=1)(x, y) == pytest.approx(
            central(lambda t, f=f: f(x, t), y), rel=1e-6)
    assert srcgrad.grad(srcgrad.grad(by_both))(x, y) == pytest.approx(
        central(lambda t: srcgrad.grad(by_both)(t, y), x), rel=1e-6)


def looped(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sin(x * (i + 1)) / (i + 1)
    return s


def slope_of_looped(x):
    return srcgrad.grad(looped)(x, 4) ** 2


def test_inner_grad_of_a_function_with_a_loop():
    x = 0.9
    slope = sum(np.cos(x * k) for k in range(1, 5))
    curvature = -sum(k * np.sin(x * k) for k in range(1, 5))
    assert slope_of_looped(x) == pytest.approx(slope ** 2, rel=1e-12)
    assert srcgrad.grad(slope_of_looped)(x) == pytest.approx(2 * slope * curvature, rel=1e-12)
    third = -sum(k * k * np.cos(x * k) for k in range(1, 5))
    assert srcgrad.grad(srcgrad.grad(slope_of_looped))(x) == pytest.approx(
        2 * curvature ** 2 + 2 * slope * third, rel=1e-10)


def with_aux(x):
    return x ** 3, {"note": x * 2.0}


def through_aux(x):
    g, aux = srcgrad.grad(with_aux, has_aux=True)(x)
    return g * aux["note"]  # 3x^2 * 2x = 6x^3


def test_inner_grad_with_aux():
    assert srcgrad.grad(through_aux)(0.7) == pytest.approx(18 * 0.7 ** 2, rel=1e-12)
    assert srcgrad.grad(srcgrad.grad(through_aux))(0.7) == pytest.approx(36 * 0.7, rel=1e-12)


def tanh_of(x):
    return np.tanh(x)


def elementwise_inside(x):
    return np.sum(srcgrad.elementwise_grad(tanh_of)(x) * x)


def test_elementwise_grad_inside():
    x = np.array([0.1, -0.4, 0.9])
    # d/dx sum(x * (1 - tanh^2 x)) = 1 - t^2 - 2 x t (1 - t^2)
    t = np.tanh(x)
    np.testing.assert_allclose(srcgrad.grad(elementwise_inside)(x),
                               1 - t ** 2 - 2 * x * t * (1 - t ** 2), rtol=1e-12)


def energy(x, w):
    return np.sum(w * np.sin(x) ** 2 + x ** 4)


def force(x, w):
    return -srcgrad.grad(energy)(x, w)


def force_loss(x, w):
    f = force(x, w)
    return 0.5 * np.sum(f * f)


def test_forward_mode_and_jacobians_through_an_inner_grad():
    x, w = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, 0.5])
    hessian = np.diag(-2 * w * np.cos(2 * x) - 12 * x ** 2)  # d force / dx
    np.testing.assert_allclose(srcgrad.jacfwd(force)(x, w), hessian, rtol=1e-12)
    np.testing.assert_allclose(srcgrad.jacrev(force)(x, w), hessian, rtol=1e-12)
    v = np.array([0.2, 0.1, -0.4])
    _, tangent = srcgrad.jvp(force, (x, w), (v, np.zeros(3)))
    np.testing.assert_allclose(tangent, hessian @ v, rtol=1e-12)
    # the Hessian of 0.5 |force|^2: J^T J + sum_k force_k * d2 force_k / dx2 (diagonal here)
    third = np.diag(4 * w * np.sin(2 * x) - 24 * x)
    expected = hessian.T @ hessian + np.diag(force(x, w)) @ third
    np.testing.assert_allclose(srcgrad.hessian(force_loss)(x, w), expected, rtol=1e-10)


# -- gradient_calls: a gradient made in the call is a known callee ----------------------------
def test_gradient_made_in_the_call_is_differentiated_as_a_known_callee():
    shown = srcgrad.source(srcgrad.grad(rprime))
    assert "loglike_grad_adj" in shown and "call_fwd" not in shown
    assert "call_fwd" in srcgrad.source(srcgrad.grad(rprime_local))


def swapped(x):
    return x ** 3


def through_swapped(x):
    return srcgrad.grad(swapped)(x) * x  # 3x^3


def test_rebinding_the_inner_function_rebuilds():
    global swapped
    original = swapped
    d = srcgrad.grad(through_swapped)
    assert d(1.5) == pytest.approx(9 * 1.5 ** 2)
    try:
        def swapped(x):  # (rebinding the global, as a user's reload would)
            return x ** 4

        assert d(1.5) == pytest.approx(16 * 1.5 ** 3)  # 4x^4
    finally:
        swapped = original
    assert d(1.5) == pytest.approx(9 * 1.5 ** 2)


def _closure_over(f):
    def h(x):
        return srcgrad.grad(f)(x) * x
    return h


def cube(x):
    return x ** 3


def sine(x):
    return np.sin(x)


def test_closures_over_different_functions_keep_their_own():
    # one def, two cells: each call differentiates its own f (not folded: see _static)
    by_sin, by_cube = _closure_over(sine), _closure_over(cube)
    assert srcgrad.grad(by_sin)(0.4) == pytest.approx(np.cos(0.4) - 0.4 * np.sin(0.4))
    assert srcgrad.grad(by_cube)(0.4) == pytest.approx(9 * 0.4 ** 2)
    assert srcgrad.grad(by_sin)(0.4) == pytest.approx(np.cos(0.4) - 0.4 * np.sin(0.4))


def bad_wrt(x):
    return srcgrad.grad(cube, wrt=3)(x)


def test_an_inner_grad_it_refuses_is_refused_when_called():
    with pytest.raises(srcgrad.SrcgradError):
        bad_wrt(1.0)
    with pytest.raises(srcgrad.SrcgradError):
        srcgrad.grad(bad_wrt)(1.0)


# -- lazy zero cotangents of a backward sweep's inputs ----------------------------------------
def test_cotangents_of_sweep_inputs_keep_zero_items_lazy():
    record = UserCall(bwd=None, saved=(np.ones(3), 2.0), n_self=0, names=["x"], n_args=1,
                      kwargs={}, wrt=(0,))
    g = runtime.densify_saved((0.0, (0.0, [0.0, 1.5], 0.0, 0.0, 0.0, 0.0, 0.0)),
                              (np.ones(2), record))
    assert g == (0.0, (0.0, (0.0, 1.5), 0.0, 0.0, 0.0, 0.0, 0.0))
    # a value that is no tuple (an array seed) is densified as densify does
    np.testing.assert_array_equal(runtime.densify_saved(0.0, np.ones(3)), np.zeros(3))


def test_third_order_through_a_dispatched_gradient_makes_no_zero_arrays(monkeypatch):
    g2 = srcgrad.grad(srcgrad.grad(rprime_local))
    expected = g2(2.0)
    made = []
    zeros_like = runtime.zeros_like
    monkeypatch.setattr(runtime, "zeros_like", lambda x: made.append(x) or zeros_like(x))
    assert g2(2.0) == expected
    assert made == []


def test_a_third_derivative_through_a_dispatched_gradient_is_refused_at_the_users_line():
    """grad(grad(grad(rprime_local))): the fourth derivative of loglike, the third of the
    gradient held in a local. It used to fail transforming runtime.call_fwd (located in
    runtime.py); the refusal names the gradient and the user's line, and says what works."""
    g3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(rprime_local)))
    with pytest.raises(srcgrad.SrcgradError) as info:
        g3(2.0)
    message = str(info.value)
    assert "third derivative through a gradient of loglike()" in message
    assert "srcgrad.grad(f)(...) of a module-level f" in message
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "test_nested_grad.py" in notes and "return g(r, p_of(r))" in notes


def test_fast_paths_of_the_runtime_helpers_give_what_the_general_case_gives():
    # densify of scalars (every backward sweep's return, and saved cotangents at higher order)
    assert type(runtime.densify(np.float64(2.5), 1.0)) is np.float64
    assert type(runtime.densify(np.float64(0.0), np.float64(1.0))) is np.float64
    assert runtime.densify(2.5, 1.0) == 2.5
    assert str(runtime.densify(-0.0, 1.0)) == "0.0"  # the lazy zero, as zeros_like(1.0)
    assert np.isnan(runtime.densify(float("nan"), 1.0))
    # add_at into a plain tuple's cotangent (a saved tuple's item), and into a namedtuple's
    assert runtime.add_at(0.0, (1.0, 2.0, 3.0), 1, 5.0) == (0.0, 5.0, 0.0)
    assert runtime.add_at([1.0, 0.0, 2.0], (1.0, 2.0, 3.0), 2, 5.0) == (1.0, 0.0, 7.0)
    record = UserCall(None, (), 0, [], 0, {}, ())
    assert type(runtime.add_at(0.0, record, 1, 2.0)) is UserCall


def test_densify_saved_items_as_densify_gives_them():
    """The item loop of densify_saved answers a number's cotangent itself and hands every
    other item to densify (or down into a tuple): the same values and types as before."""
    tape = runtime.Tape([1.0])
    x = (2.0, np.float64(1.0), np.ones(3), 4.0, (5.0, np.ones(2)), tape, np.ones(2), 7)
    g = [np.float64(3.0), np.float64(-1.0), np.full(3, 2.0), None, [0.0, 1.0], tape,
         np.float64(2.0), 0.0]
    out = runtime.densify_saved(tuple(g), x)
    assert type(out) is tuple and len(out) == len(x)
    assert type(out[0]) is np.float64 and out[0] == 3.0
    assert type(out[1]) is np.float64 and out[1] == -1.0
    np.testing.assert_array_equal(out[2], np.full(3, 2.0))
    assert out[3] is runtime.ZERO
    # an array item's number cotangent is spread to the array's shape, as densify does
    assert out[4][0] is runtime.ZERO
    np.testing.assert_array_equal(out[4][1], np.ones(2))
    assert out[5] is tape
    np.testing.assert_array_equal(out[6], np.full(2, 2.0))
    assert out[7] is runtime.ZERO
    # a list cotangent (what add_at builds) gives the same tuple
    again = runtime.densify_saved(g, x)
    assert type(again) is tuple and again[5] is tape and again[3] is runtime.ZERO


def test_add_part_and_broadcast_like_fast_paths():
    a = np.ones(2)
    assert runtime.add(None, a) is a and runtime.add(a, None) is a
    assert runtime.add(0.0, 2.5) == 2.5 and runtime.add(2.5, 0.0) == 2.5
    assert runtime.add(-0.0, a) is a
    assert runtime.part(None, 3) is runtime.ZERO and runtime.part(0.0, 0) is runtime.ZERO
    assert runtime.part((1.0, None), 1) is runtime.ZERO
    # a number contribution to an array result is spread; an np.matrix is still refused
    np.testing.assert_array_equal(runtime.broadcast_like(2.0, np.ones((2, 2))),
                                  np.full((2, 2), 2.0))
    np.testing.assert_array_equal(runtime.broadcast_like(np.float32(2.0), np.ones(3)),
                                  np.full(3, 2.0, np.float32))
    with pytest.raises(srcgrad.SrcgradError, match="np.matrix"):
        runtime.broadcast_like(np.matrix([[1.0]]), np.ones((2, 2)))


# -- the sweeps of a closure, fetched on every call, are made again when the closure changes --
def _closure_pair():
    k = 2.0

    def scaled(x):
        return x * x * k

    def set_k(value):
        nonlocal k
        k = value

    return scaled, set_k


def calls_scaled(x):
    return _SCALED[0](x) + x


_SCALED = _closure_pair()


def test_a_closure_sweep_sees_its_cell_rebound():
    scaled, set_k = _SCALED
    g, g2 = srcgrad.grad(calls_scaled), srcgrad.grad(srcgrad.grad(calls_scaled))
    assert g(3.0) == pytest.approx(2 * 3.0 * 2.0 + 1) and g2(3.0) == pytest.approx(4.0)
    set_k(5.0)
    try:
        assert g(3.0) == pytest.approx(2 * 3.0 * 5.0 + 1) and g2(3.0) == pytest.approx(10.0)
    finally:
        set_k(2.0)
    assert g(3.0) == pytest.approx(13.0)



# -- a number spread over an array result, and the sweeps of a closure fetched by position ----
def test_a_number_spread_over_an_array_is_what_broadcast_to_gives(monkeypatch):
    """broadcast_like of a number builds the read-only zero-stride array itself: the same
    values, dtype and read-only flag as np.broadcast_to (which costs ~5 us; the backward
    sweep of a backward sweep spreads numbers like this a few times per call)."""
    cases = [2.0, np.float64(-0.0), np.float32(3.0), np.array(4.0), np.int32(5),
             np.complex64(1 + 2j), np.float64(np.nan), np.array(2.5, dtype=">f8")]
    expected = {}
    for k, d in enumerate(cases):
        for shape in [(3,), (2, 3), (0,), (1, 1)]:
            expected[k, shape] = np.broadcast_to(d, shape)
    monkeypatch.setattr(runtime.np, "broadcast_to", lambda *a, **k: pytest.fail("called"))
    for (k, shape), want in expected.items():
        got = runtime.broadcast_like(cases[k], np.zeros(shape))
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == shape
        assert not got.flags.writeable
        np.testing.assert_array_equal(got, want)
        if type(cases[k]) is np.ndarray and got.size:  # a view of a 0-d array's element, as
            assert np.shares_memory(got, cases[k])  # numpy's broadcast is
    base = np.arange(4.0)
    got = runtime.broadcast_like(base[2, ...], np.zeros(5))
    base[2] = 7.0  # (the view sees a later write, as numpy's broadcast does)
    assert got.tolist() == [7.0] * 5


def test_second_and_third_order_through_the_inner_gradient_spread_no_number_by_numpy(
        monkeypatch):
    """grad(rprime) and grad(grad(rprime)) spread numbers over arrays only through
    runtime.spread_number, and their values are unchanged: the written-out derivatives and
    central differences of them."""
    g1, g2 = srcgrad.grad(rprime), srcgrad.grad(srcgrad.grad(rprime))
    w1, w2 = srcgrad.grad(rprime_written), srcgrad.grad(srcgrad.grad(rprime_written))
    g1(2.0), g2(2.0)
    spreads = []
    broadcast_to = np.broadcast_to
    monkeypatch.setattr(runtime.np, "broadcast_to",
                        lambda d, shape, **k: spreads.append(np.shape(d))
                        or broadcast_to(d, shape, **k))
    for r in (0.7, 2.0, 5.5):
        assert g1(r) == pytest.approx(w1(r), rel=1e-10)
        assert g1(r) == pytest.approx(central(rprime_written, r), rel=1e-6)
        assert g2(r) == pytest.approx(w2(r), rel=1e-10)
        assert g2(r) == pytest.approx(central(w1, r), rel=1e-6)
    assert [s for s in spreads if s == ()] == []


def _closure_with_two_cells():
    a, b = 2.0, 3.0

    def inner(x):
        return a * x * x + b * x

    def set_cells(new_a, new_b):
        nonlocal a, b
        a, b = new_a, new_b

    return inner, set_cells


_TWO_CELLS = _closure_with_two_cells()


def calls_two_cells(x):
    return _TWO_CELLS[0](x) * x


def test_closure_sweeps_read_each_cell_by_its_position():
    """functions_for reads a closure's cells by their positions in the code's free variables,
    found once per build: each name gets its own cell's value, and a rebound cell is seen."""
    inner, set_cells = _TWO_CELLS
    g, g2 = srcgrad.grad(calls_two_cells), srcgrad.grad(srcgrad.grad(calls_two_cells))
    try:
        for a, b in [(2.0, 3.0), (5.0, -1.0), (-1.5, 0.25)]:
            set_cells(a, b)
            # f = a x^3 + b x^2: f' = 3a x^2 + 2b x, f'' = 6a x + 2b
            assert g(1.5) == pytest.approx(3 * a * 1.5 ** 2 + 2 * b * 1.5, rel=1e-12)
            assert g2(1.5) == pytest.approx(6 * a * 1.5 + 2 * b, rel=1e-12)
    finally:
        set_cells(2.0, 3.0)
    adj = srcgrad.api.get_adjoint(inner, (0,))
    assert adj._closure_names == ["a", "b"]
    assert [inner.__code__.co_freevars[i] for i in adj._closure_at] == adj._closure_names


# -- the sweeps of generated sweeps, fetched without reading their cells ----------------------
def _sweep_builds():
    return [adj for per_code in srcgrad.api._CACHE.values() for builds in per_code.values()
            for adj in builds]


def test_the_sweeps_of_a_generated_sweep_are_fetched_without_reading_its_cells():
    """A generated sweep is a closure over its factory's parameters, which nothing rebinds:
    the functions made for it last serve again without reading its cells. (Each fetch read
    them: 29 fetches per call of grad(grad(rprime)).) A user's closure still has its cells
    read on every fetch (test_a_closure_sweep_sees_its_cell_rebound)."""
    g2 = srcgrad.grad(srcgrad.grad(rprime))
    expected = g2(2.0)
    sweeps = [adj for adj in _sweep_builds() if adj._has_closure
              and adj.fn.__code__.co_filename.startswith("<srcgrad")]
    assert sweeps and all(adj._fixed_cells for adj in sweeps)
    saved = [(adj, adj._closure_at) for adj in sweeps]
    try:
        for adj in sweeps:
            adj._closure_at = (10 ** 6,)  # a cell read would raise IndexError
        assert g2(2.0) == expected
    finally:
        for adj, at in saved:
            adj._closure_at = at
    scaled = _SCALED[0]
    adj = srcgrad.api.get_adjoint(scaled, (0,))
    assert adj._has_closure and not adj._fixed_cells


def test_a_code_rebinding_a_free_variable_is_seen():
    def outer():
        k = 1.0

        def reads():
            return k

        def rebinds():
            nonlocal k
            k = 2.0

        def defines_one_that_rebinds():
            def inner():
                nonlocal k
                del k
            return inner

        return reads, rebinds, defines_one_that_rebinds

    reads, rebinds, defines = outer()
    from srcgrad.generated import _rebinds_cells
    assert not _rebinds_cells(reads.__code__)
    assert _rebinds_cells(rebinds.__code__)
    assert _rebinds_cells(defines.__code__)


# -- a seed spread over a saved array's shape is no differentiable value ----------------------
def test_the_inner_backward_sweep_is_differentiated_only_for_its_saved_values():
    """loglike's backward sweep passes negbin_loglike's a cotangent spread from grad's seed
    over a saved array's shape (expand_to(b_t2, _t1)): at the expand_to's shape position the
    saved array carries no gradient, so the cotangent is no more differentiable than the
    seed, and negbin_loglike's backward sweep is differentiated for its saved tuple alone
    (it was for its seed too: cotangents computed and dropped at every order). Since its
    statements are inlined into the gradient's wrapper (test_nested_inline.py), no build of
    it is made at all: the values here are what stays to check."""
    g1, g2 = srcgrad.grad(rprime), srcgrad.grad(srcgrad.grad(rprime))
    w1, w2 = srcgrad.grad(rprime_written), srcgrad.grad(srcgrad.grad(rprime_written))
    g2(2.0)
    inner = [adj for adj in _sweep_builds() if adj.fn.__name__ == "negbin_loglike_bwd"]
    assert all(adj.wrt == (0,) for adj in inner)
    for r in (0.7, 2.0, 5.5):
        assert g1(r) == pytest.approx(w1(r), rel=1e-10)
        assert g1(r) == pytest.approx(central(rprime_written, r), rel=1e-6)
        assert g2(r) == pytest.approx(w2(r), rel=1e-10)
        assert g2(r) == pytest.approx(central(w1, r), rel=1e-6)
    g3 = srcgrad.grad(g2)
    w3 = srcgrad.grad(w2)
    assert g3(2.0) == pytest.approx(w3(2.0), rel=1e-9)
    assert g3(2.0) == pytest.approx(central(w2, 2.0), rel=1e-5)


# -- a global the inner function calls, rebound after the caller was differentiated ----------
def _cube(x):
    return x ** 3


def _fourth(x):
    return x ** 4


_inner_power = _cube


def _inner_scaled(x):
    return _inner_power(x) * 2.0


def _outer_of_inner_gradient(x):
    return srcgrad.grad(_inner_scaled)(x) * x


def test_rebinding_a_global_of_the_inner_function_rebuilds_every_order():
    # (found on c7f9df9: the caller's code held the inner gradient's sweeps, made from the
    # old global, and kept returning its values at first and second order)
    global _inner_power
    g = srcgrad.grad(_outer_of_inner_gradient)
    g2 = srcgrad.grad(g)
    assert g(1.5) == pytest.approx(18 * 1.5 ** 2) and g2(1.5) == pytest.approx(36 * 1.5)
    try:
        _inner_power = _fourth
        assert g(1.5) == pytest.approx(32 * 1.5 ** 3)
        assert g2(1.5) == pytest.approx(96 * 1.5 ** 2)
        _inner_power = _cube
        assert g2(1.5) == pytest.approx(36 * 1.5) and g(1.5) == pytest.approx(18 * 1.5 ** 2)
    finally:
        _inner_power = _cube
