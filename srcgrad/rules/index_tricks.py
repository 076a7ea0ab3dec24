"""Rules of numpy's index-tricks concatenators: ``np.r_[...]`` and ``np.c_[...]``, which
normalized code calls as ``runtime.index_concat(maker, items)`` (see transforms/index_tricks.py).

Both only copy: each element of each item appears exactly once in the result. Where each one
lands is found by running the same concatenator on integer markers (item k's elements
numbered after those of items 0..k-1), so every form numpy accepts (directive strings such as
``'0,2'`` or ``'-1,2,0'``, slices, scalars, arrays of any rank) is laid out by numpy itself.
"""
import numpy as np

from .. import runtime as rt
from .domains import draw
from .registry import defrule, nondifferentiable


def _as_items(items) -> tuple:
    return items if isinstance(items, tuple) else (items,)


def concat_positions(maker, items):
    """``(ids, picks, sizes)``: ``ids`` numbers each element of the result by the item
    element it copies; ``picks[k]`` holds, in item k's shape, the flat result position of each
    of its elements (None for a directive string or a slice); ``sizes[k]`` is its size."""
    marked, numbered, sizes, n = [], [], [], 0
    for item in _as_items(items):
        if isinstance(item, str):
            marked.append(item)
            numbered.append(None)
            sizes.append(0)
            continue
        constant = isinstance(item, slice)
        if constant:
            item = np.r_[item]  # the range (or linspace) the slice stands for
        size = int(np.size(item))
        ids = np.arange(n, n + size).reshape(np.shape(item))
        marked.append(np.int64(n) if np.isscalar(item) else ids)
        numbered.append(None if constant else ids)
        sizes.append(size)
        n += size
    ids = np.asarray(maker[tuple(marked) if isinstance(items, tuple) else marked[0]])
    where = np.empty(n, dtype=np.intp)
    where[ids.ravel()] = np.arange(ids.size)
    picks = [None if k is None else where[k] for k in numbered]
    return ids, picks, sizes


nondifferentiable(concat_positions)


def index_concat_vjp(g, ans, maker, items):
    ids, picks, sizes = concat_positions(maker, items)
    flat = np.ravel(g)
    pieces = [0.0 if p is None else flat[p] for p in picks]
    return (tuple(pieces) if isinstance(items, tuple) else pieces[0],)


def index_concat_jvp(d_items, ans, maker, items):
    ids, picks, sizes = concat_positions(maker, items)
    tangents = d_items if isinstance(items, tuple) else (d_items,)
    if rt.is_zero(d_items):
        tangents = (rt.ZERO,) * len(picks)
    parts = []
    for item, d, p, size in zip(_as_items(items), tangents, picks, sizes):
        if isinstance(item, str):
            continue
        if p is None or rt.is_zero(d):
            parts.append(np.zeros(size))
        else:
            parts.append(np.ravel(d))
    return (np.concatenate(parts)[ids],)


def _index_concat_points(rng):
    a, b, s = draw(rng, (3,)), draw(rng, (2,)), draw(rng, None)
    m = draw(rng, (2, 3))
    return [((np.r_, (a, b)), {}), ((np.r_, (a, slice(0, 2), s)), {}),
            ((np.c_, (a, draw(rng, (3,)))), {}), ((np.c_, (m.T, a)), {}),
            ((np.r_, ("0,2", a, a)), {}), ((np.r_, ("-1", m, m)), {}),
            ((np.r_, a), {}), ((np.r_, (2.0, a, s)), {})]


defrule(rt.index_concat, index_concat_vjp, jvp=index_concat_jvp, diff_args=(1,),
        domain=_index_concat_points, name="numpy.r_/c_")
