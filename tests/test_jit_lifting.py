"""Compiled gradients of functions defining local functions (srcgrad/jit/lifting.py): local
defs and lambdas only called become module-level helpers taking what they capture as their
first parameters; unused ones are dropped. Compared with the interpreted gradient and finite
differences; what lifting would change stays as it was (refused, located)."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402
from srcgrad.jit.lifting import lift_local_functions  # noqa: E402
from srcgrad.transforms import prepare  # noqa: E402
from srcgrad.codegen import to_source  # noqa: E402

from fdcheck import check_grad  # noqa: E402

_SCALE = 2.0


def late_binding(x, y):
    sq = lambda a: a * a + y  # noqa: E731
    s = 0.0
    for i in range(3):
        s = s + sq(x)
        y = y * 1.1  # the next call reads the new y, as Python's closure does
    return s


def local_def_with_default(x, y):
    def h(b, c=2.0):
        return np.sin(b) * y * c
    return h(x) + h(x, c=0.5) + h(c=1.5, b=y)


def lambda_of_arrays(x, w):
    act = lambda z: np.tanh(z @ w)  # noqa: E731
    return np.sum(act(x) ** 2)


def called_in_a_branch(x, y):
    k = y * 3.0
    f = lambda t: t * k + _SCALE * t  # noqa: E731
    if x > 0.0:
        return f(x) * f(y)
    return f(y)


def unused_in_a_loop(x):
    s = x
    for i in range(2):
        g = lambda t, k=0.5: t * k  # noqa: E731, F841  (never called)
        s = s * x
    if s > 100.0:
        def never(t):
            return t
    return s


CASES = [
    (late_binding, (1.5, 0.7), (0, 1)),
    (local_def_with_default, (0.3, 1.2), (0, 1)),
    (lambda_of_arrays, (np.linspace(-1.0, 1.0, 12).reshape(3, 4),
                        np.linspace(0.5, -0.5, 8).reshape(4, 2)), (0, 1)),
    (called_in_a_branch, (0.4, -0.9), (0, 1)),
    (called_in_a_branch, (-0.4, -0.9), (0, 1)),
    (unused_in_a_loop, (1.3,), (0,)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_compiled_equals_interpreted_and_finite_differences(fn, args, wrt):
    want = srcgrad.grad(fn, wrt=wrt)(*args)
    g = srcgrad.grad(fn, wrt=wrt, jit=True)
    got = g(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    check_grad(fn, args, wrt=wrt, grads=got)
    shown = srcgrad.source(g)
    code = [line.split("#")[0] for line in shown.splitlines()]
    assert "numba nopython mode" in shown and not any("lambda " in line for line in code)


def test_lifted_function_is_a_compiled_callee_taking_what_it_captures():
    g = srcgrad.grad(late_binding, wrt=(0, 1), jit=True)
    g(1.5, 0.7)
    shown = srcgrad.source(g)
    assert "def sq_fwd(y, a):" in shown and "def sq_bwd(" in shown
    assert "sq_adj_fwd(y, x)" in shown


def test_vjp_and_jvp_through_a_lifted_lambda():
    x, y = 0.8, -0.3
    value, pullback = srcgrad.vjp(late_binding, x, y, jit=True)
    want_value, want_pullback = srcgrad.vjp(late_binding, x, y)
    assert value == pytest.approx(want_value, rel=1e-14)
    np.testing.assert_allclose(pullback(2.0), want_pullback(2.0), rtol=1e-12)
    got = srcgrad.jvp(late_binding, (x, y), (1.0, 0.5), jit=True)
    want = srcgrad.jvp(late_binding, (x, y), (1.0, 0.5))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_global_the_lifted_function_reads_is_read_again_when_rebound():
    global _SCALE
    g = srcgrad.grad(called_in_a_branch, wrt=(0, 1), jit=True)
    before = g(0.4, -0.9)
    try:
        _SCALE = 5.0
        after = g(0.4, -0.9)
        want = srcgrad.grad(called_in_a_branch, wrt=(0, 1))(0.4, -0.9)
    finally:
        _SCALE = 2.0
    assert after[0] != pytest.approx(before[0])
    assert after[0] == pytest.approx(want[0], rel=1e-12)


# -- what stays as it was ----------------------------------------------------------------

def escapes(x):
    sq = lambda a: a * a  # noqa: E731
    return _apply(sq, x)


def _apply(f, x):
    return f(x)


def rebound(x):
    f = lambda t: t * 2.0  # noqa: E731
    if x > 0:
        f = lambda t: t * 3.0  # noqa: E731
    return f(x)


def changes_what_it_captures(x):
    acc = np.zeros(2)

    def put(v):
        acc[0] = v
        return v * 2.0
    return put(x) + acc[0]


def default_reads_a_variable(x):
    y = x * 2.0
    f = lambda t, k=y: t * k  # noqa: E731  (k is y at definition time)
    y = x * 5.0
    return f(x)


def recursive(x):
    def r(t, n):
        return t if n == 0 else r(t * 1.5, n - 1)
    return r(x, 3)


def keyword_names_a_captured_variable(x):
    y = x + 1.0
    f = lambda t: t * y  # noqa: E731
    return f(x, y=2.0)  # a TypeError in Python


def comprehension_rebinds_a_captured_name(x):
    y = x + 1.0
    f = lambda t: t * y  # noqa: E731
    return sum([f(y) for y in (x, x)])


def nonlocal_update(x):
    n = x

    def bump(t):
        nonlocal n
        n = n + t
        return n
    y = bump(x)
    return y * n


def two_on_one_line(x):
    f = lambda t: t * 2.0; g = lambda t: t * 3.0  # noqa: E702, E731
    return f(x) + g(x)


def called_before_defined_in_a_loop(x):
    s = 0.0
    for i in range(2):
        if i == 1:
            s = s + f(x)  # noqa: F821 (bound in the first iteration)
        f = lambda t: t * 2.0  # noqa: E731, F841
    return s


@pytest.mark.parametrize("fn", [escapes, rebound, changes_what_it_captures,
                                default_reads_a_variable, recursive,
                                keyword_names_a_captured_variable,
                                comprehension_rebinds_a_captured_name, nonlocal_update,
                                two_on_one_line, called_before_defined_in_a_loop])
def test_not_lifted_where_python_means_something_else(fn):
    ctx = prepare(fn, (0,))
    before = to_source(ctx.src.tree)
    lift_local_functions(ctx)
    assert not ctx.helpers, fn.__name__
    assert to_source(ctx.src.tree) == before


@pytest.mark.parametrize("fn, x", [(escapes, 1.3), (rebound, 0.7), (rebound, -0.7),
                                   (recursive, 0.6), (nonlocal_update, 0.3)])
def test_not_lifted_stays_refused_or_right(fn, x):
    want = srcgrad.grad(fn)(x)
    check_grad(fn, (x,), grads=(want,))
    try:
        got = srcgrad.grad(fn, jit=True)(x)
    except JitUnsupportedError as e:
        assert "test_jit_lifting.py:" in str(e)
        return
    assert got == pytest.approx(want, rel=1e-12)


def test_unused_definition_with_a_computed_default_is_kept():
    def keeps(x):
        f = lambda t, k=np.sin(x): t * k  # noqa: E731, F841 (the default runs np.sin)
        return x * 2.0
    ctx = prepare(keeps, (0,))
    lift_local_functions(ctx)
    assert "lambda" in to_source(ctx.src.tree)


def test_lifting_keeps_the_users_lines_in_errors():
    ctx = prepare(late_binding, (0, 1))
    lift_local_functions(ctx)
    (lifted,) = ctx.helpers.values()
    assert lifted.__code__.co_filename == __file__
    assert lifted.__code__.co_firstlineno == late_binding.__code__.co_firstlineno + 1
