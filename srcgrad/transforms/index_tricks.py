"""Guarantees afterwards: no subscript of numpy's concatenators ``np.r_`` / ``np.c_`` is
left; each is a call ``_rt.index_concat(np.r_, items)``, which has a derivative rule (a
subscript of any other object differentiates only its base, so these would lose the
gradient of their items).
"""
from __future__ import annotations

import gast
import numpy as np

from . import astutil as A
from .context import Context
from .resolve import known_value

CONCATENATORS = (type(np.r_), type(np.c_))


def lower_index_tricks(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrite ``np.r_[a, 1:3, b]`` as ``_rt.index_concat(np.r_, (a, _rt.index_slice(1, 3,
    None), b))``: the same object, subscripted at run time by the same items."""
    _Lower(ctx).visit(tree)
    return tree


class _Lower(gast.NodeTransformer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load) or not self.is_concatenator(node.value):
            return node
        items = node.slice
        if isinstance(items, gast.Tuple):
            items = gast.Tuple(elts=[self.item(e) for e in items.elts], ctx=gast.Load())
        else:
            items = self.item(items)
        call = A.call(A.attr(self.ctx.rt, "index_concat"), node.value, items)
        return A.located(call, node)

    def is_concatenator(self, node) -> bool:
        return isinstance(known_value(node, self.ctx), CONCATENATORS)

    def item(self, node):
        if not isinstance(node, gast.Slice):
            return node
        bounds = [b if b is not None else A.const(None)
                  for b in (node.lower, node.upper, node.step)]
        return A.located(A.call(A.attr(self.ctx.rt, "index_slice"), *bounds), node)
