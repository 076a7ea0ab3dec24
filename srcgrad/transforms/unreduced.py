"""Guarantees afterwards: in the backward sweep of a ``grad``, no adjoint is summed down to
its value's shape only to be passed on to reductions that sum it down further, or to the
rules of the matrix product that made the value (which sum it down themselves).

``h @ Wh + xs[t] @ Wx + b`` gives, per step of an RNN's backward loop::

    b_t4 = _rt.unbroadcast(b_t5, _t4)      # _t4 = _t1 + _t3, then _t5 = _t4 + b
    b_t1 = _rt.unbroadcast(b_t4, _t1)      # _t1 = h @ Wh
    b_t3 = _rt.unbroadcast(b_t4, _t3)      # _t3 = _t2 @ Wx
    bWx = _rt.add(bWx, matmul_right(b_t3, _t2, Wx))
    bh = matmul_left(b_t1, h, Wh)

Three calls, and the forward sweep pushes a shape stand-in of ``_t1``, ``_t3`` and ``_t4``
each step only for them. Summing down in stages gives what summing down once does (each
operand's shape broadcasts to its result's; only the order of the additions of a reduction
can differ, and with no broadcasting nothing is added at all), so ``b_t1`` and ``b_t3`` are
computed from ``b_t5`` directly; and ``matmul_left``/``matmul_right`` take the cotangent of a
product broadcast to a larger shape (rules/operators.py), so theirs is passed as it comes::

    bWx = _rt.add(bWx, matmul_right(b_t5, _t2, Wx))
    bh = matmul_left(b_t5, h, Wh)

A reduction ``bv = _rt.unbroadcast(g, v)`` is removed when ``bv`` (the adjoint of ``v``) is
assigned nowhere else, is read only after it in the same block and only as the first
argument of ``_rt.unbroadcast`` or of a matrix product's rule, and ``g``, a name, is not
assigned in between. The values the reductions read for their shapes are returned, so that
the forward sweep stops saving those nothing else reads (prune_tape.py drops their pops).

Run only on the sweeps ``grad`` itself calls (Context.lean): a sweep differentiated again
keeps the rules' ordinary contract (cotangents of exactly the product's shape).
"""
from __future__ import annotations

__all__ = ["fold_reductions"]

from collections.abc import Callable

import gast

from . import astutil as A


def fold_reductions(stmts: list, rt: str, products: set[str],
                    adjoint: Callable[[str], str]) -> tuple[list, set[str]]:
    """``stmts`` (a backward sweep, changed in place) without the reductions above, and the
    names those reductions read for their shapes. ``products``: the names the sweep calls
    ``matmul_left``/``matmul_right`` by; ``adjoint``: a primal name's adjoint name."""
    shapes: set[str] = set()
    while True:
        found = _first_foldable(stmts, stmts, rt, products, adjoint)
        if found is None:
            return stmts, shapes
        block, i, reads = found
        s = block.pop(i)
        g = s.value.args[0].id
        for call in reads:
            call.args[0] = gast.copy_location(A.load(g), call.args[0])
        shapes.add(s.value.args[1].id)


def _first_foldable(sweep: list, block: list, rt: str, products, adjoint):
    """``(block, index, reading calls)`` of the first removable reduction, at any depth."""
    for i, s in enumerate(block):
        if isinstance(s, (gast.If, gast.For, gast.While)):
            for inner in (s.body, s.orelse):
                found = _first_foldable(sweep, inner, rt, products, adjoint)
                if found is not None:
                    return found
            continue
        target = _reduction(s, rt, adjoint)
        if target is not None:
            reads = _reading_calls(sweep, block, i, target, rt, products)
            if reads is not None:
                return block, i, reads
    return None


def _reduction(s, rt: str, adjoint) -> str | None:
    """The target of ``bv = rt.unbroadcast(g, v)`` (``g`` and ``v`` names, ``bv`` the adjoint
    of ``v``)."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and _is_unbroadcast(s.value, rt)):
        return None
    g, v = s.value.args
    target = s.targets[0].id
    if not (isinstance(g, gast.Name) and isinstance(v, gast.Name)) or g.id == target \
            or target != adjoint(v.id):
        return None
    return target


def _is_unbroadcast(node, rt: str) -> bool:
    return A.called_attr(node, rt) == "unbroadcast" and len(node.args) == 2 \
        and not node.keywords


def _reading_calls(sweep: list, block: list, i: int, target: str, rt: str, products):
    """The calls reading ``target`` after ``block[i]`` when every read of it in the sweep is
    their first argument and ``block[i]``'s first argument keeps its value until the last;
    else None."""
    stores = [n for s in sweep for n in gast.walk(s)
              if isinstance(n, gast.Name) and n.id == target and not isinstance(n.ctx, gast.Load)]
    if len(stores) != 1:
        return None
    loads = {id(n) for s in sweep for n in gast.walk(s)
             if isinstance(n, gast.Name) and n.id == target and isinstance(n.ctx, gast.Load)}
    g = block[i].value.args[0].id
    calls, last = [], i
    for j in range(i + 1, len(block)):
        for n in gast.walk(block[j]):
            if isinstance(n, gast.Call) and n.args and id(n.args[0]) in loads \
                    and _passes_on(n, rt, products):
                calls.append(n)
                loads.discard(id(n.args[0]))
                last = j
    if loads or not calls:
        return None  # (a read elsewhere: before, in another block, or not as a cotangent)
    if any(g in A.names_written(block[j]) for j in range(i + 1, last + 1)):
        return None
    return calls


def _passes_on(call, rt: str, products) -> bool:
    """A call summing its first argument down itself: ``rt.unbroadcast(g, x)`` or a matrix
    product's rule ``matmul_left(g, x, y)``."""
    if _is_unbroadcast(call, rt):
        return True
    return isinstance(call.func, gast.Name) and call.func.id in products \
        and len(call.args) == 3 and not call.keywords
