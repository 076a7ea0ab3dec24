"""Rules of functions that move, copy, select or convert values without arithmetic.

Shape functions (transpose, reshape, concatenate, tile...), indexing (``operator.getitem``),
conversions (``float``, ``np.asarray``...), and the shape helpers of ``_helpers`` that vjps
call, so that generated adjoints can be differentiated again. All are linear in their
differentiable arguments.

A sequence argument (``np.concatenate([a, b])``) gets its cotangent as a container of the same
kind (list or tuple), one entry per item.
"""
import collections
import operator

import numpy as np

from .. import runtime
from ..runtime import densify, unbroadcast
from ._helpers import (cast_to, first_operand, dispatches, expand_reduced, expand_to,
                       float_dtype_weight,
                       like_sequence, unindex)
from .domains import draw
from .registry import defrule, nondifferentiable

# --------------------------------------------------------------------------- axis order


def inverse_axes(axes, ndim):
    """The permutation undoing ``np.transpose(x, axes)`` (None stays None: a reversal)."""
    if axes is None:
        return None
    return tuple(int(i) for i in np.argsort([int(a) % ndim for a in axes]))


def transpose_vjp(g, ans, a, axes=None):
    return (np.transpose(g, inverse_axes(axes, np.ndim(a))),)


def transpose_jvp(da, ans, a, axes=None):
    return (np.transpose(da, axes),)


def matrix_transpose_vjp(g, ans, x):
    return (np.swapaxes(g, -1, -2),)


def matrix_transpose_jvp(dx, ans, x):
    return (np.swapaxes(dx, -1, -2),)


def swapaxes_vjp(g, ans, a, axis1, axis2):
    return (np.swapaxes(g, axis1, axis2),)


def swapaxes_jvp(da, ans, a, axis1, axis2):
    return (np.swapaxes(da, axis1, axis2),)


def moveaxis_vjp(g, ans, a, source, destination):
    return (np.moveaxis(g, destination, source),)


def moveaxis_jvp(da, ans, a, source, destination):
    return (np.moveaxis(da, source, destination),)


# --------------------------------------------------------------------------- reshaping

def reshape_vjp(g, ans, a, shape=None, order="C", copy=None):
    return (np.reshape(g, np.shape(a), order=order),)


def reshape_jvp(da, ans, a, shape=None, order="C", copy=None):
    return (np.reshape(da, np.shape(ans), order=order),)


def ravel_vjp(g, ans, a, order="C"):
    return (np.reshape(g, np.shape(a), order=order),)


def ravel_jvp(da, ans, a, order="C"):
    return (np.ravel(da, order=order),)


def squeeze_vjp(g, ans, a, axis=None):
    return (np.reshape(g, np.shape(a)),)


def squeeze_jvp(da, ans, a, axis=None):
    return (np.reshape(da, np.shape(ans)),)


def expand_dims_vjp(g, ans, a, axis):
    return (np.reshape(g, np.shape(a)),)


def expand_dims_jvp(da, ans, a, axis):
    return (np.reshape(da, np.shape(ans)),)


def broadcast_to_vjp(g, ans, array, shape, subok=False):
    return (unbroadcast(g, array),)


def broadcast_to_jvp(darray, ans, array, shape, subok=False):
    return (np.broadcast_to(darray, np.shape(ans)),)


# --------------------------------------------------------------------------- joining

def split_like(g, arrays, axis, shapes=None):
    """Cut ``g`` along ``axis`` into pieces shaped like the joined ``arrays`` were.

    ``shapes`` are the items' shapes as joined (after any promotion, e.g. by ``vstack``);
    each piece is reshaped back to its item's own shape. ``axis=None`` cuts a flat ``g``.
    """
    indices = piece_indices(item_shapes(arrays) if shapes is None else shapes, axis)
    pieces = [np.reshape(g[index], np.shape(x)) for index, x in zip(indices, arrays)]
    return like_sequence(arrays, pieces)


@nondifferentiable
def item_shapes(arrays):
    return [np.shape(x) for x in arrays]


@nondifferentiable
def piece_indices(shapes, axis):
    """The index of each joined item's piece of the result (flat when ``axis`` is None)."""
    indices, start = [], 0
    for shape in shapes:
        if axis is None:
            stop = start + int(np.prod(shape))
            indices.append(slice(start, stop))
        else:
            stop = start + shape[axis % len(shape)]
            indices.append((slice(None),) * (axis % len(shape)) + (slice(start, stop),))
        start = stop
    return indices


def concatenate_vjp(g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    return (split_like(cast_to(g, dtype), arrays, axis),)


def concatenate_jvp(d_arrays, ans, arrays, axis=0, out=None, dtype=None,
                    casting="same_kind"):
    return (cast_to(np.concatenate(densify(d_arrays, arrays), axis=axis), dtype),)


def unstack(g, arrays, axis=0):
    """Cut ``g`` along ``axis`` into one piece per stacked item. (The axis moved first: an
    index computed from ``np.ndim(g)`` would count as differentiable when this rule is
    differentiated again, at fourth order.)"""
    moved = np.moveaxis(g, axis, 0)
    return like_sequence(arrays, [moved[i] for i in range(len(arrays))])


def stack_vjp(g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    return (unstack(cast_to(g, dtype), arrays, axis),)


def stack_jvp(d_arrays, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    return (cast_to(np.stack(densify(d_arrays, arrays), axis=axis), dtype),)


def _at_least(shape, n):
    """The shape of ``np.atleast_2d`` (n=2) or ``np.atleast_1d`` (n=1) of an array."""
    if len(shape) >= n:
        return tuple(shape)
    if n == 2 and len(shape) == 1:
        return (1,) + tuple(shape)
    return (1,) * n


def hstack_vjp(g, ans, tup, dtype=None, casting="same_kind"):
    shapes = [_at_least(np.shape(x), 1) for x in tup]
    return (split_like(cast_to(g, dtype), tup, 0 if np.ndim(ans) == 1 else 1, shapes),)


def hstack_jvp(dtup, ans, tup, dtype=None, casting="same_kind"):
    return (cast_to(np.hstack(densify(dtup, tup)), dtype),)


def vstack_vjp(g, ans, tup, dtype=None, casting="same_kind"):
    return (split_like(cast_to(g, dtype), tup, 0, [_at_least(np.shape(x), 2) for x in tup]),)


def vstack_jvp(dtup, ans, tup, dtype=None, casting="same_kind"):
    return (cast_to(np.vstack(densify(dtup, tup)), dtype),)


def like_sequence_vjp(g, ans, seq, items):
    return (runtime.list_slice(g, 0, len(items)),)


def like_sequence_jvp(ditems, ans, seq, items):
    return (like_sequence(seq, densify(ditems, items)),)


# --------------------------------------------------------------------------- repetition

def untile(g, A, reps):
    """Cotangent of ``np.tile(A, reps)``: the sum of ``g`` over all the tiles."""
    interleaved, tile_axes = tile_layout(np.shape(A), reps)
    return np.reshape(np.sum(np.reshape(g, interleaved), axis=tile_axes), np.shape(A))


@nondifferentiable
def tile_layout(shape, reps):
    """``np.tile(a, reps)``'s result viewed as (reps, size) pairs per axis, and the axes
    of the repetitions in that view."""
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    ndim = max(len(shape), len(reps))
    shape_full = (1,) * (ndim - len(shape)) + tuple(shape)
    reps_full = (1,) * (ndim - len(reps)) + reps
    interleaved = tuple(n for pair in zip(reps_full, shape_full) for n in pair)
    return interleaved, tuple(range(0, 2 * ndim, 2))


def tile_vjp(g, ans, A, reps):
    return (untile(g, A, reps),)


def tile_jvp(dA, ans, A, reps):
    return (np.tile(dA, reps),)


def unresize(g, a):
    """Cotangent of ``np.resize(a, new_shape)``: ``a``'s elements are read in order,
    cyclically, so each one gets the sum of ``g`` at its copies."""
    index = np.arange(np.size(g)) % max(np.size(a), 1)
    return np.reshape(unindex(np.ravel(g), np.zeros(np.size(a)), index), np.shape(a))


def resize_vjp(g, ans, a, new_shape):
    return (unresize(g, a),)


def resize_jvp(da, ans, a, new_shape):
    return (np.resize(da, new_shape),)


def unrepeat(g, a, repeats, axis=None):
    """Cotangent of ``np.repeat(a, repeats, axis)``: each copy's cotangent added back."""
    if axis is None:
        index = np.repeat(np.arange(np.size(a)), repeats)
        return np.reshape(unindex(g, np.zeros(np.size(a)), index), np.shape(a))
    axis = axis % np.ndim(a)
    index = (slice(None),) * axis + (np.repeat(np.arange(np.shape(a)[axis]), repeats),)
    return unindex(g, np.zeros(np.shape(a)), index)


def repeat_vjp(g, ans, a, repeats, axis=None):
    return (unrepeat(g, a, repeats, axis),)


def repeat_jvp(da, ans, a, repeats, axis=None):
    return (np.repeat(da, repeats, axis),)


# --------------------------------------------------------------------------- diagonals

def undiagonal(g, shape, offset=0, axis1=0, axis2=1):
    """Cotangent of ``np.diagonal(a, offset, axis1, axis2)`` for ``a`` of ``shape``."""
    ndim = len(shape)
    n = np.shape(g)[-1]
    rows = np.eye(n, shape[axis1], k=max(-offset, 0))  # rows[i, p] = [p == i + row0]
    cols = np.eye(n, shape[axis2], k=max(offset, 0))
    full = np.einsum("...i,ip,iq->...pq", g, rows, cols)
    return np.moveaxis(full, (-2, -1), (axis1 % ndim, axis2 % ndim))


def diagonal_vjp(g, ans, a, offset=0, axis1=0, axis2=1):
    return (undiagonal(g, np.shape(a), offset, axis1, axis2),)


def diagonal_jvp(da, ans, a, offset=0, axis1=0, axis2=1):
    return (np.diagonal(da, offset, axis1, axis2),)


def diag_vjp(g, ans, v, k=0):
    # np.diag builds a matrix from a vector, or extracts the diagonal of a matrix.
    return (np.diag(g, k) if np.ndim(v) == 1 else undiagonal(g, np.shape(v), k),)


def diag_jvp(dv, ans, v, k=0):
    return (np.diag(dv, k),)


def trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    ndim = np.ndim(a)
    mask = np.eye(np.shape(a)[axis1], np.shape(a)[axis2], k=offset)
    full = np.expand_dims(cast_to(g, dtype), (-2, -1)) * mask
    return (np.moveaxis(full, (-2, -1), (axis1 % ndim, axis2 % ndim)),)


def trace_jvp(da, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return (cast_to(np.trace(da, offset, axis1, axis2), dtype),)


def tril_vjp(g, ans, m, k=0):
    return (np.tril(g, k),)


def tril_jvp(dm, ans, m, k=0):
    return (np.tril(dm, k),)


def triu_vjp(g, ans, m, k=0):
    return (np.triu(g, k),)


def triu_jvp(dm, ans, m, k=0):
    return (np.triu(dm, k),)


# --------------------------------------------------------------------------- indexing

def getitem_vjp(g, ans, x, index):
    return (unindex(g, x, index),)


def getitem_jvp(dx, ans, x, index):
    return (dx[index],)


def unindex_vjp(c, ans, g, x, index):
    return (c[index],)


def unindex_jvp(dg, ans, g, x, index):
    return (unindex(dg, x, index),)


# --------------------------------------------------------------------------- conversions

def unstack_like(g, a):
    """Cotangent of ``np.array(a)`` for ``a`` possibly a nested list of arrays and floats."""
    if isinstance(a, (list, tuple)):
        return like_sequence(a, [unstack_like(g[i], item) for i, item in enumerate(a)])
    return np.reshape(g, np.shape(a))


def restack(d):
    """``np.array`` of a nested list of tangents, built from ``np.stack`` (differentiable)."""
    if isinstance(d, (list, tuple)):
        return np.stack([restack(item) for item in d])
    return d


def asarray_vjp(g, ans, a, dtype=None, order=None, device=None, copy=None, like=None):
    # Casting to an integer or bool dtype cuts the gradient.
    return (unstack_like(g * float_dtype_weight(dtype), a),)


def asarray_jvp(da, ans, a, dtype=None, order=None, device=None, copy=None, like=None):
    return (np.reshape(restack(densify(da, a)), np.shape(ans)) * float_dtype_weight(dtype),)


def array_vjp(g, ans, object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0,
              like=None):
    return (unstack_like(g * float_dtype_weight(dtype), object),)


def array_jvp(dobject, ans, object, dtype=None, copy=True, order="K", subok=False, ndmin=0,
              ndmax=0, like=None):
    return (np.reshape(restack(densify(dobject, object)), np.shape(ans))
            * float_dtype_weight(dtype),)


def copy_vjp(g, ans, a, order="K", subok=False):
    return (g,)


def copy_jvp(da, ans, a, order="K", subok=False):
    return (da,)


def float_vjp(g, ans, x=0.0):
    return (np.reshape(g, np.shape(x)),)


def float_jvp(dx, ans, x=0.0):
    return (np.reshape(dx, ()),)


def float_type_vjp(g, ans, x=0.0):
    # np.float64(x): a cast (of an array too); the gradient in x's own dtype
    return (np.reshape(np.asarray(g, dtype=gradient_dtype(x)), np.shape(x)),)


def float_type_jvp(dx, ans, x=0.0):
    return (np.reshape(np.asarray(dx, dtype=np.asarray(ans).dtype), np.shape(ans)),)


def _float_type_points(rng):
    return [((draw(rng, None),), {}), ((draw(rng, (3,)),), {}), ((draw(rng, ()),), {})]


# --------------------------------------------------------------------------- runtime helpers

def expand_reduced_vjp(c, ans, g, x, axis=None, keepdims=False):
    return (np.reshape(c, np.shape(g)),)


def expand_reduced_jvp(dg, ans, g, x, axis=None, keepdims=False):
    return (expand_reduced(dg, x, axis, keepdims),)


def expand_to_vjp(c, ans, g, x, axis=None, keepdims=False):
    return (np.reshape(np.sum(c, axis=axis, keepdims=keepdims), np.shape(g)),)


def expand_to_jvp(dg, ans, g, x, axis=None, keepdims=False):
    return (expand_to(dg, x, axis, keepdims),)


# --------------------------------------------------------------------------- shims for methods

@dispatches(first_operand)
def reshape_method(a, *shape, order="C"):
    """``a.reshape(2, 3)``, ``a.reshape((2, 3))`` and ``a.reshape(-1)`` as a function."""
    return np.reshape(a, shape[0] if len(shape) == 1 else shape, order=order)


@dispatches(first_operand)
def transpose_method(a, *axes):
    """``a.transpose()``, ``a.transpose(1, 0)`` and ``a.transpose((1, 0))`` as a function."""
    return np.transpose(a, method_axes(axes))


def method_axes(axes):
    """The ``axes`` of ``np.transpose`` from the varargs of ``ndarray.transpose``."""
    if not axes or (len(axes) == 1 and axes[0] is None):
        return None
    return tuple(axes[0]) if len(axes) == 1 else tuple(axes)


def transpose_method_vjp(g, ans, a, *axes):
    return (np.transpose(g, inverse_axes(method_axes(axes), np.ndim(a))),)


def transpose_method_jvp(da, ans, a, *axes):
    return (np.transpose(da, method_axes(axes)),)


def reshape_method_vjp(g, ans, a, *shape, order="C"):
    return (np.reshape(g, np.shape(a), order=order),)


def reshape_method_jvp(da, ans, a, *shape, order="C"):
    return (np.reshape(da, np.shape(ans), order=order),)


@dispatches(first_operand)
def astype_method(a, dtype, *args, **kwargs):
    """``a.astype(dtype)`` as a function (also for Python numbers, via ``np.asarray``)."""
    return np.asarray(a).astype(dtype, *args, **kwargs)


def astype_method_vjp(g, ans, a, dtype, *args, **kwargs):
    # Casting to an integer or bool dtype cuts the gradient; the gradient has the input's
    # float dtype, not the one cast to (float32 -> astype(float64) -> a float32 gradient)
    return (astype_method(g * float_dtype_weight(dtype), gradient_dtype(a)),)


def gradient_dtype(a):
    """The dtype of ``a``'s gradient: its own when float or complex, else float64."""
    kind = getattr(getattr(a, "dtype", None), "kind", "f")
    return a.dtype if kind in "fc" and hasattr(a, "dtype") else np.dtype(np.float64)


def astype_method_jvp(da, ans, a, dtype, *args, **kwargs):
    return (da * float_dtype_weight(dtype),)


@dispatches(first_operand)
def item_method(a, *args):
    """``a.item()`` / ``a.item(i)`` / ``a.item(i, j)`` as a function: a Python scalar."""
    return np.asarray(a).item(*args)


def unitem(g, a, args):
    """Cotangent of ``a.item(*args)``: ``g`` at the element read, zeros elsewhere."""
    if not args:
        return np.reshape(g, np.shape(a))
    if len(args) == 1 and np.ndim(args[0]) == 0:  # a flat index
        return np.reshape(unindex(g, np.zeros(np.size(a)), args[0]), np.shape(a))
    index = tuple(args[0]) if len(args) == 1 else tuple(args)
    return unindex(g, np.zeros(np.shape(a)), index)


def item_method_vjp(g, ans, a, *args):
    return (unitem(g, a, args),)


def item_method_jvp(da, ans, a, *args):
    return (item_method(da, *args),)


@dispatches(first_operand)
def tolist_method(a):
    """``a.tolist()`` as a function: nested lists of Python scalars."""
    return np.asarray(a).tolist()


def tolist_method_vjp(g, ans, a):
    return (np.reshape(restack(g), np.shape(a)),)


def tolist_method_jvp(da, ans, a):
    return (tolist_method(da),)


# --------------------------------------------------------------------------- domains

def _transpose_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (2, 3, 4)),), {}),
            ((draw(rng, (2, 3, 4)), (1, 2, 0)), {}),
            ((draw(rng, (2, 3, 4)),), {"axes": (-1, 0, 1)}),
            ((draw(rng, (3,)),), {}), ((draw(rng, None),), {})]


def _matrix_transpose_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (4, 2, 3)),), {})]


def _swapaxes_points(rng):
    return [((draw(rng, (2, 3)), 0, 1), {}), ((draw(rng, (2, 3, 4)), -1, 0), {}),
            ((draw(rng, (2, 3, 4)), 1, 1), {})]


def _moveaxis_points(rng):
    return [((draw(rng, (2, 3, 4)), 0, -1), {}), ((draw(rng, (2, 3, 4)), (0, 1), (2, 0)), {})]


def _reshape_points(rng):
    return [((draw(rng, (2, 3)), (3, 2)), {}), ((draw(rng, (2, 3)), -1), {}),
            ((draw(rng, (2, 3)), (3, 2)), {"order": "F"}),
            ((draw(rng, (6,)),), {"shape": (1, 2, 3)}),
            ((draw(rng, None), (1, 1)), {}), ((draw(rng, (2, 3, 4)), (4, -1)), {})]


def _ravel_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (2, 3)), "F"), {}), ((draw(rng, None),), {}),
            ((draw(rng, (2, 3, 4)),), {})]


def _squeeze_points(rng):
    return [((draw(rng, (1, 3, 1)),), {}), ((draw(rng, (1, 3, 1)), 0), {}),
            ((draw(rng, (1, 3, 1)),), {"axis": (0, 2)}), ((draw(rng, (3,)),), {})]


def _expand_dims_points(rng):
    return [((draw(rng, (2, 3)), 0), {}), ((draw(rng, (2, 3)), -1), {}),
            ((draw(rng, (2, 3)), (0, 2)), {}), ((draw(rng, None), 0), {})]


def _broadcast_to_points(rng):
    return [((draw(rng, (3,)), (2, 3)), {}), ((draw(rng, (2, 1)), (4, 2, 3)), {}),
            ((draw(rng, None), (2, 2)), {}), ((draw(rng, (2, 3)), (2, 3)), {})]


def _concatenate_points(rng):
    return [(([draw(rng, (2, 3)), draw(rng, (1, 3)), draw(rng, (3, 3))],), {}),
            (((draw(rng, (2, 3)), draw(rng, (2, 1))), 1), {}),
            (([draw(rng, (2, 3)), draw(rng, (2, 2))],), {"axis": -1}),
            (([draw(rng, (2, 3)), draw(rng, (4,))],), {"axis": None}),
            (([draw(rng, (3,))],), {})]


def _stack_points(rng):
    return [(([draw(rng, (2, 3)), draw(rng, (2, 3)), draw(rng, (2, 3))],), {}),
            (((draw(rng, (2, 3)), draw(rng, (2, 3))), -1), {}),
            (([draw(rng, None), draw(rng, None)],), {}),
            (([draw(rng, (3,)), draw(rng, (3,))],), {"axis": 1})]


def _hstack_points(rng):
    return [(([draw(rng, (3,)), draw(rng, (2,))],), {}),
            (([draw(rng, (2, 3)), draw(rng, (2, 1))],), {}),
            (([draw(rng, None), draw(rng, (2,))],), {}),
            (((draw(rng, (2, 3, 2)), draw(rng, (2, 1, 2))),), {})]


def _vstack_points(rng):
    return [(([draw(rng, (3,)), draw(rng, (3,))],), {}),
            (([draw(rng, (2, 3)), draw(rng, (3,))],), {}),
            (((draw(rng, (2, 3, 2)), draw(rng, (1, 3, 2))),), {}),
            (([draw(rng, None), draw(rng, None)],), {})]


def _tile_points(rng):
    return [((draw(rng, (3,)), 2), {}), ((draw(rng, (2, 3)), (2, 1)), {}),
            ((draw(rng, (3,)), (2, 2)), {}), ((draw(rng, (2, 3, 2)), (2,)), {}),
            ((draw(rng, None), 3), {})]


def _resize_points(rng):
    return [((draw(rng, (3,)), 7), {}), ((draw(rng, (2, 3)), (4, 2)), {}),
            ((draw(rng, (2, 3)), (2,)), {}), ((draw(rng, None), (2, 2)), {})]


def _repeat_points(rng):
    return [((draw(rng, (3,)), 2), {}), ((draw(rng, (2, 3)), 2), {}),
            ((draw(rng, (2, 3)), 2, 1), {}), ((draw(rng, (2, 3)), [1, 0, 3], -1), {}),
            ((draw(rng, (2, 3)), np.array([2, 1])), {"axis": 0}), ((draw(rng, None), 3), {})]


def _diag_points(rng):
    return [((draw(rng, (3,)),), {}), ((draw(rng, (3,)), 1), {}), ((draw(rng, (3,)), -2), {}),
            ((draw(rng, (3, 3)),), {}), ((draw(rng, (3, 4)), 1), {}), ((draw(rng, (4, 3)), -1), {})]


def _diagonal_points(rng):
    return [((draw(rng, (3, 3)),), {}), ((draw(rng, (3, 4)), 1), {}),
            ((draw(rng, (2, 3, 4)), -1, 2, 1), {}),
            ((draw(rng, (3, 2, 4)),), {"axis1": 0, "axis2": 2})]


def _trace_points(rng):
    return [((draw(rng, (3, 3)),), {}), ((draw(rng, (3, 4)), 1), {}),
            ((draw(rng, (2, 3, 4)), 0, 1, 2), {}),
            ((draw(rng, (3, 2, 3)),), {"axis1": 2, "axis2": 0})]


def _tri_points(rng):
    return [((draw(rng, (3, 3)),), {}), ((draw(rng, (3, 4)), 1), {}),
            ((draw(rng, (2, 3, 3)), -1), {})]


def _getitem_points(rng):
    x = draw(rng, (4, 3))
    indices = [1, -1, slice(1, 3), (slice(None), 0), (Ellipsis, 1), None, (1, None, slice(None)),
               np.array([0, 2, 0]), [0, 0, 1], (np.array([0, 1, 1]), np.array([2, 0, 2])),
               x > 0, (slice(None, None, -1), slice(0, 3, 2)), (np.array([[0, 3], [3, 3]]), 1),
               (slice(None), [2, 2])]
    points = [((x, index), {}) for index in indices]
    a, b = draw(rng, (2, 3)), draw(rng, (3,))
    points += [((draw(rng, ()), ()), {}), (([a, b, draw(rng, None)], 1), {}), (((a, b), -1), {}),
               (({"w": a, "b": b}, "w"), {}), (([a, b, draw(rng, None)], slice(0, 2)), {}),
               ((draw(rng, (5,)), np.array([True, False, True, True, False])), {})]
    return points


def _unindex_points(rng):
    points = []
    for (x, index), _ in _getitem_points(rng):
        g = runtime.zeros_like(operator.getitem(x, index))
        points.append(((_randomized(rng, g), x, index), {}))
    return points


def _randomized(rng, template):
    if isinstance(template, np.ndarray):
        return rng.uniform(-2.0, 2.0, size=template.shape)
    if isinstance(template, dict):
        return {k: _randomized(rng, v) for k, v in template.items()}
    if isinstance(template, (list, tuple)):
        return type(template)(_randomized(rng, v) for v in template)
    return float(rng.uniform(-2.0, 2.0))


def _asarray_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (2, 3)), np.float64), {}),
            ((draw(rng, None),), {}), (([draw(rng, None), draw(rng, None)],), {}),
            (([draw(rng, (3,)), draw(rng, (3,))],), {}),
            (([[draw(rng, None), draw(rng, None)], (draw(rng, None), draw(rng, None))],), {}),
            ((draw(rng, (3,)),), {"dtype": np.int64})]


def _array_points(rng):
    return _asarray_points(rng) + [((draw(rng, (3,)),), {"ndmin": 2})]


def _like_sequence_points(rng):
    items = [draw(rng, (2,)), draw(rng, None)]
    return [(((0.0, 0.0), items), {}), (([0.0, 0.0], items), {}),
            ((_Pair(0.0, 0.0), items), {})]


_Pair = collections.namedtuple("_Pair", "first second")


def _copy_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, None),), {})]


def _float_points(rng):
    return [((draw(rng, None),), {}), ((draw(rng, ()),), {}), ((np.float64(draw(rng, None)),), {})]


def _expand_points(rng):
    x = draw(rng, (3, 4, 2))
    return [((draw(rng, (4, 2)), x, 0), {}), ((draw(rng, (3, 1, 2)), x, 1, True), {}),
            ((draw(rng, (4,)), x, (0, 2)), {}), ((draw(rng, None), x), {}),
            ((draw(rng, (3, 4)), x), {"axis": -1})]


def _transpose_method_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (2, 3, 4)), 1, 2, 0), {}),
            ((draw(rng, (2, 3, 4)), (2, 0, 1)), {}), ((draw(rng, (2, 3, 4)), None), {})]


def _reshape_method_points(rng):
    return [((draw(rng, (2, 3)), 3, 2), {}), ((draw(rng, (2, 3)), (3, 2)), {}),
            ((draw(rng, (2, 3)), -1), {}), ((draw(rng, (2, 3)), 3, 2), {"order": "F"})]


def _astype_points(rng):
    return [((draw(rng, (2, 3)), np.float64), {}), ((draw(rng, (3,)), "float64"), {}),
            ((draw(rng, (3,)), np.int64), {}), ((draw(rng, None), float), {})]


def _item_points(rng):
    return [((draw(rng, ()),), {}), ((draw(rng, (1, 1)),), {}), ((draw(rng, (2, 3)), 4), {}),
            ((draw(rng, (2, 3)), 1, 2), {}), ((draw(rng, (2, 3)), (0, 1)), {})]


def _tolist_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (3,)),), {}), ((draw(rng, ()),), {})]


def cast_to_vjp(c, ans, g, dtype=None):
    return (cast_to(c, dtype),)


def cast_to_jvp(dg, ans, g, dtype=None):
    return (cast_to(dg, dtype),)


def _cast_to_points(rng):
    return [((draw(rng, (2, 3)),), {}), ((draw(rng, (3,)), np.float32), {}),
            ((draw(rng, (3,)), int), {}), ((draw(rng, None), np.bool_), {})]


# --------------------------------------------------------------------------- registration

_LINEAR = [
    (np.transpose, transpose_vjp, transpose_jvp, _transpose_points, (0,)),  # is np.permute_dims
    (np.matrix_transpose, matrix_transpose_vjp, matrix_transpose_jvp, _matrix_transpose_points,
     (0,)),
    (np.swapaxes, swapaxes_vjp, swapaxes_jvp, _swapaxes_points, (0,)),
    (np.moveaxis, moveaxis_vjp, moveaxis_jvp, _moveaxis_points, (0,)),
    (np.reshape, reshape_vjp, reshape_jvp, _reshape_points, (0,)),
    (np.ravel, ravel_vjp, ravel_jvp, _ravel_points, (0,)),
    (np.squeeze, squeeze_vjp, squeeze_jvp, _squeeze_points, (0,)),
    (np.expand_dims, expand_dims_vjp, expand_dims_jvp, _expand_dims_points, (0,)),
    (np.broadcast_to, broadcast_to_vjp, broadcast_to_jvp, _broadcast_to_points, (0,)),
    (np.concatenate, concatenate_vjp, concatenate_jvp, _concatenate_points, (0,)),  # np.concat
    (np.stack, stack_vjp, stack_jvp, _stack_points, (0,)),
    (np.hstack, hstack_vjp, hstack_jvp, _hstack_points, (0,)),
    (np.vstack, vstack_vjp, vstack_jvp, _vstack_points, (0,)),
    (np.tile, tile_vjp, tile_jvp, _tile_points, (0,)),
    (np.repeat, repeat_vjp, repeat_jvp, _repeat_points, (0,)),
    (np.resize, resize_vjp, resize_jvp, _resize_points, (0,)),
    (np.diag, diag_vjp, diag_jvp, _diag_points, (0,)),
    (np.diagonal, diagonal_vjp, diagonal_jvp, _diagonal_points, (0,)),
    (np.trace, trace_vjp, trace_jvp, _trace_points, (0,)),
    (np.tril, tril_vjp, tril_jvp, _tri_points, (0,)),
    (np.triu, triu_vjp, triu_jvp, _tri_points, (0,)),
    (operator.getitem, getitem_vjp, getitem_jvp, _getitem_points, (0,)),
    (unindex, unindex_vjp, unindex_jvp, _unindex_points, (0,)),
    (like_sequence, like_sequence_vjp, like_sequence_jvp, _like_sequence_points, (1,)),
    (np.asarray, asarray_vjp, asarray_jvp, _asarray_points, (0,)),
    (np.asanyarray, asarray_vjp, asarray_jvp, _asarray_points, (0,)),
    (np.array, array_vjp, array_jvp, _array_points, (0,)),
    (np.copy, copy_vjp, copy_jvp, _copy_points, (0,)),
    (float, float_vjp, float_jvp, _float_points, (0,)),
    (np.float64, float_type_vjp, float_type_jvp, _float_type_points, (0,)),
    (expand_reduced, expand_reduced_vjp, expand_reduced_jvp, _expand_points, (0,)),
    (expand_to, expand_to_vjp, expand_to_jvp, _expand_points, (0,)),
    (reshape_method, reshape_method_vjp, reshape_method_jvp, _reshape_method_points, (0,)),
    (transpose_method, transpose_method_vjp, transpose_method_jvp, _transpose_method_points,
     (0,)),
    (astype_method, astype_method_vjp, astype_method_jvp, _astype_points, (0,)),
    (cast_to, cast_to_vjp, cast_to_jvp, _cast_to_points, (0,)),
    (item_method, item_method_vjp, item_method_jvp, _item_points, (0,)),
    (tolist_method, tolist_method_vjp, tolist_method_jvp, _tolist_points, (0,)),
]
for _fn, _vjp, _jvp, _domain, _diff in _LINEAR:
    defrule(_fn, _vjp, diff_args=_diff, jvp=_jvp, domain=_domain, linear=True)
defrule(np.linalg.matrix_transpose, matrix_transpose_vjp, jvp=matrix_transpose_jvp,
        domain=_matrix_transpose_points, linear=True, name="numpy.linalg.matrix_transpose")
del _fn, _vjp, _jvp, _domain, _diff

nondifferentiable(inverse_axes)
nondifferentiable(method_axes)
nondifferentiable(gradient_dtype)
