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

__all__ = [
    "JitUnsupportedError",
    "check_option",
    "is_available",
    "jit_forward",
    "jit_gradient",
    "jit_vjp",
    "second_order",
    "unwrap_numba",
]

import functools
import importlib.util
import inspect
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from ..boundary import check_cotangent
from ..errors import SrcgradError
from ..generated import remember
from ..rules import registry
from .dtypes import explain, mismatch
from .errors import (JitUnsupportedError, argument_type, run_time_refusal, translate,
                     untyped_argument)

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
    if _integer_input(args, indices):
        return "interpreted"
    scalars = True
    for a in args:
        t = type(a)
        if t is float:
            continue
        if isinstance(a, np.ndarray) and t is not np.ndarray and not isinstance(a, np.memmap):
            return "subclass"  # (np.matrix: numba would type it as a plain array)
        if mismatch(a) is not None:
            return "subclass"  # (refused too: see _subclass_refusal)
        if t is int and not -_INT_BOUND < a < _INT_BOUND:
            return "interpreted"
        if t not in _SCALARS:
            scalars = False
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


def _compile_failure(e: Exception) -> bool:
    """Whether ``e`` comes from numba compiling (not all of its compile errors are
    NumbaErrors), not from the compiled code running."""
    from numba.core.errors import NumbaError
    return isinstance(e, NumbaError) or type(e).__module__.startswith("numba.") \
        or _raised_by_numba_compiler(e)


def _unboxing_failure(e: Exception) -> bool:
    """Whether ``e`` is numba's refusal to pass an argument to compiled code (a list whose
    items differ in type), raised before the compiled code runs."""
    return type(e) is TypeError and str(e).startswith("can't unbox")


def _refuse_int_power(e: Exception, f) -> None:
    """A ``JitUnsupportedError`` for the OverflowError the compiled ``_rt.power`` raises
    where an int to an int power has no int64 result numba could give, and for the
    ValueError of the compiled ``sum()`` of an empty list, whose Python result is the int 0
    (runtime.py)."""
    from .runtime import EMPTY_SUM, INT_POWER
    message = str(e)
    advice = {INT_POWER: "make one of them a float (float(k)), or use", EMPTY_SUM: "use"}
    for prefix, error in ((INT_POWER, OverflowError), (EMPTY_SUM, ValueError)):
        if isinstance(e, error) and message.startswith(prefix):
            what, _, line = message.removeprefix("srcgrad: ").rpartition(" at ")
            raise JitUnsupportedError(
                f"{line}: {what}, in compiled code of {f.__qualname__}(); "
                f"{advice[prefix]} jit=False or jit='auto'.") from None


class _Entry:
    """The compiled ``variant`` of one function's builds, as its wrapper calls it: the last
    compiled variant reused while current (a rebound global, helper or rule rebuilds),
    numba's compile errors translated, and under ``jit="auto"`` the argument types that fell
    back remembered."""

    def __init__(self, f, variant: str, auto: bool, resolve=None):
        self.f, self.variant, self.auto, self.resolve = f, variant, auto, resolve
        self.last = None  # (build, Compiled)
        self.fallback: set = set()
        self.note = None  # under auto: why the last call ran the interpreted code

    def compiled(self, build):
        from .build import compiled_forward, compiled_gradient
        last = self.last
        if last is not None and last[0] is build and last[1].current(build, self.f):
            return last[1]
        if self.resolve is not None:
            compiled = compiled_forward(build, self.resolve, self.f)
        else:
            compiled = compiled_gradient(build, self.f, self.variant)
        self.last = (build, compiled)
        return compiled

    def key(self, build, args):
        if not self.auto:
            return None
        try:
            return id(build), tuple(argument_type(a) for a in args)
        except (ValueError, TypeError):  # (an object numba cannot type: remembered by type)
            return id(build), tuple(type(a) for a in args), "untyped"

    def call(self, build, args, key=None, fixed=None):
        """The compiled function's result for ``args`` (every parameter, by position);
        ``JitUnsupportedError`` where numba cannot compile it, remembered under auto.
        ``fixed``: ``(Compiled, inputs)`` to run instead of the current variant and the
        values it reads from outside now."""
        compiled, inputs = fixed or (None, None)
        if compiled is None:
            compiled = self.compiled(build)
            inputs = compiled.arguments(self.f)
        try:  # (arrays the code reads from globals and closures: passed, never frozen)
            return compiled.functions[0](*args, *inputs)
        except JitUnsupportedError:
            self.fallback.add(key)
            raise
        except Exception as e:
            if _compile_failure(e) or _unboxing_failure(e):
                self.fallback.add(key)
                raise (untyped_argument(self.f, args, self.tangents(args))
                       or translate(e, self.f)) from None
            refusal = run_time_refusal(e, self.f, compiled)
            if refusal is not None:  # (numba's NotImplementedError as the code ran)
                self.fallback.add(key)
                raise refusal from None
            _refuse_int_power(e, self.f)  # (not remembered: it depends on the values)
            raise

    def tangents(self, args) -> int:
        """How many of ``args`` come before the function's parameters: a jvp's tangents."""
        return len(args) - len(inspect.signature(self.f).parameters) \
            if self.variant == "jvp" else 0

    def source(self, build) -> str:
        from .build import shown_text
        return shown_text(self.compiled(build))


# build -> {variant: (_Entry, _SourceView)}: the last entry of each variant of a build, so
# that a vjp or jvp called again reuses its checks, and srcgrad.source(f, "jvp") (which
# remembers what ran weakly) finds the view alive while the build is
_LAST_ENTRIES: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()


def _entry_of(build, f, variant: str, auto: bool, resolve=None) -> tuple:
    """``(entry, source view)`` of ``build``'s compiled ``variant`` for ``f``."""
    entries = _LAST_ENTRIES.setdefault(build, {})
    found = entries.get(variant)
    if found is None or found[0].f is not f or found[0].auto != auto:
        entry = _Entry(f, variant, auto, resolve)
        found = entries[variant] = (entry, _SourceView(entry, lambda: build))
    return found


def _fall_back(auto: bool, what: str, stacklevel: int = 3) -> None:
    """Under ``jit="auto"``, warn that the interpreted code runs; else raise."""
    if not auto:
        raise JitUnsupportedError(f"{what}; or use jit=False.")
    warnings.warn(f"jit='auto' runs the interpreted code: {what}", RuntimeWarning,
                  stacklevel=stacklevel + 1)


def _subclass_refusal(f, args) -> str:
    dtypes = sorted({mismatch(a) for a in args} - {None})
    if dtypes:
        return f"an argument of {f.__qualname__}() is {', '.join(dtypes)}: {explain(dtypes[0])}"
    kinds = sorted({type(a).__name__ for a in args if isinstance(a, np.ndarray)
                    and type(a) is not np.ndarray})
    return (f"an argument of {f.__qualname__}() is a {', '.join(kinds)}, which numba would "
            f"compute with as a plain ndarray (np.matrix's '*' is a matrix product): pass "
            f"np.asarray(...)")


class _SourceView:
    """What ``srcgrad.source`` shows for a compiled gradient or pullback: the compiled
    variant's text (the one the last call ran, else the one the next call compiles), or
    under ``jit="auto"``, when numba cannot compile it, the interpreted code and why."""

    def __init__(self, entry: _Entry, build: Callable):
        self._entry, self._build = entry, build

    @property
    def source(self) -> str:
        last = self._entry.last
        build = last[0] if last is not None and not last[0].stale() else self._build()
        if self._entry.note is not None:
            return (f"# jit='auto' ran the interpreted code on the last call: "
                    f"{self._entry.note}\n{build.source}")
        try:
            return self._entry.source(build)
        except JitUnsupportedError as e:
            if not self._entry.auto:
                raise
            return (f"# jit='auto' runs the interpreted code here: {e}\n"
                    f"{build.source}")


def _compiled_wrapper(interpreted, spec, adjoint, auto: bool) -> Callable:
    from .build import guard

    f, indices, single, mode = spec
    entry = _Entry(f, "grad", auto)
    state: dict = {}

    def adjoint_now(kind):
        # the cache lookup of adjoint() costs more than the compiled Euler loop's tape:
        # reuse the last adjoint while the rules are the same and it serves f, with the same
        # code (an adjoint holds f itself: serves(f) cannot see f.__code__ reassigned)
        last = state.get("adjoint")
        version = registry.version()
        if last is not None and last[0] == version and last[2] is f.__code__ \
                and last[1].serves(f):
            adj = last[1]
        else:
            adj = adjoint()
            state["adjoint"] = (version, adj, f.__code__)
        return adj.scalar_variant() if kind == "scalars" and adj.scalar_closed else adj

    signature = inspect.signature(f)
    n_params = len(signature.parameters)
    # argument kind -> (Guard, Compiled): while the guard holds, a call runs the compiled
    # function it was made for without checking the builds again (jit=True; under "auto"
    # every call goes through the entry, which remembers the argument types that fell back)
    fast: dict = {}

    def through_entry(kind, args):
        adj = adjoint_now(kind)
        key = entry.key(adj, args)
        if auto and key in entry.fallback:
            return None
        try:
            result = entry.call(adj, args, key)
        except JitUnsupportedError as e:
            if not auto:
                raise
            warnings.warn(f"jit='auto' runs the interpreted gradient: {e}", RuntimeWarning,
                          stacklevel=3)
            entry.note = str(e)
            return None
        entry.note = None
        if not auto:
            compiled = entry.last[1]
            checks = guard(compiled, adj, f, registry.version())
            fast[kind] = None if checks is None else (checks, compiled)
        return result

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        if kwargs or len(args) < n_params:
            try:  # the compiled function takes every parameter, by position
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return interpreted(*args, **kwargs)  # (its message)
            bound.apply_defaults()
            args = bound.args
        for a in args:
            if type(a) is not float:
                kind = _argument_kind(args, indices)
                break
        else:
            kind = "scalars"
        if kind == "interpreted":
            return interpreted(*args)  # (its checks and messages; Python's big ints)
        if kind == "subclass":
            _fall_back(auto, _subclass_refusal(f, args), stacklevel=2)
            return interpreted(*args)
        path = fast.get(kind)
        if path is not None and path[0].holds(registry.version(), f):
            compiled = path[1]
            try:
                value, grads = compiled.functions[0](*args, *compiled.arguments(f)) \
                    if compiled.inputs else compiled.functions[0](*args)
            except Exception as e:
                if _compile_failure(e) or _unboxing_failure(e):  # (new argument types)
                    raise (untyped_argument(f, args) or translate(e, f)) from None
                refusal = run_time_refusal(e, f, compiled)
                if refusal is not None:
                    raise refusal from None
                _refuse_int_power(e, f)
                raise
        else:
            result = through_entry(kind, args)
            if result is None:
                return interpreted(*args)
            value, grads = result
        if value is None:
            raise SrcgradError(f"{f.__qualname__}() returned None: there is nothing to "
                               f"differentiate")
        if not (mode.elementwise or type(value) is float or np.size(value) == 1):
            raise SrcgradError(
                f"grad requires {f.__qualname__}() to return a scalar, but it returned a value "
                f"of shape {np.shape(value)}. For non-scalar outputs use srcgrad.vjp(f, *args).")
        if single:
            x = args[indices[0]]
            g = grads[0] if type(x) is float else _like_input(grads[0], x)
        else:
            g = tuple(_like_input(grads[k], args[i]) for k, i in enumerate(indices))
        return (value, g) if mode.value_first else g

    gradient.__srcgrad_adjoint__ = lambda: _SourceView(entry, adjoint)
    gradient.__srcgrad_grad__ = spec
    gradient.__srcgrad_jit__ = True
    return gradient


# -- vjp, jvp, and the second order (hvp, hessian) -------------------------------------------

def _check_option(option) -> bool:
    """Whether ``option`` is "auto" (else True); anything else raises."""
    if option not in (True, "auto"):
        raise SrcgradError(f"jit= takes False, True or 'auto'; got {option!r}")
    if not is_available():
        if option == "auto":
            return True
        _require_numba()
    return option == "auto"


def _bind_all(f, args, kwargs):
    """Every parameter of ``f``, by position (defaults applied), or None when ``f`` takes
    keyword-only parameters, ``*args`` or ``**kwargs`` (no compiled form yet)."""
    signature = inspect.signature(f)
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
           for p in signature.parameters.values()):
        return None
    bound = signature.bind(*args, **kwargs)  # (Python's message when they do not fit)
    bound.apply_defaults()
    return bound.args


def _vjp_refusal(f, args, has_aux, bound_method, checkpoint) -> str | None:
    if has_aux:
        return "vjp(has_aux=True) has no compiled form yet"
    if bound_method:
        return f"{f.__qualname__}() is a bound method, which has no compiled vjp yet"
    if checkpoint is not None:
        return "vjp(checkpoint=...) has no compiled form yet"
    return _argument_refusal(f, args)


def _argument_refusal(f, args) -> str | None:
    """Why arguments ``args`` of ``f`` cannot run compiled, or None."""
    kind = _argument_kind(args, ())
    if kind == "subclass":
        return _subclass_refusal(f, args)
    if kind == "interpreted":
        return "a Python int beyond +-2**31 (numba's int64 would wrap around)"
    return None


def _prepared_cotangent(g, out):
    """The cotangent as the compiled vjp takes it: a float for a scalar output, an array
    (of floats) for an array output."""
    if isinstance(out, np.ndarray) and out.ndim > 0:
        g = np.asarray(g)
        return g if g.dtype.kind in "fc" else g.astype(np.float64)
    return complex(g) if isinstance(g, complex) else float(np.asarray(g).reshape(()))


def _snapshot(values) -> tuple:
    """``values`` with every array (also in tuples) copied."""
    return tuple(v.copy() if isinstance(v, np.ndarray) else _snapshot(v)
                 if isinstance(v, tuple) else v for v in values)


def jit_vjp(adj, f, args: tuple, kwargs: dict, wrt: tuple, option, *, has_aux=False,
            bound_method=False, checkpoint=None):
    """``(value, pullback)`` of ``srcgrad.vjp(f, *args, jit=option)``, compiled: the value
    from the forward sweep without a tape, each ``pullback(g)`` from one compiled function
    running the forward sweep again, then the backward sweep seeded with ``g`` (the tape
    never leaves compiled code). None under ``jit="auto"`` when the interpreted vjp should
    run (with a warning); ``JitUnsupportedError`` under ``jit=True``."""
    auto = _check_option(option)
    if not is_available():
        warnings.warn("numba is not installed: jit='auto' runs the interpreted vjp",
                      RuntimeWarning, stacklevel=3)
        return None
    positional = _bind_all(f, args, kwargs)
    refusal = _vjp_refusal(f, args, has_aux, bound_method, checkpoint)
    if positional is None:
        refusal = (f"{f.__qualname__}() has keyword-only parameters, *args or **kwargs, "
                   f"which have no compiled vjp yet")
    if refusal is not None:
        _fall_back(auto, refusal)
        return None
    values, _ = _entry_of(adj, f, "value", auto)
    pullbacks, shown = _entry_of(adj, f, "vjp", auto)
    try:
        out = values.call(adj, positional)
        # each pullback runs the forward sweep again: on the arguments and outside data as
        # they are now (copies), through the code as it is now, as the interpreted pullback
        # pops values saved now
        compiled = pullbacks.compiled(adj)
        fixed = (compiled, _snapshot(compiled.arguments(f)))
    except JitUnsupportedError as e:
        if not auto:
            raise  # (located and with what to do already)
        _fall_back(auto, str(e))
        return None
    positional = _snapshot(positional)
    if isinstance(out, tuple):
        _fall_back(auto, f"{f.__qualname__}() returns a tuple, which has no compiled vjp yet")
        return None

    def pullback(g):
        check_cotangent(g, out)
        _, grads = pullbacks.call(adj, (*positional, _prepared_cotangent(g, out)),
                                  fixed=fixed)
        result: list = [None] * len(args)
        for k, i in enumerate(wrt):
            result[i] = _like_input(grads[k], args[i])
        return tuple(result)

    pullback.__srcgrad_adjoint__ = lambda: shown
    remember(f, "vjp", [shown])  # srcgrad.source(f, "vjp")
    return out, pullback


def jit_forward(built, fn, interpreted: Callable, option, resolve, primals: tuple):
    """``(jvp function, what srcgrad.source shows)`` for ``srcgrad.jvp(f, ..., jit=option)``:
    the forward-mode build ``built`` of ``fn`` compiled, called like ``interpreted`` (its
    generated jvp function) as ``(*tangents, *primals)``; ``resolve(call_site)`` is the
    build a call of a user helper runs. Under ``jit="auto"``, where numba cannot compile it,
    ``interpreted`` with a warning."""
    auto = _check_option(option)
    if not is_available():
        warnings.warn("numba is not installed: jit='auto' runs the interpreted jvp",
                      RuntimeWarning, stacklevel=3)
        return interpreted, built
    entry, shown = _entry_of(built, fn, "jvp", auto, resolve)
    try:
        _bind_all(fn, primals, {}) is not None or _fall_back(
            False, f"{fn.__qualname__}() has keyword-only parameters, *args or **kwargs, "
                   f"which have no compiled jvp yet")
        kind = _argument_kind(primals, ())
        if kind != "general" and kind != "scalars":
            _fall_back(False, _subclass_refusal(fn, primals) if kind == "subclass" else
                       "a Python int beyond +-2**31 (numba's int64 would wrap around)")
    except JitUnsupportedError as e:
        _fall_back(auto, str(e).removesuffix("; or use jit=False."))
        return interpreted, built

    def compiled_jvp(*arguments):
        n = len(arguments) - len(primals)
        positional = _bind_all(fn, arguments[n:], {})
        try:
            value, tangent = entry.call(built, (*arguments[:n], *positional))
        except JitUnsupportedError as e:
            if not auto:
                raise
            warnings.warn(f"jit='auto' runs the interpreted jvp: {e}", RuntimeWarning,
                          stacklevel=3)
            return interpreted(*arguments)
        return value, _like_input(tangent, value) if isinstance(value, (
            np.ndarray, np.floating)) else tangent

    return compiled_jvp, shown


# adjoint -> the _HvpView of the last compiled hvp or hessian made from it
_HVP_VIEWS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


class _HvpView:
    """What ``srcgrad.source`` shows for a compiled hvp or hessian: the compiled jvp of the
    fused gradient (the last one run)."""

    def __init__(self):
        self.compiled = None
        self.note = None

    @property
    def source(self) -> str:
        from .build import shown_text
        if self.compiled is None:
            return f"# jit='auto' ran the interpreted code: {self.note}\n"
        return shown_text(self.compiled)


def check_option(option) -> None:
    """Raise for a ``jit=`` other than False, True or "auto", or True without numba."""
    if option is not False:
        _check_option(option)


def _second_order_refusal(f, primals, positional) -> str | None:
    if inspect.ismethod(f) or positional is None:
        return (f"{getattr(f, '__qualname__', f)}() is a bound method or takes keyword-only "
                f"parameters, *args or **kwargs, which have no compiled second order yet")
    return _argument_refusal(f, primals)


def second_order(api: str, f, primals: tuple, wrt: tuple, option, adjoint_for, forward_of,
                 resolve):
    """A function ``products(tangents) -> tuple`` of compiled Hessian-vector products of
    scalar ``f`` at ``primals`` with respect to the arguments ``wrt`` (one tangent and one
    product each), for ``srcgrad.hvp``/``hessian`` with ``jit=option``: forward mode over
    the gradient fused into one function, compiled (hvp.py). None where the interpreted
    code should run: under ``jit="auto"`` with a warning, for an integer to differentiate
    (the interpreted error) silently; the function returns None where the interpreted
    code should run (with a warning under "auto" where numba cannot compile it). ``adjoint_for(f, wrt, scalars)`` is the gradient's
    build, ``forward_of(fn, wrt)`` a forward-mode build, ``resolve(call_site)`` the
    forward-mode build a call in one calls (the sweeps of a user function). The function's ``view`` is what
    ``srcgrad.source`` shows."""
    auto = _check_option(option)
    shown: list = []
    if not is_available():
        warnings.warn(f"numba is not installed: jit='auto' runs the interpreted {api}",
                      RuntimeWarning, stacklevel=3)
        return None
    if _integer_input(primals, wrt):
        return None
    positional = _bind_all(f, primals, {})
    refusal = _second_order_refusal(f, primals, positional)
    if refusal is not None:
        _fall_back(auto, refusal)
        return None
    scalars = all(type(a) in _SCALARS for a in primals)

    def compiled_now():
        from .hvp import compiled_hvp
        adj = adjoint_for(f, wrt, scalars)
        compiled, fused = compiled_hvp(adj, forward_of, resolve, f)
        # (one view per adjoint, alive while it is: srcgrad.source(f, "hvp") remembers it
        # weakly)
        view = _HVP_VIEWS.get(adj)
        if view is None:
            view = _HVP_VIEWS[adj] = _HvpView()
        view.compiled, view.note = compiled, None
        shown[:] = [view, compiled.functions[0], compiled.arguments(fused)]

    def run(tangents):
        # (the code and the data read from outside, as checked and read when this function
        # was made: the columns of one Hessian share them)
        if _argument_kind(tangents, ()) == "subclass":
            raise JitUnsupportedError(f"{_subclass_refusal(f, tangents)}; or use jit=False.")
        _, function, inputs = shown
        try:
            (value, _), tangent = function(*tangents, *positional, *inputs)
        except JitUnsupportedError:
            raise
        except Exception as e:
            if _compile_failure(e) or _unboxing_failure(e):
                raise (untyped_argument(f, positional) or translate(e, f)) from None
            refusal = run_time_refusal(e, f, shown[0].compiled)
            if refusal is not None:
                raise refusal from None
            _refuse_int_power(e, f)
            raise
        if not (type(value) is float or np.size(value) == 1):
            return None  # (the interpreted code runs, and says what is wrong)
        # (the lazy zero, of the whole result or of the gradients: they do not depend on x)
        products = tangent[1] if isinstance(tangent, tuple) else 0.0
        if not isinstance(products, tuple):
            products = (0.0,) * len(wrt)
        return tuple(_like_input(_dense_like(p, primals[i]), primals[i])
                     for p, i in zip(products, wrt))

    try:
        compiled_now()  # (refusals and numba's typing errors surface at the first call)
    except JitUnsupportedError as e:
        if not auto:
            raise
        warnings.warn(f"jit='auto' runs the interpreted {api}: {e}", RuntimeWarning,
                      stacklevel=3)
        return None
    if not auto:
        run.view = shown[0]
        return run

    fell_back: list = []  # (once refused as it ran: the later columns of a hessian too)

    def run_or_none(tangents):
        if fell_back:
            return None
        try:
            return run(tangents)
        except JitUnsupportedError as e:
            shown[0].compiled, shown[0].note = None, str(e)
            fell_back.append(e)
            warnings.warn(f"jit='auto' runs the interpreted {api}: {e}", RuntimeWarning,
                          stacklevel=3)
            return None
    run_or_none.view = shown[0]
    return run_or_none


def _dense_like(p, x):
    """A product as the interpreted hvp gives it: a zero (lazy or 0.0) shaped like ``x``."""
    if isinstance(x, np.ndarray) and np.shape(p) != x.shape:
        return np.broadcast_to(np.asarray(p, dtype=float), x.shape).copy()
    return p
