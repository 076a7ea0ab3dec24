"""Guarantees afterwards: ``shape_only_names(stmts, ...)`` names exactly the primal values that
a backward sweep reads for nothing but their shape and dtype.

``unbroadcast(b_t4, _t4)`` reads ``_t4`` only for its shape, yet saving ``_t4`` keeps an array
alive until the backward sweep ends (in a loop, one per iteration on the tape). The reverse
pass saves such a value as ``_rt.shape_like(v)``: an array of the same shape and dtype whose
one element every index shares, which costs a few bytes whatever the shape.

Only reads in known positions count as shape reads: the second argument of
``unbroadcast``/``expand_to``/``expand_reduced``/``seed_scalar``/``shaped_like``, both arguments of ``reduced_count``, the
argument of ``np.shape``/``np.ndim``/``np.size``, and ``.shape``/``.ndim``/``.size``/
``.dtype``. Any other read (an operand, an argument of any other call, a copy) makes the
value needed in full.
"""
from __future__ import annotations

__all__ = ["shape_only_names"]

import gast
import numpy as np

from .. import batching, runtime
from ..rules import _helpers as rule_helpers
from ..rules import nondifferentiable

# the stand-in a forward sweep saves carries no derivative (sweeps are differentiated again
# for higher derivatives)
nondifferentiable(runtime.shape_like)


def _batch_shape_like(fn, args, kwargs, batched, size):
    """vmap: the stand-in of a batch of examples is a batch of stand-ins (a value that is
    not an array, a list of examples say, is returned unchanged either way)."""
    return fn(*args, **kwargs)


batching.register(runtime.shape_like, _batch_shape_like)

# function -> positions of the arguments it reads only for their shape (and dtype)
_SHAPE_ARGS = {
    runtime.unbroadcast: (1,),
    runtime.seed_scalar: (1,),
    runtime.shaped_like: (1,),
    runtime.written_adjoint: (1,),
    rule_helpers.expand_to: (1,),
    rule_helpers.expand_reduced: (1,),
    rule_helpers.reduced_count: (0, 1),
    np.shape: (0,),
    np.ndim: (0,),
    np.size: (0,),
}
_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


def _callee(func, rt: str, helpers: dict):
    """The object a generated call's function expression names (``_rt.f``, a helper, or an
    attribute of a helper module such as ``np.shape``), else None."""
    if isinstance(func, gast.Name):
        return helpers.get(func.id)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.value.id == rt:
            return getattr(runtime, func.attr, None)
        module = helpers.get(func.value.id)
        if module is np:
            return getattr(np, func.attr, None)
    return None


def _shape_positions(node, rt: str, helpers: dict) -> set[int]:
    """ids of the Name nodes directly under ``node`` that are read only for their shape."""
    ids: set[int] = set()
    if isinstance(node, gast.Call) and not node.keywords:
        try:
            positions = _SHAPE_ARGS.get(_callee(node.func, rt, helpers), ())
        except TypeError:  # an unhashable helper object
            positions = ()
        for i in positions:
            if i < len(node.args) and isinstance(node.args[i], gast.Name):
                ids.add(id(node.args[i]))
    elif isinstance(node, gast.Attribute) and node.attr in _SHAPE_ATTRIBUTES \
            and isinstance(node.value, gast.Name):
        ids.add(id(node.value))
    return ids


def shape_only_names(stmts: list, rt: str, helpers: dict) -> frozenset[str]:
    """Names loaded somewhere in ``stmts`` and only ever in a shape position."""
    shape_reads: set[int] = set()
    for s in stmts:
        for node in gast.walk(s):
            shape_reads |= _shape_positions(node, rt, helpers)
    shape, value = set(), set()
    for s in stmts:
        for node in gast.walk(s):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                (shape if id(node) in shape_reads else value).add(node.id)
    return frozenset(shape - value)
