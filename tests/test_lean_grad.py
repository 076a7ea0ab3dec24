"""The sweeps ``grad`` runs itself (issue 11, api.LeanAdjoint): products by the ones of its
seed skipped (transforms/unit_seed.py) and adjoints accumulated in place into arrays the sweep
owns (transforms/inplace.py). Before/after tests of each pass, the runtime helpers they call,
and end to end: the same gradients to the last bit as the ordinary sweeps, no input, saved
value or returned gradient ever written or shared."""
import textwrap

import gast
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import runtime
from srcgrad.api import grad_seed_of, get_entry_adjoint, get_lean_adjoint
from srcgrad.codegen import to_source
from srcgrad.rules._helpers import expand_to
from srcgrad.transforms.inplace import accumulate_in_place
from srcgrad.transforms.remat import recompute_negations
from srcgrad.transforms.unit_seed import skip_unit_products


def _stmts(src: str) -> list:
    return gast.parse(textwrap.dedent(src)).body


def _text(stmts: list) -> str:
    return to_source(gast.Module(body=stmts, type_ignores=[])).strip()


def _units(src: str, live_out=frozenset({"bx"})) -> str:
    return _text(skip_unit_products(_stmts(src), "g", "_rt", "expand_to", set(live_out)))


def _in_place(src: str, adjoints=frozenset({"bx", "by", "b1", "b2"})) -> str:
    return _text(accumulate_in_place(_stmts(src), set(adjoints), "_rt"))


# -- unit_seed --------------------------------------------------------------------------------

def test_products_by_the_spread_seed_skip_the_ones():
    out = _units("""
        b6 = expand_to(g, t6)
        b4 = b6 * t5
        bx = b4 * x + b6 * t1
    """)
    assert out.splitlines() == ["b6 = expand_to(g, t6)", "b4 = _rt.times_unit(b6, t5)",
                                "bx = b4 * x + _rt.times_unit(b6, t1)"]


def test_the_seed_itself_and_its_copies_hold_ones():
    out = _units("""
        b1 = g
        b2 = b1 * t * 3.0
        bx = b2 * x
    """)
    assert "b2 = _rt.times_unit(b1, t) * 3.0" in out


def test_a_product_returned_as_a_gradient_is_computed():
    # bx = t5 itself would hand the caller a saved value (or an input) as its gradient
    out = _units("""
        b6 = expand_to(g, t6)
        bx = b6 * t5
    """)
    assert "times_unit" not in out


def test_a_product_read_other_than_by_arithmetic_is_computed():
    for use in ("b2 = _rt.unbroadcast(b4, y)", "b2 = b4", "b2 = b4[0]", "b2 = b4.T",
                "b2 = f(b4 * 2)[b4]"):
        out = _units(f"""
            b6 = expand_to(g, t6)
            b4 = b6 * t5
            {use}
            bx = b4 * x
        """)
        assert "b4 = b6 * t5" in out, use


def test_a_product_read_in_a_loop_or_a_branch_is_computed():
    for block in ("for k in range(n):\n    bx = bx + b4", "if c:\n    bx = b4 * 2"):
        out = _units("b6 = expand_to(g, t6)\nb4 = b6 * t5\n" + block)
        assert "b4 = b6 * t5" in out, block


def test_a_product_handed_to_a_call_is_computed():
    out = _units("""
        b6 = expand_to(g, t6)
        b2 = f(b6 * t5) * 2
    """)
    assert "times_unit" not in out


def test_products_by_numbers_and_by_other_adjoints_stay():
    out = _units("""
        b6 = expand_to(g, t6)
        b2 = b6 * 2
        b3 = expand_to(h, t6) * t1
        b4 = expand_to(g, t6, axis=0) * t1
        b5 = b4 * t1
    """)
    assert "times_unit" not in out


def test_an_adjoint_reassigned_no_longer_holds_ones():
    out = _units("""
        b6 = expand_to(g, t6)
        b6 = b6 * t5
        b2 = b6 * t1
        bx = b2 * x
    """)
    assert out.splitlines()[2] == "b2 = b6 * t1"


def test_an_adjoint_assigned_in_a_loop_no_longer_holds_ones():
    out = _units("""
        b6 = expand_to(g, t6)
        for k in range(n):
            b6 = b6 * t5
        b2 = b6 * t1
        bx = b2 * x
    """)
    assert "b2 = b6 * t1" in out


# -- inplace ----------------------------------------------------------------------------------

def test_accumulations_into_an_array_the_sweep_made_go_in_place():
    out = _in_place("""
        bx = b1 * t3
        bx = bx - b2
        bx = bx + b1 * (1.0 - t1 * t1)
    """)
    assert out.splitlines() == ["bx = b1 * t3", "bx = _rt.subtract_into(bx, b2)",
                                "bx = _rt.add_into(bx, b1 * (1.0 - t1 * t1))"]


def test_accumulations_into_what_the_sweep_did_not_make_allocate():
    # a copy, a call's result (which may be an operand: unbroadcast returns its argument),
    # a saved value, the result of times_unit (which may be the operand itself)
    for first in ("bx = b1", "bx = _rt.unbroadcast(b1, x)", "bx = _rt.times_unit(g, t1)",
                  "bx = t1"):
        out = _in_place(f"{first}\nbx = bx + b2")
        assert "bx = bx + b2" in out, first


def test_an_array_read_by_other_code_is_no_longer_owned():
    for use in ("by = bx", "by = f(bx)", "by = bx[1:]", "by = bx.T", "by = _rt.add(bx, 1)",
                "by = (bx, 1)", "f(bx)", "del bx", "by = lambda: bx * 2",
                "by = (bx * k for k in t1)"):
        out = _in_place(f"""
            bx = b1 * t1
            {use}
            bx = bx + b2
        """)
        assert "bx = bx + b2" in out, use


def test_an_array_read_by_arithmetic_stays_owned():
    out = _in_place("""
        bx = b1 * t1
        by = bx * 2 + f(t1)
        bx = bx + by
    """)
    assert "bx = _rt.add_into(bx, by)" in out


def test_accumulations_in_a_loop_or_a_branch_allocate():
    # the adjoint carried across iterations, and what a branch may have made of it
    out = _in_place("""
        bx = b1 * t1
        for k in range(n):
            bx = bx + b2
        bx = bx + b2
        by = b1 * t1
        if c:
            b2 = by
        by = by + 1.0
    """)
    assert "_into" not in out


def test_an_accumulation_reading_its_own_target_allocates():
    out = _in_place("bx = b1 * t1\nbx = bx + bx * t1")
    assert "_into" not in out


def test_only_adjoints_are_accumulated_in_place():
    out = _in_place("s = b1 * t1\ns = s + b2")
    assert "_into" not in out


def test_ownership_goes_with_a_new_value():
    out = _in_place("""
        bx = b1 * t1
        bx = f(t1)
        bx = bx + b2
    """)
    assert "bx = bx + b2" in out


# -- runtime helpers --------------------------------------------------------------------------

def test_add_into_writes_the_owned_array_only_when_it_is_the_same_result():
    a = np.arange(4.0)
    assert runtime.add_into(a, np.ones(4)) is a and a.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert runtime.subtract_into(a, np.ones(4)) is a and a.tolist() == [0.0, 1.0, 2.0, 3.0]
    cases = [np.ones(4, np.float32),  # a cast: the float64 sum is another array
             np.ones(1),  # broadcast
             np.ones((2, 4)),  # a bigger result
             2.0, runtime.ZERO]
    for b in cases:
        before = a.copy()
        out = runtime.add_into(a, b)
        assert out is not a and np.array_equal(a, before)
        assert np.array_equal(out, before + b) and out.dtype == (before + b).dtype


def test_add_into_leaves_read_only_zero_d_and_other_arrays_alone():
    view = np.broadcast_to(np.ones(1), (4,))
    assert runtime.add_into(view, np.ones(4)) is not view
    zero_d = np.array(2.0)
    out = runtime.add_into(zero_d, np.array(1.0))
    assert out is not zero_d and out == 3.0 and zero_d == 2.0 and type(out) is np.float64
    small = np.arange(3)
    out = runtime.add_into(small, np.ones(3, int) * 2)
    assert out is small  # (integer arrays add exactly in place too)
    f32 = np.ones(3, np.float32)
    out = runtime.add_into(f32, np.ones(3, np.float32))
    assert out is f32 and out.dtype == np.float32


def test_add_into_complex():
    a = np.array([1 + 2j, np.inf + 0j])
    b = np.array([1j, 1.0])
    want = a + b
    out = runtime.add_into(a, b)
    assert out is a and np.array_equal(out, want)


def test_times_unit_returns_the_operand_only_when_the_product_is_it():
    y = np.array([0.5, -0.0, np.inf, np.nan])
    for one in (1.0, np.ones(()), np.ones(4), expand_to(np.ones(()), y)):
        assert runtime.times_unit(one, y) is y
    y32 = y.astype(np.float32)
    out = runtime.times_unit(np.ones(()), y32)  # the product is float64
    assert out.dtype == np.float64 and np.array_equal(out, y32 * np.ones(()), equal_nan=True)
    assert runtime.times_unit(np.ones((), np.float32), y32) is y32
    for one, other in [(np.ones(3), np.ones(1)), (np.ones((1, 4)), y), (1.0, np.arange(3)),
                       (np.ones(()), np.ones(2, complex)), (1.0, 2.5), (np.ones(2), [1.0, 2.0])]:
        out = runtime.times_unit(one, other)
        assert out is not other
        assert np.array_equal(out, one * other, equal_nan=True)


# -- end to end -------------------------------------------------------------------------------

def _ordinary(f, wrt, *args):
    """The gradient by the sweeps that are differentiated again (no lean pass)."""
    adj = get_entry_adjoint(f, wrt)
    value, saved = adj.fwd(*args)
    grads = adj.bwd(saved, grad_seed_of(f, value))
    return grads


def _same_as_ordinary(f, args, wrt=(0,)):
    """``grad(f)`` of ``args`` (copies kept to see they are not written): bit for bit the
    ordinary sweeps' gradients, of the same types, sharing no memory with the arguments or
    each other."""
    before = [np.copy(a) for a in args]
    got = srcgrad.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0])(*args)
    got = got if len(wrt) > 1 else (got,)
    want = _ordinary(f, wrt, *args)
    for a, b in zip(args, before):
        assert np.array_equal(a, b, equal_nan=True), "an argument was written"
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.shape(g) == np.shape(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.array_equal(g, w, equal_nan=True)
        for other in list(args) + [h for h in got if h is not g]:
            if isinstance(g, np.ndarray) and isinstance(other, np.ndarray):
                assert not np.shares_memory(g, other), "a gradient shares memory"
    return got


def elementwise(x):
    return np.sum(np.tanh(x) * x + np.exp(-x * x))


def test_grad_runs_the_lean_sweeps():
    x = np.random.default_rng(0).standard_normal(50)
    _same_as_ordinary(elementwise, (x,))
    lean = get_lean_adjoint(elementwise, (0,)).source
    assert "_rt.times_unit(b_t6, _t5)" in lean and "_rt.add_into(bx" in lean
    assert "times_unit" not in get_entry_adjoint(elementwise, (0,)).source
    check_grad(elementwise, (x,))


def test_float32_keeps_its_dtype_and_its_bits():
    x = np.random.default_rng(1).standard_normal(40).astype(np.float32)
    (g,) = _same_as_ordinary(elementwise, (x,))
    assert g.dtype == np.float32


def mixed(x, w):
    return np.sum(np.sin(x) * w + x * x)


def test_float32_input_with_float64_weights():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(30).astype(np.float32), rng.standard_normal(30)
    _same_as_ordinary(mixed, (x, w), (0, 1))
    _same_as_ordinary(mixed, (w, x), (0, 1))


def times(x, y):
    return np.sum(x * y)


def test_a_gradient_is_never_an_argument_itself():
    x, y = np.arange(3.0), np.arange(3.0) + 1
    gx, gy = _same_as_ordinary(times, (x, y), (0, 1))
    assert gx is not y and gy is not x
    gx[:] = 0.0
    assert y.tolist() == [1.0, 2.0, 3.0]
    same = np.arange(3.0)
    _same_as_ordinary(times, (same, same), (0, 1))  # one array passed twice


def plus(x, y):
    return np.sum(np.sin(x + y) * (x + y))


def test_broadcast_operands():
    x, y = np.linspace(0.0, 1.0, 5), np.array([0.25])
    _same_as_ordinary(plus, (x, y), (0, 1))
    _same_as_ordinary(plus, (y, x), (0, 1))
    _same_as_ordinary(plus, (x.reshape(5, 1), x), (0, 1))


def test_zero_d_arrays_and_python_floats():
    _same_as_ordinary(elementwise, (np.array(0.3),))
    assert srcgrad.grad(elementwise)(0.3) == pytest.approx(_ordinary(elementwise, (0,), 0.3)[0])
    _same_as_ordinary(plus, (np.array(0.5), np.array([1.0, 2.0])), (0, 1))


def squares(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x) * x * i)
    return s + np.sum(x * x)


def test_an_adjoint_carried_across_loop_iterations():
    x = np.linspace(-1.0, 1.0, 7)
    _same_as_ordinary(squares, (x,))
    check_grad(squares, (x,))


def viewed(x):
    v = x.T
    a = v * v
    return np.sum(a * v + np.cos(a))


def test_views_of_an_input():
    x = np.arange(6.0).reshape(2, 3) / 6
    _same_as_ordinary(viewed, (x,))
    _same_as_ordinary(viewed, (x[:, ::2],))


def twice(x):
    y = x * 2.0
    z = y * y + y
    return np.sum(z * x)


def test_accumulations_of_reused_values():
    x = np.linspace(0.5, 1.5, 4)
    _same_as_ordinary(twice, (x,))
    check_grad(twice, (x,))


def real_of_complex(z):
    return np.sum(np.abs(z) ** 2 + np.real(z * z))


def test_complex_inputs():
    z = np.array([1 + 2j, -0.5 + 0.25j, 3j])
    _same_as_ordinary(real_of_complex, (z,))


def test_value_and_grad_computes_the_value():
    x = np.random.default_rng(3).standard_normal(20)
    value, g = srcgrad.value_and_grad(elementwise)(x)
    assert value == elementwise(x)
    assert np.array_equal(g, _ordinary(elementwise, (0,), x)[0])


def test_grad_of_grad_and_hessian_differentiate_the_ordinary_sweeps():
    x = np.linspace(-1.0, 1.0, 5)
    inner = srcgrad.grad(elementwise)

    def first(x):
        return np.sum(inner(x) * x)

    check_grad(first, (x,), rtol=1e-5)
    h = srcgrad.hessian(elementwise)(x)
    t = np.tanh(x)
    # d2/dx2 of tanh(x) x + exp(-x^2): 2 sech^2 - 2 x tanh sech^2 + (4x^2 - 2) exp(-x^2)
    s2 = 1 - t * t
    want = 2 * s2 - 2 * x * t * s2 + (4 * x * x - 2) * np.exp(-x * x)
    assert np.allclose(h, np.diag(want))


# -- dead_values: what only makes grad's discarded value is probed ----------------------------

BIG = 5000  # (probes are made for results of runtime._PROBED elements and more)


def _valueless(f, wrt=(0,)) -> str:
    return get_lean_adjoint(f, wrt, value=False).source


def test_only_what_makes_the_value_is_probed():
    fwd = _valueless(elementwise).split("def elementwise_bwd")[0]
    assert "_t2 = _rt.probe(mul, _t1, x)" in fwd
    assert "_t6 = _rt.probe(add, _t2, _t5)" in fwd
    assert "_t7 = _rt.probe(np.sum, _t6)" in fwd
    assert "return _rt.probed_result(_t7)" in fwd
    for live in ("_t1 = np.tanh(x)", "_t3 = -x", "_t4 = _t3 * x", "_t5 = np.exp(_t4)"):
        assert live in fwd
    assert "probe" not in get_lean_adjoint(elementwise, (0,)).source  # value_and_grad's


def in_place_update(x):
    y = x * 2.0
    y[0] = 3.0
    return np.sum(y * y + x)


def looped(x):
    s = x * 0.0
    for _ in range(2):
        s = s + np.sin(x)
    return np.sum(s * x)


def updated_after(x):
    y = x * 2.0
    z = y * y
    y[0] = 3.0
    return np.sum(z + y)


def test_only_statements_after_updates_and_loops_are_probed():
    # (a probe computes its value late, from the operands it holds: an update after it
    # would change them)
    assert "_t2 = _rt.probe(mul, y, y)" in _valueless(in_place_update)
    assert "_t3 = _rt.probe(mul, s, x)" in _valueless(looped)
    source = _valueless(updated_after)
    assert "z = y * y" in source and "_rt.probe(add, z, y)" in source
    x = np.linspace(0.0, 1.0, BIG)
    for f in (in_place_update, looped, updated_after):
        _same_as_ordinary(f, (x,))
        _same_as_ordinary(f, (x[:3].copy(),))


def test_a_sum_or_mean_of_a_float_array_is_probed_whatever_its_size():
    import operator
    for a in (np.array([0.5, 2.0]), np.ones((2, 2), np.float32), np.array(3.0),
              np.array([1j, 2.0])):
        for fn in (np.sum, np.mean):
            got = runtime.probe(fn, a)
            assert type(got) is runtime.Probe and got.shape == ()
            want = fn(a)
            assert type(runtime.probed_result(got)) is type(want)
            assert runtime.computed(got) == want
    for a in (np.array([1, 2]), [1.0, 2.0], np.ma.masked_array([1.0, 2.0])):
        assert type(runtime.probe(np.sum, a)) is not runtime.Probe  # computed
    assert type(runtime.probe(operator.mul, np.ones(2), 2.0)) is np.ndarray


def test_probes_have_the_shape_and_dtype_of_the_value():
    import operator
    rng = np.random.default_rng(4)
    a64 = rng.standard_normal((BIG, 2))
    a32 = a64.astype(np.float32)
    row = rng.standard_normal(2).astype(np.float32)
    cases = [(operator.mul, a64, a32), (operator.add, a32, 2.0), (operator.truediv, a32, 3),
             (operator.pow, a32, 2), (operator.sub, a32, np.float64(1.0)),
             (operator.mul, a32, np.array(2.0)), (operator.add, a32, row),
             (operator.mul, a32, 1j), (operator.neg, a32), (np.tanh, a32),
             (np.exp, a64.astype(np.float16)), (np.sin, a64 > 0), (np.maximum, a32, a64[:, :1]),
             (np.sum, a32), (np.sum, a64 > 0), (np.mean, a32), (np.sum, a64.astype(complex))]
    for fn, *args in cases:
        want = fn(*args)
        got = runtime.probe(fn, *args)
        assert type(got) is runtime.Probe, fn
        assert np.shape(want) == got.shape and np.result_type(want) == got.sample.dtype, fn
        assert np.array_equal(runtime.computed(got), want)
        if not got.shape:
            assert type(runtime.probed_result(got)) is type(want)
    chained = runtime.probe(np.sum, runtime.probe(operator.mul, runtime.probe(np.tanh, a32),
                                                  a32))
    assert runtime.computed(chained) == np.sum(np.tanh(a32) * a32)
    stand_in = runtime.shape_like(runtime.probe(operator.mul, a32, a64))
    assert stand_in.shape == a64.shape and stand_in.dtype == np.float64


def test_probes_are_not_made_for_small_or_unknown_values():
    import operator
    small = np.ones(10)
    assert type(runtime.probe(operator.mul, small, small)) is np.ndarray
    assert runtime.probe(operator.mul, 2.0, 3.0) == 6.0
    big = np.ones(BIG)
    as_list = [1.0] * BIG
    probed = runtime.probe(np.tanh, big)
    out = runtime.probe(operator.mul, probed, as_list)  # a list: computed, the probe too
    assert type(out) is np.ndarray and np.array_equal(out, np.tanh(big) * as_list)
    masked = np.ma.masked_array(big, mask=big > 2)
    assert type(runtime.probe(operator.add, masked, big)) is np.ma.MaskedArray
    assert runtime.probe(operator.add, big, np.array([1.0] * BIG, object)).dtype == object
    with pytest.raises(ValueError):
        runtime.probe(operator.add, big, np.ones(BIG + 1))  # (as the operation raises)
    big_probe = runtime.probe(np.tanh, big)
    assert np.array_equal(runtime.probed_result(big_probe), np.tanh(big))


def test_grad_of_large_arrays_without_the_value():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(BIG)
    _same_as_ordinary(elementwise, (x,))
    _same_as_ordinary(elementwise, (x.astype(np.float32),))
    _same_as_ordinary(mixed, (x.astype(np.float32), x), (0, 1))
    _same_as_ordinary(plus, (x, np.array([0.5])), (0, 1))
    _same_as_ordinary(plus, (np.array([0.5]), x), (0, 1))
    _same_as_ordinary(real_of_complex, (x + 1j * x[::-1],))
    _same_as_ordinary(times, (x, x[::-1].copy()), (0, 1))
    _same_as_ordinary(twice, (x,))
    check_grad(elementwise, (x,))


def with_a_list(x, w):
    return np.sum(np.sin(x) * w + x)


def test_an_operand_that_is_not_an_array_has_the_value_computed():
    x = np.linspace(0.0, 1.0, BIG)
    _same_as_ordinary(with_a_list, (x, list(x)))


def not_a_number(x):
    return np.tanh(x) * x


def complex_valued(x):
    return np.sum(x * 1j)


def test_grad_still_refuses_results_that_are_not_real_numbers():
    x = np.linspace(0.0, 1.0, BIG)
    with pytest.raises(srcgrad.SrcgradError, match=r"return a scalar.*shape \(5000,\)"):
        srcgrad.grad(not_a_number)(x)
    with pytest.raises(srcgrad.SrcgradError, match="complex"):
        srcgrad.grad(complex_valued)(x)


# -- remat: saved negations computed again where read -----------------------------------------

def _negations(body_src: str, backward_src: str, needed=("n", "v", "x"), params=("x",),
               once=("n", "v"), shape_only=frozenset()):
    needed = set(needed)
    out = recompute_negations(_stmts(backward_src), _stmts(body_src), needed, list(params),
                              set(once), frozenset(shape_only))
    return _text(out), needed


def test_a_negation_of_a_parameter_read_once_is_computed_again():
    text, needed = _negations("n = -x\ny = n * x", "b1 = h * x\nbx = g * n")
    assert text.splitlines()[1] == "bx = g * -x" and "n" not in needed and "x" in needed
    text, needed = _negations("v = x * 2.0\nn = -v", "bx = g * n")
    assert text == "bx = g * -v" and "n" not in needed


def test_a_negation_read_twice_in_a_loop_or_for_its_shape_is_saved():
    for backward in ("b1 = g * n\nbx = b1 * n", "for k in r:\n    bx = g * n",
                     "if c:\n    bx = g * n"):
        text, needed = _negations("n = -x", backward)
        assert "-x" not in text and "n" in needed, backward
    text, needed = _negations("n = -x", "b1 = _rt.unbroadcast(g, n)", shape_only={"n"})
    assert "-x" not in text and "n" in needed


def test_a_negation_of_a_value_that_changes_or_is_not_saved_is_saved():
    cases = [("n = -x\nx = x * 2.0", {}),  # the parameter is rebound
             ("n = -v", {"once": ("n",)}),  # v assigned more than once
             ("n = -v", {"needed": ("n",)}),  # v not saved: saving it instead gains nothing
             ("n = -v", {"shape_only": {"v"}}),  # v saved as a stand-in of its shape
             ("n = -x", {"once": ("v",)})]  # n itself assigned more than once
    for body, options in cases:
        text, needed = _negations(body, "bx = g * n", **options)
        assert text == "bx = g * n" and "n" in needed, (body, options)


def test_grad_recomputes_the_negation():
    source = _valueless(elementwise)
    # (then subtracts b_t3 again: the two as one pass, test_a_negation_subtracted_again_...)
    assert "bx = _rt.twice_negated_product(b_t3, b_t4, x)" in source
    assert "[x, _t1, _t5, _rt.shape_like(_t6)]" in source


def negated(x):
    y = np.sin(x)
    z = -y
    return np.sum(np.exp(z) * y + z * x)


def test_grad_with_negations_of_intermediate_values():
    for n in (7, BIG):
        x = np.linspace(-1.0, 1.0, n)
        _same_as_ordinary(negated, (x,))
        check_grad(negated, (x,))
    assert "-y" in _valueless(negated).split("_bwd")[1]


def test_a_product_by_a_negation_computed_already_is_negated():
    text, needed = _negations("n = -x", "b1 = g * x\nb2 = b1 * 2.0\nbx = n * g + 1.0")
    assert text.splitlines()[2] == "bx = _rt.negated_product(b1, g, x) + 1.0"
    assert "n" not in needed
    text, _ = _negations("n = -x", "b1 = x * g\nbx = g * n")
    assert text.splitlines()[1] == "bx = _rt.negated_product(b1, g, x)"
    for between in ("b1 = b1 + 1.0", "g = g * 2.0", "for k in r:\n    b1 = k"):
        text, _ = _negations("n = -x", f"b1 = g * x\n{between}\nbx = g * n")
        assert text.splitlines()[-1] == "bx = g * -x", between
    text, _ = _negations("n = -x", "b1 = g * x * 2.0\nbx = g * n")  # (not the product)
    assert text.splitlines()[-1] == "bx = g * -x"


def test_negated_product_is_the_product_by_the_negation():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    b[:3] = [0.0, -0.0, np.inf]
    out = runtime.negated_product(a * b, a, b)
    assert np.array_equal(out, a * -b) and np.array_equal(np.signbit(out), np.signbit(a * -b))
    with np.errstate(invalid="ignore"):  # (complex products of infinities: nan)
        cases = [(a.astype(np.float32), b.astype(np.float32)), (2.5, b), (a, -1.5),
                 (a + 1j * b, b - 1j * a), (a + 1j * b, b), (a, b + 0j),
                 (a, b.astype(np.float32)), (np.arange(50) % 2 == 0, b), (3, np.float64(2.0))]
    for a, b in cases:
        with np.errstate(invalid="ignore"):
            want = a * -b
            out = runtime.negated_product(a * b, a, b)
        assert type(out) is type(want) and np.asarray(out).dtype == np.asarray(want).dtype
        assert np.array_equal(out, want, equal_nan=True)
        assert np.array_equal(np.signbit(np.real(out)), np.signbit(np.real(want)))
        assert np.array_equal(np.signbit(np.imag(out)), np.signbit(np.imag(want)))
    # an integer b whose negation wraps around: -(a * b) is not a * -b
    ints = np.array([-128, 5], np.int8)
    for a in (np.array([0.5, 2.0]), 0.5, np.array([3, 1], np.int8)):
        want = a * -ints
        assert np.array_equal(runtime.negated_product(a * ints, a, ints), want)
    unsigned = np.array([1, 200], np.uint8)
    assert np.array_equal(runtime.negated_product(0.5 * unsigned, 0.5, unsigned),
                          0.5 * -unsigned)
    with pytest.raises(TypeError):  # (a list: computed as written, which Python refuses)
        runtime.negated_product([1.0], 2.0, [1.0])


def test_a_negation_subtracted_again_by_its_own_contribution_is_one_statement():
    # -x * x: bx = b4 * n, then the negation's contribution bx = bx - b3
    for then in ("bx = bx - b3", "bx = _rt.subtract_into(bx, b3)"):
        text, _ = _negations("n = -x", f"b3 = b4 * x\nbx = b4 * n\n{then}")
        assert text.splitlines() == ["b3 = b4 * x", "bx = _rt.twice_negated_product(b3, b4, x)"]
    for then in ("bx = bx - b4", "by = bx - b3", "bx = b3 - bx", "bx = bx + b3",
                 "bx = other.subtract_into(bx, b3)", "bx = bx - b3 * 1.0"):
        text, _ = _negations("n = -x", f"b3 = b4 * x\nbx = b4 * n\n{then}")
        assert "twice" not in text and text.splitlines()[-1] == then.replace("1.0", "1.0"), then
    text, _ = _negations("n = -x", "b3 = b4 * x\nbx = b4 * n\nb9 = 1.0\nbx = bx - b3")
    assert "twice" not in text  # (not the next statement)


def test_twice_negated_product_is_the_negation_less_the_product():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    b[:4] = [0.0, -0.0, np.inf, 1e308]
    a[3] = 1.5  # (a product whose double overflows)
    with np.errstate(invalid="ignore", over="ignore"):
        cases = [(a, b), (a.astype(np.float32), b.astype(np.float32)), (2.5, b), (a, -1.5),
                 (a + 1j * b, b - 1j * a), (a, b + 0j), (np.float32(2.0), np.float32(3.0)),
                 (np.array(0.5), np.array(-2.0)), (0.5, 3.0),
                 (np.arange(50) % 2 == 0, b), (np.array([3, 1], np.int8),
                                                np.array([-128, 5], np.int8))]
        for a1, b1 in cases:
            want = a1 * -b1 - a1 * b1
            out = runtime.twice_negated_product(a1 * b1, a1, b1)
            assert type(out) is type(want) and np.asarray(out).dtype == np.asarray(want).dtype
            assert np.array_equal(out, want, equal_nan=True)
            assert np.array_equal(np.signbit(np.real(out)), np.signbit(np.real(want)))


def gaussian(x):
    return np.sum(np.exp(-x * x))


def test_grad_through_a_negation_times_its_operand():
    for x in (np.linspace(-2.0, 2.0, 9), np.linspace(-2.0, 2.0, 9).astype(np.float32),
              np.array(0.7), 0.7):
        got = srcgrad.grad(gaussian)(x)
        want = _ordinary(gaussian, (0,), x)[0]
        assert type(got) is type(want) and np.array_equal(got, want), x
    assert "twice_negated_product" in get_lean_adjoint(gaussian, (0,)).source
    check_grad(gaussian, (np.linspace(-2.0, 2.0, 9),))
