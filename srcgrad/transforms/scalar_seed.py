"""Guarantees afterwards: in the backward sweep of a ``grad``, the cotangent of a whole-array
sum or mean that only elementwise products, quotients and negations consume is never spread
over the reduced array: it stays a number, and each consumer's result gets the spread's
shape back where it is complete.

``np.mean((out - y) ** 2)`` gives::

    b_t5 = expand_to(b_t6, _t5) / reduced_count(_t5, _t6)   # the seed, spread, divided
    b_t4 = b_t5 * 2 * _t4

a zero-stride view of the seed, divided element by element, then two products over the
array. Here it becomes::

    b_t5 = _rt.seed_scalar(b_t6, _t5, _t4) / reduced_count(_t5, _t6)
    b_t4 = _rt.shaped_like(b_t5 * 2 * _t4, _t5)

one division and one product of numbers, then one product over the array: what
``2.0 * d / d.size`` costs by hand. The same bits: every element of ``b_t4`` is computed by
the same operations, in the same order, on the same numbers of the same dtypes (a 0-d array
or numpy number promotes as the spread array does, NEP 50; ``+``, ``-``, ``*``, ``/`` are
correctly rounded whether numpy applies them to arrays or numbers). ``seed_scalar`` checks
at run time what that needs (a float32/float64 number, an exact ndarray reduced, consumers'
operands of numpy's numeric dtypes or Python numbers) and gives the spread otherwise;
``shaped_like`` broadcasts a result that came out smaller than the spread would have made
it (``g * w`` with ``w`` a row of a summed matrix).

Rewritten: ``bv = expand_to(g, x)`` (no axis), alone or divided by anything, when ``bv`` is
assigned nowhere else, is no gradient returned, and every read of it is in a later top-level
statement, as an operand of a chain of ``*``, ``/``, unary ``-``/``+`` and ``times_unit``
(not ``**``: a power of a number and of an array need not round alike), whose other operands
are names, numbers and arithmetic of them, bound before ``bv`` and unchanged up to that read.
Each such chain, the largest around the read, is wrapped in ``shaped_like``; additions stay
outside it, so accumulations keep their form (inplace.py). A spread of the seed's ones read
only as ``times_unit(bv, y)`` (unit_seed.py: ``y`` itself, no pass over the data) is left
as it is: there is nothing to gain.

Run only on the sweeps ``grad`` itself calls (Context.lean).
"""
from __future__ import annotations

__all__ = ["keep_scalar_seeds"]

import gast

from . import astutil as A

_COMPOUND = (gast.If, gast.For, gast.While, gast.With, gast.Try)
_CHAIN_OPS = (gast.Mult, gast.Div)
_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)
_SIGNS = (gast.USub, gast.UAdd)


def keep_scalar_seeds(stmts: list, rt: str, spread: str, live_out: set[str]) -> list:
    """``stmts`` (a backward sweep, changed in place) with the spreads above kept as
    numbers; ``spread``: the name the sweep calls ``expand_to`` by; ``live_out``: names read
    after the statements."""
    for i, s in enumerate(stmts):
        found = _spread_of(s, spread)
        if found is None or found[0] in live_out:
            continue
        target, call = found
        chains = _chains(stmts, i, target, call.args[1].id, rt)
        if chains is None:
            continue
        x = call.args[1].id
        operands = sorted({n.id for _, _, top in chains for n in gast.walk(top)
                           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
                          - {target, rt})
        call.func = gast.copy_location(A.attr(rt, "seed_scalar"), call.func)
        call.args = call.args + [A.load(n) for n in operands]
        for parent, field, top in chains:
            wrapped = gast.copy_location(A.call(A.attr(rt, "shaped_like"), top, A.load(x)),
                                         top)
            _replace(parent, field, top, wrapped)
    return stmts


def _spread_of(s, spread: str):
    """``(target, expand_to call)`` of ``bv = expand_to(g, x)`` or ``bv = expand_to(g, x) /
    anything`` (``x`` a name), else None."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name)):
        return None
    value = s.value
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Div):
        value = value.left
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
            and value.func.id == spread and len(value.args) == 2 and not value.keywords \
            and isinstance(value.args[1], gast.Name) \
            and s.targets[0].id not in A.names_read(s.value):
        return s.targets[0].id, value
    return None


def _chains(stmts: list, i: int, target: str, x: str, rt: str):
    """``(parent, field, chain)`` for each chain reading ``target`` after ``stmts[i]`` (see
    the module docstring), or None when a read, a store or an operand rules it out."""
    stores = sum(1 for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name)
                 and n.id == target and not isinstance(n.ctx, gast.Load))
    if stores != 1 or any(target in A.names_read(s) for s in stmts[:i]):
        return None
    out: dict[int, tuple] = {}
    for j in range(i + 1, len(stmts)):
        s = stmts[j]
        if target not in {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}:
            continue
        if isinstance(s, _COMPOUND) or not isinstance(s, (gast.Assign, gast.Expr)):
            return None
        parents = _parents(s)
        for n in gast.walk(s):
            if not (isinstance(n, gast.Name) and n.id == target):
                continue
            top = _chain_top(n, parents, rt)
            if top is n or not _plain_arithmetic(top, rt) \
                    or not _operands_unchanged(stmts, i, j, top, target, x):
                return None
            parent, field = parents[id(top)]
            out[id(top)] = (parent, field, top)
    if not out or any(id(t) in {id(n) for _, _, other in out.values()
                                for n in gast.walk(other) if n is not other}
                      for _, _, t in out.values()):
        return None  # (no read, or a chain inside another: nothing to gain, or to untangle)
    if all(_is_times_unit(top, rt) for _, _, top in out.values()):
        return None  # (the seed's ones times y: y itself either way, nothing to gain)
    return list(out.values())


def _parents(stmt) -> dict:
    """``id(node) -> (parent, field)`` for every expression node under ``stmt`` (``field``:
    the attribute, or ``(attribute, index)`` for a list)."""
    out = {}
    for node in gast.walk(stmt):
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                out[id(value)] = (node, field)
            elif isinstance(value, list):
                for k, v in enumerate(value):
                    if isinstance(v, gast.AST):
                        out[id(v)] = (node, (field, k))
    return out


def _chain_top(node, parents: dict, rt: str):
    """The largest expression around ``node`` reached through products, quotients, signs
    and ``times_unit`` calls only."""
    while id(node) in parents:
        parent, field = parents[id(node)]
        if isinstance(parent, gast.BinOp) and isinstance(parent.op, _CHAIN_OPS) \
                or isinstance(parent, gast.UnaryOp) and isinstance(parent.op, _SIGNS) \
                or _is_times_unit(parent, rt) and isinstance(field, tuple) \
                and field[0] == "args":
            node = parent
            continue
        break
    return node


def _is_times_unit(node, rt: str) -> bool:
    return A.called_attr(node, rt) == "times_unit" and len(node.args) == 2 \
        and not node.keywords


def _plain_arithmetic(node, rt: str) -> bool:
    """Names, real numbers, ``+ - * / **``, signs and ``times_unit`` calls only."""
    for n in gast.walk(node):
        if isinstance(n, gast.BinOp):
            ok = isinstance(n.op, _ARITHMETIC)
        elif isinstance(n, gast.UnaryOp):
            ok = isinstance(n.op, _SIGNS)
        elif isinstance(n, gast.Constant):
            ok = type(n.value) in (int, float, bool)
        elif isinstance(n, gast.Call):
            ok = _is_times_unit(n, rt)
        else:
            ok = isinstance(n, (gast.Name, gast.Load, gast.operator, gast.unaryop,
                                gast.Attribute))
            if isinstance(n, gast.Attribute):  # (only times_unit's own function)
                ok = any(_is_times_unit(c, rt) and c.func is n for c in gast.walk(node))
        if not ok:
            return False
    return True


def _operands_unchanged(stmts: list, i: int, j: int, top, target: str, x: str) -> bool:
    """Whether each name ``top`` reads, but ``target``, and ``x`` (the reduced array) are
    bound when ``stmts[i]`` runs and keep that value up to ``stmts[j]``: assigned before
    ``i`` only by top-level assignments (which always run), and not at all from ``i`` to
    ``j``."""
    names = {n.id for n in gast.walk(top) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load)} - {target} | {x}
    for k in range(j):
        written = A.names_written(stmts[k]) & names
        if written and (k >= i or not isinstance(stmts[k], gast.Assign)):
            return False
    return True


def _replace(parent, field, old, new) -> None:
    if isinstance(field, tuple):
        getattr(parent, field[0])[field[1]] = new
    else:
        setattr(parent, field, new)
