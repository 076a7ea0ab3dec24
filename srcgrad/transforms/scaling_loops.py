"""Guarantees afterwards: no backward loop of ``grad``'s own sweeps replays a body that only
multiplies one adjoint by a number literal; it is one call of ``_rt.scaled_repeatedly``.

``while norm(y) < c: y = y * 2`` runs backwards as ``for _k in range(n): by = by * 2``: n
products and n iterations of the interpreter for what is one product by ``2 ** n``.
``scaled_repeatedly(by, 2, n)`` computes that product once when it can do so safely (a
float64 or complex128 adjoint, a power that neither overflows nor underflows) and runs the
loop otherwise, so any loop of that shape (``x = x * 0.9`` in a ``for``, a ``while``, a loop
nested in another, run any number of times, zero included) gets the same gradient up to
rounding.

Only a body of exactly one such product is rewritten (comments aside): a body that also
pops the tape, reads the loop's index, accumulates another adjoint or branches stays a loop.
Run only on the sweeps ``grad`` runs itself (Context.lean), which are never differentiated
again, so ``scaled_repeatedly`` needs no derivative of its own.
"""
from __future__ import annotations

__all__ = ["collapse_scaling_loops"]

import gast

from . import astutil as A


def collapse_scaling_loops(body: list, rt: str) -> list:
    """``body`` (a backward sweep) with each loop that only scales one adjoint by a number
    literal replaced by one call of ``rt.scaled_repeatedly``, at any depth."""
    read = set().union(*(A.names_read(s) for s in body))  # (a loop's index nobody reads)
    return _collapsed_block(body, rt, read)


def _collapsed_block(body: list, rt: str, read: set[str]) -> list:
    out = []
    for s in body:
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _collapsed_block(getattr(s, field), rt, read))
        out.extend(_collapsed(s, rt, read))
    return out


def _collapsed(s, rt: str, read: set[str]) -> list:
    """``[s]``, or the statements that replace ``s`` when it is a loop scaling an adjoint."""
    count = _range_count(s)
    if count is None or s.target.id in read:
        return [s]
    comments = [t for t in s.body if _is_comment(t)]
    work = [t for t in s.body if not _is_comment(t)]
    if len(work) != 1:
        return [s]
    scaled = _scaling(work[0])
    if scaled is None or scaled[0] in A.names_read(count):
        return [s]
    name, factor = scaled
    call = A.call(A.attr(rt, "scaled_repeatedly"), A.load(name), A.const(factor),
                  A.deepcopy(count))
    return comments + [A.assign(name, call, at=work[0])]


def _range_count(s):
    """``n`` of the loop ``for <name> in range(n):`` without else, when ``n`` is a name or a
    number; else None."""
    if not (isinstance(s, gast.For) and not s.orelse and isinstance(s.target, gast.Name)
            and isinstance(s.iter, gast.Call) and isinstance(s.iter.func, gast.Name)
            and s.iter.func.id == "range" and len(s.iter.args) == 1
            and not s.iter.keywords):
        return None
    count = s.iter.args[0]
    return count if isinstance(count, (gast.Name, gast.Constant)) else None


def _scaling(s):
    """``(b, c)`` for the statement ``b = b * c`` or ``b = c * b`` with ``c`` an int or float
    literal; else None."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.BinOp)
            and isinstance(s.value.op, gast.Mult)):
        return None
    name = s.targets[0].id
    left, right = s.value.left, s.value.right
    for own, other in ((left, right), (right, left)):
        if isinstance(own, gast.Name) and own.id == name and isinstance(other, gast.Constant) \
                and type(other.value) in (int, float):
            return name, other.value
    return None


def _is_comment(s) -> bool:
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) \
        and isinstance(s.value.value, str)
