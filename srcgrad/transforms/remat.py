"""Guarantees afterwards: a backward sweep of ``grad`` reads no saved negation ``n = -v`` of a
value it has anyway: it computes ``-v`` where it reads ``n``, and ``n`` is not saved.

``np.exp(-x * x)`` makes ``_t3 = -x``, which the backward sweep reads once (``bx = b_t4 *
_t3``). Saving it keeps an array alive from the forward sweep to the backward one, where
``x`` is at hand: on large arrays the memory, fresh from the system, costs more than the
negation (one cheap pass, whose temporary is freed at once). Negation is exact, so ``-x``
is ``_t3`` to the last bit. And where the sweep has computed ``b_t3 = b_t4 * x`` already,
``b_t4 * _t3`` is ``-b_t3`` (rounding is symmetric in sign): ``_rt.negated_product`` returns
that for real floating arrays and numbers (negating an integer may wrap around, and a
complex product's zeros may change sign), and ``b_t4 * -x`` otherwise: a new array either
way, as the product was (inplace.py, run before, may count on it). The negation's own
contribution, read next (``bx = bx - b_t3``), then makes ``bx = -b_t3 - b_t3``: one pass as
``_rt.twice_negated_product``, ``b_t3 * -2`` (doubling is exact), instead of two.

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
                        assigned_once: set[str], shape_only: frozenset[str],
                        rt: str = "_rt") -> list:
    """``backward`` with each read of a negation that qualifies replaced by ``-v`` (or
    ``e * n`` by the negation of a product ``e * v`` it has computed already); the names no
    longer read are removed from ``needed`` (what the forward sweep saves)."""
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
        at = next(i for i, stmt in enumerate(backward) if stmt is reads[0][0])
        _Negate(n, v, _products_before(backward, at, v), rt).visit(backward[at])
        needed.discard(n)
        needed.add(v)
    return _twice_negated(backward, rt)


def _twice_negated(backward: list, rt: str) -> list:
    """``b = rt.negated_product(p, e, v)`` followed by ``b = b - p`` (or ``subtract_into``)
    as the one statement ``b = rt.twice_negated_product(p, e, v)``."""
    out: list = []
    for s in backward:
        first = out[-1] if out else None
        if _assigned_call(first, rt, "negated_product") is not None \
                and _is_subtraction_of(s, first.targets[0].id, first.value.args[0], rt):
            first.value.func = A.attr(rt, "twice_negated_product")
            continue
        out.append(s)
    return out


def _assigned_call(s, rt: str, name: str):
    """The call of ``s``, ``target = rt.name(...)`` with a name target, or None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], gast.Name) and A.called_attr(s.value, rt) == name:
        return s.value
    return None


def _is_subtraction_of(s, target: str, product, rt: str) -> bool:
    """Whether ``s`` is ``target = target - product`` (or ``rt.subtract_into(target, ...)``)
    with ``product`` a name, not ``target``."""
    if not (isinstance(product, gast.Name) and product.id != target
            and isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and s.targets[0].id == target):
        return False
    v = s.value
    if isinstance(v, gast.BinOp) and isinstance(v.op, gast.Sub):
        operands = [v.left, v.right]
    elif _assigned_call(s, rt, "subtract_into") is not None and len(v.args) == 2 \
            and not v.keywords:
        operands = v.args
    else:
        return False
    return all(isinstance(o, gast.Name) for o in operands) \
        and [o.id for o in operands] == [target, product.id]


def _products_before(backward: list, at: int, v: str) -> dict[str, str]:
    """``{e: b}`` for each top-level ``b = e * v`` (or ``v * e``) before ``backward[at]``
    whose ``b``, ``e`` and ``v`` nothing assigns again up to there."""
    out: dict[str, str] = {}
    for i in range(at - 1, -1, -1):
        s = backward[i]
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.BinOp) \
                and isinstance(s.value.op, gast.Mult) \
                and isinstance(s.value.left, gast.Name) and isinstance(s.value.right, gast.Name):
            names = [s.value.left.id, s.value.right.id]
            b = s.targets[0].id
            if v in names and b not in names:
                names.remove(v)
                e = names[0]
                later = set().union(*[A.names_written(t) for t in backward[i + 1:at]])
                if not {b, e, v} & later:
                    out.setdefault(e, b)
    return out


class _Negate(gast.NodeTransformer):
    """The read of ``name`` as ``-operand``; ``e * name`` as ``-b`` through
    ``rt.negated_product(b, e, operand)`` when ``products`` has ``b = e * operand``."""

    def __init__(self, name: str, operand: str, products: dict[str, str], rt: str):
        self.name, self.operand, self.products, self.rt = name, operand, products, rt

    def visit_BinOp(self, node):
        if isinstance(node.op, gast.Mult):
            for this, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(this, gast.Name) and this.id == self.name \
                        and isinstance(other, gast.Name) and other.id in self.products:
                    return gast.copy_location(A.call(
                        A.attr(self.rt, "negated_product"), A.load(self.products[other.id]),
                        A.load(other.id), A.load(self.operand)), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.name and isinstance(node.ctx, gast.Load):
            return gast.copy_location(gast.UnaryOp(op=gast.USub(), operand=A.load(
                self.operand)), node)
        return node
