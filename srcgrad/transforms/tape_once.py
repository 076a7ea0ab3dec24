"""Guarantees afterwards: no trip count is pushed on the tape by a statement at the top level
of the forward sweep; ``saved_once`` names those counts, which the sweep saves in its saved
tuple instead.

A loop outside every other loop and branch pushes its trip count once, after it ends, and
the backward sweep pops it once, before it replays the loop backwards. An entry pushed and
popped exactly once is a value handed from one sweep to the other: the saved tuple holds it
at no cost, and a function whose only tape entries are such counts (``while norm(y) < c:
y = y * 2``) then needs no tape object at all. Taking out one push and the pop that reads it
back leaves every other pop matched with the same push as before: a pop takes the latest
entry not yet popped, and the count's entry is pushed after every entry the loop pushed and
popped before any of them.
"""
from __future__ import annotations

__all__ = ["saved_once"]

import gast

from . import astutil as A


def _push_of(s, tape: str) -> str | None:
    """``v`` for the statement ``tape.push(v)``, else None."""
    if isinstance(s, gast.Expr) and A.called_attr(s.value, tape) == "push" \
            and not s.value.keywords and len(s.value.args) == 1 \
            and isinstance(s.value.args[0], gast.Name):
        return s.value.args[0].id
    return None


def _pop_into(s, tape: str) -> str | None:
    """``v`` for the statement ``v = tape.pop()``, else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(
            s.targets[0], gast.Name) and A.called_attr(s.value, tape) == "pop" \
            and not s.value.args and not s.value.keywords:
        return s.targets[0].id
    return None


def saved_once(forward: list, backward: list, tape: str,
               counts: set[str]) -> tuple[list, list, list[str]]:
    """``forward`` and ``backward`` without the push and the pop of each trip count in
    ``counts`` that the forward sweep pushes at its top level and the backward sweep pops
    at its top level, once each; and the names of those counts, to save instead."""
    pushed = {}
    for s in forward:
        name = _push_of(s, tape)
        if name in counts:
            pushed.setdefault(name, []).append(s)
    pops: dict[str, list] = {}
    for s in backward:
        for node in gast.walk(s):
            name = _pop_into(node, tape)
            if name is not None:
                pops.setdefault(name, []).append(node)
    top = {id(s) for s in backward}
    once = sorted(n for n, stmts in pushed.items() if len(stmts) == 1
                  and len(pops.get(n, ())) == 1 and id(pops[n][0]) in top
                  and not _pushed_nested(forward, tape, n)
                  and not _written_after(forward, stmts[0], n))
    if not once:
        return forward, backward, []
    doomed = {id(pushed[n][0]) for n in once} | {id(pops[n][0]) for n in once}
    return ([s for s in forward if id(s) not in doomed],
            [s for s in backward if id(s) not in doomed], once)


def _pushed_nested(forward: list, tape: str, name: str) -> bool:
    """Whether a statement below the top level of ``forward`` pushes ``name`` too."""
    return any(_push_of(node, tape) == name for s in forward for child in
               gast.iter_child_nodes(s) for node in gast.walk(child))


def _written_after(forward: list, push, name: str) -> bool:
    """Whether a statement after ``push`` assigns ``name``: the saved tuple, built at the
    end, would then hold another value than the one pushed."""
    later = forward[next(i for i, s in enumerate(forward) if s is push) + 1:]
    return any(isinstance(node, gast.Name) and node.id == name and not isinstance(
        node.ctx, gast.Load) for s in later for node in gast.walk(s))
