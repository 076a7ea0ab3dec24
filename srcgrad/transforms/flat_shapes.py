"""Guarantees afterwards: a flattened gradient wrapper computes no elementwise value (nor sum of
one) that is read only for its shape or for its seed's type: it gets a stand-in of that shape.

A gradient's flattened wrapper (inline_sweeps.py) holds the function's forward sweep, value
included, though the gradient returns no value: the value is read only by ``_rt.grad_seed``
(which reads its type) and, through ``_rt.shape_like`` stand-ins, by the ``unbroadcast`` and
``expand_to`` calls of the backward sweep (which read its shape). For autograd's
negative_binomial_maxlike (``grad(loglike)`` inside differentiated code, issue 9) those are
three ``gammaln`` of the data, a product, four additions and the sum, computed at every call
of every order, where the derivative written out computes none of them.

Each such statement ``v = op(a, b)`` (an arithmetic operator or a numpy ufunc of names and
numbers) or ``v = np.sum(a)``/``np.mean(a)`` without an axis becomes
``v = _rt.stand_in_of(op, a, b)`` (runtime.py): of float64 arrays and real numbers, a
stand-in of the result's shape, not computed; a sum, a zero of the array's dtype (what
``grad_seed`` makes a seed of: one); anything else computed; and ``u = _rt.shape_like(v)``
becomes ``u = v``, a stand-in already. A statement is rewritten only at
the top level, when its target is assigned nowhere else and every read of it is an operand
of another statement rewritten, the argument of ``_rt.shape_like`` whose result (assigned
once, at the top level) is read only as the shape argument of ``_rt.unbroadcast``,
``_rt.broadcast_like`` or ``expand_to``, or, for a sum, the argument of ``_rt.grad_seed``.
Those read shapes alone (and the seed a number's type), so the gradient is the same to the
bit; floating-point warnings (and errors under ``np.errstate(all='raise')``) of a value not
computed are not raised. ``stand_in_of`` carries no derivative: the values it stands for
reached the gradient only through shapes.
"""
from __future__ import annotations

__all__ = ["stand_in_shapes"]

import ast
import operator
from typing import Callable

import numpy as np

from .. import batching, runtime
from ..rules import _helpers as rule_helpers
from ..rules import nondifferentiable

nondifferentiable(runtime.stand_in_of)


def _batch_stand_in(fn, args, kwargs, batched, size):
    """vmap: the stand-in of the batched operation's result."""
    inner = {k - 1 for k in batched if isinstance(k, int) and k > 0}
    return runtime.shape_like(batching.apply(args[0], args[1:], kwargs, inner, size))


batching.register(runtime.stand_in_of, _batch_stand_in)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
# function -> the position of the argument it reads only for its shape
_SHAPE_READS = {runtime.unbroadcast: 1, runtime.broadcast_like: 1, rule_helpers.expand_to: 1}


def stand_in_shapes(fdef: ast.FunctionDef, resolve: Callable[[ast.expr], object],
                    helper: Callable[[object, str], str]) -> ast.FunctionDef:
    """``fdef`` with its values read only for shapes made stand-ins. ``resolve(expr)``: the
    object a name or attribute chain of ``fdef`` is bound to (None if unknown);
    ``helper(obj, base)``: a name bound to ``obj`` in ``fdef``'s scope."""
    body = fdef.body
    params = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs}
    stores: dict = {}
    loads: dict = {}
    calls = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.setdefault(node.id, []).append(id(node))
            else:
                stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.AugAssign, ast.ExceptHandler, ast.Nonlocal, ast.Global)):
            return fdef  # (assignments _once does not count: leave the function as it is)
        elif isinstance(node, ast.Call):
            calls.append(node)
    once = {n for n, k in stores.items() if k == 1 and n not in params}
    shape_reads, seed_reads = _shape_reads(body, calls, resolve, once, loads)
    allowed = set(shape_reads)
    dead = []
    for stmt in reversed(body):
        name = _target(stmt)
        if name not in once:
            continue
        fn = _operation(stmt.value, resolve)
        if fn is None:
            continue
        reduction = fn is np.sum or fn is np.mean
        uses = loads.get(name, ())
        if uses and all(u in allowed or reduction and u in seed_reads for u in uses):
            dead.append((stmt, fn))
            allowed |= {id(n) for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    if not dead:
        return fdef
    rt_name = helper(runtime, "_rt")
    made = {stmt.targets[0].id for stmt, _ in dead}
    for read, stmt in shape_reads.items():
        if stmt.value.args[0].id in made:  # (shape_like of a stand-in gives it back)
            stmt.value = stmt.value.args[0]
    for stmt, fn in dead:
        value = stmt.value
        if isinstance(value, ast.BinOp):
            func, operands = ast.Name(id=helper(fn, f"_{fn.__name__}"), ctx=ast.Load()), \
                [value.left, value.right]
        elif isinstance(value, ast.UnaryOp):
            func, operands = ast.Name(id=helper(fn, "_neg"), ctx=ast.Load()), [value.operand]
        else:
            func, operands = value.func, value.args
        stmt.value = ast.copy_location(ast.Call(
            func=ast.Attribute(value=ast.Name(id=rt_name, ctx=ast.Load()), attr="stand_in_of",
                               ctx=ast.Load()),
            args=[func, *operands], keywords=[]), value)
    return ast.fix_missing_locations(fdef)


def _target(stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _atomic(node) -> bool:
    return isinstance(node, ast.Name) or isinstance(node, ast.Constant) \
        and type(node.value) in (int, float, bool)


def _operation(value, resolve):
    """The function an elementwise ``value`` (operator or ufunc of names and numbers) or a
    whole-array ``np.sum``/``np.mean`` applies, else None."""
    if isinstance(value, ast.BinOp) and type(value.op) in _BINOPS \
            and _atomic(value.left) and _atomic(value.right):
        return _BINOPS[type(value.op)]
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) \
            and _atomic(value.operand):
        return operator.neg
    if isinstance(value, ast.Call) and not value.keywords and value.args \
            and all(_atomic(a) for a in value.args):
        fn = resolve(value.func)
        if isinstance(fn, np.ufunc) and fn.nin == len(value.args) and fn.nout == 1 \
                and fn.signature is None:
            return fn
        if (fn is np.sum or fn is np.mean) and len(value.args) == 1 \
                and isinstance(value.args[0], ast.Name):
            return fn
    return None


def _shape_reads(body, calls, resolve, once, loads):
    """The reads of names that only their shape is read of (through a top-level
    ``u = _rt.shape_like(v)`` whose ``u`` is read only in shape positions: id of the read
    -> that statement), and the ids of the names read by ``_rt.grad_seed``."""
    positions = set()  # ids of the name nodes in a shape-only argument position
    seeds = set()
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args):
            continue
        fn = resolve(call.func)
        at = _SHAPE_READS.get(fn) if _hashable(fn) else None
        if at is not None and len(call.args) > at and isinstance(call.args[at], ast.Name):
            positions.add(id(call.args[at]))
        elif runtime.makes_seed(fn) and len(call.args) == 1 and not call.keywords \
                and isinstance(call.args[0], ast.Name):
            seeds.add(id(call.args[0]))
    reads = {}
    for stmt in body:
        name = _target(stmt)
        value = stmt.value if name is not None else None
        if name in once and isinstance(value, ast.Call) and len(value.args) == 1 \
                and not value.keywords and isinstance(value.args[0], ast.Name) \
                and resolve(value.func) is runtime.shape_like \
                and all(u in positions for u in loads.get(name, ())):
            reads[id(value.args[0])] = stmt
    return reads, seeds


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True
