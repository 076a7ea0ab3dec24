"""Checks at the boundary of the public API, shared by every entry point (grad,
value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, hvp): what may be differentiated, and with
respect to which arguments.

* ``as_function`` turns what the user passed as ``f`` into a Python function the transformer
  can read: functions with a derivative rule (``np.sin``, ``math.exp``, ``abs``),
  ``functools.partial`` objects and objects with ``__call__`` get a small generated wrapper or
  their bound method; anything else is refused.
* ``check_argument`` refuses a differentiated argument whose gradient would be meaningless or
  silently wrong: None, strings, integers, pandas objects (their operators align by label),
  ``np.matrix`` (its ``*`` is a matrix product), masked arrays (the mask is lost), other
  ndarray subclasses, objects that only convert to arrays, and objects with their own
  operators unless their class is a registered vector space (vspace.py).
"""
from __future__ import annotations

__all__ = ["as_function", "unbind", "callee_function", "signature_text", "argument_label",
           "check_argument", "check_shaped_argument", "check_sequence", "check_cotangent",
           "structure_shape"]

import functools
import inspect
import numbers
import types
import weakref
from typing import Any, Callable

import numpy as np

from . import codegen
from .errors import NonDifferentiableError, SrcgradError
from .rules import is_nondifferentiable, lookup
from .runtime import is_foreign_array
from .vspace import space_of

_WRAPPERS: dict = {}
# operators a class may define in Python: srcgrad's rules for them assume numbers and arrays
_OWN_OPERATORS = ("__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
                  "__rmul__", "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__",
                  "__pow__", "__rpow__", "__neg__", "__array_ufunc__",
                  "__array_function__")
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
              np.ufunc, functools.partial)


def as_function(f: Any, api: str) -> Callable:
    """A function whose source srcgrad can transform, computing what ``f`` computes."""
    if isinstance(f, types.FunctionType):
        # (a Python function with a rule, scipy's behind a decorator: the rule, not its source)
        return _rule_wrapper(f, api) if lookup(f) is not None else entry_function(f)
    if isinstance(f, types.MethodType):  # (the entry points pass self, undifferentiated)
        return f if isinstance(f.__func__, types.FunctionType) else _rule_wrapper(f, api)
    if isinstance(f, functools.partial):
        return _partial_wrapper(f, api)
    if callable(f) and (lookup(f) is not None or is_nondifferentiable(f)):
        return _rule_wrapper(f, api)
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):  # an instance of a class defining __call__
        return f.__call__
    if callable(f) and not isinstance(f, type):
        name = getattr(f, "__qualname__", type(f).__name__)
        raise SrcgradError(
            f"{api}() cannot differentiate '{name}': it has no Python source and no "
            f"derivative rule. Register one with @srcgrad.rule({name}), or wrap it in a Python "
            f"function built from differentiable operations.")
    raise SrcgradError(f"{api}() takes the function to differentiate first; got "
                       f"{type(f).__name__} {f!r:.60}")


_CALLEES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def callee_function(fn):
    """What differentiated code calls when it meets ``fn`` at run time (a closure's or an
    argument's value): a partial becomes its wrapper (one per partial object), an object
    whose class defines ``__call__`` that method, bound; anything else is ``fn`` itself."""
    if isinstance(fn, functools.partial):
        wrapper = _CALLEES.get(fn)
        if wrapper is None:
            wrapper = _CALLEES[fn] = _partial_wrapper(fn, "grad")
        return wrapper
    if isinstance(getattr(type(fn), "__call__", None), types.FunctionType) and not \
            isinstance(fn, (types.FunctionType, types.MethodType, type)):
        return fn.__call__
    return entry_function(fn)


def entry_function(fn):
    """``fn``, or the function a traceback-relocating wrapper (tracebacks.py) runs, whose
    source is the one to differentiate; a gradient keeps its wrapper (source_function reads
    its ``__srcgrad_grad__``)."""
    entry = getattr(fn, "__srcgrad_entry__", None)
    if entry is None or hasattr(fn, "__srcgrad_grad__"):
        return fn
    return entry


def _rule_wrapper(f, api: str) -> Callable:
    """``def sin(x0): return _f(x0)`` around a function that has a rule (one per ``f``)."""
    try:
        key = (f, api)
        cached = _WRAPPERS.get(key)
    except TypeError:
        key, cached = None, None
    if cached is not None:
        return cached
    nin = getattr(f, "nin", None)
    if nin is None:
        try:
            params = [p for p in inspect.signature(f).parameters.values()
                      if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                             p.POSITIONAL_OR_KEYWORD)]
            nin = len(params)
        except (TypeError, ValueError):
            nin = 1
    name = getattr(f, "__name__", "f")
    name = name if name.isidentifier() else "f"
    args = ", ".join(f"x{i}" for i in range(nin))
    source = f"def {name}({args}):\n    return _f({args})\n"
    wrapper = codegen.compile_source(source, f"{name} wrapper", {"_f": f})[name]
    if key is not None:
        _WRAPPERS[key] = wrapper
    return wrapper


def _partial_wrapper(p: functools.partial, api: str) -> Callable:
    """``def loss(w, *, data=<bound>): return _func(<bound args>, w, data=data)``: the
    partial's remaining signature, its bound values as defaults and constants."""
    return _signature_wrapper(p, as_function(p.func, api), p.args)


def unbind(f) -> tuple[Callable, tuple]:
    """``(function, leading arguments)``: a bound method's function and its ``self`` (which
    the entry points pass first and never differentiate), else ``(f, ())``."""
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        return f.__func__, (f.__self__,)
    return f, ()


def _signature_wrapper(f, func, leading: tuple) -> Callable:
    """A generated function with ``f``'s signature calling ``func(*leading, <its params>)``;
    defaults are ``f``'s own objects."""
    name = getattr(getattr(func, "__func__", func), "__name__", "f")
    name = name if name.isidentifier() else "f"
    params, call, namespace = signature_text(f)
    namespace["_func"] = func
    for i, value in enumerate(leading):
        namespace[f"_bound{i}"] = value
    call = ", ".join([f"_bound{i}" for i in range(len(leading))] + ([call] if call else []))
    source = f"def {name}({params}):\n    return _func({call})\n"
    return codegen.compile_source(source, f"{name} wrapper", namespace)[name]


def signature_text(f, skip: int = 0):
    """``(parameters text, call arguments text, namespace of defaults)`` of ``f``'s
    signature without its first ``skip`` parameters, for generated wrappers."""
    name = getattr(f, "__name__", "f")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        raise SrcgradError(f"cannot differentiate through {name}: its signature is "
                           f"unknown") from None
    params, call, namespace = [], [], {}
    for p in list(sig.parameters.values())[skip:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SrcgradError(f"cannot differentiate through {name} again: '*{p.name}' "
                               f"parameters are not supported")
        text = p.name
        if p.default is not p.empty:
            namespace[f"_default_{p.name}"] = p.default
            text += f"=_default_{p.name}"
        if p.kind == p.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        params.append(text)
        call.append(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}")
    return ", ".join(params), ", ".join(call), namespace


# -- arguments ---------------------------------------------------------------------------
def argument_label(f, index: int) -> str:
    """``argument 'x' of f()``: how every entry point names a differentiated argument."""
    fn = getattr(f, "__func__", f)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    try:
        params = [p.name for p in inspect.signature(f).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    which = f"'{params[index]}'" if index < len(params) else f"#{index}"
    return f"argument {which} of {name}()"


def _refusal(x) -> str | None:
    """Why ``x`` cannot be differentiated with respect to, or None when it can."""
    module = type(x).__module__ or ""
    if x is None:
        return "None", "pass a float or an array"
    if isinstance(x, (str, bytes)):
        return f"a {type(x).__name__}", "pass a float or an array"
    if isinstance(x, (bool, np.bool_)):
        return "a bool", "pass a float, or leave it out of wrt"
    if isinstance(x, (int, np.integer)):
        return "an integer", "pass a float (float(x)), or leave it out of wrt"
    if module.split(".")[0] == "pandas":
        return (f"a pandas {type(x).__name__} (its operators align by label)",
                "pass x.to_numpy(dtype=float)")
    if isinstance(x, np.matrix):
        return ("an np.matrix ('*' is a matrix product there, unlike for arrays)",
                "pass np.asarray(x)")
    if isinstance(x, np.ma.MaskedArray):
        return "a masked array (the mask would be lost)", "pass x.filled(value) or x.data"
    if isinstance(x, np.ndarray):
        if type(x) is not np.ndarray and not isinstance(x, np.memmap):
            return (f"an ndarray subclass ({type(x).__name__}), whose operations may differ "
                    f"from an array's", "pass np.asarray(x)")
        if x.dtype.kind in "biu":
            kind = "a bool" if x.dtype.kind == "b" else "an integer"
            return f"{kind} array (dtype {x.dtype})", "pass x.astype(float)"
        if x.dtype.kind not in "fc":
            return f"an array of dtype {x.dtype}", "pass x.astype(float)"
        return None
    if isinstance(x, (float, complex, np.inexact)):
        return None
    if isinstance(x, numbers.Number):
        return f"a {type(x).__name__}", "pass float(x)"
    if is_foreign_array(x):  # dask and the like: numpy's functions dispatch to their own
        if getattr(x, "dtype", np.dtype(float)).kind not in "fc":
            return f"an array of dtype {x.dtype}", "pass x.astype(float)"
        return None
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return (f"an object of type {type(x).__name__}, which only converts to an array",
                "pass np.asarray(x, dtype=float)")
    if not isinstance(x, (dict, list, tuple)):
        own = [name for name in _OWN_OPERATORS
               if isinstance(getattr(type(x), name, None), types.FunctionType)]
        if own:
            return (f"an object of class {type(x).__name__} with its own {own[0]}, which "
                    f"srcgrad cannot trace to its attributes (it would run on tangents and "
                    f"cotangents as if they were values)",
                    f"pass the arrays it holds, and compute with them in the function; or "
                    f"register the class with srcgrad.register_vspace({type(x).__name__}, "
                    f"zeros=..., add=...) and give the functions it flows through "
                    f"derivative rules")
    if isinstance(x, _FUNCTIONS):  # (an object that merely defines __call__ may have
        # differentiable attributes)
        return f"a function or class ({type(x).__name__})", "leave it out of wrt"
    return None


_PLAIN_SCALARS = frozenset({float, complex, np.float64, np.float32, np.complex128})


def check_argument(x, f, index: int) -> None:
    """Raise NonDifferentiableError when ``x``, argument ``index`` of ``f`` (or a value
    inside a list, tuple, dict or a plain object's attributes), cannot be differentiated
    with respect to."""
    kind = type(x)
    if kind in _PLAIN_SCALARS or kind is np.ndarray and x.dtype.kind in "fc":
        return  # the common case, checked per call: no more work than this
    problem = _find_refusal(x, "", depth=0)
    if problem is not None:
        where, (what, hint) = problem
        raise NonDifferentiableError(
            f"cannot differentiate with respect to {argument_label(f, index)}{where}: it is "
            f"{what}. {hint[0].upper()}{hint[1:]}, or leave it out of the differentiated "
            f"arguments.")


def _find_refusal(x, where: str, depth: int):
    if depth > 20 or space_of(x) is not None:  # (a registered vector space's object: its
        return None  # rules and registered operations compute its derivatives)
    if isinstance(x, dict):
        for k, v in x.items():
            found = _find_refusal(v, f"{where}[{k!r}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            found = _find_refusal(v, f"{where}[{i}]", depth + 1)
            if found:
                return found
        return None
    reason = _refusal(x)
    if reason is not None:
        return where, reason
    if hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type)) \
            and not callable(x) and not is_foreign_array(x):  # plain objects and dataclasses: their array attributes
        for k, v in vars(x).items():
            if isinstance(v, (np.ndarray, float, np.number, list, tuple, dict)) or \
                    type(v).__module__.split(".")[0] == "pandas":
                found = _find_refusal(v, f"{where}.{k}", depth + 1)
                if found:
                    return found
    return None


def check_shaped_argument(x, f, index: int) -> None:
    """jacfwd, jacrev and hessian lay their result out as ``out.shape + in.shape``: refuse
    an object of a registered vector space (vspace.py), which has no shape."""
    space = space_of(x)
    if space is not None:
        raise NonDifferentiableError(
            f"jacfwd, jacrev and hessian lay their result out as out.shape + in.shape, and "
            f"{argument_label(f, index)} is a {space.cls.__qualname__}, a registered vector "
            f"space, which has no such shape. Use grad, value_and_grad, vjp or jvp.")


def check_sequence(api: str, what: str, value) -> tuple:
    """``primals``/``tangents`` of jvp and hvp: a tuple or list, one entry per argument."""
    if not isinstance(value, (tuple, list)):
        raise SrcgradError(
            f"{api}() takes {what} as a tuple with one entry per argument of f, e.g. "
            f"{api}(f, (x,), (v,)); got {type(value).__name__}")
    return tuple(value)


def structure_shape(x):
    """The nesting of containers with the shapes of their leaves (for comparing a tangent or
    cotangent with its primal)."""
    if isinstance(x, dict):
        return {k: structure_shape(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [structure_shape(v) for v in x]
    if isinstance(x, (np.ndarray, float, int, complex, np.number)):
        return np.shape(x)
    return type(x).__name__


def check_cotangent(g, value, api: str = "vjp") -> None:
    """A pullback's cotangent must be structured and shaped like the function's output."""
    if isinstance(g, (np.ndarray, float, int, complex, np.number)) and isinstance(
            value, (np.ndarray, float, int, complex, np.number)):
        if np.shape(g) != np.shape(value):
            raise SrcgradError(
                f"{api}: the cotangent must have the shape of f's output, {np.shape(value)}; "
                f"got shape {np.shape(g)}")
        return
    sg, sv = structure_shape(g), structure_shape(value)
    if sg != sv:
        raise SrcgradError(f"{api}: the cotangent must be structured and shaped like f's "
                           f"output: output {sv}, cotangent {sg}")
