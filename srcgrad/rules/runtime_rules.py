"""Rules of the runtime helpers that normalized code calls: functional element assignment
and list/dict updates (what ``x[i] = v``, ``xs.append(v)`` become on varied values)."""
import numpy as np

from .. import runtime as rt
from .domains import draw
from .registry import defrule


def setitem_vjp(g, ans, x, index, value):
    return rt.setitem_zeroed(g, x, index), rt.unbroadcast(rt.part(g, index), value)


def setitem_jvp(dx, dvalue, ans, x, index, value):
    return rt.setitem_zeroed(dx, x, index), rt.setitem(np.zeros_like(ans), index, dvalue)


def _setitem_domain(rng):
    x = draw(rng, (4, 3))
    return [((x, (1, slice(None)), draw(rng, (3,))), {}),
            ((x, (slice(0, 2), 1), draw(rng, (2,))), {}),
            ((x, 2, draw(rng, None)), {})]


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


def list_delete_vjp(g, ans, xs, index):
    # a negative index counts from the end of the list before the deletion
    return (rt.list_insert(rt.densify(g, ans), index % len(xs), rt.ZERO),)


def list_delete_jvp(dxs, ans, xs, index):
    return (rt.list_delete(rt.densify(dxs, xs), index),)


def _list_domain(rng):
    return [(([draw(rng, (2,)), draw(rng, None)], draw(rng, (3,))), {})]


def _delete_domain(rng):
    return [(([draw(rng, (2,)), draw(rng, None), draw(rng, (3,))], 1), {})]


defrule(rt.setitem, setitem_vjp, diff_args=(0, 2), jvp=setitem_jvp, domain=_setitem_domain,
        linear=True, name="runtime.setitem")
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


defrule(rt.seq_concat, seq_concat_vjp, diff_args=(0, 1), jvp=seq_concat_jvp, linear=True,
        domain=lambda rng: [(((draw(rng, (2,)), draw(rng, None)), (draw(rng, (3,)),)), {})],
        name="runtime.seq_concat")
