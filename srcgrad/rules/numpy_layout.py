"""Rules of numpy functions that rearrange, split, pad, sort or combine arrays.

All but ``kron`` and ``cross`` (bilinear) are linear in their differentiable arguments; most
are registered with ``deflinear``, whose jvp is the function applied to the tangent. Sorting
and partitioning are permutations of their input: the gradient follows each value to where
it went (ties take the permutation numpy's ``argsort``/``argpartition`` picks).
"""
import numpy as np

from ..errors import SrcgradError
from ..runtime import ZERO, broadcast_like, densify, is_zero, unbroadcast
from ._helpers import like_sequence, unindex
from .derive import deflinear
from .domains import draw
from .numpy_shape import inverse_axes, split_like
from .registry import defrule, nondifferentiable

# --------------------------------------------------------------------------- turning, rolling


def roll_vjp(g, ans, a, shift, axis=None):
    return (np.roll(g, np.negative(shift), axis),)


def flipud_vjp(g, ans, m):
    return (np.flipud(g),)


def fliplr_vjp(g, ans, m):
    return (np.fliplr(g),)


def rot90_vjp(g, ans, m, k=1, axes=(0, 1)):
    return (np.rot90(g, -k, axes),)


@nondifferentiable
def rollaxis_order(ndim, axis, start=0):
    """The axis permutation ``np.rollaxis(a, axis, start)`` applies to an ``ndim``-array."""
    axis, start = axis % ndim, (start + ndim if start < 0 else start)
    order = [i for i in range(ndim) if i != axis]
    order.insert(start - 1 if axis < start else start, axis)
    return tuple(order)


def rollaxis_vjp(g, ans, a, axis, start=0):
    return (np.transpose(g, inverse_axes(rollaxis_order(np.ndim(a), axis, start), np.ndim(a))),)


# --------------------------------------------------------------------------- promotion, joining

def atleast_vjp(g, ans, *arys):
    # One array: its result; several: a list of results, of which the first is differentiated.
    if len(arys) > 1:
        g = densify(g, ans)[0]
    return (np.reshape(g, np.shape(arys[0])),)


def atleast_1d_jvp(dary, ans, *arys):
    return (atleast_tangent(np.atleast_1d, dary, ans, arys),)


def atleast_2d_jvp(dary, ans, *arys):
    return (atleast_tangent(np.atleast_2d, dary, ans, arys),)


def atleast_3d_jvp(dary, ans, *arys):
    return (atleast_tangent(np.atleast_3d, dary, ans, arys),)


def atleast_tangent(fn, dary, ans, arys):
    if len(arys) == 1:
        return fn(dary)
    return like_sequence(ans, [fn(dary)] + [np.zeros_like(a) for a in ans[1:]])


def _atleast_3d_shape(shape):
    return {0: (1, 1, 1), 1: (1,) + tuple(shape) + (1,), 2: tuple(shape) + (1,)}.get(
        len(shape), tuple(shape))


def column_stack_vjp(g, ans, tup):
    shapes = [np.shape(x) if np.ndim(x) >= 2 else (np.size(x), 1) for x in tup]
    return (split_like(g, tup, 1, shapes),)


def column_stack_jvp(dtup, ans, tup):
    return (np.column_stack(densify(dtup, tup)),)


def dstack_vjp(g, ans, tup):
    return (split_like(g, tup, 2, [_atleast_3d_shape(np.shape(x)) for x in tup]),)


def dstack_jvp(dtup, ans, tup):
    return (np.dstack(densify(dtup, tup)),)


def append_vjp(g, ans, arr, values, axis=None):
    if axis is None:
        n = np.size(arr)
        return (np.reshape(g[:n], np.shape(arr)), np.reshape(g[n:], np.shape(values)))
    pieces = split_like(g, [arr, values], axis)
    return pieces[0], pieces[1]


def append_jvp(darr, dvalues, ans, arr, values, axis=None):
    # (with an axis, append needs operands of one rank: not the lazy zero 0.0)
    return (ZERO if is_zero(darr) else np.append(darr, np.zeros(np.shape(values)), axis),
            ZERO if is_zero(dvalues) else np.append(np.zeros(np.shape(arr)), dvalues, axis))


# --------------------------------------------------------------------------- splitting

def split_vjp(g, ans, ary, indices_or_sections, axis=0):
    return (np.concatenate(densify(g, ans), axis),)


def hsplit_vjp(g, ans, ary, indices_or_sections):
    return (np.concatenate(densify(g, ans), 1 if np.ndim(ary) > 1 else 0),)


def vsplit_vjp(g, ans, ary, indices_or_sections):
    return (np.concatenate(densify(g, ans), 0),)


def dsplit_vjp(g, ans, ary, indices_or_sections):
    return (np.concatenate(densify(g, ans), 2),)


# --------------------------------------------------------------------------- differences

def undiff(g, a, n=1, axis=-1, prepend=None, append=None):
    """The cotangent of ``np.diff(a, n, axis, prepend, append)``: its transpose, applied n
    times, with the rows of the (constant) prepended and appended values cut off."""
    axis = axis % np.ndim(a)
    edge = np.shape(g)[:axis] + (1,) + np.shape(g)[axis + 1:]
    for _ in range(n):
        zeros = np.zeros(edge)
        g = np.concatenate([zeros, g], axis) - np.concatenate([g, zeros], axis)
        edge = np.shape(g)[:axis] + (1,) + np.shape(g)[axis + 1:]
    start = _end_length(prepend, axis)
    stop = np.shape(g)[axis] - _end_length(append, axis)
    return g[(slice(None),) * axis + (slice(start, stop),)]


@nondifferentiable
def _end_length(values, axis):
    if values is None:
        return 0
    return 1 if np.ndim(values) == 0 else np.shape(values)[axis]


@nondifferentiable
def zero_ends(prepend, append):
    """np.diff's keywords for a tangent: the appended constants' tangents are zero."""
    ends = {}
    if prepend is not None:
        ends["prepend"] = np.zeros(np.shape(prepend))
    if append is not None:
        ends["append"] = np.zeros(np.shape(append))
    return ends


def diff_vjp(g, ans, a, n=1, axis=-1, prepend=None, append=None):
    return (undiff(g, a, n, axis, prepend, append),)


def diff_jvp(da, ans, a, n=1, axis=-1, prepend=None, append=None):
    return (np.diff(da, n, axis, **zero_ends(prepend, append)),)



@nondifferentiable
def gradient_axes(ndim, axis):
    """The axes ``np.gradient(f, axis=axis)`` differentiates along, in its result's order."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (tuple, list)):
        return [a % ndim for a in axis]
    return [axis % ndim]


@nondifferentiable
def gradient_stencils(n, spacing, edge_order):
    """The coefficients of ``np.gradient`` along one axis of length ``n``: row ``r`` is the
    derivative estimate of the comb that is one where the index is ``r`` modulo 3.

    Every estimate reads at most three consecutive points (the two ends, at either edge
    order, read the first or last three), whose indices differ modulo 3: the coefficient of
    input ``j`` in output ``i`` is row ``j % 3`` at ``i``. numpy computes the coefficients,
    so uniform, scalar and coordinate spacings and both edge orders are handled alike.
    """
    index = np.arange(n)
    return np.stack([np.gradient((index % 3 == r).astype(float), *spacing,
                                 edge_order=edge_order) for r in range(3)])


@nondifferentiable
def gradient_spacing(varargs, k, count):
    """The spacing arguments of the ``k``-th differentiated axis of ``count``."""
    if len(varargs) == 0:
        return ()
    if len(varargs) == 1:
        return (varargs[0],)
    return (varargs[k],)


@nondifferentiable
def gradient_terms(n):
    """``(offsets, coefficient index pairs)`` of the transpose of a 1-d ``np.gradient``:
    for each output ``i`` and input ``j = i + d`` it reads, ``(d, outputs, rows)``."""
    terms = []
    inner = np.arange(1, n - 1)
    for d in (-1, 0, 1):
        terms.append((inner + d, inner, (inner + d) % 3))
    for i, reads in ((0, range(0, min(3, n))), (n - 1, range(max(0, n - 3), n))):
        for j in reads:
            terms.append((np.array([j]), np.array([i]), np.array([j % 3])))
    return terms


def ungradient(g, n, stencils):
    """The transpose of ``np.gradient`` along the last axis, applied to ``g``."""
    total = np.zeros(np.shape(g))
    for targets, outputs, rows in gradient_terms(n):
        contribution = stencils[rows, outputs] * g[..., outputs]
        total = total + unindex(contribution, total, (Ellipsis, targets))
    return total


def gradient_vjp(g, ans, f, *varargs, axis=None, edge_order=1):
    axes = gradient_axes(np.ndim(f), axis)
    parts = [g] if len(axes) == 1 else densify(g, ans)
    total = np.zeros(np.shape(f))
    for k, ax in enumerate(axes):
        n = np.shape(f)[ax]
        stencils = gradient_stencils(n, gradient_spacing(varargs, k, len(axes)), edge_order)
        moved = ungradient(np.moveaxis(parts[k], ax, -1), n, stencils)
        total = total + np.moveaxis(moved, -1, ax)
    return (total,)


@nondifferentiable
def meshgrid_axis(k, count, indexing):
    """The axis along which ``np.meshgrid``'s ``k``-th output varies (``"xy"`` swaps the
    first two of two or more)."""
    if indexing == "xy" and count > 1 and k < 2:
        return 1 - k
    return k


def meshgrid_vjp(g, ans, *xi, indexing="xy", sparse=False, copy=True):
    parts = densify(g, ans)
    grads = []
    for k, x in enumerate(xi):
        axis = meshgrid_axis(k, len(xi), indexing)
        others = tuple(a for a in range(len(xi)) if a != axis)
        grads.append(np.reshape(np.sum(parts[k], axis=others), np.shape(x)))
    return tuple(grads)


def meshgrid_jvp(d0, d1, d2, d3, d4, d5, d6, d7, ans, *xi, indexing="xy", sparse=False,
                 copy=True):
    # (one tangent per differentiable position the rule declares, of which len(xi) exist)
    tangents = (d0, d1, d2, d3, d4, d5, d6, d7)
    parts = []
    for k, x in enumerate(xi):
        if is_zero(tangents[k]):
            parts.append(ZERO)
        else:
            parts.append(np.meshgrid(*[tangents[k] if j == k else np.zeros(np.shape(y))
                                       for j, y in enumerate(xi)],
                                     indexing=indexing, sparse=sparse))
    return tuple(parts)

# --------------------------------------------------------------------------- products

@nondifferentiable
def kron_shapes(a, b) -> tuple:
    """The shapes of ``kron_factors``' three views, and the common number of axes (shapes
    only: nothing here carries a gradient, so it is computed outside differentiated code)."""
    ndim = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (ndim - np.ndim(a)) + np.shape(a)
    sb = (1,) * (ndim - np.ndim(b)) + np.shape(b)
    return (tuple(n for pair in zip(sa, sb) for n in pair),
            tuple(n for m in sa for n in (m, 1)), tuple(n for m in sb for n in (1, m)), ndim)


def kron_factors(g, a, b):
    """``g`` (shaped like ``kron(a, b)``) viewed with the axes of a and b interleaved, and
    a and b broadcastable against that view."""
    view_shape, a_shape, b_shape, ndim = kron_shapes(a, b)
    return np.reshape(g, view_shape), np.reshape(a, a_shape), np.reshape(b, b_shape), ndim


def kron_vjp(g, ans, a, b):
    view, a_view, b_view, ndim = kron_factors(g, a, b)
    ga = np.sum(view * b_view, axis=tuple(range(1, 2 * ndim, 2)))
    gb = np.sum(view * a_view, axis=tuple(range(0, 2 * ndim, 2)))
    return np.reshape(ga, np.shape(a)), np.reshape(gb, np.shape(b))


def kron_jvp(da, db, ans, a, b):
    return np.kron(da, b), np.kron(a, db)


@nondifferentiable
def cross_axes(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross's vector axes (axis overrides the others); 3-vectors only."""
    if axis is not None:
        axisa = axisb = axisc = axis
    if np.shape(a)[axisa] != 3 or np.shape(b)[axisb] != 3:
        raise SrcgradError("srcgrad differentiates np.cross of 3-vectors only")
    return axisa, axisb, axisc


def cross_vjp(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    # <g, a x b> = <a, b x g> = <b, g x a>
    ax, bx, cx = cross_axes(a, b, axisa, axisb, axisc, axis)
    return (unbroadcast(np.moveaxis(np.cross(b, g, bx, cx), -1, ax), a),
            unbroadcast(np.moveaxis(np.cross(g, a, cx, ax), -1, bx), b))


def cross_jvp(da, db, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    # (cross needs vectors: not the lazy zero 0.0 of an operand without a tangent)
    return (ZERO if is_zero(da) else
            broadcast_like(np.cross(da, b, axisa, axisb, axisc, axis), ans),
            ZERO if is_zero(db) else
            broadcast_like(np.cross(a, db, axisa, axisb, axisc, axis), ans))


# --------------------------------------------------------------------------- padding

COPY_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@nondifferentiable
def pad_sources(shape, pad_width, mode="constant", kwargs=None):
    """For each element of a padded array: the flat index of the element it copies, or -1
    where it holds a constant. Only modes that copy values are linear in the array."""
    if mode not in COPY_MODES:
        raise SrcgradError(f"srcgrad differentiates np.pad in the modes {COPY_MODES}, not "
                           f"{mode!r}")
    ids = np.reshape(np.arange(int(np.prod(shape))), shape)
    if mode == "constant":
        return np.pad(ids, pad_width, constant_values=-1)
    extra = {k: v for k, v in (kwargs or {}).items() if k == "reflect_type"}
    return np.pad(ids, pad_width, mode, **extra)


def unpad(g, array, pad_width, mode="constant", kwargs=None):
    sources = np.ravel(pad_sources(np.shape(array), pad_width, mode, kwargs))
    kept = sources >= 0
    flat = unindex(np.ravel(g)[kept], np.zeros(np.size(array)), sources[kept])
    return np.reshape(flat, np.shape(array))


def pad_vjp(g, ans, array, pad_width, mode="constant", **kwargs):
    return (unpad(g, array, pad_width, mode, kwargs),)


def pad_jvp(darray, ans, array, pad_width, mode="constant", **kwargs):
    sources = pad_sources(np.shape(array), pad_width, mode, kwargs)
    return (np.where(sources >= 0, np.ravel(darray)[np.maximum(sources, 0)], 0.0),)


# --------------------------------------------------------------------------- selecting

@nondifferentiable
def select_masks(condlist, shape):
    """Where each choice of ``np.select`` is taken (the first true condition), and where
    the default is."""
    taken = np.zeros(shape, dtype=bool)
    masks = []
    for c in condlist:
        masks.append(np.broadcast_to(c, shape) & ~taken)
        taken = taken | masks[-1]
    return masks, ~taken


def select_vjp(g, ans, condlist, choicelist, default=0):
    masks, rest = select_masks(condlist, np.shape(ans))
    choices = [unbroadcast(np.where(m, g, 0.0), c) for m, c in zip(masks, choicelist)]
    return like_sequence(choicelist, choices), unbroadcast(np.where(rest, g, 0.0), default)


def select_jvp(dchoicelist, ddefault, ans, condlist, choicelist, default=0):
    masks, rest = select_masks(condlist, np.shape(ans))
    return (np.select(condlist, densify(dchoicelist, choicelist), 0.0),
            broadcast_like(np.where(rest, ddefault, 0.0), ans))


def nan_to_num_vjp(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    # Non-finite values are replaced by constants.
    return (np.where(np.isfinite(x), g, 0.0),)


def nan_to_num_jvp(dx, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return (np.where(np.isfinite(x), dx, 0.0),)


# --------------------------------------------------------------------------- permutations

@nondifferentiable
def along_axis_index(indices, axis):
    """The fancy index equivalent to ``np.take_along_axis(arr, indices, axis)`` (axis not
    None)."""
    axis = axis % np.ndim(indices)
    grid = list(np.indices(np.shape(indices), sparse=True))
    grid[axis] = indices
    return tuple(grid)


def take_along_axis_vjp(g, ans, arr, indices, axis=-1):
    if axis is None:
        flat = unindex(g, np.zeros(np.size(arr)), indices)
        return (np.reshape(flat, np.shape(arr)),)
    return (unindex(g, np.zeros(np.shape(arr)), along_axis_index(indices, axis)),)


def take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    if axis is None:
        return (np.reshape(unindex(g, np.zeros(np.size(a)), indices), np.shape(a)),)
    return (unindex(g, np.zeros(np.shape(a)), (slice(None),) * (axis % np.ndim(a)) + (indices,)),)


def take_jvp(da, ans, a, indices, axis=None, out=None, mode="raise"):
    return (np.take(da, indices, axis),)


@nondifferentiable
def inverse_permutation(order, axis):
    return np.argsort(order, axis=axis)


def sort_vjp(g, ans, a, axis=-1, kind=None, order=None):
    order = np.argsort(a, axis=axis, kind="stable")
    back = np.take_along_axis(g, inverse_permutation(order, -1 if axis is None else axis),
                              -1 if axis is None else axis)
    return (np.reshape(back, np.shape(a)),)


def sort_jvp(da, ans, a, axis=-1, kind=None, order=None):
    return (np.take_along_axis(da, np.argsort(a, axis=axis, kind="stable"), axis),)


def partition_vjp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    order = np.argpartition(a, kth, axis=axis)
    back = np.take_along_axis(g, inverse_permutation(order, -1 if axis is None else axis),
                              -1 if axis is None else axis)
    return (np.reshape(back, np.shape(a)),)


def partition_jvp(da, ans, a, kth, axis=-1, kind="introselect", order=None):
    return (np.take_along_axis(da, np.argpartition(a, kth, axis=axis), axis),)


# --------------------------------------------------------------------------- domains

def _points(*cases):
    """A domain from (shapes-or-values..., kwargs) templates: shapes (tuples) become random
    arrays, also inside a list."""
    def value(a):
        if isinstance(a, list) and a and isinstance(a[0], tuple):
            return [draw(rng_[0], s) for s in a]
        return draw(rng_[0], a) if isinstance(a, tuple) else a

    rng_ = []

    def domain(rng):
        rng_[:] = [rng]
        return [(tuple(value(a) for a in case[:-1]), case[-1]) for case in cases]
    return domain


def _sort_points(rng):
    # distinct values: the permutation is unique
    def distinct(shape):
        return np.reshape(rng.permutation(int(np.prod(shape))), shape) + rng.uniform(0, 0.5, shape)
    return [((distinct((5,)),), {}), ((distinct((3, 4)), 0), {}),
            ((distinct((3, 4)),), {"axis": None}), ((distinct((2, 3, 4)), -1), {})]


def _partition_points(rng):
    a, b, _, d = [args[0] for args, _ in _sort_points(rng)]
    return [((a, 1), {}), ((b, 2, 0), {}), ((d, [0, 2]), {"axis": -1})]


def _select_points(rng):
    c1 = rng.uniform(size=(2, 3)) > 0.5
    c2 = rng.uniform(size=(3,)) > 0.3
    return [(([c1, c2], [draw(rng, (2, 3)), draw(rng, (3,))], draw(rng, None)), {}),
            (([c1], (draw(rng, (2, 3)),), draw(rng, (2, 3))), {})]


def _nan_to_num_points(rng):
    x = draw(rng, (2, 3))
    x[0, 1], x[1, 2] = np.nan, np.nan  # (inf becomes 1.8e308: no room for differences)
    return [((x,), {}), ((draw(rng, (3,)),), {"nan": 1.0})]


def _take_along_axis_points(rng):
    return [((draw(rng, (3, 4)), np.array([[0, 2, 2, 1]]), 0), {}),
            ((draw(rng, (3, 4)), np.array([[3, 0], [1, 1], [2, 0]]), -1), {}),
            ((draw(rng, (5,)), np.array([4, 0, 0]), None), {})]


def _take_points(rng):
    return [((draw(rng, (3, 4)), np.array([0, 2, 2])), {}),
            ((draw(rng, (3, 4)), [1, 0, 1], 1), {}), ((draw(rng, (3, 4)), 2), {"axis": 0})]


def _kron_points(rng):
    return [((draw(rng, (2, 3)), draw(rng, (3, 2))), {}), ((draw(rng, (3,)), draw(rng, (2,))), {}),
            ((draw(rng, (2, 2)), draw(rng, (3,))), {}), ((draw(rng, (2,)), draw(rng, (2, 2, 2))), {}),
            ((draw(rng, None), draw(rng, (2, 2))), {})]


def _cross_points(rng):
    return [((draw(rng, (3,)), draw(rng, (3,))), {}), ((draw(rng, (4, 3)), draw(rng, (3,))), {}),
            ((draw(rng, (3, 2)), draw(rng, (2, 3))), {"axisa": 0}),
            ((draw(rng, (3, 2)), draw(rng, (3, 2))), {"axis": 0})]


def _pad_points(rng):
    return [((draw(rng, (3,)), 2), {}), ((draw(rng, (2, 3)), ((1, 0), (2, 1))), {}),
            ((draw(rng, (2, 3)), 1), {"constant_values": 5.0}),
            ((draw(rng, (4,)), (2, 3), "reflect"), {}), ((draw(rng, (2, 3)), 2, "edge"), {}),
            ((draw(rng, (3, 2)), 2), {"mode": "symmetric"}), ((draw(rng, (3,)), 4, "wrap"), {})]


def _append_points(rng):
    return [((draw(rng, (2, 3)), draw(rng, (4,))), {}),
            ((draw(rng, (2, 3)), draw(rng, (1, 3)), 0), {}),
            ((draw(rng, (2, 3)), draw(rng, (2, 2))), {"axis": 1})]


def _stack_like_points(rng):
    return [(([draw(rng, (3,)), draw(rng, (3, 2))],), {}), ((tuple([draw(rng, (2, 2))] * 2),), {}),
            (([draw(rng, (3,)), draw(rng, (3,))],), {})]


def _atleast_points(rng):
    return [((draw(rng, None),), {}), ((draw(rng, (3,)),), {}), ((draw(rng, (2, 3)),), {}),
            ((draw(rng, (2, 3, 2)),), {}), ((draw(rng, (3,)), draw(rng, (2,))), {})]


def _split_points(rng):
    return [((draw(rng, (6,)), 3), {}), ((draw(rng, (4, 3)), [1, 3]), {}),
            ((draw(rng, (2, 4)), 2, 1), {}), ((draw(rng, (2, 6)), [2]), {"axis": -1})]


# --------------------------------------------------------------------------- registration

deflinear(np.roll, roll_vjp, _points(((5,), 2, {}), ((2, 3), -1, {}), ((2, 3), [1, 2], [0, 1], {}),
                                     ((3, 4), 1, {"axis": 1})))
deflinear(np.flipud, flipud_vjp, _points(((3,), {}), ((3, 2), {})))
deflinear(np.fliplr, fliplr_vjp, _points(((3, 2), {}), ((2, 3, 2), {})))
deflinear(np.rot90, rot90_vjp, _points(((2, 3), {}), ((2, 3), 3, {}), ((2, 3, 4), -1, [1, 2], {}),
                                       ((2, 3), {"k": 2})))
deflinear(np.rollaxis, rollaxis_vjp, _points(((2, 3, 4), 2, {}), ((2, 3, 4), 0, 2, {}),
                                             ((2, 3, 4), -1, {"start": 1}), ((2, 3, 4), 1, 3, {})))
for _fn, _jvp in [(np.atleast_1d, atleast_1d_jvp), (np.atleast_2d, atleast_2d_jvp),
                  (np.atleast_3d, atleast_3d_jvp)]:
    defrule(_fn, atleast_vjp, jvp=_jvp, domain=_atleast_points)  # linear in one array
defrule(np.column_stack, column_stack_vjp, jvp=column_stack_jvp, domain=_stack_like_points,
        linear=True)
defrule(np.dstack, dstack_vjp, jvp=dstack_jvp, domain=_points(
    ([(2, 3), (2, 3)], {}), ([(3,), (3,)], {}), ([(2, 2, 1), (2, 2, 2)], {})), linear=True)
defrule(np.append, append_vjp, diff_args=(0, 1), jvp=append_jvp, domain=_append_points,
        linear=True)
for _fn, _vjp, _domain in [
        (np.split, split_vjp, _split_points),
        (np.array_split, split_vjp,
         _points(((5,), 3, {}), ((3, 4), [1], 1, {}), ((7, 2), 2, {}))),
        (np.hsplit, hsplit_vjp, _points(((4,), 2, {}), ((2, 4), [1, 3], {}))),
        (np.vsplit, vsplit_vjp, _points(((4, 2), 2, {}), ((4, 2, 2), [1], {}))),
        (np.dsplit, dsplit_vjp, _points(((2, 2, 4), 2, {}), ((1, 2, 3), [1], {})))]:
    deflinear(_fn, _vjp, _domain)
# affine with prepend/append or a padding constant: not marked linear
defrule(np.diff, diff_vjp, jvp=diff_jvp, domain=_points(
    ((5,), {}), ((3, 4), 2, {}), ((3, 4), 1, 0, {}), ((4,), {"prepend": 1.0}),
    ((2, 3), {"append": np.ones((2, 2)), "n": 3})))
deflinear(np.gradient, gradient_vjp, _points(
    ((10,), {}), ((4, 5), {}), ((3, 4, 5), {"axis": (0, -1)}), ((5,), 0.5, {}),
    ((4, 3), 2.0, {"axis": 0, "edge_order": 2}), ((6,), np.array([0.0, 0.5, 1.5, 1.75, 3.0, 4.0]),
                                                  {"edge_order": 2}),
    ((3, 4), 0.5, np.array([0.0, 1.0, 1.5, 3.0]), {}), ((2, 3), {"axis": -1})))
defrule(np.meshgrid, meshgrid_vjp, diff_args=tuple(range(8)), linear=True,
        jvp=meshgrid_jvp, domain=_points(((3,), {}), ((3,), (2,), {}), ((2,), (3,), (2,), {"indexing": "ij"}),
                                         ((3,), (2, 2), {"sparse": True}), ((2,), (3,), {"copy": False})))
defrule(np.kron, kron_vjp, diff_args=(0, 1), jvp=kron_jvp, domain=_kron_points)
defrule(np.cross, cross_vjp, diff_args=(0, 1), jvp=cross_jvp, domain=_cross_points)
defrule(np.pad, pad_vjp, jvp=pad_jvp, domain=_pad_points)
defrule(np.select, select_vjp, diff_args=(1, 2), jvp=select_jvp, domain=_select_points,
        linear=True)
defrule(np.nan_to_num, nan_to_num_vjp, jvp=nan_to_num_jvp, domain=_nan_to_num_points)
deflinear(np.take_along_axis, take_along_axis_vjp, _take_along_axis_points)
defrule(np.take, take_vjp, jvp=take_jvp, domain=_take_points, linear=True)
defrule(np.sort, sort_vjp, jvp=sort_jvp, domain=_sort_points)
defrule(np.partition, partition_vjp, jvp=partition_jvp, domain=_partition_points)
del _fn, _jvp, _vjp, _domain
