"""Soundness (issue 8): no silent wrong gradient at the boundary, in call binding, in the
cache of generated code, and located errors instead of raw internal exceptions."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import NonDifferentiableError, SrcgradError

X = np.array([1.0, 2.0, 3.0])  # x[0] is clipped to the lower bound, x[2] to the upper


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# -- one rule-call binder for reverse mode, forward mode and run-time dispatch -------------
# Every way an operand can reach np.clip's differentiable bounds, and dict.get's default.

def _bounds(x):
    return 1.5 * x[0], 0.9 * x[2]


def clip_positional(x):
    lo, hi = _bounds(x)
    return np.sum(np.clip(x, lo, hi) ** 2)


def clip_keywords(x):
    lo, hi = _bounds(x)
    return np.sum(np.clip(x, a_min=lo, a_max=hi) ** 2)


def clip_keywords_reordered(x):
    lo, hi = _bounds(x)
    return np.sum(np.clip(a_max=hi, a_min=lo, a=x) ** 2)


def clip_mixed(x):
    lo, hi = _bounds(x)
    return np.sum(np.clip(x, lo, a_max=hi) ** 2)


def clip_lower_only_keyword(x):
    lo, _ = _bounds(x)
    return np.sum(np.clip(x, a_min=lo, a_max=None) ** 2)


def clip_upper_only_keyword(x):
    _, hi = _bounds(x)
    return np.sum(np.clip(x, None, a_max=hi) ** 2)


def clip_constant_operand(x):
    lo, _ = _bounds(x)
    return np.sum(np.clip(2.5, lo, None) * x)


def clip_method(x):
    lo, hi = _bounds(x)
    return np.sum(x.clip(lo, hi) ** 2)


def clip_passed_in(x, clip=np.clip):
    lo, hi = _bounds(x)
    return np.sum(clip(x, a_min=lo, a_max=hi) ** 2)


def get_default_positional(x):
    d = {"a": x[0]}
    return d.get("b", 2.0 * x[1]) ** 2 + d.get("a", x[2]) * x[1]


BINDINGS = [clip_positional, clip_keywords, clip_keywords_reordered, clip_mixed,
            clip_lower_only_keyword, clip_upper_only_keyword, clip_constant_operand,
            clip_method, clip_passed_in, get_default_positional]


@pytest.mark.parametrize("f", BINDINGS, ids=lambda f: f.__name__)
def test_binding_parity_grad_vjp_jvp(f):
    expected = numeric_grad(f, X)
    np.testing.assert_allclose(srcgrad.grad(f)(X), expected, rtol=1e-6, atol=1e-8)
    value, pullback = srcgrad.vjp(f, X)
    np.testing.assert_allclose(pullback(1.0)[0], expected, rtol=1e-6, atol=1e-8)
    v = np.array([0.3, -1.1, 0.7])
    _, tangent = srcgrad.jvp(f, (X,), (v,))
    np.testing.assert_allclose(tangent, expected @ v, rtol=1e-6, atol=1e-8)


def clip_unbound_keyword(x):
    return np.sum(np.clip(x, min=1.5 * x[0]) ** 2)


def test_active_operand_the_rule_does_not_bind_is_refused_in_both_modes():
    with pytest.raises(NonDifferentiableError, match="'min' of 'numpy.clip'"):
        srcgrad.grad(clip_unbound_keyword)(X)
    with pytest.raises(NonDifferentiableError, match="'min' of 'numpy.clip'"):
        srcgrad.jvp(clip_unbound_keyword, (X,), (np.ones(3),))


def test_binder_sorts_operands():
    from srcgrad.rules import lookup
    from srcgrad.transforms.binding import bind_rule_call
    rule = lookup(np.clip)
    bound = bind_rule_call(rule, ["x"], {"a_max": "hi", "out": "o", "min": "m"})
    assert [(k, i, a, name) for k, i, a, name in bound.diff] == [
        (0, 0, "x", None), (2, 2, "hi", "a_max")]
    assert sorted(what for what, _, _ in bound.nondiff) == ["'min'", "'out'"]


# -- the cache of generated code keys on what the code depends on -------------------------

def _load(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_same_text_in_two_modules_keeps_each_modules_globals(tmp_path):
    text = "W = {}\n\ndef f(x):\n    return W * x ** 2\n"
    (tmp_path / "one.py").write_text(text.format(2.0))
    (tmp_path / "two.py").write_text(text.format(3.0))
    one = _load(tmp_path / "one.py", "srcgrad_test_one")
    two = _load(tmp_path / "two.py", "srcgrad_test_two")
    assert one.f.__code__ == two.f.__code__  # equal code objects: text equality
    assert srcgrad.grad(one.f)(1.0) == 4.0
    assert srcgrad.grad(two.f)(1.0) == 6.0
    assert srcgrad.jvp(two.f, (1.0,), (1.0,))[1] == 6.0
    assert srcgrad.jvp(one.f, (1.0,), (1.0,))[1] == 4.0


def _elementwise_grad(f):
    def gradient(x):
        return srcgrad.grad(lambda y: np.sum(f(y)))(x)
    return gradient


def _tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def test_third_derivative_through_closures_made_by_one_def():
    # each level is a closure of the same def (and of the same lambda inside it); the sweeps
    # generated for one level resolve its captured function, so they cannot serve another
    x = np.array([0.3, -0.5, 1.2])
    t = np.tanh(x)
    d1 = 1 - t ** 2
    d2 = -2 * t * d1
    d3 = -2 * d1 ** 2 - 2 * t * d2
    g = _tanh
    for expected in (d1, d2, d3):
        g = _elementwise_grad(g)
        np.testing.assert_allclose(g(x), expected, rtol=1e-9, atol=1e-12)


def summed_over(x, axis=0):
    return np.sum(x, axis=axis)


def summed_positional(x, axis=0):
    return np.sum(x, axis)


def helper_with_integer_options(x):
    return np.sum(summed_over(x, axis=1) ** 2) + np.sum(summed_positional(x, 0) ** 3)


def test_integer_operands_of_helpers_differentiated_in_all_parameters_pass():
    # the helpers' adjoints take every parameter as differentiable: 'axis' is refused only
    # if, at run time, it holds a float whose gradient would be lost
    x = np.arange(6.0).reshape(2, 3) / 5
    expected = numeric_grad(helper_with_integer_options, x)
    np.testing.assert_allclose(srcgrad.grad(helper_with_integer_options)(x), expected,
                               rtol=1e-6)
    _, tangent = srcgrad.jvp(helper_with_integer_options, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, expected.sum(), rtol=1e-6)


# -- joining functions given an array (its rows are the items) ----------------------------

STACKERS = [name for name in ("vstack", "hstack", "row_stack", "concatenate", "stack")
            if hasattr(np, name)]


@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")
@pytest.mark.parametrize("name", STACKERS)
def test_joining_an_array_gives_an_array_gradient(name):
    join = getattr(np, name)

    def f(x):
        return np.sum(join(x) ** 2)
    x = np.arange(6.0).reshape(2, 3) + 1
    g = srcgrad.grad(f)(x)
    assert isinstance(g, np.ndarray) and g.shape == x.shape
    np.testing.assert_allclose(g, 2 * x)
    _, pullback = srcgrad.vjp(lambda x: join(x), x)
    ct = pullback(np.ones_like(join(x)))[0]
    assert isinstance(ct, np.ndarray) and ct.shape == x.shape
    _, tangent = srcgrad.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, np.sum(2 * x))


# -- numpy's index-tricks concatenators: np.r_[...] and np.c_[...] have a rule --------------
from fdcheck import check_grad  # noqa: E402

A23 = np.arange(6.0).reshape(2, 3) / 7 + 0.3


def r_two(x):
    return np.sum(np.r_[x, 2 * x] ** 2)


def r_scalar_and_slice(x):
    return np.sum(np.sin(np.r_[x[0], 0:3, x, 1.5]) * np.arange(1.0, 9.0))


def r_directive(x):
    return np.sum(np.r_["0,2", x, x ** 2] ** 3)


def r_last_axis(x):
    m = np.outer(x, x[:2])
    return np.sum(np.r_["-1", m, np.sin(m)] ** 2)


def c_columns(x):
    return np.sum(np.c_[x, 2 * x, np.cos(x)] @ np.array([1.0, -2.0, 0.5]) ** 2)


def c_matrix(x):
    return np.sum(np.c_[np.outer(x, x), x] ** 3)


from numpy import r_  # noqa: E402  (a global bound to the concatenator is resolved too)


def r_from_import(x):
    return np.sum(r_[x, x[::-1]] * np.arange(6.0))


INDEX_TRICKS = [r_two, r_scalar_and_slice, r_directive, r_last_axis, c_columns, c_matrix,
                r_from_import]


@pytest.mark.parametrize("f", INDEX_TRICKS, ids=lambda f: f.__name__)
def test_index_tricks_have_gradients_in_both_modes(f):
    x = np.array([0.3, -0.7, 1.1])
    check_grad(f, (x,))  # was a silent zero gradient
    g = srcgrad.grad(f)(x)
    assert np.any(g != 0)
    v = np.array([0.5, -1.0, 2.0])
    _, tangent = srcgrad.jvp(f, (x,), (v,))
    np.testing.assert_allclose(tangent, g @ v, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("f", [r_two, r_directive, c_columns], ids=lambda f: f.__name__)
def test_index_tricks_second_order(f):
    x = np.array([0.3, -0.7, 1.1])
    h = srcgrad.hessian(f)(x)
    eps = 1e-6
    numeric = np.stack([(srcgrad.grad(f)(x + eps * e) - srcgrad.grad(f)(x - eps * e)) / (2 * eps)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-6)


def test_index_tricks_matrix_directive_is_refused():
    def f(x):
        return np.sum(np.r_["r", x, x])

    with pytest.raises(SrcgradError, match="np.matrix"):
        srcgrad.grad(f)(X)


# -- activity that cannot be lost: a differentiable value given to an operation without a
# derivative is refused with the user's line, never dropped ------------------------------
R_ALIAS = np.r_
LOOKUP = {1.0: 2.0}


def index_through_a_local_alias(x):
    r = R_ALIAS
    return np.sum(r[x, x])


def index_trick_without_rule(x):
    return np.sum(np.mgrid[0:x[0]:3j])


def dict_indexed_by_a_float(x):
    return LOOKUP[x] * 2.0


def set_display(x):
    s = {x, 2.0}
    return sum(s)


@pytest.mark.parametrize("f, construct", [
    (index_through_a_local_alias, "indexing 'r' with a differentiable value"),
    (index_trick_without_rule, "indexing an object that carries no gradient"),
    (dict_indexed_by_a_float, "indexing 'LOOKUP' with a differentiable value"),
    (set_display, "Set of a differentiable value"),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_lost_activity_is_refused_with_the_users_line(f, construct, mode):
    x = 1.0 if f is dict_indexed_by_a_float or f is set_display else np.array([2.0, 1.0])
    with pytest.raises(SrcgradError) as info:
        if mode == "grad":
            srcgrad.grad(f)(x)
        else:
            srcgrad.jvp(f, (x,), (np.ones_like(x) if np.ndim(x) else 1.0,))
    message = str(info.value)
    assert construct in message
    line = f.__code__.co_firstlineno + (2 if f is index_through_a_local_alias else 1)
    assert f"test_soundness.py:{line}" in message, message


# -- operands of foreign array types met inside differentiated code ------------------------
# (made inside the function: a global or closure one is refused before running, below)
MATRIX = np.matrix(np.diag([2.0, 3.0, 4.0]))


def times_masked(x):
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    return np.sum(masked * x)


def times_matrix(x):
    m = np.matrix(np.diag([2.0, 3.0, 4.0]))
    return np.sum(np.asarray(x * m))


def times_series(x):
    import pandas as pd
    return np.sum(pd.Series([1.0, 2.0, 3.0]) * x)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
@pytest.mark.parametrize("f, kind", [(times_masked, "a masked array"),
                                     (times_matrix, "an np.matrix"),
                                     (times_series, "a pandas Series")],
                         ids=["masked", "matrix", "series"])
def test_foreign_array_operands_are_refused_not_differentiated_as_arrays(f, kind):
    if f is times_series:
        pytest.importorskip("pandas")
    x = np.array([0.3, 0.7, 1.1])
    with pytest.raises(SrcgradError, match=f"met {kind}"):
        srcgrad.grad(f)(x)
    with pytest.raises(SrcgradError, match=f"met {kind}"):
        srcgrad.jvp(f, (x,), (np.ones(3),))


def test_array_attribute_without_a_rule_is_refused():
    def f(x):
        return np.sum(x.flat[:2])

    with pytest.raises(srcgrad.MissingRuleError, match="ndarray.flat"):
        srcgrad.grad(f)(np.array([0.3, 0.7]))


# -- calls of objects: partials and objects with __call__, wherever the callee comes from ----
import functools  # noqa: E402


def _scaled_sin(t, k=1.0):
    return k * np.sin(t)


class Scale:
    def __init__(self, a):
        self.a = a

    def __call__(self, t):
        return self.a * t ** 2


SCALE = Scale(3.0)
SIN2 = functools.partial(_scaled_sin, k=2.0)


def calls_global_object(x):
    return np.sum(SCALE(x)) + np.sum(SIN2(x))


def calls_argument_objects(x, h=SIN2, q=SCALE):
    return np.sum(h(x) * q(x))


def _closure_calling_objects():
    q, h = Scale(2.0), functools.partial(_scaled_sin, k=3.0)

    def calls_closure_objects(x):
        return np.sum(q(x)) + np.sum(h(x) ** 2)

    return calls_closure_objects


@pytest.mark.parametrize("f", [calls_global_object, calls_argument_objects,
                               _closure_calling_objects()], ids=lambda f: f.__name__)
def test_calls_of_partials_and_callable_objects_are_differentiated(f):
    x = np.array([0.3, -0.7, 1.1])
    check_grad(f, (x,))
    v = np.array([0.5, -1.0, 2.0])
    _, tangent = srcgrad.jvp(f, (x,), (v,))
    np.testing.assert_allclose(tangent, srcgrad.grad(f)(x) @ v, rtol=1e-9, atol=1e-12)
    eps = 1e-6
    numeric = np.stack([(srcgrad.grad(f)(x + eps * e) - srcgrad.grad(f)(x - eps * e)) / (2 * eps)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(srcgrad.hessian(f)(x), numeric, rtol=1e-5, atol=1e-6)


def _closure_calling_opaque():
    opaque = np.frompyfunc(lambda t: t * t, 1, 1)

    def calls_opaque(x):
        y = opaque(x)
        return np.sum(y)

    return calls_opaque


def test_run_time_refusal_inside_generated_code_names_the_users_line():
    f = _closure_calling_opaque()
    with pytest.raises(srcgrad.MissingRuleError) as info:
        srcgrad.grad(f)(np.array([0.3, 0.7]))
    import inspect
    import os
    lines, first = inspect.getsourcelines(f)
    line = first + 1
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"{os.path.basename(__file__)}:{line} in calls_opaque(): y = opaque(x)" in notes


# -- complex intermediates of real functions: real derivatives matching finite differences --
def cx_abs_exp(x):
    return np.sum(np.abs(np.exp(1j * x) + x) ** 2)


def cx_angle(x):
    return np.sum(np.angle(x + 2j * x ** 2))


def cx_conjugate_method(x):
    z = x + 1j
    return np.sum((z / (z.conjugate() + 2)).real)


def cx_real_imag_attributes(x):
    z = np.exp(1j * x)
    return np.sum(z.real * z.imag)


def cx_astype(x):
    z = x.astype(complex)
    return np.sum(np.abs(z * z))


def cx_sqrt_branch(x):
    z = np.sqrt(x - 1 + 0j)
    return np.sum(np.real(z) + np.imag(z))


def cx_scalar_imag(x):
    return float(np.sum(x * x * 1j).imag)


def cx_matmul(x):
    return np.abs((x + 1j) @ (x - 2j))


def cx_inverse(x):
    return np.sum(np.abs(np.linalg.inv(np.diag(x + 1j))))


COMPLEX_INTERMEDIATES = [cx_abs_exp, cx_angle, cx_conjugate_method, cx_real_imag_attributes,
                         cx_astype, cx_sqrt_branch, cx_scalar_imag, cx_matmul, cx_inverse]


@pytest.mark.parametrize("f", COMPLEX_INTERMEDIATES, ids=lambda f: f.__name__)
def test_complex_intermediates_are_right_in_every_mode(f):
    x = np.array([0.3, -0.7, 1.1])
    g = srcgrad.grad(f)(x)
    assert np.isrealobj(g)
    np.testing.assert_allclose(g, numeric_grad(f, x), rtol=1e-6, atol=1e-8)
    v = np.array([1.0, 2.0, -1.0])
    _, t = srcgrad.jvp(f, (x,), (v,))
    np.testing.assert_allclose(t, g @ v, rtol=1e-9, atol=1e-10)
    h = srcgrad.hessian(f)(x)
    eps = 1e-6
    numeric = np.stack([(srcgrad.grad(f)(x + eps * e) - srcgrad.grad(f)(x - eps * e)) / (2 * eps)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-6)


# -- operators on foreign types: a global/closure operand whose operators are not numeric ---
class SquaresOnMultiply:
    def __mul__(self, other):
        return other ** 2

    __rmul__ = __mul__


SQUARER = SquaresOnMultiply()


def times_squarer(x):
    return np.sum(SQUARER * x)  # was differentiated as a product: [1, 1, 1], not 2x


def times_global_matrix(x):
    return np.sum(np.asarray(MATRIX * x.reshape(3, 1)))


def bitwise_or(x):
    return np.sum(x | 1)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
@pytest.mark.parametrize("f, text", [
    (times_squarer, "the operator '*' between a differentiable value and a SquaresOnMultiply"),
    (times_global_matrix, "the operator '*' between a differentiable value and a matrix"),
    (bitwise_or, "the operator '|' on a differentiable value"),
], ids=["user class", "np.matrix", "bitwise"])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_operators_on_foreign_types_are_refused_at_the_users_line(f, text, mode):
    x = np.array([0.3, 0.7, 1.1])
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        if mode == "grad":
            srcgrad.grad(f)(x)
        else:
            srcgrad.jvp(f, (x,), (x,))
    assert text in str(info.value)
    assert f"test_soundness.py:{f.__code__.co_firstlineno + 1}" in str(info.value)


def test_numeric_globals_in_operators_are_fine():
    scale, offset = np.float32(3.0), 2

    def f(x):
        return np.sum(x * scale + offset * x + X * x)

    np.testing.assert_allclose(srcgrad.grad(f)(X), 3.0 + 2 + X)


# -- subscripts of objects with their own __getitem__ ---------------------------------------
class SquaredPoly:
    def __init__(self, c):
        self.c = c

    def __getitem__(self, t):
        return self.c[0] ** 2 + self.c[1] * t ** 2


def evaluate_poly(p):
    return p[3.0] ** 2


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_indexing_an_object_with_its_own_getitem_is_refused(mode):
    p = SquaredPoly(np.array([1.0, 2.0]))
    with pytest.raises(SrcgradError, match="class SquaredPoly with its own __getitem__"):
        if mode == "grad":
            srcgrad.grad(evaluate_poly)(p)
        else:  # (the tangent object's __getitem__ would square the tangent: wrong)
            srcgrad.jvp(evaluate_poly, (p,), (SquaredPoly(np.array([1.0, 0.0])),))


class HoldsPoly:
    def __init__(self, poly):
        self.poly = poly


def evaluate_held_poly(h):
    return h.poly[3.0] ** 2


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_indexing_an_attribute_with_its_own_getitem_is_refused_at_run_time(mode):
    h = HoldsPoly(SquaredPoly(np.array([1.0, 2.0])))
    with pytest.raises(SrcgradError, match="indexing a SquaredPoly"):
        if mode == "grad":
            srcgrad.grad(evaluate_held_poly)(h)
        else:
            srcgrad.jvp(evaluate_held_poly, (h,),
                        (HoldsPoly(SquaredPoly(np.array([1.0, 0.0]))),))


class SquaresOnMultiplyHolding:
    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return self.v ** 2 * other

    __rmul__ = __mul__


def times_argument_object(s, x):
    return np.sum(s * x)


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_arguments_with_their_own_operators_are_refused(mode):
    s = SquaresOnMultiplyHolding(np.array([1.0, 2.0]))  # was: grad 7.0, jvp 3.0 (true: 6)
    x = np.array([3.0, 4.0])
    with pytest.raises(NonDifferentiableError, match="with its own __mul__"):
        if mode == "grad":
            srcgrad.grad(times_argument_object)(s, x)
        else:
            srcgrad.jvp(times_argument_object, (s, x),
                        (SquaresOnMultiplyHolding(np.array([1.0, 0.0])), None))


def test_an_operand_with_its_own_operators_outside_wrt_is_refused():
    s = SquaresOnMultiplyHolding(np.array([1.0, 2.0]))  # was an object array of arrays
    with pytest.raises(SrcgradError, match="array of Python objects"):
        srcgrad.grad(times_argument_object, wrt=1)(s, np.array([3.0, 4.0]))


# -- single-pass iterators: a generator or map consumed twice is not a list ---------------------
# (each gave a silent wrong value and gradient: both sums counted the items, where Python's
# second sum of the exhausted iterator is 0)
def _sum_twice(items):
    return sum(items) + sum(items)


def generator_passed_to_a_helper(x):
    return np.sum(_sum_twice(v * 2 for v in [x, x]))


def map_passed_to_a_helper(x):
    return np.sum(_sum_twice(map(np.sin, [x, x])))


def map_object_read_twice(x):
    m = map(np.sin, [x, 2 * x])
    a = sum(m)
    b = sum(m)
    return np.sum(a + b)


@pytest.mark.parametrize("f", [generator_passed_to_a_helper, map_passed_to_a_helper,
                               map_object_read_twice])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_single_pass_iterators_are_refused_not_read_as_lists(f, mode):
    x = np.array([0.1, 0.2])
    with pytest.raises(SrcgradError, match="test_soundness.py:"):
        if mode == "grad":
            srcgrad.value_and_grad(f)(x)
        else:
            srcgrad.jvp(f, (x,), (x,))


def map_consumed_by_a_for_loop_and_numpy(x):
    total = 0.0
    for v in map(np.sin, [x, x ** 2]):
        total = total + v
    return np.sum(total * sum(map(np.cos, [x, 3 * x])))


def test_map_consumed_at_once_is_differentiated():
    check_grad(map_consumed_by_a_for_loop_and_numpy, (np.array([0.1, 0.2, -0.4]),))
