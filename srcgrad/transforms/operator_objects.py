"""Guarantees afterwards: a variable bound to a sum or difference of a differentiable value
and one that is not (``u = 3.0 + v``, ``u = v - c``, ``u += 1.0``) and then read as an
object (``u.w``, ``u.norm()``, an attribute arrays do not have), handed on where something
else may read it so (a call without a rule, a list, a tuple, a dict), or returned by a
helper, is checked first, at run time, not to be an object of a
class defining its own arithmetic (``__add__``, ``__radd__``, ...).

The sweeps differentiate an operator as on numbers and arrays. On an object of such a class
Python runs the class's method, whatever it computes (``__radd__`` returning ``V(3 * w)``),
and the object's adjoint went through the operator unchanged: a silently wrong gradient
(session 33's probe, ``3.0 + obj``). The backward sweep's ``unbroadcast`` catches two objects
added (runtime.refuse_object_arithmetic), and ``*``, ``/``, ``-v`` fail on the object's
derivative (a dict) at their line; with a number on one side of ``+`` or ``-`` nothing is
unbroadcast, so the check is here, where the result is first read as an object. Arrays and
numbers pass it (an attribute arrays have, ``u.T``, ``u.shape``, is not checked at all: no
cost there).
"""
from __future__ import annotations

import gast
import numpy as np

from ..codegen import to_source
from ..rules import lookup
from . import astutil as A
from .context import Context
from .resolve import known_value


def guard_operator_objects(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    if ctx.src.filename.startswith("<srcgrad"):
        return tree  # (generated code: its user's checks are in it already)
    results = _arithmetic_results(tree, ctx)
    if results or not ctx.entry:
        tree.body = _block(tree.body, results, ctx)
    return tree


def _arithmetic_results(tree, ctx: Context) -> set[str]:
    """The variables some statement binds to a sum or difference of a differentiable value
    and one that is not (``u = 3.0 + v``, ``u = v - c``, ``u += 1.0``)."""
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and _shifted(node.value, ctx):
            out |= {t.id for t in node.targets if isinstance(t, gast.Name)}
        elif isinstance(node, gast.AugAssign) and isinstance(node.op, (gast.Add, gast.Sub)) \
                and isinstance(node.target, gast.Name) and node.target.id in ctx.varied \
                and not A.names_read(node.value) & ctx.varied:
            out.add(node.target.id)
    return out


def _shifted(value, ctx: Context) -> bool:
    """``a + b`` or ``a - b``, one side differentiable, the other not: the one operator on
    objects whose derivative nothing checks (with both sides differentiable, the backward
    sweep's unbroadcast refuses objects; ``*``, ``/``, ``-v`` on an object's derivative, a
    dict, fail at their line)."""
    if not (isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Sub))):
        return False
    sides = [bool(A.names_read(side) & ctx.varied) for side in (value.left, value.right)]
    return sides[0] != sides[1]


def _block(stmts: list, results: set[str], ctx: Context) -> list:
    out = []
    shown = {}  # a generated name -> the user's expression it holds
    for s in stmts:
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            out.append(s)  # (a scope of its own)
            continue
        if not ctx.entry and isinstance(s, gast.Return) and _shifted(s.value, ctx):
            # a helper's result, which its caller may read as an object (u = shift(v); u.w)
            held = ctx.namer.fresh()
            shown[held] = to_source(s.value).strip()
            out.append(A.assign(held, s.value, at=s))
            s.value = A.load(held)
            results = results | {held}
        checked = _read_as_objects(s, results, ctx) | (
            {s.value.id} & results if not ctx.entry and isinstance(s, gast.Return)
            and isinstance(s.value, gast.Name) else set())
        for name in sorted(checked):
            message = (f"{ctx.user_location(s)}: '{shown.get(name, name)}', the result of "
                       f"an arithmetic operator on differentiable values, is an object of a "
                       f"class with arithmetic of its own (__add__, __radd__, __mul__, ...), "
                       f"which is not supported (in {ctx.fn.__name__}()): srcgrad "
                       f"differentiates the operator as on numbers and arrays, not the "
                       f"class's method. Call a method doing the same instead (u = "
                       f"v.add(3.0)).")
            out.append(A.expr_stmt(A.call(A.attr(ctx.rt, "refuse_operator_object"),
                                          A.load(name), A.const(message)), at=s))
        A.map_blocks(s, lambda block: _block(block, results, ctx))
        out.append(s)
    return out


def _read_as_objects(s, results: set[str], ctx: Context) -> set[str]:
    """The ``results`` statement ``s`` itself (not its blocks) reads an attribute of that
    arrays do not have, or hands on where something else may (an argument of a call
    without a derivative rule, ``helper(u)``, ``xs.append(u)``; an item of a list, tuple or
    dict display)."""
    out = set()
    for n in A.header_nodes(s):
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Load) \
                and isinstance(n.value, gast.Name) and not hasattr(np.ndarray, n.attr):
            out.add(n.value.id)
        elif isinstance(n, gast.Call) and lookup(known_value(n.func, ctx)) is None:
            out |= {a.id for a in (*n.args, *[k.value for k in n.keywords])
                    if isinstance(a, gast.Name)}
        elif isinstance(n, (gast.List, gast.Tuple)) and isinstance(n.ctx, gast.Load):
            out |= {e.id for e in n.elts if isinstance(e, gast.Name)}
        elif isinstance(n, gast.Dict):
            out |= {v.id for v in n.values if isinstance(v, gast.Name)}
    return out & results
