"""Compiled sweeps compute np.tanh/exp/log/sin/cos of float64 arrays with libmvec's SIMD
functions (srcgrad/jit/simd.py): against numpy and math, special values and every tail
length included, and the gradients that use them against the interpreted ones and finite
differences."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad
from srcgrad.jit import runtime as jit_runtime
from srcgrad.jit import simd

SPECIAL = {
    "tanh": [0.0, -0.0, 1e-310, -1e-300, 1e-8, 0.5, -0.75, 19.0, -22.0, 40.0, 710.0,
             np.inf, -np.inf, np.nan],
    "exp": [0.0, -0.0, 1e-310, 1e-8, -1.0, 1.0, 700.0, 709.7, 710.0, -740.0, -745.2, -800.0,
            np.inf, -np.inf, np.nan],
    "log": [1.0, 0.0, -0.0, 1e-310, 5e-324, 1e-8, 2.0, 1e300, 1.7e308, -1.0, np.inf,
            -np.inf, np.nan],
    "sin": [0.0, -0.0, 1e-310, 1e-8, 1.0, -3.14159, 1e5, 1e22, 1e300, -1e300, np.inf,
            -np.inf, np.nan],
    "cos": [0.0, -0.0, 1e-310, 1e-8, 1.0, -3.14159, 1e5, 1e22, 1e300, -1e300, np.inf,
            -np.inf, np.nan],
}
RANGES = {"tanh": 25.0, "exp": 700.0, "log": None, "sin": 1e4, "cos": 1e4}


@functools.cache
def _compiled(name):
    stub = getattr(jit_runtime, name)
    return numba.njit(lambda x: stub(x))


def _inputs(name):
    rng = np.random.default_rng(7)
    scale = RANGES[name]
    if scale is None:  # log: positive, over many binades
        x = np.exp(rng.uniform(-700.0, 700.0, 4001))
    else:
        x = rng.uniform(-scale, scale, 4001)
    return np.concatenate([np.asarray(SPECIAL[name]), x, rng.standard_normal(1001)])


def _close(got, want, maxulp):
    """Same nans, infinities and zero signs; else within ``maxulp`` units in the last place."""
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = got.ravel(), want.ravel()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    exact = ok & (np.isinf(want) | (want == 0))
    assert np.array_equal(got[exact], want[exact])
    assert np.array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    rest = ok & ~exact
    ulps = np.abs(got[rest] - want[rest]) / np.spacing(np.abs(want[rest]))
    assert ulps.max(initial=0.0) <= maxulp, ulps.max()


@pytest.mark.parametrize("name", simd.FUNCTIONS)
def test_against_numpy_and_math(name):
    x = _inputs(name)
    got = _compiled(name)(x)
    with np.errstate(all="ignore"):
        _close(got, getattr(np, name)(x), maxulp=4)
    ref = np.array([_math(name, v) for v in x])
    _close(got, ref, maxulp=4)


def _math(name, v):
    try:
        return getattr(math, name)(v)
    except (ValueError, OverflowError):  # (math raises where numpy gives nan/inf)
        with np.errstate(all="ignore"):
            return float(getattr(np, name)(v))


def test_every_tail_length_and_layout():
    """Sizes around the block of four (the padded last block), 2-d, Fortran-order and
    strided arrays: each element's result is the one it gets at any other position. (The
    code is the same for each function: tanh stands for all.)"""
    f = _compiled("tanh")
    base = np.abs(np.random.default_rng(3).standard_normal(40)) + 0.1
    whole = f(base)
    for n in range(12):
        assert np.array_equal(f(base[:n]), whole[:n])
    assert np.array_equal(f(base[1::3]), whole[1::3])
    grid = base.reshape(5, 8)
    assert np.array_equal(f(grid), whole.reshape(5, 8))
    assert np.array_equal(f(np.asfortranarray(grid)), whole.reshape(5, 8))
    assert np.array_equal(f(grid.T), whole.reshape(5, 8).T)
    assert np.array_equal(f(grid[:, ::2]), whole.reshape(5, 8)[:, ::2])


@pytest.mark.parametrize("value", [np.float32(0.3) * np.ones(5, np.float32), np.arange(5),
                                   np.array(0.3), 0.3, 2])
def test_other_arguments_are_numbas_own(value):
    """float32 and int arrays, 0-d arrays and scalars: numba's np.tanh, as without SIMD."""
    got = _compiled("tanh")(value)
    want = numba.njit(lambda x: np.tanh(x))(value)
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(got, want)


def rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
    return np.sum(np.sin(h) + np.exp(h) * np.cos(h) - np.log(h * h + 1.0))


def _rnn_args():
    rng = np.random.default_rng(11)
    return rng.standard_normal((7, 7)) * 0.4, rng.standard_normal((4, 5, 7)), \
        rng.standard_normal((5, 7)) * 0.3


def test_compiled_gradient_uses_simd_and_agrees():
    args = _rnn_args()
    g = srcgrad.grad(rnn, wrt=(0, 2), jit=True)
    gW, gh = g(*args)
    shown = srcgrad.source(g)
    for name in simd.FUNCTIONS:
        assert f"_rt.{name}(" in shown, name
    iW, ih = srcgrad.grad(rnn, wrt=(0, 2))(*args)
    np.testing.assert_allclose(gW, iW, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gh, ih, rtol=1e-12, atol=1e-13)
    W, xs, h = args
    u = np.random.default_rng(5).standard_normal(W.shape)
    eps = 1e-6
    numeric = (rnn(W + eps * u, xs, h) - rnn(W - eps * u, xs, h)) / (2 * eps)
    assert abs(numeric - np.sum(gW * u)) < 1e-6 * max(1.0, abs(numeric))


def elementwise(W):
    return np.tanh(W) + np.exp(W) * np.cos(W) - np.log(W * W + 1.0) + np.sin(W)


def test_compiled_jvp_uses_simd_and_agrees():
    W = _rnn_args()[0]
    dW = np.random.default_rng(2).standard_normal(W.shape)
    value, tangent = srcgrad.jvp(elementwise, (W,), (dW,), jit=True)
    shown = srcgrad.source(elementwise, "jvp")
    assert "_rt.tanh(" in shown and "_rt.cos(" in shown
    want_value, want = srcgrad.jvp(elementwise, (W,), (dW,))
    np.testing.assert_allclose(value, want_value, rtol=1e-13)
    np.testing.assert_allclose(tangent, want, rtol=1e-11, atol=1e-13)
    eps = 1e-6
    numeric = (elementwise(W + eps * dW) - elementwise(W - eps * dW)) / (2 * eps)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-7)


def test_a_local_numpy_name_is_not_rewritten():
    import ast

    from srcgrad.jit.sweeps import simd_math
    tree = ast.parse("def f(x):\n    np = g()\n    return np.tanh(x)\n")
    assert "_rt" not in ast.unparse(simd_math(tree, {"np"}, simd.FUNCTIONS))
    tree = ast.parse("def f(x):\n    return np.tanh(x) + np.tanh(x, out=x)\n")
    assert ast.unparse(simd_math(tree, {"np"}, simd.FUNCTIONS)).count("_rt.tanh(") == 1


@pytest.mark.skipif(not simd.available(), reason="no libmvec with AVX2 here")
def test_libmvec_is_what_runs_here():
    """On a machine with libmvec and AVX2 the compiled tanh is not numba's scalar loop:
    it is libmvec's, which agrees with numba's to 4 ulp but not bit for bit everywhere."""
    assert set(simd.available()) == set(simd.FUNCTIONS)
    x = np.random.default_rng(1).uniform(-3.0, 3.0, 20000)
    scalar = numba.njit(lambda x: np.tanh(x))(x)
    assert not np.array_equal(_compiled("tanh")(x), scalar)
