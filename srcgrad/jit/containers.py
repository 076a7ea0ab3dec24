"""Compiled forms of more ``_rt`` helpers: the adjoint of an element store's value
(``last_writes``).

Imported at the end of runtime.py, whose ``_rt`` namespace re-exports each stub here, so
that the compiled sweeps call them as ``_rt.<name>`` like the others.
"""
from __future__ import annotations

import numpy as np
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from .runtime import _float_dtype, _index_kind, _is_scalar, _stub, _unwrap
from numba import types

last_writes = _stub("last_writes")

SUPPORTED = frozenset({"last_writes"})


@register_jitable
def _keep_last(g, index, dtype):
    """``g[index]`` for a 1-d integer array ``index`` with the rows of positions written
    again later zeroed: numpy keeps the last write."""
    n = g.shape[0]
    seen = np.zeros(n, np.bool_)
    last = np.zeros(index.shape[0], np.bool_)
    for k in range(index.shape[0] - 1, -1, -1):
        p = index[k] + n if index[k] < 0 else index[k]
        if p < 0 or p >= n:  # (numpy's IndexError, before any read)
            raise IndexError("index out of bounds")
        last[k] = not seen[p]
        seen[p] = True
    out = g[index].astype(dtype)
    for k in range(index.shape[0]):
        if not last[k]:
            out[k] = 0
    return out


@overload(last_writes)
def _last_writes(g, index):
    """``g[index]``, the adjoint of the values a store ``x[index] = v`` wrote (as
    ``srcgrad.runtime.last_writes``): where an integer array repeats a position only its
    last write gets ``g``; a scalar ``g`` is the lazy zero."""
    g_t = _unwrap(g)
    if _is_scalar(g_t):
        return lambda g, index: 0.0
    kind = _index_kind(index)
    if not isinstance(g_t, types.Array) or kind is None:
        raise TypingError(f"srcgrad: compiled gradients of element stores into {g_t} at "
                          f"{index} are not supported")
    if kind == "plain":
        return lambda g, index: g[index]
    dtype = _float_dtype(g_t)

    return lambda g, index: _keep_last(g, index, dtype)
