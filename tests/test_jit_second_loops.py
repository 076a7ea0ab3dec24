"""Compiled second order through helpers that keep a tape (loops), issue 12:
``srcgrad.hvp(..., jit=True)`` and ``srcgrad.hessian(f, jit=True)`` where a callee's forward
sweep hands its tape (and forward mode its tangent tape) to its backward sweep, both compiled
apart (jit/second.py ``callee_tapes``). Checked against the interpreted hvp (rtol 1e-12) and
central differences of the interpreted gradient. Each function compiles once per process
(numba): the hvp and the hessian of one function share the compiled code.
"""
import re
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

ARRAY = np.array([0.7, -0.4, 1.1])
DIRECTION = np.array([0.3, -1.0, 0.5])


def for_helper(v):
    s = v
    for i in range(3):
        s = s * np.cos(s) + 0.1 * v
    return s


def while_helper(v):
    s = v
    while np.sum(s * s) < 20.0:
        s = s * 1.5 + 0.1 * np.sin(s)
    return s


def branching_helper(v, k):
    s = v
    for i in range(k):
        if np.sum(s) > 0.0:
            s = s * np.cos(s)
        else:
            s = np.sin(s) + s * v
    if s[0] > 0.0:
        t = s * s
    else:
        t = s + v
    return t


def nested_helper(v):  # (a helper with a loop calling helpers with loops)
    s = v
    for i in range(2):
        s = for_helper(s) * v + while_helper(s * 0.5)
    return s


def calls_for_helper(x):
    return np.sum(for_helper(x) * x)


def calls_while_helper(x):
    return np.sum(while_helper(x) ** 2) + x[0] * x[1]


def calls_branching_helper(x):
    return np.sum(branching_helper(x, 3) * np.exp(x * 0.3))


def calls_it_in_a_loop(x):
    t = x
    for i in range(3):
        t = for_helper(t) + x * 0.5
    return np.sum(t * t)


def calls_it_twice(x):
    return np.sum(for_helper(x) * for_helper(x * x)) + for_helper(x)[1]


def calls_nested(x):
    # (not tanh: nested_helper(ARRAY)[2] = 7.6, where tanh's derivative 1 - tanh(x)**2 keeps
    # 6 digits, and numba's tanh and numpy's differ in the last bit: 2e-10 apart, relatively)
    return np.sum(np.sin(nested_helper(x)) * x)


def temporary_bound_in_the_loop(x):  # (the entry's own tape: '_t1 = None' saved first)
    s = x
    for i in range(3):
        s = s * np.cos(s)
    return np.sum(s * x)


DATA = np.array([0.2, 0.5, -0.3])


def counted_while(v):  # (taped: the loop counter's stand-in only; no pop reads a tangent)
    s = v * 1.0
    n = 0
    while n < 3:
        n = n + 1
        s = s + v * v
    return s


def counted_branch(v):  # (taped: a condition of the counter only; no tangent tape at all)
    s = v
    for i in range(3):
        if i > 0:
            s = s * 2.0
    return s * v


def data_branch(v):  # (taped: conditions of data only; the backward sweep pops no tangent)
    s = v
    for i in range(3):
        if DATA[i] > 0:
            s = s + 1.0
        else:
            s = s - v
    return s


def data_only_taped(v):  # (taped: values and conditions of data only; no tangent tape)
    s = v
    w = DATA
    for i in range(4):
        w = np.cos(w)
        if w[0] > 0.6:
            s = s * 2.0
    return s * w


def data_beside_tangents(v):  # (a value of data only, saved and taped, beside ones that
    s = v                      # carry tangents: its saved tangent is typed as its pops')
    w = DATA
    for i in range(3):
        w = np.sin(w) + 0.5
        s = s * w
    return s


def calls_counted_while(x):
    return np.sum(counted_while(x) * x)


def calls_counted_branch(x):
    return np.sum(np.sin(counted_branch(x)) * x)


def calls_data_branch(x):
    return np.sum(data_branch(x) * x)


def calls_data_only_taped(x):
    return np.sum(data_only_taped(x) * np.exp(x * 0.3))


def calls_data_beside_tangents(x):
    return np.sum(np.sin(data_beside_tangents(x)) * x)


def gradient_along(f, x, v, h=1e-6):
    g = srcgrad.grad(f)
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


CASES = [calls_for_helper, calls_while_helper, calls_branching_helper, calls_it_in_a_loop,
         calls_it_twice, calls_nested, temporary_bound_in_the_loop]
# (helpers whose tape holds values without tangents: refused before, "a callee's tape
# without its tangent tape (a srcgrad bug)", or a type error of the saved value's tangent)
CONSTANT_TAPED = [calls_counted_while, calls_counted_branch, calls_data_branch,
                  calls_data_only_taped, calls_data_beside_tangents]


@pytest.mark.parametrize("f", CASES + CONSTANT_TAPED)
@pytest.mark.parametrize("x", [ARRAY, -ARRAY])
def test_compiled_hvp_through_a_helper_with_a_loop(f, x):
    want = srcgrad.hvp(f, (x,), (DIRECTION,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (compiled, not fallen back)
        got = srcgrad.hvp(f, (x,), (DIRECTION,), jit=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got, gradient_along(f, x, DIRECTION), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [calls_branching_helper, calls_nested, calls_counted_branch,
                               calls_data_beside_tangents])
def test_compiled_hessian_through_a_helper_with_a_loop(f):
    want = srcgrad.hessian(f)(ARRAY)
    got = srcgrad.hessian(f, jit=True)(ARRAY)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    columns = [gradient_along(f, ARRAY, e) for e in np.eye(3)]
    np.testing.assert_allclose(got.T, columns, rtol=1e-6, atol=1e-6)


def test_auto_compiles_a_helper_with_a_loop_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = srcgrad.hvp(calls_for_helper, (ARRAY,), (DIRECTION,), jit="auto")
    shown = srcgrad.source(calls_for_helper, "hvp")
    np.testing.assert_allclose(got, srcgrad.hvp(calls_for_helper, (ARRAY,), (DIRECTION,)),
                               rtol=1e-12)
    # (the tangent stacks, handed over in the saved values' tangent)
    assert re.search(r"d_\w+ = \((_dstack\w+, )+_dstack\w+\), dv", shown), shown


def recursive_looping(v, n):
    for i in range(2):
        v = v * np.sin(v)
    if n == 0:
        return v
    return recursive_looping(v, n - 1)


def calls_recursive_looping(x):
    return np.sum(recursive_looping(x, 1))


def test_a_recursive_helper_with_a_loop_is_still_refused():
    with pytest.raises(JitUnsupportedError, match="recursive"):
        srcgrad.hvp(calls_recursive_looping, (ARRAY,), (DIRECTION,), jit=True)


def test_a_tape_without_tangents_hands_zeros_to_the_backward_sweep():
    srcgrad.hvp(calls_counted_branch, (ARRAY,), (DIRECTION,), jit=True)
    shown = srcgrad.source(calls_counted_branch, "hvp")
    # (forward mode made no tangent tape: a zero beside each push, handed over as the
    # tangent tape's stacks in the saved values' tangent)
    assert re.search(r"_dstack\w+\.append\(_rt\.zero_tangent\(_c1\)\)", shown), shown
