"""Guarantees afterwards (for the comprehension hoister, which calls it): a call of
``itertools.chain``, ``chain.from_iterable``, ``product``, ``islice`` or ``accumulate`` that
reads differentiable values and is consumed at once (``sum(...)``, ``list(...)``, a for loop's
sequence) has a lowering into what srcgrad differentiates: a list comprehension, a slice of a
list, or a loop appending to a list, making the same items in the same order.

Consumed anywhere else, their single-pass iterators differ from a list (a second ``sum`` of
one is 0): those calls are left alone, to be refused with a hint.
"""
from __future__ import annotations

import itertools

import gast

from . import astutil as A
from .context import Context
from .resolve import known_value

_KINDS = {itertools.chain: "chain", itertools.product: "product",
          itertools.islice: "islice", itertools.accumulate: "accumulate"}


def iterator_kind(node, ctx: Context) -> str | None:
    """Which of the lowered ``itertools`` functions ``node`` calls, written so that it can be
    lowered (no ``*`` arguments; the keywords each takes), or None."""
    if not isinstance(node, gast.Call) or any(isinstance(a, gast.Starred) for a in node.args):
        return None
    fn = known_value(node.func, ctx)
    if fn is None:
        return None
    if fn == itertools.chain.from_iterable:  # (a new bound method at each read: ==)
        kind = "from_iterable"
    else:
        try:
            kind = _KINDS.get(fn)
        except TypeError:  # (an unhashable callable)
            return None
    keywords = {k.arg for k in node.keywords}
    allowed = {"product": {"repeat"}, "accumulate": {"func", "initial"}}.get(kind, set())
    if kind is None or not keywords <= allowed or None in keywords:
        return None
    counts = {"from_iterable": (1, 1), "islice": (2, 4), "accumulate": (1, 2),
              "chain": (0, 99), "product": (0, 99)}[kind]
    if not counts[0] <= len(node.args) <= counts[1]:
        return None
    if kind == "product" and "repeat" in keywords and _repeat(node) is None:
        return None
    return kind


def _repeat(node) -> int | None:
    """``product(..., repeat=n)``'s n when it is written as a non-negative int, else None."""
    for k in node.keywords:
        if k.arg == "repeat":
            v = k.value
            ok = isinstance(v, gast.Constant) and type(v.value) is int and v.value >= 0
            return v.value if ok else None
    return 1


def keyword(node, name: str):
    """The value of ``name=`` in the call ``node``, or None."""
    return next((k.value for k in node.keywords if k.arg == name), None)


def is_none(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def flattened(parts, namer, at) -> gast.ListComp:
    """``[_v for _p in parts for _v in _p]``: chain's items."""
    part, item = namer.unique("_p"), namer.unique("_v")
    return A.located(gast.ListComp(elt=A.load(item), generators=[
        gast.comprehension(target=A.store(part), iter=parts, ifs=[], is_async=0),
        gast.comprehension(target=A.store(item), iter=A.load(part), ifs=[], is_async=0)]), at)


def product_comprehension(node, sequences: list[str], namer) -> gast.ListComp:
    """``[(_u1, _u2) for _u1 in s1 for _u2 in s2]`` over the sequences (bound once each, as
    product reads each argument to its end first), ``repeat`` times over."""
    sequences = sequences * _repeat(node)
    items = [namer.unique("_u") for _ in sequences]
    return A.located(gast.ListComp(
        elt=gast.Tuple(elts=[A.load(u) for u in items], ctx=gast.Load()),
        generators=[gast.comprehension(target=A.store(u), iter=A.load(s), ifs=[], is_async=0)
                    for u, s in zip(items, sequences)]), node)


def islice_subscript(node, seq) -> gast.Subscript:
    """``list(seq)[start:stop:step]``: islice's items (for the bounds it accepts)."""
    bounds = node.args[1:]
    start, stop, step = (None, bounds[0], None) if len(bounds) == 1 else \
        (bounds + [None])[:3]
    return A.located(gast.Subscript(value=A.call("list", seq), slice=gast.Slice(
        lower=start, upper=stop, step=step), ctx=gast.Load()), node)


def accumulate_statements(node, seq, func, initial, ctx: Context):
    """``_s = list(xs); _l = _s[:1]; for _v in _s[1:]: _l = append(_l, f(_l[-1], _v))`` (with
    ``initial``: ``_l = [initial]`` and the loop over all of ``_s``), and the list's name."""
    namer, at = ctx.namer, node
    whole, out, item = namer.fresh("_s"), namer.fresh("_l"), namer.unique("_v")
    last = gast.Subscript(value=A.load(out), slice=A.const(-1), ctx=gast.Load())
    if func is None:
        step = gast.BinOp(left=last, op=gast.Add(), right=A.load(item))
    else:
        step = gast.Call(func=func, args=[last, A.load(item)], keywords=[])
    append = A.assign(out, A.call(A.attr(ctx.rt, "list_append"), A.load(out),
                                  A.located(step, at)), at=at)
    if initial is None:
        first = gast.Subscript(value=A.load(whole), slice=gast.Slice(
            lower=None, upper=A.const(1), step=None), ctx=gast.Load())
        items = gast.Subscript(value=A.load(whole), slice=gast.Slice(
            lower=A.const(1), upper=None, step=None), ctx=gast.Load())
    else:
        first, items = gast.List(elts=[initial], ctx=gast.Load()), A.load(whole)
    loop = gast.For(target=A.store(item), iter=A.located(items, at), body=[append], orelse=[],
                    type_comment=None)
    ctx.varied |= {whole, out, item}
    return [A.assign(whole, A.call("list", seq), at=at), A.assign(out, A.located(first, at),
                                                                 at=at),
            A.located(loop, at)], out
