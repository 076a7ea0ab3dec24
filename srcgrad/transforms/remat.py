"""Guarantees afterwards: a backward sweep of ``grad`` reads no saved negation ``n = -v`` of a
value it has anyway: it computes ``-v`` where it reads ``n``, and ``n`` is not saved.

``np.exp(-x * x)`` makes ``_t3 = -x``, which the backward sweep reads once (``bx = b_t4 *
_t3``). Saving it keeps an array alive from the forward sweep to the backward one, where
``x`` is at hand: on large arrays the memory, fresh from the system, costs more than the
negation (one cheap pass, whose temporary is freed at once). Negation is exact, so ``-x``
is ``_t3`` to the last bit.

Only where nothing can differ: ``n`` and ``v`` are each assigned once (or ``v`` is a
parameter never assigned), so they hold the same values in both sweeps; ``n`` is read once,
as a value, in a top-level statement of the backward sweep (not in a loop, which would
negate again each iteration); and ``v`` is a parameter or saved in full anyway.

Run only on the sweeps ``grad`` itself calls (Context.lean).
"""
from __future__ import annotations

__all__ = ["recompute_negations"]

import gast

from . import astutil as A


def recompute_negations(backward: list, body: list, needed: set[str], params: list[str],
                        assigned_once: set[str], shape_only: frozenset[str]) -> list:
    """``backward`` with each read of a negation that qualifies replaced by ``-v``; the
    names no longer read are removed from ``needed`` (what the forward sweep saves)."""
    rebound = {n for s in body for n in A.names_written(s)}
    for s in body:
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.UnaryOp)
                and isinstance(s.value.op, gast.USub)
                and isinstance(s.value.operand, gast.Name)):
            continue
        n, v = s.targets[0].id, s.value.operand.id
        if n not in needed or n in shape_only or n not in assigned_once:
            continue
        if not (v in params and v not in rebound
                or v in assigned_once and v in needed and v not in shape_only):
            continue
        reads = [(stmt, node) for stmt in backward for node in gast.walk(stmt)
                 if isinstance(node, gast.Name) and node.id == n]
        if len(reads) != 1 or not isinstance(reads[0][0], gast.Assign) \
                or not isinstance(reads[0][1].ctx, gast.Load):
            continue
        _Negate(n, v).visit(reads[0][0])
        needed.discard(n)
        needed.add(v)
    return backward


class _Negate(gast.NodeTransformer):
    def __init__(self, name: str, operand: str):
        self.name, self.operand = name, operand

    def visit_Name(self, node):
        if node.id == self.name and isinstance(node.ctx, gast.Load):
            return gast.copy_location(gast.UnaryOp(op=gast.USub(), operand=A.load(
                self.operand)), node)
        return node
