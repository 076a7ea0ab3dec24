"""Runtime support called by generated code (through the alias ``_rt``) and by the rules.

Everything generated code needs at run time lives here: the tape (a per-call stack), shape
helpers (unbroadcast), and accumulation of adjoints that may be lazily zero or structured
(lists, tuples, dicts of arrays).
"""
from __future__ import annotations

__all__ = [
    "Tape",
    "unbroadcast",
    "broadcast_like",
    "add",
    "add_at",
    "zeros_like",
    "densify",
    "ZERO",
    "is_zero",
    "part",
    "add_attr",
    "setitem",
    "list_append",
    "list_extend",
    "list_insert",
    "list_delete",
    "dict_update",
]

import numpy as np


_ndarray = np.ndarray
_generic = np.generic


class Tape(list):
    """A push/pop stack of values the backward sweep needs.

    Each call of a generated forward function makes its own tape, so nested calls, recursion
    and threads never share entries, and an exception simply drops the tape with its frame.
    ``push``/``pop`` are the list's own C methods: no Python call overhead.
    """

    __slots__ = ()
    push = list.append


ZERO = 0.0
"""The lazy zero adjoint: neutral for ``+`` with any array, materialized only when needed."""


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (undoing numpy broadcasting)."""
    if type(g) is not _ndarray:
        # A scalar adjoint belongs to a scalar result, whose operands were scalars too.
        # (This is the hot path of scalar code: one type check.)
        if type(g) is float or isinstance(g, _generic):
            return g
    # getattr is several times cheaper than np.shape on scalars: this runs once per operand
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    gshape = getattr(g, "shape", None)
    if gshape is None:
        gshape = np.shape(g)
    if gshape == shape:
        return g
    extra = len(gshape) - len(shape)
    if extra:
        g = np.sum(g, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(g)[i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    if not shape and isinstance(g, np.ndarray):
        # A Python scalar argument gets a 0-d array back: keep numpy scalars as such.
        return g[()]
    return g


def broadcast_like(d, ans):
    """Broadcast a tangent contribution ``d`` to the shape of the result ``ans``."""
    shape = np.shape(ans)
    if np.shape(d) == shape:
        return d
    return np.broadcast_to(d, shape)


def zeros_like(x):
    """A zero adjoint with the structure of ``x`` (arrays, numbers, lists, tuples, dicts)."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    if isinstance(x, (float, int, np.number, bool)):
        return 0.0
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[zeros_like(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(zeros_like(v) for v in x)
    if hasattr(x, "__array__"):
        return np.zeros_like(np.asarray(x), dtype=np.float64)
    if _is_object(x):
        return _densify_object({}, x)
    return None


def is_zero(g) -> bool:
    """Whether ``g`` is the lazy zero (``0.0`` written by generated code, or None)."""
    return g is None or (type(g) is float and g == 0.0)


def densify(g, x):
    """Turn a lazy zero adjoint into real zeros shaped like ``x``; other values pass."""
    if is_zero(g):
        return zeros_like(x)
    if isinstance(x, (list, tuple, dict)):
        return _densify_struct(g, x)
    if isinstance(g, dict) and not isinstance(x, dict):
        return _densify_object(g, x)
    if _is_object(g):
        return _densify_object(vars(g), x)
    if isinstance(x, np.ndarray) and np.shape(g) != x.shape:
        return np.broadcast_to(g, x.shape).copy()
    return g


def _densify_object(g: dict, x):
    """Gradient of an object's attributes: an object of the same class holding them."""
    import copy
    out = copy.copy(x)
    for name, value in vars(x).items():
        if name in g:
            object.__setattr__(out, name, densify(g[name], value))
        elif isinstance(value, (float, np.ndarray, np.floating)):
            object.__setattr__(out, name, zeros_like(value))
    return out


def _densify_struct(g, x):
    if isinstance(x, dict):
        return {k: densify(g.get(k, ZERO) if isinstance(g, dict) else ZERO, v)
                for k, v in x.items()}
    items = [densify(gi, xi) for gi, xi in zip(g, x)]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*items)
    return type(x)(items)


def add(a, b):
    """``a + b`` for adjoints, where either may be the lazy zero or a container."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    if isinstance(a, dict) or isinstance(b, dict) or _is_object(a):
        a, b = _attr_dict(a), _attr_dict(b)
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k, ZERO), v)
        return out
    if isinstance(a, (list, tuple)):
        items = [add(x, y) for x, y in zip(a, b)]
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*items)
        return type(a)(items)
    return a + b


def add_at(acc, x, index, g):
    """Adjoint of ``y = x[index]``: add ``g`` into ``acc`` (the adjoint of ``x``) at ``index``.

    Repeated fancy indices accumulate (``np.add.at``). Containers get container adjoints.
    """
    if isinstance(x, np.ndarray):
        if is_zero(acc):
            acc = np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32)
                           if x.dtype.kind in "fc" else np.float64)
        else:
            acc = np.array(acc, copy=True)
        if _is_simple_index(index):
            acc[index] += g
        else:
            np.add.at(acc, index, g)
        return acc
    if isinstance(x, dict):
        acc = dict(acc) if isinstance(acc, dict) else {}
        acc[index] = add(acc.get(index, ZERO), g)
        return acc
    if isinstance(x, (list, tuple)):
        items = list(acc) if isinstance(acc, (list, tuple)) else [ZERO] * len(x)
        if isinstance(index, (np.integer,)):
            index = int(index)
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(x))), g):
                items[i] = add(items[i], gi)
        else:
            items[index] = add(items[index], g)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*items)
        return type(x)(items)
    if np.ndim(x) == 0 and isinstance(x, (float, np.floating)):
        raise TypeError("cannot index into a scalar")
    return add_at(acc, np.asarray(x), index, g)


def _is_simple_index(index) -> bool:
    """Integers and slices (no arrays or lists) never repeat an element."""
    if isinstance(index, tuple):
        return all(_is_simple_index(i) for i in index)
    return index is None or index is Ellipsis or isinstance(index, (int, np.integer, slice))


def _is_object(x) -> bool:
    """A user object (its adjoint is a dict of attribute adjoints)."""
    return hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, type))


def _attr_dict(x):
    return dict(vars(x)) if _is_object(x) else x


def part(g, key):
    """``g[key]`` of a structured adjoint, the lazy zero staying zero."""
    if is_zero(g):
        return ZERO
    if isinstance(g, dict):
        return g.get(key, ZERO)
    return g[key]


def add_attr(acc, obj, name: str, g):
    """Adjoint of ``y = obj.name``: attribute adjoints are kept in a dict until densified."""
    if is_zero(g):
        return acc
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple: by position
        return add_at(acc, obj, obj._fields.index(name), g)
    out = dict(acc) if isinstance(acc, dict) else {}
    out[name] = add(out.get(name, ZERO), g)
    return out


# -- functional updates: what ``x[i] = v`` and list methods become on varied values ---------
def setitem(x, index, value):
    """A copy of ``x`` with ``x[index] = value`` (arrays, lists, dicts)."""
    if isinstance(x, np.ndarray):
        dtype = np.result_type(x.dtype, np.asarray(value).dtype) \
            if x.dtype.kind in "biu" and np.asarray(value).dtype.kind == "f" else x.dtype
        out = np.array(x, dtype=dtype, copy=True)
    elif isinstance(x, dict):
        out = dict(x)
    elif isinstance(x, list):
        out = list(x)
    else:
        raise TypeError(f"cannot assign into an element of {type(x).__name__}")
    out[index] = value
    return out


def list_append(xs, value):
    return list(xs) + [value]


def list_extend(xs, values):
    return list(xs) + list(values)


def list_insert(xs, index, value):
    out = list(xs)
    out.insert(index, value)
    return out


def list_delete(xs, index):
    out = list(xs)
    del out[index]
    return out


def dict_update(d, other):
    out = dict(d)
    out.update(other)
    return out


def setitem_zeroed(g, x, index):
    """``g`` with the elements at ``index`` set to zero (adjoint of an overwritten slot)."""
    if is_zero(g):
        return ZERO
    if isinstance(g, np.ndarray):
        out = np.array(g, copy=True)
        out[index] = 0
        return out
    if isinstance(g, dict):
        out = dict(g)
        out.pop(index, None)
        return out
    out = list(g)
    out[index] = ZERO
    return out


def list_slice(g, start: int, stop: int):
    """``g[start:stop]`` of a list adjoint, the lazy zero staying zero."""
    if is_zero(g):
        return ZERO
    return list(g[start:stop])


# -- calls whose target is known only at run time ------------------------------------------
def call_fwd(fn, *args, **kwargs):
    """Forward sweep of a call to a function value (argument, local def, lambda): returns
    ``(value, record)``; ``call_bwd(record, g)`` gives ``(positional, keyword)`` gradients."""
    from .api import dynamic_forward
    return dynamic_forward(fn, args, kwargs)


def method_fwd(obj, name, *args, **kwargs):
    """Like ``call_fwd`` for ``obj.name(...)``: gradients include ``obj`` as argument 0."""
    from .api import dynamic_forward
    method = getattr(type(obj), name, None)
    if method is None or not hasattr(method, "__code__"):
        from .errors import MissingRuleError
        raise MissingRuleError(f"{type(obj).__name__}.{name}")
    return dynamic_forward(method, (obj,) + args, kwargs)


def call_bwd(record, g):
    from .api import dynamic_backward
    return dynamic_backward(record, g)


def seq_concat(a, b):
    """``a + b`` of two tuples or lists (what ``+`` means on sequences)."""
    return a + b
