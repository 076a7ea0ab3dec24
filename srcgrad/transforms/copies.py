"""Guarantees afterwards: in a generated backward sweep, no copy ``a = b`` of one name into
another is left whose every later read could read ``b`` instead.

The adjoint of ``y = x`` (and of ``x + y`` between operands of one shape) is a copy:
``b_t1 = by``, then ``by = b_t1 * 2``. Each read of ``a`` that follows the copy in the same
block, before ``a`` or ``b`` is assigned again, reads ``b``; the copy goes once no read of
``a`` is left before ``a`` is assigned again (or none is left at all).
"""
from __future__ import annotations

__all__ = ["propagate_copies"]

from collections import Counter

import gast

from . import astutil as A

_COMPOUND = (gast.If, gast.For, gast.While, gast.With, gast.Try, gast.FunctionDef)


def _loads(node) -> list:
    return [n for n in gast.walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)]


def _is_copy(s) -> bool:
    return (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name)
            and s.targets[0].id != s.value.id)


class _Propagator:
    def __init__(self, stmts: list, keep: set[str]):
        self.keep = keep  # names read after the statements (never removed)
        self.reads = Counter(n.id for s in stmts for n in _loads(s))

    def block(self, stmts: list) -> list:
        for s in stmts:
            if isinstance(s, (gast.If, gast.For, gast.While)):
                s.body = self.block(s.body) or [gast.Pass()]
                s.orelse = self.block(s.orelse)
        out = []
        for i, s in enumerate(stmts):
            if _is_copy(s) and s.targets[0].id not in self.keep \
                    and self.propagate(s, stmts[i + 1:]):
                self.reads[s.value.id] -= 1
                continue
            out.append(s)
        return out

    def propagate(self, copy, rest: list) -> bool:
        """Substitute ``b`` for ``a`` in the reads that follow ``a = b``; whether the copy
        is dead afterwards."""
        a, b = copy.targets[0].id, copy.value.id
        for s in rest:
            if isinstance(s, gast.Delete):
                break
            if isinstance(s, _COMPOUND):
                mentioned = {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}
                if a in mentioned or b in mentioned:
                    break
                continue
            for n in _loads(s):
                if n.id == a:
                    n.id = b
                    self.reads[a] -= 1
                    self.reads[b] += 1
            written = A.names_written(s)
            if a in written:
                return True  # every read of the copied value was rewritten
            if b in written:
                break
        return self.reads[a] == 0


def propagate_copies(stmts: list, keep: set[str]) -> list:
    """``stmts`` (a backward sweep) with copies propagated; ``keep`` names read after it."""
    return _Propagator(stmts, keep).block(stmts)
