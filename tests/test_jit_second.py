"""Compiled second order: ``srcgrad.hvp(..., jit=True)`` and ``srcgrad.hessian(f, jit=True)``
against the interpreted ones (rtol 1e-12) and central finite differences of the gradient;
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


def gradient_along(f, x, v, h=1e-6):
    """Central differences of the interpreted gradient along ``v``."""
    g = srcgrad.grad(f)
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


ARRAY = np.array([0.7, -0.4, 1.1])
DIRECTION = np.array([0.3, -1.0, 0.5])
CASES = [(euler, 0.4, 1.0), (euler, -1.3, -0.5), (doubling, ARRAY, DIRECTION),
         (branches, ARRAY, DIRECTION), (branches, -ARRAY, DIRECTION),
         (global_weights, ARRAY, DIRECTION), (copy_made_in_the_loop, ARRAY, DIRECTION)]


@pytest.mark.parametrize("f, x, v", CASES)
def test_compiled_hvp_equals_the_interpreted_one_and_finite_differences(f, x, v):
    want = srcgrad.hvp(f, (x,), (v,))
    got = srcgrad.hvp(f, (x,), (v,), jit=True)
    assert type(got) is type(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got, gradient_along(f, x, v), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f, x", [(euler, 0.4), (doubling, ARRAY), (branches, ARRAY),
                                  (global_weights, ARRAY)])
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


def test_helper_calls_are_refused_at_the_users_line_and_run_interpreted_under_auto():
    line = calls_a_helper.__code__.co_firstlineno
    with pytest.raises(JitUnsupportedError, match=rf"test_jit_second.py:{line}: .*helper"):
        srcgrad.hvp(calls_a_helper, (ARRAY,), (DIRECTION,), jit=True)
    with pytest.warns(RuntimeWarning, match="helper"):
        got = srcgrad.hessian(calls_a_helper, jit="auto")(ARRAY)
    np.testing.assert_array_equal(got, srcgrad.hessian(calls_a_helper)(ARRAY))


def test_matrix_products_are_refused_at_the_users_line():
    line = matrix_product.__code__.co_firstlineno + 1
    with pytest.raises(JitUnsupportedError, match=rf"test_jit_second.py:{line}: .*matmul"):
        srcgrad.hvp(matrix_product, (ARRAY,), (DIRECTION,), jit=True)


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
