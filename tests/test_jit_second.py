"""Compiled second order: ``srcgrad.hvp(..., jit=True)`` and ``srcgrad.hessian(f, jit=True)``
against the interpreted ones (rtol 1e-12) and central finite differences of the gradient,
also through calls of user functions, closures and '@';
the jit refusals (dtypes, bools, in-place updates of shared data) hold on this path too, and
srcgrad.source shows the compiled code.
"""
import math
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

RNG = np.random.default_rng(23)
WEIGHTS = RNG.standard_normal(3) * 0.5  # a global array: read on every call


def euler(x):
    for i in range(200):
        x = x + 0.01 * math.sin(x) * x
    return x


def doubling(x):  # the tutorial's while loop, made scalar
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y * y * x)


def branches(x):
    s = 0.0
    for i in range(3):
        if x[i] > 0:
            s = s + x[i] ** 3
        else:
            s = s + np.sin(x[i]) * x[0]
    return s


def global_weights(x):
    return np.sum(np.tanh(WEIGHTS * x) * x) + x[0] * x[1]


def matrix_product(x):
    return np.sum(np.tanh(np.outer(x, x) @ x))


def two_arguments(x, y):
    return np.sum(x * x * y) + np.exp(x[0]) * np.sum(y ** 3)


def alias_made_in_the_loop(x):  # (tests/test_jit.py's: y shares z's data at the +=)
    y = x * 1.0
    z = x * 2.0
    for i in range(2):
        z = y
        y += x
    return np.sum(y * z)


def copy_made_in_the_loop(x):
    y = x * 1.0
    z = x * 2.0
    for i in range(2):
        z = y.copy()
        y += x
    return np.sum(y * z * x)


def bools_added(x):
    a = x[0] > 0.0
    return x[1] * x[1] * (a + a)


def helper(v):
    return v * np.sin(v)


def calls_a_helper(x):
    return np.sum(helper(x) * x)


def helper_twice(x):
    return np.sum(helper(x) * helper(x * 2.0)) + helper(x[0])


def inner(v):
    return np.exp(v * 0.5) * v


def outer(v):
    return inner(v) + helper(v) * inner(v * v)


def helper_calls_a_helper(x):
    return np.sum(outer(x) * x)


def indexes_a_result(x):  # (the tangent of an item of an array a helper returns)
    y = helper(x)
    return y[0] * y[2] + np.sum(helper(x)[1:] * x[:2])


def scaled(v, k=2.0):
    return v * k


def keywords_and_defaults(x):
    return np.sum(scaled(x) * np.sin(scaled(x, k=3.0)))


MATRIX = RNG.standard_normal((3, 3))
BIAS = RNG.standard_normal(3)


def a_times_x(x):
    return np.sum(np.tanh(MATRIX @ x))


def quadratic_form(x):
    return x @ MATRIX @ x + np.sin(x[0]) * (x @ x)


def recurrent(x):
    h = x
    for i in range(4):
        h = np.tanh(MATRIX @ h)
    return np.sum(h * h)


def layer(w, b, h):
    return np.tanh(w @ h + b)


def mlp(x):
    h = layer(MATRIX, BIAS, x)
    h = layer(MATRIX.T, BIAS, h)
    return np.sum(h * h) + np.sum(h * x)


def matrix_times_matrix(m):
    return np.sum(np.tanh(m @ MATRIX) @ m) + np.sum((m @ m.T) * MATRIX)


def local_function(x):
    def square(u):
        return u * u * x[0]
    return np.sum(square(x) + square(np.sin(x)))


def closure_over(weights):
    def f(x):
        return np.sum(np.tanh(weights @ x)) + np.sum(WEIGHTS * x * x)
    return f


def rebound_closure():
    s = 1.0

    def f(x):
        return np.sum(np.sin(x) * x) * s

    def scale_up():
        nonlocal s
        s = s * 2.0
    return f, scale_up


def looping_helper(v):
    s = v
    for i in range(3):
        s = s * np.cos(s)
    return s


def calls_a_looping_helper(x):
    return np.sum(looping_helper(x) * x)


def recursive_helper(v, n):
    if n == 0:
        return v
    return recursive_helper(v * np.sin(v), n - 1)


def calls_a_recursive_helper(x):
    return np.sum(recursive_helper(x, 2))


closure = closure_over(MATRIX)


def calls_a_closure(x):
    return closure(x) * 2.0


def gradient_along(f, x, v, h=1e-6):
    """Central differences of the interpreted gradient along ``v``."""
    g = srcgrad.grad(f)
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


ARRAY = np.array([0.7, -0.4, 1.1])
DIRECTION = np.array([0.3, -1.0, 0.5])
CASES = [(euler, 0.4, 1.0), (euler, -1.3, -0.5), (doubling, ARRAY, DIRECTION),
         (branches, ARRAY, DIRECTION), (branches, -ARRAY, DIRECTION),
         (global_weights, ARRAY, DIRECTION), (copy_made_in_the_loop, ARRAY, DIRECTION),
         (calls_a_helper, ARRAY, DIRECTION), (helper_twice, ARRAY, DIRECTION),
         (helper_calls_a_helper, ARRAY, DIRECTION), (keywords_and_defaults, ARRAY, DIRECTION),
         (indexes_a_result, ARRAY, DIRECTION),
         (a_times_x, ARRAY, DIRECTION), (quadratic_form, ARRAY, DIRECTION),
         (recurrent, ARRAY, DIRECTION), (mlp, ARRAY, DIRECTION),
         (matrix_times_matrix, MATRIX * 0.5, np.cos(MATRIX)),
         (local_function, ARRAY, DIRECTION), (closure_over(MATRIX), ARRAY, DIRECTION)]


@pytest.mark.parametrize("f, x, v", CASES)
def test_compiled_hvp_equals_the_interpreted_one_and_finite_differences(f, x, v):
    want = srcgrad.hvp(f, (x,), (v,))
    got = srcgrad.hvp(f, (x,), (v,), jit=True)
    assert type(got) is type(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got, gradient_along(f, x, v), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f, x", [(euler, 0.4), (doubling, ARRAY), (branches, ARRAY),
                                  (global_weights, ARRAY), (helper_calls_a_helper, ARRAY),
                                  (quadratic_form, ARRAY), (mlp, ARRAY),
                                  (matrix_times_matrix, MATRIX * 0.5),
                                  (closure_over(MATRIX), ARRAY)])
def test_compiled_hessian_equals_the_interpreted_one_and_finite_differences(f, x):
    want = srcgrad.hessian(f)(x)
    got = srcgrad.hessian(f, jit=True)(x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    units = np.eye(np.size(x)).reshape((np.size(x),) + np.shape(x))
    columns = [gradient_along(f, x, e) for e in units]
    np.testing.assert_allclose(np.reshape(got, (np.size(x), np.size(x))).T,
                               np.reshape(columns, (np.size(x), np.size(x))), rtol=1e-6,
                               atol=1e-6)


def test_compiled_hvp_and_hessian_of_two_arguments():
    x, y = ARRAY, np.array([0.2, 0.9, -0.6])
    tangents = (DIRECTION, np.array([1.0, 0.5, 0.25]))
    want = srcgrad.hvp(two_arguments, (x, y), tangents)
    got = srcgrad.hvp(two_arguments, (x, y), tangents, jit=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    hessian = srcgrad.hessian(two_arguments, argnums=(0, 1), jit=True)(x, y)
    for row, want_row in zip(hessian, srcgrad.hessian(two_arguments, argnums=(0, 1))(x, y)):
        for block, want_block in zip(row, want_row):
            np.testing.assert_allclose(block, want_block, rtol=1e-12, atol=1e-300)


def test_a_global_array_is_read_on_every_call():
    global WEIGHTS
    before = WEIGHTS
    try:
        first = srcgrad.hvp(global_weights, (ARRAY,), (DIRECTION,), jit=True)
        WEIGHTS = before * 3.0
        changed = srcgrad.hvp(global_weights, (ARRAY,), (DIRECTION,), jit=True)
        np.testing.assert_allclose(changed, srcgrad.hvp(global_weights, (ARRAY,),
                                                        (DIRECTION,)), rtol=1e-12)
        assert not np.allclose(first, changed)
    finally:
        WEIGHTS = before


def test_shared_data_updated_in_place_is_refused_as_interpreted():
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="share|view") as want:
        srcgrad.hvp(alias_made_in_the_loop, (ARRAY,), (DIRECTION,))
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as got:
        srcgrad.hvp(alias_made_in_the_loop, (ARRAY,), (DIRECTION,), jit=True)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


def test_float32_arguments_are_refused_or_run_interpreted():
    x = ARRAY.astype(np.float32)
    with pytest.raises(JitUnsupportedError, match="float32"):
        srcgrad.hvp(branches, (x,), (DIRECTION.astype(np.float32),), jit=True)
    with pytest.raises(JitUnsupportedError, match="float32"):
        srcgrad.hessian(branches, jit=True)(x)
    with pytest.warns(RuntimeWarning, match="float32"):
        got = srcgrad.hvp(branches, (x,), (DIRECTION.astype(np.float32),), jit="auto")
    np.testing.assert_array_equal(got, srcgrad.hvp(branches, (x,),
                                                   (DIRECTION.astype(np.float32),)))


def test_arithmetic_on_bools_is_refused_at_the_users_line():
    line = bools_added.__code__.co_firstlineno + 2
    with pytest.raises(JitUnsupportedError, match=rf"test_jit_second.py:{line}: .*bool"):
        srcgrad.hvp(bools_added, (ARRAY,), (DIRECTION,), jit=True)
    with pytest.warns(RuntimeWarning, match="bool"):
        got = srcgrad.hvp(bools_added, (ARRAY,), (DIRECTION,), jit="auto")
    np.testing.assert_array_equal(got, srcgrad.hvp(bools_added, (ARRAY,), (DIRECTION,)))


def test_a_helper_with_a_loop_compiles_under_auto_without_a_warning():
    # (refused at its 'def' until its tape and tangent tape were handed between its two
    # sweeps' compiled jvps; more cases in test_jit_second_loops.py)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = srcgrad.hessian(calls_a_looping_helper, jit="auto")(ARRAY)
    np.testing.assert_allclose(got, srcgrad.hessian(calls_a_looping_helper)(ARRAY),
                               rtol=1e-12, atol=1e-300)


def test_recursive_helpers_and_helpers_reading_a_closure_are_refused():
    with pytest.raises(JitUnsupportedError, match="recursive"):
        srcgrad.hvp(calls_a_recursive_helper, (ARRAY,), (DIRECTION,), jit=True)
    with pytest.raises(JitUnsupportedError, match=r"enclosing function \(weights\)"):
        srcgrad.hvp(calls_a_closure, (ARRAY,), (DIRECTION,), jit=True)
    with pytest.warns(RuntimeWarning, match="enclosing"):
        got = srcgrad.hvp(calls_a_closure, (ARRAY,), (DIRECTION,), jit="auto")
    np.testing.assert_array_equal(got, srcgrad.hvp(calls_a_closure, (ARRAY,), (DIRECTION,)))


def test_float32_arguments_of_a_function_calling_helpers_are_refused():
    x = ARRAY.astype(np.float32)
    with pytest.raises(JitUnsupportedError, match="float32"):
        srcgrad.hvp(mlp, (x,), (DIRECTION.astype(np.float32),), jit=True)


def test_np_outer_of_the_argument_compiles():
    # (forward mode over np.outer's adjoint reshapes with order='C', which numba's reshape
    # lacks: refused until it compiled as _rt.reshape_c)
    np.testing.assert_allclose(srcgrad.hvp(matrix_product, (ARRAY,), (DIRECTION,), jit=True),
                               srcgrad.hvp(matrix_product, (ARRAY,), (DIRECTION,)), rtol=1e-12)


def test_closures_of_one_def_read_their_own_cells_and_arrays_changed_in_place():
    weights = MATRIX.copy()
    first, second = closure_over(weights), closure_over(MATRIX * 2.0)
    for f in (first, second, first, second):
        np.testing.assert_allclose(srcgrad.hvp(f, (ARRAY,), (DIRECTION,), jit=True),
                                   srcgrad.hvp(f, (ARRAY,), (DIRECTION,)), rtol=1e-12)
    before = srcgrad.hvp(first, (ARRAY,), (DIRECTION,), jit=True)
    weights *= 3.0
    after = srcgrad.hvp(first, (ARRAY,), (DIRECTION,), jit=True)
    np.testing.assert_allclose(after, srcgrad.hvp(first, (ARRAY,), (DIRECTION,)), rtol=1e-12)
    assert not np.allclose(before, after)


def test_a_closure_variable_rebound_is_read_anew():
    f, scale_up = rebound_closure()
    before = srcgrad.hvp(f, (ARRAY,), (DIRECTION,), jit=True)
    scale_up()
    after = srcgrad.hvp(f, (ARRAY,), (DIRECTION,), jit=True)
    np.testing.assert_allclose(after, srcgrad.hvp(f, (ARRAY,), (DIRECTION,)), rtol=1e-12)
    np.testing.assert_allclose(after, 2.0 * before, rtol=1e-12)


def test_source_shows_the_compiled_helpers_and_the_products_jvp():
    srcgrad.hvp(mlp, (ARRAY,), (DIRECTION,), jit=True)
    shown = srcgrad.source(mlp, "hvp")
    assert "def layer_bwd_jvp(" in shown and "def layer_fwd_jvp(" in shown
    assert "def matmul_right_jvp(" in shown and "srcgrad.rules.operators.matmul_right" in shown


def test_source_shows_the_compiled_code():
    srcgrad.hvp(branches, (ARRAY,), (DIRECTION,), jit=True)
    shown = srcgrad.source(branches, "hvp")
    assert "numba nopython mode" in shown and "Hessian-vector" in shown
    code = [line for line in shown.splitlines() if not line.lstrip().startswith("#")]
    assert "_dstack_s.append(ds)" in shown and not any("_tape" in line for line in code)
    # (comments point at the user's lines, not at the fused gradient's)
    line = branches.__code__.co_firstlineno + 4
    assert f"test_jit_second.py:{line}  _tape.push(_t1)" in shown
    hessian = srcgrad.hessian(euler, jit=True)
    hessian(0.3)
    assert "def euler_grad_jvp(dx, x)" in srcgrad.source(hessian)


def test_options_are_checked():
    with pytest.raises(srcgrad.SrcgradError, match="jit= takes"):
        srcgrad.hessian(euler, jit="yes")
    with pytest.raises(srcgrad.SrcgradError, match="jit= takes"):
        srcgrad.hvp(euler, (0.3,), (1.0,), jit="yes")


def constant_of_x(x, y):  # (fuzzer seed 82, program 21: x is rebound before any use)
    x = 1.0 / (2.0 + np.cos(np.array([-0.93, -0.38, -1.42])))
    return x[-1] * y


def test_products_that_are_zero_because_nothing_depends_on_the_arguments():
    y = 0.5
    want = srcgrad.hvp(constant_of_x, (ARRAY, y), (DIRECTION, 1.0))
    got = srcgrad.hvp(constant_of_x, (ARRAY, y), (DIRECTION, 1.0), jit=True)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == 0.0 and got[0].shape == ARRAY.shape
    np.testing.assert_array_equal(srcgrad.hessian(constant_of_x, jit=True)(ARRAY, y),
                                  np.zeros((3, 3)))


def test_a_value_that_is_not_scalar_gets_the_interpreted_error():
    def vector(x):
        return x * 2.0

    with pytest.raises(Exception) as want:
        srcgrad.hvp(vector, (ARRAY,), (DIRECTION,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(type(want.value)):
            srcgrad.hvp(vector, (ARRAY,), (DIRECTION,), jit=True)
