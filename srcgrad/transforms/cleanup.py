"""Guarantees afterwards: generated adjoint expressions contain no arithmetic on constants
alone, no multiplications or powers by one, and no addition of a negation.
"""
from __future__ import annotations

import operator

import gast

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
         gast.Div: operator.truediv, gast.Pow: operator.pow}


def number(node):
    """The value of a numeric literal (``2``, ``-3.5``), else None."""
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = number(node.operand)
        return None if inner is None else -inner
    return None


class _Simplify(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        # pow_base_grad(x, c) with a constant c != 0 is c * x ** (c - 1): say so in the code
        if isinstance(node.func, gast.Name) and node.func.id.startswith("pow_base_grad") \
                and len(node.args) == 2 and not node.keywords:
            c = number(node.args[1])
            if c is not None and c != 0:
                power = gast.BinOp(left=node.args[0], op=gast.Pow(),
                                   right=gast.Constant(value=c - 1, kind=None))
                return self.visit(gast.BinOp(left=gast.Constant(value=c, kind=None),
                                             op=gast.Mult(), right=power))
        return node

    def visit_Assign(self, node):
        # y = x * 1.0 stays: y = x would make y another name of x's array, which the run-time
        # checks of in-place updates (desugar.py) would then take for shared data
        value = node.value
        if isinstance(value, gast.BinOp) and not isinstance(value.left, gast.BinOp):
            value.left, value.right = self.visit(value.left), self.visit(value.right)
            simplified = self.visit_BinOp(value, children_done=True)
            node.value = value if isinstance(simplified, gast.Name) else simplified
            return node
        self.generic_visit(node)
        return node

    def visit_BinOp(self, node, children_done: bool = False):
        if not children_done:
            self.generic_visit(node)
        left, right = number(node.left), number(node.right)
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
        if isinstance(node.op, gast.Add) and isinstance(node.right, gast.UnaryOp) \
                and isinstance(node.right.op, gast.USub):
            # a + -b is a - b: one pass over the data instead of two
            return gast.BinOp(left=node.left, op=gast.Sub(), right=node.right.operand)
        if isinstance(node.op, gast.Mult) and isinstance(node.right, gast.BinOp) \
                and isinstance(node.right.op, gast.Mult) and number(node.right.left) is not None:
            # g * (2 * x) reads better as g * 2 * x (same value up to rounding order)
            return gast.BinOp(left=gast.BinOp(left=node.left, op=gast.Mult(),
                                              right=node.right.left),
                              op=gast.Mult(), right=node.right.right)
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
