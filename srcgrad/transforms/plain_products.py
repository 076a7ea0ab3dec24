"""Guarantees afterwards: ``grad``'s own backward sweep calls no matrix product's cotangent
rule (``matmul_left``/``matmul_right``) directly, but through ``plain_matmul_left``/
``plain_matmul_right`` (rules/operators.py).

Per step of an RNN's backward loop, ``h @ Wh + xs[t] @ Wx + b`` gives three such calls, and
each rule pays for its generality on plain matrices: ``getattr`` for the ranks, a shape
compared, ``np.transpose`` through its Python wrapper. Writing ``b_t5 @ Wh.T`` instead would
need the ranks, known only when the sweep runs (``h`` may be a vector, a batch of matrices,
a list). The helpers check, in a few attribute reads, that both operands are matrices and the
cotangent is the product's shape, compute ``g @ y.T`` (``x.T @ g``) then, and call the rule
otherwise: the same product of the same operands as the rule, so the same bits, on every rank.

Run only on the sweeps ``grad`` itself calls (Context.lean): they are never differentiated
again, and rule code, which is, keeps numpy functions instead of ``.T``.
"""
from __future__ import annotations

__all__ = ["plain_products"]

from collections.abc import Callable

import gast


def plain_products(stmts: list, callees: dict, helper: Callable[[object, str], str],
                   swaps: dict) -> list:
    """``stmts`` (changed in place) with each call of a name ``callees`` maps to a key of
    ``swaps`` calling ``swaps[rule]`` instead, under the name ``helper(obj, preferred)``
    gives it."""
    names = {name: swaps[obj] for name, obj in callees.items()
             if any(obj is rule for rule in swaps)}
    if not names:
        return stmts
    for s in stmts:
        for node in gast.walk(s):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                    and node.func.id in names:
                plain = names[node.func.id]
                node.func = gast.copy_location(
                    gast.Name(id=helper(plain, plain.__name__), ctx=gast.Load(),
                              annotation=None, type_comment=None), node.func)
    return stmts
