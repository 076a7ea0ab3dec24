"""Rules of the runtime helpers that normalized code calls: functional element assignment
and list/dict updates (what ``x[i] = v``, ``xs.append(v)`` become on varied values).

The second half covers the helpers that generated adjoints call (``unbroadcast``, ``add``,
``add_at``, ``densify``, ``part``...), so generated code can be differentiated again for
higher derivatives. All rules here are linear in their differentiable arguments; a lazy
zero (``0.0``) is never active, so its cotangent is unused.
"""
import copy
import dataclasses
from collections import namedtuple
from typing import Any

import numpy as np

from .. import runtime as rt
from ..runtime import fields_of, fields_only, fields_without
from ._helpers import items_adjoint, like_sequence, unindex
from .derive import deflinear
from .domains import draw
from .operators import mul_jvp, mul_vjp
from .registry import defrule, nondifferentiable


def setitem_vjp(g, ans, x, index, value):
    # x's values are not needed (only g's structure is), so it is not passed: a loop filling
    # an array element by element then keeps no copy of the array per iteration on the tape
    # (a float stored into an integer array: refused by rt.setitem, whose result this rule
    # would have to read for its dtype)
    return rt.setitem_zeroed(g, None, index), rt.unbroadcast(rt.last_writes(g, index), value)


def setitem_jvp(dx, dvalue, ans, x, index, value):
    # rt.zeros_like, not np.zeros_like: x may be a list or dict
    if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
        return rt.setitem_zeroed(dx, x, index), rt.ZERO  # (numpy cast the value: see vjp)
    return rt.setitem_zeroed(dx, x, index), rt.setitem(rt.zeros_like(x), index, dvalue)


def _setitem_domain(rng):
    x = draw(rng, (4, 3))
    return [((x, (1, slice(None)), draw(rng, (3,))), {}),
            ((x, (slice(0, 2), 1), draw(rng, (2,))), {}),
            ((x, 2, draw(rng, None)), {}),
            (([draw(rng, (2,)), draw(rng, None)], 1, draw(rng, None)), {}),
            (({"a": draw(rng, (2,)), "b": draw(rng, None)}, "a", draw(rng, (2,))), {}),
            (({"a": draw(rng, (2,))}, "c", draw(rng, None)), {})]


def scatter_add_vjp(g, ans, x, index, values):
    # every value was added at its own position: its cotangent is read there (repeated
    # positions read the same entry)
    return g, rt.unbroadcast(rt.densify(g, ans)[index], values)


def scatter_add_jvp(dx, dvalues, ans, x, index, values):
    return rt.broadcast_like(dx, ans), rt.scatter_add(rt.zeros_like(ans), index, dvalues)


def _scatter_add_domain(rng):
    x = draw(rng, (4, 3))
    return [((x, ([0, 0, 2],), draw(rng, (3, 3))), {}),
            ((x, (np.array([1, 3, 1]), slice(None)), draw(rng, (3,))), {}),
            ((x, (np.array([[0, 0], [3, 0]]), 2), draw(rng, None)), {}),
            ((draw(rng, (5,)), np.array([4, 4, 4, 0]), draw(rng, (4,))), {})]


def list_append_vjp(g, ans, xs, value):
    return rt.list_slice(g, 0, len(xs)), rt.part(g, len(xs))


def list_append_jvp(dxs, dvalue, ans, xs, value):
    return (rt.list_append(rt.densify(dxs, xs), rt.zeros_like(value)),
            rt.list_append(rt.zeros_like(xs), dvalue))


def list_extend_vjp(g, ans, xs, values):
    return rt.list_slice(g, 0, len(xs)), rt.list_slice(g, len(xs), len(ans))


def list_extend_jvp(dxs, dvalues, ans, xs, values):
    return (rt.list_extend(rt.densify(dxs, xs), rt.zeros_like(list(values))),
            rt.list_extend(rt.zeros_like(xs), rt.densify(dvalues, list(values))))


def list_reverse_vjp(g, ans, xs):
    return (rt.list_reverse(rt.densify(g, ans)),)


def list_reverse_jvp(dxs, ans, xs):
    return (rt.list_reverse(rt.densify(dxs, xs)),)


def list_delete_vjp(g, ans, xs, index, missing_ok=False):
    if isinstance(xs, dict):  # the deleted key's value gets no cotangent
        return ({k: rt.part(g, k) for k in xs if k != index},)
    # a negative index counts from the end of the list before the deletion
    return (rt.list_insert(rt.densify(g, ans), index % len(xs), rt.ZERO),)


def list_delete_jvp(dxs, ans, xs, index, missing_ok=False):
    return (rt.list_delete(rt.densify(dxs, xs), index, missing_ok),)


def _list_domain(rng):
    return [(([draw(rng, (2,)), draw(rng, None)], draw(rng, (3,))), {})]


def _delete_domain(rng):
    named = {"a": draw(rng, (2,)), "b": draw(rng, None)}
    return [(([draw(rng, (2,)), draw(rng, None), draw(rng, (3,))], 1), {}),
            (([draw(rng, (2,)), draw(rng, None)], -1), {}),
            ((named, "a"), {}), ((named, "c", True), {})]


defrule(rt.setitem, setitem_vjp, diff_args=(0, 2), jvp=setitem_jvp, domain=_setitem_domain,
        linear=True, name="runtime.setitem")
defrule(rt.scatter_add, scatter_add_vjp, diff_args=(0, 2), jvp=scatter_add_jvp,
        domain=_scatter_add_domain, linear=True, name="runtime.scatter_add")
defrule(rt.list_append, list_append_vjp, diff_args=(0, 1), jvp=list_append_jvp,
        domain=_list_domain, linear=True, name="runtime.list_append")
defrule(rt.list_extend, list_extend_vjp, diff_args=(0, 1), jvp=list_extend_jvp,
        domain=lambda rng: [(([draw(rng, (2,))], [draw(rng, None), draw(rng, (3,))]), {})],
        linear=True, name="runtime.list_extend")
defrule(rt.list_delete, list_delete_vjp, diff_args=(0,), jvp=list_delete_jvp,
        domain=_delete_domain, linear=True, name="runtime.list_delete")


def seq_concat_vjp(g, ans, a, b):
    return rt.list_slice(g, 0, len(a)), rt.list_slice(g, len(a), len(ans))


def seq_concat_jvp(da, db, ans, a, b):
    return (rt.seq_concat(rt.densify(da, a), rt.zeros_like(b)),
            rt.seq_concat(rt.zeros_like(a), rt.densify(db, b)))


def _repeats(seq, count) -> bool:
    """Whether ``seq * count`` repeats a sequence (numpy multiplies a list by an array)."""
    return isinstance(seq, (list, tuple)) and isinstance(count, (int, np.integer))


def seq_repeat_vjp(g, ans, a, b):
    if _repeats(a, b):
        return rt.repeated_items(g, a, b), rt.ZERO
    if _repeats(b, a):
        return rt.ZERO, rt.repeated_items(g, b, a)
    return mul_vjp(g, ans, a, b)


def seq_repeat_jvp(da, db, ans, a, b):
    # (the repeated tangent of the sequence; the count carries none)
    if _repeats(a, b):
        return rt.seq_repeat(rt.densify(da, a), b), rt.ZERO
    if _repeats(b, a):
        return rt.ZERO, rt.seq_repeat(a, rt.densify(db, b))
    return mul_jvp(da, db, ans, a, b)


# repeated_items(g, xs, n) is linear in g: its transpose repeats a cotangent of xs's items
def repeated_items_vjp(c, ans, g, xs, n):
    return (rt.seq_repeat(list(rt.densify(c, ans)), n),)


def repeated_items_jvp(dg, ans, g, xs, n):
    return (rt.repeated_items(dg, xs, n),)


defrule(rt.repeated_items, repeated_items_vjp, diff_args=(0,), jvp=repeated_items_jvp,
        linear=True, name="runtime.repeated_items",
        domain=lambda rng: [(([draw(rng, (2,)), draw(rng, None)] * 3,
                              [draw(rng, (2,)), draw(rng, None)], 3), {}),
                            (((draw(rng, (3,)),) * 2, (draw(rng, (3,)),), 2), {})])


def _repeat_domain(rng):
    items, _ = _containers(rng)
    return [((items, 2), {}), ((3, tuple(items[1:])), {}), ((items, 0), {}),
            ((draw(rng, (2, 3)), draw(rng, (3,))), {})]


defrule(rt.seq_repeat, seq_repeat_vjp, diff_args=(0, 1), jvp=seq_repeat_jvp,
        domain=_repeat_domain, name="runtime.seq_repeat")


defrule(rt.seq_concat, seq_concat_vjp, diff_args=(0, 1), jvp=seq_concat_jvp, linear=True,
        domain=lambda rng: [(((draw(rng, (2,)), draw(rng, None)), (draw(rng, (3,)),)), {})],
        name="runtime.seq_concat")


def _both_sequences(a, b) -> bool:
    return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))


def plus_vjp(g, ans, a, b):
    if _both_sequences(a, b):
        return seq_concat_vjp(g, ans, a, b)
    return rt.unbroadcast(g, a), rt.unbroadcast(g, b)


def plus_jvp(da, db, ans, a, b):
    if _both_sequences(a, b):
        return seq_concat_jvp(da, db, ans, a, b)
    return rt.broadcast_like(da, ans), rt.broadcast_like(db, ans)


defrule(rt.plus, plus_vjp, diff_args=(0, 1), jvp=plus_jvp, linear=True,
        domain=lambda rng: [(([draw(rng, (2,))], [draw(rng, None), draw(rng, (3,))]), {}),
                            ((draw(rng, (2, 3)), draw(rng, (3,))), {})],
        name="runtime.plus")


# --------------------------------------------------------------------------- adjoint helpers

def unbroadcast_vjp(c, ans, g, x):
    # broadcast_like returns c itself when the shapes agree (the common case), where
    # np.broadcast_to costs several microseconds per call in second-order sweeps
    return (rt.broadcast_like(c, g),)


def unbroadcast_jvp(dg, ans, g, x):
    return (rt.unbroadcast(dg, x),)


def broadcast_like_vjp(c, out, d, ans):
    return (rt.unbroadcast(c, d),)


def broadcast_like_jvp(dd, out, d, ans):
    return (rt.broadcast_like(dd, ans),)


def add_vjp(g, ans, a, b):
    return (g, g)


def add_jvp(da, db, ans, a, b):
    return (da, db)


def add_at_vjp(c, ans, acc, x, index, g, _owned_refs=None):
    # rt.part, not c[index]: c may be the lazy zero (or a container adjoint)
    return (c, rt.part(c, index))


def add_at_jvp(dacc, dg, ans, acc, x, index, g, _owned_refs=None):
    return (dacc, unindex(dg, x, index))


def densify_vjp(c, ans, g, x):
    # A g that is not a container was broadcast to x's shape.
    return (c if isinstance(x, (list, tuple, dict)) else rt.unbroadcast(c, g),)


def densify_jvp(dg, ans, g, x):
    return (rt.densify(dg, x),)


def densify_saved_jvp(dg, ans, g, x):
    return (rt.densify_saved(dg, x),)


def part_vjp(c, ans, g, key):
    return (unindex(c, g, key),)


def part_jvp(dg, ans, g, key):
    return (rt.part(dg, key),)


def setitem_zeroed_vjp(c, ans, g, x, index):
    return (rt.setitem_zeroed(c, x, index),)


def setitem_zeroed_jvp(dg, ans, g, x, index):
    return (rt.setitem_zeroed(dg, x, index),)


def list_slice_vjp(c, ans, g, start, stop):
    return (unindex(c, g, slice(start, stop)),)


def list_slice_jvp(dg, ans, g, start, stop):
    return (rt.list_slice(dg, start, stop),)


def insert_position(xs, index) -> int:
    """Where ``list.insert(index, v)`` puts ``v`` (slice semantics: clipped, negatives wrap)."""
    return len(xs[:index])


def list_insert_vjp(g, ans, xs, index, value):
    return (rt.list_delete(rt.densify(g, ans), insert_position(xs, index)),
            rt.part(g, insert_position(xs, index)))


def list_insert_jvp(dxs, dvalue, ans, xs, index, value):
    return (rt.list_insert(rt.densify(dxs, xs), index, rt.zeros_like(value)),
            rt.list_insert(rt.zeros_like(xs), index, dvalue))


def dict_update_vjp(g, ans, d, other):
    return ({k: rt.part(g, k) for k in d if k not in other},
            {k: rt.part(g, k) for k in other})


def dict_update_jvp(dd, dother, ans, d, other):
    # either tangent may be the lazy zero (an inactive operand)
    return ({k: rt.part(dd, k) for k in d if k not in other},
            {k: rt.part(dother, k) for k in other})


def _unbroadcast_domain(rng):
    return [((draw(rng, (2, 3)), draw(rng, (3,))), {}),
            ((draw(rng, (4, 2, 3)), draw(rng, (2, 1))), {}),
            ((draw(rng, (2, 3)), draw(rng, None)), {}),
            ((draw(rng, (2, 3)), draw(rng, (2, 3))), {})]


def _broadcast_like_domain(rng):
    return [((draw(rng, (3,)), draw(rng, (2, 3))), {}), ((draw(rng, None), draw(rng, (2, 3))), {}),
            ((draw(rng, (2, 1)), draw(rng, (4, 2, 3))), {}),
            ((draw(rng, (3,)), draw(rng, (3,))), {})]


def _pair_domain(rng):
    return [((draw(rng, (2, 3)), draw(rng, (2, 3))), {}), ((draw(rng, None), draw(rng, None)), {}),
            (([draw(rng, (3,)), draw(rng, None)], [draw(rng, (3,)), draw(rng, None)]), {})]


def _densify_domain(rng):
    return _pair_domain(rng) + [((draw(rng, (3,)), draw(rng, (2, 3))), {})]


def _add_at_domain(rng):
    x = draw(rng, (4, 3))
    return [((draw(rng, (4, 3)), x, 1, draw(rng, (3,))), {}),
            ((draw(rng, (4, 3)), x, np.array([0, 2, 0]), draw(rng, (3, 3))), {}),
            ((draw(rng, (4, 3)), x, (slice(None), 1), draw(rng, (4,))), {})]


def _containers(rng):
    items = [draw(rng, (2, 3)), draw(rng, (3,)), draw(rng, None)]
    return items, {"w": draw(rng, (2, 3)), "b": draw(rng, (3,))}


def _part_domain(rng):
    items, named = _containers(rng)
    return [((draw(rng, (4, 3)), 1), {}), ((items, 0), {}), ((named, "b"), {}),
            ((tuple(items), -1), {})]


def _setitem_zeroed_domain(rng):
    items, named = _containers(rng)
    g_items, g_named = _containers(rng)
    return [((draw(rng, (4, 3)), draw(rng, (4, 3)), 1), {}),
            ((draw(rng, (4, 3)), draw(rng, (4, 3)), (slice(None), 0)), {}),
            ((g_items, items, 1), {}), ((g_named, named, "w"), {})]


def _list_slice_domain(rng):
    items, _ = _containers(rng)
    return [((items, 0, 2), {}), ((items, 1, 3), {})]


def _list_insert_domain(rng):
    items, _ = _containers(rng)
    return [((items, 1, draw(rng, (2,))), {}), ((items, -1, draw(rng, None)), {}),
            ((items, 10, draw(rng, None)), {}), ((items, 0, draw(rng, None)), {})]


def dict_copy_vjp(g, ans, d):
    if isinstance(d, dict):
        return ({k: rt.part(g, k) for k in d},)
    return (pairs_adjoint(d, g),)


def dict_copy_jvp(dd, ans, d):
    if isinstance(d, dict):
        return ({k: rt.part(dd, k) for k in d},)
    # the tangent of the pairs: the last pair of each key holds the value dict() keeps
    return ({pair[0]: rt.part(rt.part(dd, i), 1) for i, pair in enumerate(d)},)


def pairs_adjoint(pairs, g):
    """The adjoint of ``dict(pairs)``'s list or tuple of ``(key, value)`` pairs: each key's
    value adjoint at the last pair of that key (the one dict() keeps), zero elsewhere and
    for the keys."""
    last = {pair[0]: i for i, pair in enumerate(pairs)}
    return like_sequence(pairs, [like_sequence(pair, [rt.ZERO, rt.part(g, pair[0])
                                                     if last[pair[0]] == i else rt.ZERO])
                                 for i, pair in enumerate(pairs)])


def _dict_copy_domain(rng):
    pairs = [("a", draw(rng, (2,))), ("b", draw(rng, None)), ("a", draw(rng, (2,)))]
    return [((_containers(rng)[1],), {}), ((pairs,), {}), ((tuple(pairs[:2]),), {})]


def _dict_update_domain(rng):
    _, named = _containers(rng)
    return [((named, {"b": draw(rng, (2,)), "c": draw(rng, None)}), {}), ((named, {}), {})]


for _name, _vjp, _jvp, _domain, _diff in [
        ("unbroadcast", unbroadcast_vjp, unbroadcast_jvp, _unbroadcast_domain, (0,)),
        ("broadcast_like", broadcast_like_vjp, broadcast_like_jvp, _broadcast_like_domain, (0,)),
        ("add", add_vjp, add_jvp, _pair_domain, (0, 1)),
        ("add_at", add_at_vjp, add_at_jvp, _add_at_domain, (0, 3)),
        ("densify", densify_vjp, densify_jvp, _densify_domain, (0,)),
        ("densify_saved", densify_vjp, densify_saved_jvp, _densify_domain, (0,)),
        ("part", part_vjp, part_jvp, _part_domain, (0,)),
        ("setitem_zeroed", setitem_zeroed_vjp, setitem_zeroed_jvp, _setitem_zeroed_domain, (0,)),
        ("list_slice", list_slice_vjp, list_slice_jvp, _list_slice_domain, (0,)),
        ("list_insert", list_insert_vjp, list_insert_jvp, _list_insert_domain, (0, 2)),
        ("list_reverse", list_reverse_vjp, list_reverse_jvp,
         lambda rng: [((_containers(rng)[0],), {})], (0,)),
        ("dict_update", dict_update_vjp, dict_update_jvp, _dict_update_domain, (0, 1)),
        ("dict_copy", dict_copy_vjp, dict_copy_jvp, _dict_copy_domain, (0,))]:
    defrule(getattr(rt, _name), _vjp, diff_args=_diff, jvp=_jvp, domain=_domain, linear=True,
            name=f"runtime.{_name}")
del _name, _vjp, _jvp, _domain, _diff

for _fn in (insert_position, rt.zeros_like, rt.is_zero, rt.is_receiver_method,
            getattr(rt, "grad_seed", None)):
    if _fn is not None:
        nondifferentiable(_fn)
del _fn


# --------------------------------------------------------------------------- object adjoints
# (added with forward mode: generated backward sweeps of functions reading attributes call
# add_attr, so it needs a rule to be differentiated again)

def add_attr_vjp(c, ans, acc, obj, name, g):
    return (c, rt.tangent_attr(c, name, obj))


def add_attr_jvp(dacc, dg, ans, acc, obj, name, g):
    return (dacc, rt.add_attr(rt.ZERO, obj, name, dg))


def _add_attr_domain(rng):
    import types
    obj = types.SimpleNamespace(w=draw(rng, (2, 3)), b=draw(rng, None))
    # acc already holds every attribute the result has: cotangents keep acc's structure
    return [(({"w": draw(rng, (2, 3))}, obj, "w", draw(rng, (2, 3))), {}),
            (({"w": draw(rng, (2, 3)), "b": draw(rng, None)}, obj, "b", draw(rng, None)), {})]


if getattr(rt, "add_attr", None) is not None:
    defrule(rt.add_attr, add_attr_vjp, diff_args=(0, 3), jvp=add_attr_jvp,
            domain=_add_attr_domain, linear=True, name="runtime.add_attr")


# m.W = v on a differentiable value (desugar): m = with_attr(m, "W", v), a new object
def with_attr_vjp(g, ans, obj, name, value):
    return rt.attrs_without(g, name), rt.tangent_attr(g, name)


def with_attr_jvp(dobj, dvalue, ans, obj, name, value):
    return rt.attrs_without(dobj, name), rt.attr_only(name, dvalue)


def attrs_without_vjp(c, ans, g, name):
    return (rt.attrs_without(c, name),)


def attrs_without_jvp(dg, ans, g, name):
    return (rt.attrs_without(dg, name),)


def attr_only_vjp(c, ans, name, g):
    return (rt.tangent_attr(c, name),)


def attr_only_jvp(dg, ans, name, g):
    return (rt.attr_only(name, dg),)


def tangent_attr_vjp(c, ans, d, name, obj=None):
    if obj is not None and rt.is_receiver_method(obj, name):
        return (c,)  # (a bound method's derivative is its receiver's)
    return (rt.attr_only(name, c),)


def tangent_attr_jvp(dd, ans, d, name, obj=None):
    return (rt.tangent_attr(dd, name, obj),)


def _with_attr_domain(rng):
    import types
    return [((types.SimpleNamespace(w=draw(rng, (2, 3)), b=draw(rng, None)), "w",
              draw(rng, (2, 3))), {}),
            ((types.SimpleNamespace(w=draw(rng, (2,))), "c", draw(rng, None)), {})]


defrule(rt.with_attr, with_attr_vjp, diff_args=(0, 2), jvp=with_attr_jvp,
        domain=_with_attr_domain, linear=True, name="runtime.with_attr")
# object.__setattr__(m, "W", v) (a frozen dataclass's __init__, __post_init__): the same store
defrule(rt.with_attr_object, with_attr_vjp, diff_args=(0, 2), jvp=with_attr_jvp,
        domain=_with_attr_domain, linear=True, name="runtime.with_attr_object")
defrule(rt.attrs_without, attrs_without_vjp, diff_args=(0,), jvp=attrs_without_jvp,
        domain=lambda rng: [(({"w": draw(rng, (2, 3)), "b": draw(rng, None)}, "b"), {})],
        linear=True, name="runtime.attrs_without")
defrule(rt.tangent_attr, tangent_attr_vjp, diff_args=(0,), jvp=tangent_attr_jvp,
        domain=lambda rng: [(({"w": draw(rng, (2, 3)), "b": draw(rng, None)}, "w"), {})],
        linear=True, name="runtime.tangent_attr")
defrule(rt.attr_only, attr_only_vjp, diff_args=(1,), jvp=attr_only_jvp,
        domain=lambda rng: [(("w", draw(rng, (2, 3))), {})], linear=True,
        name="runtime.attr_only")


# dataclasses.replace(obj, W=v) / p._replace(a=v) (anf.py): obj = replaced(obj, names, values)
def replaced_vjp(g, ans, obj, names, values):
    return rt.fields_without(g, obj, names), rt.fields_of(g, obj, names)


def replaced_jvp(dobj, dvalues, ans, obj, names, values):
    return rt.fields_without(dobj, obj, names), rt.fields_only(dvalues, obj, names)


def fields_without_vjp(c, ans, g, obj, names):
    return (rt.fields_without(c, obj, names),)


def fields_of_vjp(c, ans, g, obj, names):
    return (rt.fields_only(c, obj, names),)


def fields_only_vjp(c, ans, values, obj, names):
    return (rt.fields_of(c, obj, names),)


@dataclasses.dataclass
class _Fields:  # (a plain dataclass, the test domain's)
    w: Any
    b: Any


_Pair = namedtuple("_Pair", "w b")


def _replaced_domain(rng):
    return [((_Fields(draw(rng, (2, 3)), draw(rng, None)), ("w",), (draw(rng, (2, 3)),)), {}),
            ((_Pair(draw(rng, (2,)), draw(rng, None)), ("b",), (draw(rng, None),)), {})]


def _fields_domain(rng):
    return [(({"w": draw(rng, (2, 3)), "b": draw(rng, None)}, _Fields(1.0, 2.0), ("w",)), {}),
            (((draw(rng, (2,)), draw(rng, None)), _Pair(1.0, 2.0), ("b",)), {})]


def _fields_only_domain(rng):
    return [(((draw(rng, (2, 3)),), _Fields(1.0, 2.0), ("w",)), {}),
            (((draw(rng, None),), _Pair(1.0, 2.0), ("b",)), {})]


defrule(rt.replaced, replaced_vjp, diff_args=(0, 2), jvp=replaced_jvp, linear=True,
        domain=_replaced_domain, name="runtime.replaced")
# (each linear in its first argument: its jvp is itself applied to the tangent)
deflinear(fields_without, fields_without_vjp, _fields_domain, name="runtime.fields_without")
deflinear(fields_of, fields_of_vjp, _fields_domain, name="runtime.fields_of")
deflinear(fields_only, fields_only_vjp, _fields_only_domain, name="runtime.fields_only")


def seq_max_vjp(g, ans, items):
    return (rt.seq_pick(g, items, ans),)


def seq_max_jvp(ditems, ans, items):
    return (rt.part(rt.densify(ditems, items), rt.seq_index(items, ans)),)


def _seq_extremum_domain(rng):
    return [(([0.3, 1.7, -0.4],), {}), (((2.5, -1.0),), {})]


defrule(rt.seq_max, seq_max_vjp, jvp=seq_max_jvp, domain=_seq_extremum_domain,
        name="runtime.seq_max")
defrule(rt.seq_min, seq_max_vjp, jvp=seq_max_jvp, domain=_seq_extremum_domain,
        name="runtime.seq_min")


# ``max(xs, key=k)``: a pick like ``max(xs)``; the key only chooses which item (piecewise
# constant), so what it reads gets no gradient.
def seq_max_by_vjp(g, ans, items, key):
    return (rt.seq_pick(g, items, ans),)


def seq_max_by_jvp(ditems, ans, items, key):
    return (rt.part(rt.densify(ditems, items), rt.seq_index(items, ans)),)


def _seq_by_key_domain(rng):
    return [(([0.3, 1.7, -2.4],), {"key": abs}), (((2.5, -1.0),), {"key": abs})]


defrule(rt.seq_max_by, seq_max_by_vjp, diff_args=(0,), jvp=seq_max_by_jvp,
        domain=_seq_by_key_domain, name="runtime.seq_max_by")
defrule(rt.seq_min_by, seq_max_by_vjp, diff_args=(0,), jvp=seq_max_by_jvp,
        domain=_seq_by_key_domain, name="runtime.seq_min_by")


def dict_get_vjp(g, ans, d, key, default=None):
    present = key in d
    return (rt.dict_with(d, key, g) if present else rt.ZERO,
            rt.ZERO if present else g)


def dict_get_jvp(dd, ddefault, ans, d, key, default=None):
    return (rt.part(dd, key) if key in d else rt.ZERO,
            rt.ZERO if key in d else ddefault)


def dict_values_vjp(g, ans, d):
    return (rt.dict_from(d, rt.dict_keys(d), g),)


def dict_values_jvp(dd, ans, d):
    return ([rt.part(dd, k) for k in d],)


def copy_value_vjp(g, ans, x):
    return (g,)


def copy_value_jvp(dx, ans, x):
    return (dx,)


def _dict_domain(rng):
    return [(({"a": draw(rng, (2,)), "b": draw(rng, None)},), {})]


defrule(rt.dict_get, dict_get_vjp, diff_args=(0, 2), jvp=dict_get_jvp, linear=True,
        domain=lambda rng: [(({"a": draw(rng, (2,)), "b": draw(rng, None)}, "a",
                              draw(rng, (2,))), {})], name="runtime.dict_get")
defrule(rt.dict_values, dict_values_vjp, jvp=dict_values_jvp, domain=_dict_domain,
        linear=True, name="runtime.dict_values")
defrule(rt.copy_value, copy_value_vjp, jvp=copy_value_jvp, linear=True,
        domain=lambda rng: [((draw(rng, (3,)),), {}), (([draw(rng, None)],), {})],
        name="runtime.copy_value")
# copy.copy and copy.deepcopy: the copy's gradient is the original's (as x.copy()'s is);
# differentiated through copy.py's source instead, they were refused there (getattr in the
# standard library's copy(), a message naming no line of the user's). A tangent is copied
# as the value is.
def shallow_copy_jvp(dx, ans, x):
    return (copy.copy(dx),)


def deep_copy_jvp(dx, ans, x):
    return (copy.deepcopy(dx),)


defrule(copy.copy, copy_value_vjp, jvp=shallow_copy_jvp, linear=True,
        domain=lambda rng: [(([draw(rng, (3,)), draw(rng, None)],), {}),
                            (({"a": draw(rng, (2,))},), {})], name="copy.copy")
defrule(copy.deepcopy, copy_value_vjp, jvp=deep_copy_jvp, linear=True,
        domain=lambda rng: [(([draw(rng, (3,)), draw(rng, None)],), {}),
                            (({"a": draw(rng, (2,)), "b": [draw(rng, None)]},), {})],
        name="copy.deepcopy")
nondifferentiable(rt.dict_keys)
nondifferentiable(rt.diagonal_index)


def element_vjp(g, ans, xs, i):
    return (rt.add_element(rt.ZERO, xs, i, g),)


def element_jvp(dxs, ans, xs, i):
    return (rt.ZERO if isinstance(xs, dict) else rt.part(dxs, i),)


# its vjp accumulates in place through add_at, which the tracer of the second-order
# checks cannot follow; higher derivatives of loops go through the transformer instead
defrule(rt.element, element_vjp, jvp=element_jvp, linear=True, second_order=False,
        domain=lambda rng: [((draw(rng, (3, 2)), 1), {}), (([draw(rng, None), draw(rng, (2,))], 1),
                                                          {})], name="runtime.element")

nondifferentiable(rt.stop_gradient)


def as_list_vjp(g, ans, xs):
    return (items_adjoint(xs, g),)


def as_list_jvp(dxs, ans, xs):
    return (rt.as_list(rt.densify(dxs, xs)),)


def as_tuple_jvp(dxs, ans, xs):
    return (rt.as_tuple(rt.densify(dxs, xs)),)


def _sequence_domain(rng):
    return [((draw(rng, (3, 2)),), {}), (([draw(rng, None), draw(rng, (2,))],), {}),
            (((draw(rng, (2,)), draw(rng, None)),), {})]


# Second order of these goes through the transformer (the corpus's hvp and grad-of-grad
# tests); the array tracer of the rule checks cannot tell an array's rows from a list.
defrule(rt.as_list, as_list_vjp, jvp=as_list_jvp, domain=_sequence_domain, linear=True,
        second_order=False, name="runtime.as_list")
defrule(rt.as_tuple, as_list_vjp, jvp=as_tuple_jvp, domain=_sequence_domain, linear=True,
        second_order=False, name="runtime.as_tuple")
# -- namedtuples made from differentiable values: make_record and record_items, each
# the other's transpose
def make_record_vjp(g, ans, cls, items):
    return (rt.record_items(g, cls),)


def make_record_jvp(ditems, ans, cls, items):
    return (rt.make_record(cls, ditems),)


def record_items_vjp(g, ans, record, cls):
    return (rt.items_as(g, record, cls),)


def record_items_jvp(drecord, ans, record, cls):
    return (rt.record_items(drecord, cls),)


def items_as_vjp(g, ans, items, like, cls):
    return (rt.record_items(g, cls),)


def items_as_jvp(ditems, ans, items, like, cls):
    return (rt.items_as(ditems, like, cls),)


_Pair = namedtuple("_Pair", "a b")


def _items_as_domain(rng):
    return [(((draw(rng, (2,)), draw(rng, None)), _Pair(0.0, 0.0), _Pair), {}),
            (((draw(rng, (2,)), draw(rng, None)), {"a": 0.0, "b": 0.0}, _Pair), {})]


def _make_record_domain(rng):
    return [((_Pair, (draw(rng, (3,)), draw(rng, None))), {})]


def _record_items_domain(rng):
    return [((_Pair(draw(rng, (2,)), draw(rng, None)), _Pair), {})]


defrule(rt.make_record, make_record_vjp, diff_args=(1,), jvp=make_record_jvp,
        domain=_make_record_domain, linear=True, second_order=False,
        name="runtime.make_record")
defrule(rt.record_items, record_items_vjp, diff_args=(0,), jvp=record_items_jvp,
        domain=_record_items_domain, linear=True, second_order=False,
        name="runtime.record_items")
nondifferentiable(rt.is_record_class)
nondifferentiable(rt.constructed_class)
nondifferentiable(rt.new_instance)
defrule(rt.items_as, items_as_vjp, diff_args=(0,), jvp=items_as_jvp,
        domain=_items_as_domain, linear=True, second_order=False, name="runtime.items_as")
nondifferentiable(rt.refuse_shared_array)
nondifferentiable(rt.refuse_viewed)
nondifferentiable(rt.refuse_shared_locals)
nondifferentiable(rt.refuse_mutable)
nondifferentiable(rt.refuse_item_update)
nondifferentiable(rt.refuse_shared_item)
nondifferentiable(rt.last_write_mask)
nondifferentiable(rt.unit_cotangent)  # (the seeds and shape of a Jacobian differentiated
nondifferentiable(rt.jacobian_shape)  # again: api_forward._jacobian_wrapper)


# --------------------------------------------------------------------------- bound callables
# ``bind(fn, args, kwargs)`` is a tuple ``(fn, args, kwargs)`` that can be called: its
# cotangent and tangent are tuples of the same shape (the function's part stays zero).

def bind_vjp(g, ans, fn, args, kwargs):
    return rt.part(g, 1), rt.part(g, 2)


def bind_jvp(dargs, dkwargs, ans, fn, args, kwargs):
    return (rt.bind(rt.ZERO, rt.densify(dargs, ans[1]), rt.zeros_like(ans[2])),
            rt.bind(rt.ZERO, rt.zeros_like(ans[1]), rt.densify(dkwargs, ans[2])))


def _bind_domain(rng):
    # the function is opaque to the checks (None stands for it: it gets no direction)
    return [((None, (draw(rng, (2,)), draw(rng, None)), {"b": draw(rng, (3,))}), {}),
            ((None, (), {"x": draw(rng, None)}), {})]


defrule(rt.bind, bind_vjp, diff_args=(1, 2), jvp=bind_jvp, domain=_bind_domain, linear=True,
        name="runtime.bind")


# ``unzip`` (what ``zip(*rows)`` becomes) and its transpose are each other's adjoints.
def unzip_vjp(g, ans, rows):
    return (rt.unzip_transpose(g, rows),)


def unzip_jvp(drows, ans, rows):
    return (rt.unzip(rt.densify(drows, rows)),)


def unzip_transpose_vjp(c, ans, g, rows):
    return (rt.unzip(rt.densify(c, ans)),)


def unzip_transpose_jvp(dg, ans, g, rows):
    return (rt.unzip_transpose(dg, rows),)


def _rows_domain(rng):
    return [(([(draw(rng, (2,)), draw(rng, None)), (draw(rng, (2,)), draw(rng, None))],), {}),
            (([(draw(rng, None), draw(rng, None), draw(rng, (3,)))],), {})]


def _columns_domain(rng):
    rows = [(draw(rng, (2,)), draw(rng, None), draw(rng, None)), (draw(rng, (2,)), draw(rng, None))]
    return [(([(draw(rng, (2,)), draw(rng, (2,))), (draw(rng, None), draw(rng, None))], rows),
             {})]


defrule(rt.unzip, unzip_vjp, jvp=unzip_jvp, domain=_rows_domain, linear=True,
        name="runtime.unzip")
defrule(rt.unzip_transpose, unzip_transpose_vjp, jvp=unzip_transpose_jvp,
        domain=_columns_domain, linear=True, name="runtime.unzip_transpose")


# ``sorted``: a permutation of its items, found by the same stable sort on their positions;
# ``permute`` and ``unpermute`` are each other's adjoints.
def sorted_vjp(g, ans, iterable, key=None, reverse=False):
    return (rt.unpermute(g, iterable, rt.sort_order(iterable, key, reverse)),)


def sorted_jvp(d, ans, iterable, key=None, reverse=False):
    order = rt.sort_order(iterable, key, reverse)
    return (rt.permute(rt.densify(d, iterable), order),)


def permute_vjp(g, ans, xs, order):
    return (rt.unpermute(g, xs, order),)


def permute_jvp(dxs, ans, xs, order):
    return (rt.permute(rt.densify(dxs, xs), order),)


def unpermute_vjp(c, ans, g, xs, order):
    return (rt.permute(rt.densify(c, ans), order),)


def unpermute_jvp(dg, ans, g, xs, order):
    return (rt.unpermute(dg, xs, order),)


def _sorted_domain(rng):
    values = list(rng.permutation(5) + 0.25 * rng.uniform(size=5))
    return [((values,), {}), ((tuple(values),), {"reverse": True}),
            ((values,), {"key": abs})]


def _permute_domain(rng):
    return [(([draw(rng, None), draw(rng, (2,)), draw(rng, None)], [2, 0, 1]), {})]


def _unpermute_domain(rng):
    xs = [draw(rng, None), draw(rng, (2,)), draw(rng, None)]
    return [(([draw(rng, (2,)), draw(rng, None), draw(rng, None)], xs, [1, 2, 0]), {})]


# (not 'linear': sorting the tangents would order them by their own values)
defrule(sorted, sorted_vjp, jvp=sorted_jvp, domain=_sorted_domain, name="sorted")
defrule(rt.permute, permute_vjp, jvp=permute_jvp, domain=_permute_domain, linear=True,
        name="runtime.permute")
defrule(rt.unpermute, unpermute_vjp, jvp=unpermute_jvp, domain=_unpermute_domain,
        linear=True, name="runtime.unpermute")
nondifferentiable(rt.sort_order)


# ``tangent_like(d, x)``: a tangent broadcast to its value's shape (forward mode's call sites)
def tangent_like_vjp(g, ans, d, x):
    return (rt.unbroadcast(g, d),)


def tangent_like_jvp(dd, ans, d, x):
    return (rt.tangent_like(dd, x),)


def _tangent_like_domain(rng):
    return [((draw(rng, None), draw(rng, (3,))), {}), ((draw(rng, (1, 2)), draw(rng, (3, 2))), {}),
            ((draw(rng, (2,)), draw(rng, (2,))), {})]


defrule(rt.tangent_like, tangent_like_vjp, jvp=tangent_like_jvp, domain=_tangent_like_domain,
        linear=True, name="runtime.tangent_like")
