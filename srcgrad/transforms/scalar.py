"""Guarantees afterwards: ``ctx.scalar_closed`` says whether, given scalar arguments, every
value the function computes is a scalar, so adjoints never need unbroadcasting.

Scalar code (physics steps, recurrences on floats) is dominated by per-operation Python
overhead; knowing that no broadcasting can happen lets the reverse pass drop every
``unbroadcast`` and the values it would have kept only for their shapes.
"""
from __future__ import annotations

import builtins
import math
import operator

import gast
import numpy as np

from .context import Context

_SCALAR_BUILTINS = {abs, float, int, round, builtins.min, builtins.max, len, range, bool}


def _scalar_function(fn) -> bool:
    if isinstance(fn, np.ufunc):
        return True
    if fn in _SCALAR_BUILTINS:
        return True
    module = getattr(fn, "__module__", None)
    return module in ("math", "_operator", "operator") or fn in vars(operator).values() \
        or fn in vars(math).values()


def _expression_ok(node, ctx: Context) -> bool:
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            if n.id not in ctx.local_names:
                try:
                    value = ctx.lookup_static(n.id)
                except (KeyError, AttributeError):
                    return False
                # modules, functions and number constants; never a global array
                if not (callable(value) or isinstance(value, (int, float, type(np)))):
                    return False
        elif isinstance(n, gast.Call):
            r = ctx.resolved.get(id(n))
            if r is None or r.kind not in ("rule", "nondiff") or not _scalar_function(r.obj):
                return False
        elif isinstance(n, gast.Attribute):
            r = ctx.resolved.get(id(n))
            if r is None or r.kind == "attribute" or (
                    r.kind == "constant" and not isinstance(r.obj, (int, float))
                    and not callable(r.obj) and not isinstance(r.obj, type(np))):
                return False
        elif isinstance(n, (gast.Subscript, gast.List, gast.Tuple, gast.Dict, gast.Lambda,
                            gast.ListComp, gast.DictComp, gast.Starred)):
            return False
        elif isinstance(n, gast.BinOp) and isinstance(n.op, gast.MatMult):
            return False
    return True


def mark_scalar_closed(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Set ``ctx.scalar_closed`` for the normalized ``tree``."""
    closed = True
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign):
            if not all(isinstance(t, gast.Name) for t in node.targets) \
                    or not _expression_ok(node.value, ctx):
                closed = False
        elif isinstance(node, (gast.If, gast.While)):
            closed = closed and _expression_ok(node.test, ctx)
        elif isinstance(node, gast.For):
            closed = closed and _expression_ok(node.iter, ctx)
        elif isinstance(node, (gast.FunctionDef, gast.Lambda)) and node is not tree:
            closed = False
        elif isinstance(node, gast.Return) and node.value is not None:
            closed = closed and _expression_ok(node.value, ctx)
        if not closed:
            break
    ctx.scalar_closed = closed
    return tree
