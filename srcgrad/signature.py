"""What the entry points need to know about a function's signature and arguments: the key
its generated code is cached under, its parameter names, which parameters ``wrt`` names, and
which arguments cannot carry a gradient. Shared by reverse mode (api.py), forward mode
(api_forward.py), vmap and ``source``, which sit above it."""
from __future__ import annotations

__all__ = ["SCALAR_TYPES", "Wrt", "function_key", "integer_leaf", "normalize_wrt",
           "parameter_names"]

import inspect
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import runtime
from .adapters import has_starred_parameters
from .errors import SrcgradError

Wrt = int | str | Sequence[int | str]
"""Which arguments to differentiate: an index, a parameter name, or a sequence of those."""

# argument types for which a scalar-closed function computes only scalars
SCALAR_TYPES = frozenset({float, int, np.float64, np.float32, np.int64})


def function_key(fn: Callable):
    """The function whose code a (bound) method runs: what generated code is cached under."""
    return getattr(fn, "__func__", fn)


# by function object, not code object: the wrappers one decorator makes share their code but
# not their signature (functools.wraps points inspect.signature at each wrapped function)
_NAMES: "weakref.WeakKeyDictionary[Any, list[str]]" = weakref.WeakKeyDictionary()


def parameter_names(fn: Callable) -> list[str]:
    """Names of the parameters of ``fn`` an argument can bind (not ``*args``/``**kwargs``);
    empty when Python cannot tell its signature. Cached per function: run-time dispatch asks
    on every call, and inspect.signature takes several microseconds."""
    cacheable = type(fn) is types.FunctionType
    names = _NAMES.get(fn) if cacheable else None
    if names is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return []
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if cacheable:
            _NAMES[fn] = names
    return list(names)


def normalize_wrt(fn: Callable, wrt: Wrt) -> tuple[tuple[int, ...], bool]:
    """``wrt`` as a tuple of parameter indices, and whether the user gave a single one."""
    names = parameter_names(fn)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    out = []
    for w in items:
        if isinstance(w, str):
            if w not in names:
                raise SrcgradError(f"{fn.__qualname__}() has no parameter '{w}' "
                                   f"(its parameters: {', '.join(names)})")
            out.append(names.index(w))
        elif isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            # (with *args, an index past the named parameters is one of the extra
            # positional arguments of each call)
            if not 0 <= w < len(names) and not (w >= 0 and has_starred_parameters(fn)):
                raise SrcgradError(f"wrt={w} is out of range: {fn.__qualname__}() has "
                                   f"{len(names)} parameters")
            out.append(int(w))
        else:
            raise SrcgradError(f"wrt must be a parameter index, a name, or a tuple of those; "
                               f"got {w!r}")
    return tuple(out), single


def integer_leaf(x) -> str | None:
    """What in ``x`` cannot carry a gradient (``"an integer"``, ``"a bool array (dtype
    bool)"``...): the first integer or bool leaf of an argument, or None when it has none."""
    if isinstance(x, (bool, np.bool_)):
        return "a bool"
    if isinstance(x, (int, np.integer)):
        return "an integer"
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None and (isinstance(x, np.ndarray) or runtime.is_foreign_array(x)):
        if kind in "biu":  # (numpy arrays, and dask's, whose attributes hold integers)
            what = "a bool" if kind == "b" else "an integer"
            return f"{what} array (dtype {x.dtype})"
        return None
    if isinstance(x, dict):
        return _first_integer_leaf(x.values())
    if isinstance(x, (list, tuple)):
        return _first_integer_leaf(x)
    if hasattr(x, "__dict__") and not isinstance(x, (type, np.ndarray)) and not callable(x):
        # plain objects and dataclasses: their attributes
        return _first_integer_leaf(v for v in vars(x).values() if isinstance(
            v, (np.ndarray, float, int, np.number, list, tuple, dict)))
    return None


def _first_integer_leaf(items) -> str | None:
    for item in items:
        found = integer_leaf(item)
        if found:
            return found
    return None
