"""Compiled gradients: ``srcgrad.grad(f, jit=True)`` through numba.

The interpreted sweeps of ``f`` are rewritten (sweeps.py) into one function that runs the
forward sweep, seeds the result's adjoint and runs the backward sweep, with one typed stack
per taped variable, and numba compiles it in nopython mode (build.py); the helpers it calls
through ``_rt`` are numba overloads chosen by argument type (runtime.py). Callees get a
compiled forward/backward pair. Arrays the code reads from globals, closures and module
attributes are passed on every call, never frozen stale into the code (inputs.py). What
numba cannot compile raises ``JitUnsupportedError`` at the user's line; with ``jit="auto"``
the interpreted gradient runs instead, with a warning.

numba is optional: this package is imported only when ``jit`` is asked for.
"""
from __future__ import annotations

__all__ = ["jit_gradient", "JitUnsupportedError", "unwrap_numba", "is_available"]

import functools
import importlib.util
import inspect
import warnings
from typing import Any, Callable

import numpy as np

from ..errors import SrcgradError
from .errors import JitUnsupportedError

_SCALARS = frozenset({float, int, np.float64, np.float32, np.int64})


def is_available() -> bool:
    """Whether numba can be imported."""
    return importlib.util.find_spec("numba") is not None


def unwrap_numba(f: Any) -> Any:
    """The Python function behind a ``@numba.njit``/``@numba.jit`` dispatcher, else ``f``."""
    py_func = getattr(f, "py_func", None)
    if py_func is not None and type(f).__module__.startswith("numba"):
        return py_func
    return f


def _require_numba() -> None:
    if not is_available():
        raise SrcgradError("jit=True needs numba: pip install 'srcgrad[jit]' (or numba>=0.61)")


class _SourceView:
    """What ``srcgrad.source`` shows for a compiled gradient: the compiled variant's text."""

    def __init__(self, state: dict, adjoint: Callable):
        self._state, self._adjoint = state, adjoint

    @property
    def source(self) -> str:
        from .build import compiled_gradient
        adj = self._state.get("last") or self._adjoint()
        return compiled_gradient(adj).source


def _raised_by_numba_compiler(e: Exception) -> bool:
    """Whether ``e`` (an LLVM RuntimeError, say) comes from numba compiling, not from the
    compiled code running: errors raised by compiled code have no numba frames."""
    tb = e.__traceback__
    while tb is not None:
        if "/numba/core/" in tb.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        tb = tb.tb_next
    return False


def _integer_input(args, indices) -> bool:
    for i in indices:
        a = args[i] if i < len(args) else None
        if isinstance(a, (bool, int, np.integer)) or (
                isinstance(a, np.ndarray) and a.dtype.kind not in "fc"):
            return True
    return False


_INT_BOUND = 2 ** 31  # (numba's int64 wraps around on overflow, Python's ints do not: a
# square of anything below the bound still fits; bigger ints run interpreted)


def _argument_kind(args, indices) -> str:
    """"interpreted" (an integer to differentiate, whose error the interpreted gradient
    gives, or a Python int too big for int64), "subclass" (an array subclass, refused),
    "scalars" (every argument a float or int: the scalar specialization), or "general"."""
    scalars = True
    for a in args:
        t = type(a)
        if t is float:
            continue
        if isinstance(a, np.ndarray) and t is not np.ndarray and not isinstance(a, np.memmap):
            return "subclass"  # (np.matrix: numba would type it as a plain array)
        if t is int and not -_INT_BOUND < a < _INT_BOUND:
            return "interpreted"
        if t not in _SCALARS:
            scalars = False
    if _integer_input(args, indices):
        return "interpreted"
    return "scalars" if scalars else "general"


def _like_input(g, x):
    """The compiled gradient ``g`` of input ``x`` in the form the interpreted one takes:
    the input's float dtype (numba computes float32 inputs mixed with Python floats in
    float64, numpy in float32), and a numpy scalar for a numpy scalar or a 0-d array."""
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        if isinstance(g, np.ndarray) and g.dtype != x.dtype:
            g = g.astype(x.dtype)
        return g[()] if x.ndim == 0 and isinstance(g, np.ndarray) else g
    if isinstance(x, np.floating) and np.ndim(g) == 0:
        return x.dtype.type(g)
    return g


def jit_gradient(interpreted: Callable, option: Any) -> Callable:
    """A compiled version of ``interpreted``, a gradient made by ``srcgrad.grad`` (or
    ``value_and_grad``/``elementwise_grad``); ``option`` is ``True`` or ``"auto"``."""
    if option not in (True, "auto"):
        raise SrcgradError(f"jit= takes False, True or 'auto'; got {option!r}")
    auto = option == "auto"
    spec = getattr(interpreted, "__srcgrad_grad__", None)
    adjoint = getattr(interpreted, "__srcgrad_adjoint__", None)
    if not is_available():
        if auto:
            warnings.warn("numba is not installed: jit='auto' runs the interpreted gradient",
                          RuntimeWarning, stacklevel=3)
            return interpreted
        _require_numba()
    refusal = None
    if spec is None or adjoint is None:
        refusal = ("a function with *args or **kwargs (or a bound method) has no compiled "
                   "gradient yet")
    elif spec.mode.has_aux or spec.mode.holomorphic:
        refusal = "has_aux=True and holomorphic=True have no compiled gradient yet"
    elif inspect.ismethod(spec.f) or any(
            p.kind is p.KEYWORD_ONLY for p in inspect.signature(spec.f).parameters.values()):
        refusal = (f"{spec.f.__qualname__}() is a bound method or has keyword-only "
                   f"parameters, which have no compiled gradient yet")
    if refusal is not None:
        if auto:
            warnings.warn(f"jit='auto': {refusal}; running the interpreted gradient",
                          RuntimeWarning, stacklevel=3)
            return interpreted
        raise JitUnsupportedError(f"{refusal}; use jit=False or jit='auto'.")
    return _compiled_wrapper(interpreted, spec, adjoint, auto)


def _compiled_wrapper(interpreted, spec, adjoint, auto: bool) -> Callable:
    import numba
    from numba.core.errors import NumbaError

    from ..rules import registry
    from .build import compiled_gradient
    from .errors import translate

    f, indices, single, mode = spec
    state: dict = {"fallback": set()}

    def compiled_for(adj):
        # the last one, while still current (a rebound global, helper or rule rebuilds)
        last = state.get("compiled")
        if last is not None and last[0] is adj and last[1].current(adj, f):
            return last[1]
        compiled = compiled_gradient(adj, f)
        state["compiled"] = (adj, compiled)
        return compiled

    def run(adj, args):
        compiled = compiled_for(adj)
        try:  # (arrays the code reads from globals and closures: passed, never frozen)
            return compiled.functions[0](*args, *compiled.arguments(f))
        except Exception as e:  # numba's compile errors (not all are NumbaErrors)
            if isinstance(e, NumbaError) or type(e).__module__.startswith("numba.") \
                    or _raised_by_numba_compiler(e):
                raise translate(e, f) from None
            raise

    def adjoint_now(kind):
        # the cache lookup of adjoint() costs more than the compiled Euler loop's tape:
        # reuse the last adjoint while the rules are the same and it serves f
        last = state.get("adjoint")
        version = registry.version()
        if last is not None and last[0] == version and last[1].serves(f):
            adj = last[1]
        else:
            adj = adjoint()
            state["adjoint"] = (version, adj)
        return adj.scalar_variant() if kind == "scalars" and adj.scalar_closed else adj

    signature = inspect.signature(f)
    n_params = len(signature.parameters)

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        if kwargs or len(args) < n_params:
            try:  # the compiled function takes every parameter, by position
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return interpreted(*args, **kwargs)  # (its message)
            bound.apply_defaults()
            args = bound.args
        kind = _argument_kind(args, indices)
        if kind == "interpreted":
            return interpreted(*args)  # (its checks and messages; Python's big ints)
        if kind == "subclass":
            kinds = sorted({type(a).__name__ for a in args if isinstance(a, np.ndarray)
                            and type(a) is not np.ndarray})
            refusal = (f"an argument of {f.__qualname__}() is a {', '.join(kinds)}, which "
                       f"numba would compute with as a plain ndarray (np.matrix's '*' is a "
                       f"matrix product): pass np.asarray(...)")
            if not auto:
                raise JitUnsupportedError(f"{refusal}; or use jit=False.")
            warnings.warn(f"jit='auto' runs the interpreted gradient: {refusal}",
                          RuntimeWarning, stacklevel=2)
            return interpreted(*args)
        adj = adjoint_now(kind)
        key = (id(adj), tuple(numba.typeof(a) for a in args)) if auto else None
        if auto and key in state["fallback"]:
            return interpreted(*args)
        try:
            value, grads = run(adj, args)
        except JitUnsupportedError as e:
            if not auto:
                raise
            state["fallback"].add(key)
            warnings.warn(f"jit='auto' runs the interpreted gradient: {e}", RuntimeWarning,
                          stacklevel=2)
            return interpreted(*args)
        state["last"] = adj
        if value is None:
            raise SrcgradError(f"{f.__qualname__}() returned None: there is nothing to "
                               f"differentiate")
        if not (mode.elementwise or type(value) is float or np.size(value) == 1):
            raise SrcgradError(
                f"grad requires {f.__qualname__}() to return a scalar, but it returned a value "
                f"of shape {np.shape(value)}. For non-scalar outputs use srcgrad.vjp(f, *args).")
        grads = [_like_input(grads[k], args[i]) for k, i in enumerate(indices)]
        g = grads[0] if single else tuple(grads)
        return (value, g) if mode.value_first else g

    gradient.__srcgrad_adjoint__ = lambda: _SourceView(state, adjoint)
    gradient.__srcgrad_grad__ = spec
    gradient.__srcgrad_jit__ = True
    return gradient
