"""Guarantees afterwards: the forward sweep of a ``grad`` computes no large array that only
feeds the result it discards or the shape the backward sweep reads: such a value is probed.

``grad`` returns the gradient, not the value: in ``np.sum(np.tanh(x) * x + np.exp(-x * x))``
the products ``_t2 = _t1 * x``, ``_t6 = _t2 + _t5`` and the sum are passes over the data
that only make the value, of which ``grad`` reads the type (its seed is one of the result's
dtype, and it refuses a result that is not a number), and the backward sweep the shape of
``_t6`` (to spread the seed). Each such statement, an elementwise operation (an arithmetic
operator, a numpy ufunc) or the final ``np.sum`` without an axis, becomes
``_rt.probe(fn, operands...)``: a ``runtime.Probe`` holding the broadcast shape and one
element computed from the operands' first ones (so of the result's dtype), and what to compute
the whole value from. A probe is made only at run time for numpy arrays and numbers with a
large result; any other operand has the value computed, as written. Floating-point warnings
of a probed value come from its first element only.

A statement is probed only at the top level, after every statement that may update an array
(a call, a loop, an item assignment: one of them could change an operand of a probe before
the probe computes its value), when its target is assigned nowhere else and
every read of it is by another probed statement, the result slot of the return (read through
``_rt.probed_result``, which computes a probe of anything but a number, so that ``grad`` still
refuses a result that is not a scalar), or ``_rt.shape_like`` in the saved tuple.

Run only on the sweeps ``grad`` itself calls and whose value it discards (Context.lean with
``discard_value``); ``value_and_grad`` and ``vjp`` compute the value.
"""
from __future__ import annotations

__all__ = ["probe_dead_values"]

import operator

import gast
import numpy as np

from . import astutil as A
from .context import Context
from .resolve import BINOPS

_ELEMENTWISE_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)


def probe_dead_values(body: list, ctx: Context) -> list:
    """``body`` (a forward sweep ending with ``return result, saved``) with the statements
    whose value nobody needs probed."""
    ret = body[-1]
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, gast.Tuple)
            and isinstance(ret.value.elts[0], gast.Name)):
        return body
    # (a probe computes its value when something needs it, from the operands it holds: only
    # statements after the last one that may update an array, a call, a loop, are probed)
    start = max((i + 1 for i, s in enumerate(body[:-1]) if not _pure(s, ctx)), default=0)
    result, saved = ret.value.elts
    allowed = {id(result)} | _shape_reads(saved, ctx.rt)
    stores = [n.id for s in body for n in gast.walk(s) if isinstance(n, gast.Name)
              and isinstance(n.ctx, (gast.Store, gast.Del))]
    loads: dict[str, list[int]] = {}
    for s in body:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                loads.setdefault(n.id, []).append(id(n))
    dead: list = []
    for s in reversed(body[start:-1]):
        fn = _probed_function(s, ctx)
        if fn is None or stores.count(s.targets[0].id) != 1:
            continue
        if all(use in allowed for use in loads.get(s.targets[0].id, ())):
            dead.append((s, fn))
            allowed |= {id(n) for n in gast.walk(s.value) if isinstance(n, gast.Name)}
    for s, fn in dead:
        operands = [s.value.left, s.value.right] if isinstance(s.value, gast.BinOp) \
            else [s.value.operand] if isinstance(s.value, gast.UnaryOp) else s.value.args
        s.value = A.located(A.call(A.attr(ctx.rt, "probe"), fn, *operands), s.value)
    if any(s.targets[0].id == result.id for s, _ in dead):
        ret.value.elts[0] = A.call(A.attr(ctx.rt, "probed_result"), result)
    return body


def _shape_reads(saved, rt: str) -> set[int]:
    """ids of the names ``saved`` reads through ``rt.shape_like(name)``."""
    return {id(n.args[0]) for n in gast.walk(saved) if A.called_attr(n, rt) == "shape_like"
            and len(n.args) == 1 and isinstance(n.args[0], gast.Name)}


def _pure(s, ctx: Context) -> bool:
    """A comment, or an assignment of a name, a number, arithmetic, or an operation a probe
    may stand for: none changes any array."""
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
        return True
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name)):
        return False
    value = s.value
    if isinstance(value, (gast.Name, gast.Constant)) or _probed_function(s, ctx) is not None:
        return True
    return isinstance(value, gast.BinOp) and isinstance(value.op, A.FRESH_OPS) \
        and A.is_atomic(value.left) and A.is_atomic(value.right)


def _probed_function(s, ctx: Context):
    """The expression naming the function ``s = fn(operands)`` applies, when ``s`` is a
    top-level assignment of an elementwise operation or ``np.sum`` of atomic operands."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name)):
        return None
    value = s.value
    if isinstance(value, gast.BinOp) and isinstance(value.op, _ELEMENTWISE_OPS) \
            and A.is_atomic(value.left) and A.is_atomic(value.right):
        fn = BINOPS[type(value.op)]
        return A.load(ctx.helper(fn, fn.__name__))
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub) \
            and A.is_atomic(value.operand):
        return A.load(ctx.helper(operator.neg, "neg"))
    if isinstance(value, gast.Call) and not value.keywords \
            and all(A.is_atomic(a) and not isinstance(a, gast.Starred) for a in value.args):
        r = ctx.resolved.get(id(value))
        obj = getattr(r, "obj", None) if r is not None and r.kind == "rule" else None
        if isinstance(obj, np.ufunc) and obj.nin == len(value.args) and obj.nout == 1 \
                or obj in (np.sum, np.mean) and len(value.args) == 1:
            return A.deepcopy(value.func)
    return None
