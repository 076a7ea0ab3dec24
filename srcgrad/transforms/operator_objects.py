"""Guarantees afterwards: a variable bound to the result of an arithmetic operator on
differentiable values (``u = 3.0 + v``, ``u = a * b``, ``u = -v``, ``u += w``) and then read as an
object (``u.w``, ``u.norm()``, an attribute arrays do not have) is checked first, at run
time, not to be an object of a class defining its own arithmetic (``__add__``,
``__radd__``, ...).

The sweeps differentiate an operator as on numbers and arrays. On an object of such a class
Python runs the class's method, whatever it computes (``__radd__`` returning ``V(3 * w)``),
and the object's adjoint went through the operator unchanged: a silently wrong gradient
(session 33's probe, ``3.0 + obj``). The backward sweep's ``unbroadcast`` catches two objects
added (runtime.refuse_object_arithmetic); with a number on one side nothing is unbroadcast,
so the check is here, where the result is first read as an object. Arrays and numbers pass
it (an attribute arrays have, ``u.T``, ``u.shape``, is not checked at all: no cost there).
"""
from __future__ import annotations

import gast
import numpy as np

from . import astutil as A
from .context import Context

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow,
               gast.MatMult)


def guard_operator_objects(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    results = _arithmetic_results(tree, ctx)
    if results:
        tree.body = _block(tree.body, results, ctx)
    return tree


def _arithmetic_results(tree, ctx: Context) -> set[str]:
    """The variables some statement binds to an arithmetic operator's result on
    differentiable values."""
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and _is_arithmetic(node.value) \
                and A.names_read(node.value) & ctx.varied:
            out |= {t.id for t in node.targets if isinstance(t, gast.Name)}
        elif isinstance(node, gast.AugAssign) and isinstance(node.op, _ARITHMETIC) \
                and isinstance(node.target, gast.Name) \
                and (A.names_read(node.value) | {node.target.id}) & ctx.varied:
            out.add(node.target.id)
    return out


def _is_arithmetic(value) -> bool:
    return isinstance(value, gast.BinOp) and isinstance(value.op, _ARITHMETIC) or (
        isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)))


def _block(stmts: list, results: set[str], ctx: Context) -> list:
    out = []
    for s in stmts:
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            out.append(s)  # (a scope of its own)
            continue
        for name in sorted(_read_as_objects(s, results)):
            message = (f"{ctx.user_location(s)}: '{name}', the result of an arithmetic "
                       f"operator on differentiable values, is an object of a class with "
                       f"arithmetic of its own (__add__, __radd__, __mul__, ...), which is "
                       f"not supported (in {ctx.fn.__name__}()): srcgrad differentiates the "
                       f"operator as on numbers and arrays, not the class's method. Call a "
                       f"method doing the same instead (u = v.add(3.0)).")
            out.append(A.expr_stmt(A.call(A.attr(ctx.rt, "refuse_operator_object"),
                                          A.load(name), A.const(message)), at=s))
        A.map_blocks(s, lambda block: _block(block, results, ctx))
        out.append(s)
    return out


def _read_as_objects(s, results: set[str]) -> set[str]:
    """The ``results`` statement ``s`` itself (not its blocks) reads an attribute of that
    arrays do not have."""
    return {n.value.id for n in A.header_nodes(s)
            if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Load)
            and isinstance(n.value, gast.Name) and n.value.id in results
            and not hasattr(np.ndarray, n.attr)}
