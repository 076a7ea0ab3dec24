"""Guarantees afterwards: in the backward sweep of a ``grad`` (seeded with one), no product
of an operand with an adjoint known to hold only ones multiplies when it would give that
operand back unchanged.

``grad`` seeds the backward sweep with the number one of its result's type, and ``np.sum``'s
adjoint spreads it over the summed array (``b_t6 = expand_to(b_t7, _t6)``, a zero-stride view
of ones). Every product with such an adjoint (``b_t6 * _t5``) is a pass over the data that
gives ``_t5`` again: it becomes ``_rt.times_unit(b_t6, _t5)``, which returns ``_t5`` itself
when the product would neither broadcast nor cast it (a real floating array: ``1.0 * v`` is
``v`` to the last bit), and computes the product otherwise.

``_t5`` may then be a saved value or an input, so the result is never handed on as it is: a
product is rewritten only where its value is an operand of further arithmetic, or the whole
value of an adjoint whose every read, up to its next assignment, is such an operand (never a
gradient returned, never an argument to a call that could keep it, never read in a branch or
a loop). Only the top level of the sweep is rewritten, from the seed down: an adjoint holds
ones only when it is the seed, ``expand_to`` of one holding ones, or a copy of one.

Run only on the sweeps ``grad`` itself calls (Context.lean), never on those that are
differentiated again: there the seed is any cotangent.
"""
from __future__ import annotations

__all__ = ["skip_unit_products"]

import gast

from . import astutil as A
from .cleanup import number

_COMPOUND = (gast.If, gast.For, gast.While, gast.With, gast.Try)


def skip_unit_products(stmts: list, seed: str, rt: str, spread: str,
                       live_out: set[str]) -> list:
    """``stmts`` (a backward sweep seeded with one in ``seed``) with products by its
    adjoints of ones rewritten in place; ``spread``: the name the sweep calls ``expand_to``
    by; ``live_out``: names read after the statements."""
    ones = {seed}
    for i, s in enumerate(stmts):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            ones -= A.names_written(s)
            continue
        target = s.targets[0].id
        whole = target not in live_out and _read_only_by_arithmetic(target, stmts[i + 1:])
        s.value = _Rewriter(ones, rt, whole).rewrite(s.value)
        if _spreads_ones(s.value, ones, spread) or (
                isinstance(s.value, gast.Name) and s.value.id in ones):
            ones.add(target)
        else:
            ones.discard(target)
    return stmts


def _spreads_ones(value, ones: set[str], spread: str) -> bool:
    """``expand_to(g, x)`` (no axis) of a ``g`` holding ones: ones shaped like ``x``."""
    return (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)
            and value.func.id == spread and len(value.args) == 2
            and not value.keywords and isinstance(value.args[0], gast.Name)
            and value.args[0].id in ones)


def _read_only_by_arithmetic(name: str, rest: list) -> bool:
    """Whether every read of ``name`` in ``rest``, before it is assigned again, is an
    operand of arithmetic in a top-level statement."""
    for s in rest:
        mentioned = {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}
        if isinstance(s, _COMPOUND) or not isinstance(s, gast.Assign):
            if name in mentioned:
                return False
            continue
        if name in A.names_kept(s.value):
            return False
        if name in A.names_written(s):
            return True
    return True


class _Rewriter:
    """Products by a name in ``ones`` become ``times_unit`` calls, where their value is
    consumed: under arithmetic, or (``whole``) as the whole expression."""

    def __init__(self, ones: set[str], rt: str, whole: bool):
        self.ones, self.rt, self.whole = ones, rt, whole

    def rewrite(self, node):
        return self.visit(node, self.whole)

    def visit(self, node, consumed: bool):
        fresh = A.is_fresh(node)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.expr):
                setattr(node, field, self.visit(value, fresh))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v, fresh) if isinstance(v, gast.expr) else v
                                      for v in value])
        if consumed and isinstance(node, gast.BinOp) and isinstance(node.op, gast.Mult):
            for one, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(one, gast.Name) and one.id in self.ones \
                        and number(other) is None:  # (times a number: no array to skip)
                    return gast.copy_location(
                        A.call(A.attr(self.rt, "times_unit"), one, other), node)
        return node
