"""Guarantees afterwards: in a generated sweep, a temporary bound at the top level is deleted
right after the last top-level statement that mentions it, unless the function returns it.

Generated code holds one value per name where hand-written numpy nests expressions, whose
temporaries die at once; without this, every intermediate array of a sweep stays alive until
the function returns, which raises both its peak memory and (with large arrays, through
fresh pages from the system) its time. Only names bound by a plain top-level assignment are
deleted, so they are certainly bound where the ``del`` runs.
"""
from __future__ import annotations

__all__ = ["release_dead"]

import gast

from . import astutil as A


def _bound_at_top(body: list, unpacked: bool) -> dict[str, int]:
    """Names a top-level ``name = value`` binds (with ``unpacked``, ``a, b = value`` too),
    with the index of the first such binding."""
    first: dict[str, int] = {}
    for i, s in enumerate(body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1:
            target = s.targets[0]
            names = [target] if isinstance(target, gast.Name) else target.elts if unpacked \
                and isinstance(target, gast.Tuple) else []
            for n in names:
                if isinstance(n, gast.Name):
                    first.setdefault(n.id, i)
    return first


def release_dead(body: list, keep: set[str] = frozenset(), unpacked: bool = False,
                 entry: tuple[str, ...] = ()) -> list:
    """``body`` (a sweep's statements, ending with its return) with ``del`` statements after
    the last mention of each top-level temporary not in ``keep``; with ``unpacked``, also of
    the names a top-level assignment unpacks (a backward sweep's saved values, which only
    then are freed, when the sweep emptied the list holding them); and of the parameters in
    ``entry`` (a seed that only the sweep holds).

    Nothing is deleted from a body that inspects its own namespace (``locals()``, ``eval``...),
    nor a name a nested function or lambda mentions (it may read it later), nor a name
    declared ``global`` or ``nonlocal``, nor one the body deletes itself."""
    nodes = [n for s in body for n in gast.walk(s)]
    if any(isinstance(n, gast.Name) and n.id in _INTROSPECTION for n in nodes):
        return body
    captured = set(keep)
    for n in nodes:
        if isinstance(n, (gast.Lambda, gast.FunctionDef, gast.AsyncFunctionDef)):
            captured |= {m.id for m in gast.walk(n) if isinstance(m, gast.Name)}
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            captured |= set(n.names)
        elif isinstance(n, gast.Delete):  # deleted by the code itself already
            captured |= {t.id for t in n.targets if isinstance(t, gast.Name)}
    bound = _bound_at_top(body, unpacked)
    bound.update(dict.fromkeys(entry, -1))
    last: dict[str, int] = {}
    for i, s in enumerate(body):
        for n in gast.walk(s):
            if isinstance(n, gast.Name):
                last[n.id] = i
    dying: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in bound and bound[name] <= i and name not in captured and i < len(body) - 1:
            dying.setdefault(i, []).append(name)
    out = []
    for i, s in enumerate(body):
        out.append(s)
        if i in dying:
            targets = [gast.Name(id=n, ctx=gast.Del(), annotation=None, type_comment=None)
                       for n in sorted(dying[i], key=_natural)]
            out.append(A.located(gast.Delete(targets=targets), s))
    return out


_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir", "globals"})


def _natural(name: str):
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return (stem, int(digits) if digits else -1)
