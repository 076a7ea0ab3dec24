"""numba's NotImplementedError raised while compiled code runs (not when it compiles):
``jit="auto"`` runs the interpreted code instead, with a warning naming the user's line, and
remembers it for the function and those argument types; ``jit=True`` raises a
JitUnsupportedError at that line. numba reshapes only without copying: before acf9037 the
compiled ``x.T.reshape(-1)`` raised ``NotImplementedError('incompatible shape for array')``
at run time even under "auto". The tests undo that commit's rewrite (``c_order_reshapes``)
to get that error back; a NotImplementedError of the user's own code passes through."""
from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402
import srcgrad.jit.build as build  # noqa: E402
import srcgrad.jit.sweeps as sweeps  # noqa: E402

from fdcheck import check_grad  # noqa: E402
from fuzzer import load  # noqa: E402


SOURCE = """
import numpy as np


def flattened_transpose(x):
    y = np.sin(x) * 2.0
    z = y.T.reshape(-1)  # (numba: no copy of a Fortran-ordered array in C order)
    return np.sum(z * np.arange(z.size))


def own_error(x):
    if x[0] > 10.0:
        raise NotImplementedError("incompatible shape for array")
    return np.sum(x ** 2)


def contiguous_only(x):
    y = np.sin(x) * 2.0
    return np.sum(y.reshape(-1) * np.arange(y.size))
"""
RESHAPE_LINE = SOURCE.splitlines().index("    z = y.T.reshape(-1)  # (numba: no copy of a "
                                         "Fortran-ordered array in C order)") + 1
X = np.linspace(0.1, 1.2, 6).reshape(2, 3)


@pytest.fixture
def program(tmp_path, request):
    """The functions of SOURCE in a module of their own (their builds and compiled code are
    this test's)."""
    name = f"run_time_{request.node.name.replace('[', '_').replace(']', '_')}"
    return load(SOURCE, str(tmp_path), name)


class _MethodReshapesKept(sweeps._OrderedReshapes):
    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "reshape" and not (
                isinstance(func.value, ast.Name) and func.value.id in self.numpy_names):
            self.generic_visit(node)
            return node
        return super().visit_Call(node)


@pytest.fixture
def numba_reshapes(monkeypatch):
    """Compiled code with numba's own reshape for the user's ``a.reshape(...)``, as before
    acf9037 (the adjoints' ``np.reshape(g, shape, order='C')`` still through _rt)."""
    monkeypatch.setattr(build, "c_order_reshapes",
                        lambda tree, names: _MethodReshapesKept(names).visit(tree))


def test_jit_true_raises_at_the_users_line(numba_reshapes, program):
    f = program.flattened_transpose
    with pytest.raises(JitUnsupportedError,
                       match=rf"{program.__name__}\.py:{RESHAPE_LINE}: numba raised "
                             rf"NotImplementedError\('incompatible shape for array'\) while "
                             rf"the compiled code ran"):
        srcgrad.grad(f, jit=True)(X)


def test_auto_falls_back_with_a_warning_and_remembers(numba_reshapes, program):
    f = program.flattened_transpose
    g = srcgrad.grad(f, jit="auto")
    with pytest.warns(RuntimeWarning, match=rf"jit='auto' runs the interpreted gradient: "
                                            rf"\S*{program.__name__}\.py:{RESHAPE_LINE}: "):
        got = g(X)
    np.testing.assert_allclose(got, srcgrad.grad(f)(X), rtol=1e-12)
    check_grad(f, (X,), grads=(got,))
    with warnings.catch_warnings():  # (remembered: no second attempt, no second warning)
        warnings.simplefilter("error")
        np.testing.assert_allclose(g(X * 0.5), srcgrad.grad(f)(X * 0.5), rtol=1e-12)
    assert "NotImplementedError" in srcgrad.source(g).splitlines()[0]


def test_auto_jvp_and_hvp_fall_back(numba_reshapes, program):
    f = program.flattened_transpose
    t = np.ones_like(X)
    located = rf"{program.__name__}\.py:{RESHAPE_LINE}: numba raised NotImplementedError"
    with pytest.warns(RuntimeWarning, match=located):
        value, tangent = srcgrad.jvp(f, (X,), (t,), jit="auto")
    want_value, want_tangent = srcgrad.jvp(f, (X,), (t,))
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)
    with pytest.warns(RuntimeWarning, match=located):
        product = srcgrad.hvp(f, (X,), (t,), jit="auto")
    want = srcgrad.hvp(f, (X,), (t,))
    np.testing.assert_allclose(np.asarray(product), np.asarray(want), rtol=1e-12,
                               atol=1e-14)
    with pytest.raises(JitUnsupportedError, match=located):
        srcgrad.hvp(f, (X,), (t,), jit=True)


def test_a_contiguous_reshape_still_runs_compiled(numba_reshapes, program):
    f = program.contiguous_only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = srcgrad.grad(f, jit="auto")(X)
    np.testing.assert_allclose(got, srcgrad.grad(f)(X), rtol=1e-12)


def test_the_users_own_not_implemented_error_passes_through(program):
    g = srcgrad.grad(program.own_error, jit=True)
    np.testing.assert_allclose(g(np.array([0.5, 1.0])), [1.0, 2.0], rtol=1e-12)
    with pytest.raises(NotImplementedError, match="incompatible shape") as raised:
        g(np.array([20.0, 1.0]))
    assert not isinstance(raised.value, JitUnsupportedError)


def test_with_the_rewrite_it_compiles_and_agrees(program):
    f = program.flattened_transpose
    g = srcgrad.grad(f, jit=True)
    np.testing.assert_allclose(g(X), srcgrad.grad(f)(X), rtol=1e-12)
