"""Guarantees afterwards: no restoring pop is left in a backward sweep whose value nothing
reads, and ``dead_restores`` names those removed, so that the forward sweep omits the
matching pushes.

A variable overwritten in a loop is pushed before each overwrite so the backward sweep can
restore it. When the restored value is never read again (``y = y * 2``: the adjoint of a
product by a constant reads nothing), the push and the pop are pure cost: one tape entry per
iteration. This is a liveness analysis over the generated backward sweep (straight-line code,
``if`` and ``for _k in range(_n)``); a pop is dead when its target is not live after it on
any visit. Statements of any other kind are treated as reading every name they mention, and
pops inside them are kept.
"""
from __future__ import annotations

__all__ = ["dead_restores", "remove_statements"]

from collections.abc import Hashable

import gast

from ..codegen import COMMENT_PREFIX
from . import astutil as A


class _Liveness:
    def __init__(self, candidates: dict[int, tuple[gast.stmt, Hashable]]):
        self.candidates = candidates
        self.live_at: dict[Hashable, bool] = {}  # key -> target live after some visit

    def block(self, stmts: list, live: set[str]) -> set[str]:
        """Names live before ``stmts`` given ``live`` after them."""
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def stmt(self, s, live: set[str]) -> set[str]:
        if isinstance(s, gast.Assign):
            entry = self.candidates.get(id(s))
            if entry is not None and entry[0] is s:
                target = s.targets[0].id
                key = entry[1]
                self.live_at[key] = self.live_at.get(key, False) or target in live
            written = set()
            for t in s.targets:
                if isinstance(t, gast.Name):
                    written.add(t.id)
            # (a subscript or attribute target reads its base: names_read sees its Load)
            return (live - written) | A.names_read(s)
        if isinstance(s, gast.If):
            body = self.block(s.body, set(live))
            orelse = self.block(s.orelse, set(live))
            return body | orelse | A.names_read(s.test)
        if isinstance(s, gast.For) and isinstance(s.target, gast.Name) and not s.orelse:
            # zero or more iterations: iterate to the fixed point of the live set at the top
            top = set(live)
            while True:
                new = live | (self.block(s.body, set(top)) - {s.target.id})
                if new == top:
                    break
                top = new
            return top | A.names_read(s.iter)
        if isinstance(s, (gast.Pass, gast.Expr, gast.Return)):
            return live | A.names_read(s)
        # anything else: reads all it mentions, kills nothing, and its pops stay
        return live | {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}


def dead_restores(stmts: list, live_out: set[str],
                  candidates: dict[int, tuple[gast.stmt, Hashable]]) -> set[Hashable]:
    """Keys of the candidate pops (``id(stmt) -> (stmt, key)``) whose target is dead after
    every execution, given the names ``live_out`` read after ``stmts``."""
    analysis = _Liveness(candidates)
    analysis.block(stmts, set(live_out))
    return {key for key, live in analysis.live_at.items() if not live}


def remove_statements(stmts: list, doomed: set[int]) -> list:
    """``stmts`` without the statements whose ids are in ``doomed`` (at any depth of ``if``
    and ``for`` bodies), nor the comments left with no code under them; a body left empty
    gets a ``pass``."""
    kept = []
    for s in stmts:
        if id(s) in doomed:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = remove_statements(s.body, doomed) or [gast.Pass()]
            s.orelse = remove_statements(s.orelse, doomed)
        kept.append(s)
    out = []
    for i, s in enumerate(kept):
        following = kept[i + 1] if i + 1 < len(kept) else None
        if _is_comment(s) and (following is None or _is_comment(following) or isinstance(
                following, (gast.If, gast.For, gast.While))):
            continue  # (a comment heads the code of one user statement, none of it left)
        out.append(s)
    return out


def _is_comment(s) -> bool:
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) \
        and isinstance(s.value.value, str) and s.value.value.startswith(COMMENT_PREFIX)
