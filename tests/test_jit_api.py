"""jit= beyond grad: compiled vjp and jvp against the interpreted ones (rtol 1e-9) and finite
differences (compiled hessian/hvp: tests/test_jit_second.py); srcgrad.source of compiled
code shows the text numba compiles.
"""
import math
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

RNG = np.random.default_rng(12)
GAIN = RNG.standard_normal((3, 3)) * 0.3  # a global array: passed on every call


def euler(x, n):
    for i in range(n):
        x = x + 0.01 * math.sin(x)
    return x


def layer(x, W):
    return np.tanh(W @ x + GAIN @ x) * 2.0 + x[0]


def settle(v, k):
    # a data-dependent while loop over an array state
    t = 0
    while np.linalg.norm(v) > 0.5 and t < 400:
        v = v - 0.05 * k * v * v * np.sign(v)
        t = t + 1
    return v * k


def scale(x, c):
    return c * np.sin(x)


def calls_helper(x, c):
    y = scale(x, c)  # called once, outside loops and branches: its jvp is compiled too
    return y * y + x


def reductions(x):
    # forward mode writes a whole-array reduction's tangent as np.sum(d, keepdims=False),
    # which numba refused ("no compiled 'sum' ... keepdims=")
    return np.sum(np.sin(x) * x) + np.mean(x ** 2) * np.max(x)


X3 = RNG.uniform(0.2, 1.0, 3)
W33 = RNG.standard_normal((3, 3)) * 0.5


def _fd_jvp(f, primals, tangents, eps=1e-6):
    plus = [p + eps * t if t is not None else p for p, t in zip(primals, tangents)]
    minus = [p - eps * t if t is not None else p for p, t in zip(primals, tangents)]
    return (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)


JVP_CASES = {
    "euler": (euler, (0.4, 150), (1.0, None)),
    "layer": (layer, (X3, W33), (RNG.standard_normal(3), RNG.standard_normal((3, 3)))),
    "settle": (settle, (np.array([1.5, -1.2, 0.9]), 0.7), (np.array([0.3, 0.1, -0.2]), 1.0)),
    "calls_helper": (calls_helper, (X3, 1.3), (RNG.standard_normal(3), 0.5)),
    "reductions": (reductions, (X3,), (RNG.standard_normal(3),)),
}


@pytest.mark.parametrize("name", sorted(JVP_CASES))
def test_jvp_matches_interpreted_and_finite_differences(name):
    f, primals, tangents = JVP_CASES[name]
    value, tangent = srcgrad.jvp(f, primals, tangents, jit=True)
    assert "compiled forward mode (jvp)" in srcgrad.source(f, "jvp")  # (what ran last)
    want_value, want_tangent = srcgrad.jvp(f, primals, tangents)
    np.testing.assert_allclose(value, want_value, rtol=1e-9)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tangent, _fd_jvp(f, primals, tangents), rtol=1e-5, atol=1e-7)


VJP_CASES = {
    "euler": (euler, (0.4, 150), 2.5),
    "layer": (layer, (X3, W33), RNG.standard_normal(3)),
    "settle": (settle, (np.array([1.5, -1.2, 0.9]), 0.7), RNG.standard_normal(3)),
}


@pytest.mark.parametrize("name", sorted(VJP_CASES))
def test_vjp_matches_interpreted_and_finite_differences(name):
    f, args, g = VJP_CASES[name]
    value, pullback = srcgrad.vjp(f, *args, jit=True)
    want_value, want_pullback = srcgrad.vjp(f, *args)
    np.testing.assert_allclose(value, want_value, rtol=1e-9)
    for cotangent in (g, 2.0 * np.asarray(g)):  # a pullback may be called again
        got, want = pullback(cotangent), want_pullback(cotangent)
        for a, b in zip(got, want):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    # <g, J v> against <J^T g, v> along a random direction of the differentiated arguments
    directions = [RNG.standard_normal(np.shape(a)) if got[i] is not None else None
                  for i, a in enumerate(args)]
    directions = [float(d) if d is not None and np.ndim(d) == 0 else d for d in directions]
    numeric = np.sum(np.asarray(g) * _fd_jvp(f, args, directions))
    analytic = sum(np.sum(gi * d) for gi, d in zip(pullback(g), directions) if d is not None)
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_vjp_pullback_sees_the_arguments_as_they_were():
    x, W = X3.copy(), W33.copy()
    _, pullback = srcgrad.vjp(layer, x, W, jit=True)
    _, want = srcgrad.vjp(layer, X3, W33)
    x[:] = 9.0  # changed after vjp: the interpreted pullback pops values saved before
    g = np.ones(3)
    for a, b in zip(pullback(g), want(g)):
        np.testing.assert_allclose(a, b, rtol=1e-9)


def test_vjp_cotangent_checked():
    _, pullback = srcgrad.vjp(layer, X3, W33, jit=True)
    with pytest.raises(srcgrad.SrcgradError, match="shape"):
        pullback(np.ones(4))


def test_vjp_source_is_the_compiled_variant():
    _, pullback = srcgrad.vjp(layer, X3, W33, jit=True)
    pullback(np.ones(3))
    text = srcgrad.source(pullback)
    assert "def layer_vjp(x, W, _g, GAIN):" in text
    assert "_rt.cotangent(_value, _g)" in text and "numba nopython mode" in text
    assert srcgrad.source(layer, "vjp") == text


def test_grad_source_is_the_compiled_variant_with_its_callees():
    def outer(x):
        return scale(x, 2.0) * x

    g = srcgrad.grad(outer, jit=True)
    g(0.3)
    text = srcgrad.source(g)
    assert text.startswith("# srcgrad: compiled gradient of")
    assert "def outer_grad(x):" in text and "def scale_fwd(x, c=" not in text
    assert "def scale_fwd(" in text and "def scale_bwd(" in text  # the callee's pair
    assert "_make" not in text and "_rt.Tape" not in text


def test_jvp_of_helper_in_a_loop_refused_or_interpreted():
    def loop(x):
        for i in range(3):
            x = scale(x, 0.5)
        return x

    with pytest.raises(JitUnsupportedError, match="test_jit_api.py:.*scale"):
        srcgrad.jvp(loop, (0.3,), (1.0,), jit=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = srcgrad.jvp(loop, (0.3,), (1.0,), jit="auto")
    assert got == srcgrad.jvp(loop, (0.3,), (1.0,))
    assert any("jit='auto'" in str(w.message) for w in caught)


def test_vjp_refusals():
    def aux(x):
        return x * 2.0, "note"

    with pytest.raises(JitUnsupportedError, match="has_aux"):
        srcgrad.vjp(aux, 1.0, has_aux=True, jit=True)
    with pytest.warns(RuntimeWarning, match="has_aux"):
        _, pullback, note = srcgrad.vjp(aux, 1.0, has_aux=True, jit="auto")
    assert pullback(1.0) == (2.0,) and note == "note"


# -- the per-call fast path: what it checks instead of the builds -----------------------------

DEPTH = 2.0


def innermost(x):
    return x * DEPTH


def middle(x):
    return innermost(x) * x


def outermost(x):
    return middle(x) + x


def test_fast_path_sees_a_global_rebound_two_callees_down():
    global DEPTH
    g = srcgrad.grad(outermost, jit=True)
    assert g(1.5) == pytest.approx(2 * 2.0 * 1.5 + 1)
    assert g(1.5) == pytest.approx(2 * 2.0 * 1.5 + 1)  # (through the fast path)
    try:
        DEPTH = 5.0
        assert g(1.5) == pytest.approx(2 * 5.0 * 1.5 + 1)
    finally:
        DEPTH = 2.0


def test_fast_path_sees_reassigned_code():
    def f(x):
        return x * x

    def other(x):
        return x * x * x

    g = srcgrad.grad(f, jit=True)
    assert g(2.0) == 4.0 and g(2.0) == 4.0
    f.__code__ = other.__code__
    assert g(2.0) == pytest.approx(12.0)


def test_source_under_auto_says_the_interpreted_code_ran():
    def keeps_a_dict(x):  # (a dict: refused by the compiled build)
        parts = {"a": x, "b": x * 2.0}
        return parts["a"] * parts["b"]

    g = srcgrad.grad(keeps_a_dict, jit="auto")
    with pytest.warns(RuntimeWarning, match="jit='auto'"):
        assert g(3.0) == pytest.approx(12.0)
    text = srcgrad.source(g)
    assert text.startswith("# jit='auto' ran the interpreted code on the last call:")
    assert "def keeps_a_dict_fwd(x):" in text


def test_fast_path_holds_for_a_function_reading_a_builtin():
    # the build assumes 'range' is no global (a sentinel, not None): the guard must agree
    from srcgrad.jit.build import guard
    from srcgrad.rules import registry

    g = srcgrad.grad(euler, jit=True)
    g(0.3, 10)
    adj = srcgrad.grad(euler).__srcgrad_adjoint__().scalar_variant()
    compiled = srcgrad.jit.build.compiled_gradient(adj, euler)
    checks = guard(compiled, adj, euler, registry.version())
    assert checks is not None and checks.holds(registry.version(), euler)
