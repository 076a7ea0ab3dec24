"""``jit="auto"`` with an argument numba cannot type (an instance of a user's class, a dict, a
list mixing strings and arrays): the interpreted code runs, with a RuntimeWarning naming the
argument and its type, in every API (issue 12's fallback; issue 9's real programs pass such
objects). ``jit=True`` raises a JitUnsupportedError saying the same, located at the function.
Neither swallows the user's own exceptions nor srcgrad's errors."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import SrcgradError
from srcgrad.jit.errors import JitUnsupportedError

pytest.importorskip("numba")

rng = np.random.default_rng(1207)
X = rng.uniform(0.5, 1.5, 3)
V = rng.standard_normal(3)


class Model:
    def __init__(self):
        self.w = np.array([0.5, -1.0, 2.0])
        self.name = "m"


def with_an_object(x, m):
    return np.sum(np.sin(x) * m.w) + np.sum(x ** 2) * m.w[0]


def with_a_dict(x, params):
    return np.sum(np.tanh(params["w"] * x) * params["scale"])


def with_a_mixed_list(x, parts):
    return np.sum(parts[0] * x ** 3) if parts[1] == "cube" else np.sum(x)


MODEL = Model()
PARAMS = {"w": np.array([1.0, 2.0, 0.5]), "scale": 1.5, "label": "layer"}
PARTS = [np.array([1.0, -2.0, 0.5]), "cube"]
CASES = [(with_an_object, MODEL, "m", r"Model"), (with_a_dict, PARAMS, "params", r"dict"),
         (with_a_mixed_list, PARTS, "parts", r"list")]


def _fd_gradient(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def _located(f, name, kind):
    line = inspect.getsourcelines(f)[1]
    return rf"\S*test_jit_auto_fallback\.py:{line}: argument '{name}' of {f.__name__}\(\) is a " \
           rf"\S*{kind}, which numba cannot type"


@pytest.mark.parametrize("f, arg, name, kind", CASES)
def test_grad_falls_back_with_a_warning_naming_the_argument(f, arg, name, kind):
    expected = srcgrad.grad(f)(X, arg)
    assert np.allclose(expected, _fd_gradient(lambda y: f(y, arg), X), rtol=1e-6, atol=1e-8)
    gradient = srcgrad.grad(f, jit="auto")
    with pytest.warns(RuntimeWarning, match="jit='auto' runs the interpreted gradient: "
                      + _located(f, name, kind)):
        got = gradient(X, arg)
    assert np.allclose(got, expected, rtol=1e-12, atol=0)
    with warnings.catch_warnings():  # (the types that fell back are remembered: no warning)
        warnings.simplefilter("error")
        assert np.allclose(gradient(X * 2.0, arg), srcgrad.grad(f)(X * 2.0, arg))


@pytest.mark.parametrize("f, arg, name, kind", CASES)
def test_jit_true_raises_located_naming_the_argument_and_its_type(f, arg, name, kind):
    with pytest.raises(JitUnsupportedError, match=_located(f, name, kind) + r".*jit=False"):
        srcgrad.grad(f, jit=True)(X, arg)


@pytest.mark.parametrize("api", ["value_and_grad", "vjp", "jvp", "hessian", "elementwise_grad"])
def test_every_api_falls_back(api):
    f, arg = with_an_object, MODEL
    g = _fd_gradient(lambda y: f(y, arg), X)
    hess = np.stack([_fd_gradient(lambda y: srcgrad.grad(f)(y, arg)[i], X) for i in range(3)])
    with pytest.warns(RuntimeWarning, match=r"jit='auto' runs the interpreted"
                      r".*argument 'm' of \S*(with_an_object|<lambda>)\(\) is a \S*Model"):
        if api == "value_and_grad":
            value, got = srcgrad.value_and_grad(f, jit="auto")(X, arg)
            assert np.isclose(value, f(X, arg))
            assert np.allclose(got, g, rtol=1e-6, atol=1e-8)
        elif api == "vjp":
            value, pullback = srcgrad.vjp(f, X, arg, jit="auto")
            assert np.allclose(pullback(1.0)[0], g, rtol=1e-6, atol=1e-8)
        elif api == "jvp":
            value, tangent = srcgrad.jvp(f, (X, arg), (V, None), jit="auto")
            assert np.isclose(tangent, g @ V, rtol=1e-6, atol=1e-8)
        elif api == "hessian":
            assert np.allclose(srcgrad.hessian(f, jit="auto")(X, arg), hess, rtol=1e-5,
                               atol=1e-6)
        else:
            elementwise = srcgrad.elementwise_grad(lambda y, m: np.sin(y) * m.w, jit="auto")
            assert np.allclose(elementwise(X, arg), np.cos(X) * arg.w)


def test_hvp_of_a_closure_over_an_object_falls_back():
    # (the object read from a closure: refused where numba would freeze it, before typing)
    hess = np.stack([_fd_gradient(lambda y: srcgrad.grad(with_an_object)(y, MODEL)[i], X)
                     for i in range(3)])
    with pytest.warns(RuntimeWarning, match="jit='auto' runs the interpreted hvp"):
        got = srcgrad.hvp(lambda y: with_an_object(y, MODEL), (X,), (V,), jit="auto")
    assert np.allclose(got, hess @ V, rtol=1e-5, atol=1e-6)


def _raises_inside(x, m):
    if x[0] > 100.0:
        raise ValueError("the user's own error")
    return np.sum(x * m.w)


def _raises_compiled(x, w):
    if x[0] > 100.0:
        raise ValueError("the user's own error")
    return np.sum(x * w)


def test_the_users_exceptions_are_not_swallowed():
    big = X + 200.0
    with pytest.warns(RuntimeWarning), pytest.raises(ValueError, match="the user's own error"):
        srcgrad.grad(_raises_inside, jit="auto")(big, MODEL)  # (interpreted, after the warning)
    with pytest.raises(ValueError, match="the user's own error"):
        srcgrad.grad(_raises_compiled, jit="auto")(big, np.ones(3))  # (compiled: no fallback)


def _vector(x, m):
    return np.sin(x) * m.w


def test_srcgrads_own_errors_are_not_swallowed():
    with pytest.warns(RuntimeWarning), pytest.raises(SrcgradError, match="return a scalar"):
        srcgrad.grad(_vector, jit="auto")(X, MODEL)


def test_typed_arguments_still_compile_after_a_fallback():
    gradient = srcgrad.grad(with_a_dict, jit="auto")
    with pytest.warns(RuntimeWarning):
        gradient(X, PARAMS)
    f = srcgrad.grad(_raises_compiled, jit="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (compiled: no fallback warning)
        assert np.allclose(f(X, np.ones(3)), np.ones(3))


def test_jit_true_names_an_untyped_argument_after_compiled_calls():
    gradient = srcgrad.grad(with_a_mixed_list, jit=True)
    assert np.allclose(gradient(X, [np.ones(3), np.ones(3)]), np.ones(3))  # (compiled)
    with pytest.raises(JitUnsupportedError, match=_located(with_a_mixed_list, "parts", "list")):
        gradient(X, PARTS)
