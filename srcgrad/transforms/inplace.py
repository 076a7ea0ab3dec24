"""Guarantees afterwards: in the backward sweep of a ``grad``, an accumulation ``b = b + c``
(or ``b = b - c``) at the top level, into an adjoint holding an array the sweep made itself
that nothing else refers to, adds into that array instead of allocating a new one.

On large arrays a fresh result per accumulation costs more than the addition: the memory
comes new from the system and each page faults on first touch. ``_rt.add_into(b, c)`` (and
``subtract_into``) computes into ``b``'s buffer when that gives the same array as ``b + c``
(``b`` a writable ndarray, ``c`` one of its shape and dtype), and ``b + c`` otherwise.

Ownership is a fact of the code, found statement by statement down the top level of the
sweep: an adjoint is owned from an assignment of arithmetic (``b = g * x``, whose value on
arrays is new; or ``_rt.shaped_like`` of it, scalar_seed.py), and stays owned through its
accumulations, until it is read anywhere other than as an operand of arithmetic (``b2 = b``,
``f(b)``, ``b[i]``, ``b.T``: another name or an object may then hold the same array),
assigned anything else, or mentioned in a branch or a loop (where an accumulation is carried
across iterations). A saved value, an input or a copy is never owned, and the gradients are
returned after the last accumulation.

Run only on the sweeps ``grad`` itself calls (Context.lean): a sweep differentiated again
keeps every value it computed, which an update in place would overwrite.
"""
from __future__ import annotations

__all__ = ["accumulate_in_place"]

import gast

from . import astutil as A

_INTO = {gast.Add: "add_into", gast.Sub: "subtract_into"}


def accumulate_in_place(stmts: list, adjoints: set[str], rt: str) -> list:
    """``stmts`` (a backward sweep) with accumulations into owned ``adjoints`` rewritten."""
    owned: set[str] = set()
    for s in stmts:
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            owned -= {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}
            continue
        target, value = s.targets[0].id, s.value
        owned -= A.names_kept(value)
        into = _accumulation(target, value)
        if into is not None and target in owned:
            s.value = gast.copy_location(
                A.call(A.attr(rt, into), A.load(target), value.right), value)
        elif target in adjoints and (A.is_fresh(value) or _shaped_fresh(value, rt)):
            owned.add(target)
        else:
            owned.discard(target)
    return stmts


def _shaped_fresh(value, rt: str) -> bool:
    """``rt.shaped_like(a, x)`` of fresh arithmetic ``a`` (scalar_seed.py): ``a`` itself or
    a new array of its values, new either way."""
    return A.called_attr(value, rt) == "shaped_like" and len(value.args) == 2 \
        and not value.keywords \
        and A.is_fresh(value.args[0])


def _accumulation(target: str, value) -> str | None:
    """The runtime function computing ``value`` into ``target``'s array, when ``value`` is
    ``target + c`` or ``target - c`` with ``c`` not reading ``target``."""
    if isinstance(value, gast.BinOp) and type(value.op) in _INTO \
            and isinstance(value.left, gast.Name) and value.left.id == target \
            and target not in A.names_read(value.right):
        return _INTO[type(value.op)]
    return None
