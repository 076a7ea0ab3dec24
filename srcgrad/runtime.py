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
]

import numpy as np


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
    shape = np.shape(x)
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
    return None


def densify(g, x):
    """Turn a lazy zero adjoint into real zeros shaped like ``x``; other values pass."""
    if g is ZERO or g is None:
        return zeros_like(x)
    if isinstance(x, (list, tuple, dict)):
        return _densify_struct(g, x)
    return g


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
    if a is ZERO or a is None:
        return b
    if b is ZERO or b is None:
        return a
    if isinstance(a, dict):
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
        if acc is ZERO or acc is None:
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
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(x))), g):
                items[i] = add(items[i], gi)
        else:
            items[index] = add(items[index], g)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*items)
        return type(x)(items)
    raise TypeError(f"cannot differentiate indexing into {type(x).__name__}")


def _is_simple_index(index) -> bool:
    """Integers and slices (no arrays or lists) never repeat an element."""
    if isinstance(index, tuple):
        return all(_is_simple_index(i) for i in index)
    return index is None or index is Ellipsis or isinstance(index, (int, np.integer, slice))
