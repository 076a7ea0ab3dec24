"""Guarantees afterwards: no adjoint in a generated backward sweep is assigned an expression
and then, by the next statement, the same expression added again.

``h * h`` hands ``h`` two equal contributions: ``bh = b_t6 * h`` then ``bh = bh + b_t6 * h``.
They become ``bh = b_t6 * h * 2``: one pass over the data instead of three, and the same value
to the last bit (doubling is exact in floating point, ``e + e == e * 2``).
"""
from __future__ import annotations

__all__ = ["combine_contributions"]

import gast

from . import astutil as A


def _pure(node) -> bool:
    """Arithmetic on names and numbers only: evaluating it twice gives the same value."""
    if isinstance(node, gast.Name):
        return True
    if isinstance(node, gast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, gast.BinOp):
        return isinstance(node.op, (gast.Add, gast.Sub, gast.Mult, gast.Div)) \
            and _pure(node.left) and _pure(node.right)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, gast.USub) and _pure(node.operand)
    return False


def _same(a, b) -> bool:
    return gast.dump(a) == gast.dump(b)


def _doubled(first, second):
    """``a = e`` followed by ``a = a + e``: the one statement ``a = e * 2``, else None."""
    if not (isinstance(first, gast.Assign) and isinstance(second, gast.Assign)
            and len(first.targets) == len(second.targets) == 1
            and isinstance(first.targets[0], gast.Name)
            and isinstance(second.targets[0], gast.Name)):
        return None
    a = first.targets[0].id
    value = second.value
    if second.targets[0].id != a or not isinstance(value, gast.BinOp) \
            or not isinstance(value.op, gast.Add) or not isinstance(value.left, gast.Name) \
            or value.left.id != a or not isinstance(value.right, gast.BinOp) \
            or not _pure(first.value) or a in A.names_read(first.value) \
            or not _same(first.value, value.right):
        return None
    doubled = gast.BinOp(left=first.value, op=gast.Mult(), right=A.const(2))
    return A.assign(a, doubled, at=first)


def combine_contributions(stmts: list) -> list:
    """``stmts`` (a backward sweep) with repeated contributions combined, at any depth."""
    for s in stmts:
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = combine_contributions(s.body)
            s.orelse = combine_contributions(s.orelse)
    out = []
    for s in stmts:
        merged = _doubled(out[-1], s) if out else None
        if merged is not None:
            out[-1] = merged
        else:
            out.append(s)
    return out
