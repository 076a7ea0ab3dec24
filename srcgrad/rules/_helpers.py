"""Helpers shared by the rule modules: reduction bookkeeping, index adjoints, tie weights.

Every helper that a vjp or jvp calls is itself differentiable: it either has a rule of its own
(registered in the rule modules), is marked non-differentiable, or is plain Python over
functions that do. Forward functions that srcgrad defines (``sigmoid``, ``unindex``...) are
wrapped with ``dispatches`` so array-like types (the Tensor facade, test tracers) can
intercept them through ``__array_function__`` exactly as they intercept numpy's own functions.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import runtime as rt
from ..runtime import ZERO, add_at, size_of
from .registry import nondifferentiable

__all__ = [
    "dispatches",
    "normalize_axes",
    "kept_shape",
    "expand_reduced",
    "expand_to",
    "reduced_count",
    "unindex",
    "greater_weight",
    "extremum_weights",
    "float_dtype_weight",
    "cast_to",
    "like_sequence",
    "items_adjoint",
    "first_operand",
    "first_two_operands",
]


# --------------------------------------------------------------------------- dispatch

# types that never override numpy functions (what _overrides answers False for)
_PLAIN = frozenset({float, int, bool, np.ndarray, np.float64, np.float32, np.int64})


def _overrides(value: Any) -> bool:
    """True when ``value``'s type overrides numpy functions (NEP 18), as a Tensor does."""
    method = getattr(type(value), "__array_function__", None)
    # (dask and other array libraries do not know srcgrad's helpers: they would compute)
    return method is not None and method is not np.ndarray.__array_function__ \
        and not rt.is_foreign_array(value)


def dispatches(relevant: Callable[..., tuple]) -> Callable[[Callable], Callable]:
    """Make a srcgrad forward function overridable through ``__array_function__``.

    ``relevant(*args, **kwargs)`` returns the arguments to inspect (as numpy's dispatchers do).
    When one of them overrides numpy functions, its ``__array_function__`` is called with the
    wrapped function itself, which is the key of the function's rule.
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def public(*args, **kwargs):
            operands = relevant(*args, **kwargs)
            for a in operands:  # (numbers and plain arrays, the common case: no more calls)
                if type(a) not in _PLAIN:
                    break
            else:
                return fn(*args, **kwargs)
            overriding = [a for a in operands if _overrides(a)]
            if not overriding:
                return fn(*args, **kwargs)
            types = tuple({type(a): None for a in overriding})
            for a in overriding:
                result = type(a).__array_function__(a, public, types, args, kwargs)
                if result is not NotImplemented:
                    return result
            raise TypeError(f"no implementation of {fn.__name__} for types "
                            f"{[t.__name__ for t in types]}")

        return public

    return decorate


def first_operand(x, *args, **kwargs):
    """For ``dispatches``: only the first operand may override the function."""
    return (x,)


def first_two_operands(x, y, *args, **kwargs):
    """For ``dispatches``: the first two operands may override the function."""
    return (x, y)


# --------------------------------------------------------------------------- reductions

@nondifferentiable
def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """The sorted non-negative axes an ``axis`` argument (None, int, tuple) refers to."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    axes = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        axes.append(int(a) % ndim)
    return tuple(sorted(axes))


@nondifferentiable
def kept_shape(shape: tuple[int, ...], axis) -> tuple[int, ...]:
    """``shape`` with the reduced axes set to 1: the result shape under ``keepdims=True``."""
    axes = normalize_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_reduced(g, x, axis=None, keepdims=False):
    """Reshape a reduction's result (or its cotangent) ``g`` so it broadcasts against ``x``."""
    if keepdims:
        return g
    return np.reshape(g, kept_shape(np.shape(x), axis))


def expand_to(g, x, axis=None, keepdims=False):
    """Spread a reduction's cotangent ``g`` over every element of ``x`` that was reduced."""
    if axis is None and (not keepdims or rt.is_spread_scalar(g)):
        return rt.spread_total(g, x)
    return np.broadcast_to(expand_reduced(g, x, axis, keepdims), np.shape(x))


@nondifferentiable
def product_like(x, y):
    """A read-only array shaped like ``x @ y`` (numpy's 1-D promotion and batch broadcasting),
    its elements sharing one: what ``unbroadcast`` sums a product's cotangent down to."""
    sx, sy = np.shape(x), np.shape(y)
    if not sx or not sy:
        return np.zeros(())  # (unreachable: np.matmul refuses numbers)
    # a 1-D x is one row, a 1-D y one column, both dropped from the result
    batch = np.broadcast_shapes(sx[:-2], sy[:-2])
    shape = batch + (sx[-2:-1] if len(sx) > 1 else ()) + (sy[-1:] if len(sy) > 1 else ())
    return np.broadcast_to(np.zeros(()), shape)


@nondifferentiable
def reduced_count(x, ans) -> int:
    """How many elements of ``x`` were reduced into each element of ``ans``."""
    return size_of(x) // max(size_of(ans), 1)  # (size_of: np.size computes dask arrays)


# --------------------------------------------------------------------------- indexing

@dispatches(first_two_operands)
def unindex(g, x, index):
    """The adjoint of ``x[index]``: zeros structured like ``x``, with ``g`` added at ``index``.

    Repeated fancy indices accumulate. Lists, tuples and dicts get container adjoints whose
    untouched entries are the lazy zero.
    """
    return add_at(ZERO, x, index, g)


# --------------------------------------------------------------------------- piecewise weights

@nondifferentiable
@dispatches(first_two_operands)
def greater_weight(x, y):
    """1 where ``x > y``, 1/2 where they tie, else 0: ``maximum(x, y)``'s share for ``x``.

    Ties split the gradient evenly, so ``maximum(x, x)`` has gradient 1 in ``x``.
    """
    return _as_dtype(np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0)), _weight_dtype(x, y))


@nondifferentiable
@dispatches(first_two_operands)
def fmax_weight(x, y):
    """Like ``greater_weight`` but NaN-aware as ``np.fmax`` is: a NaN never gets gradient."""
    weight = np.where(np.isnan(y), 1.0, np.where(np.isnan(x), 0.0, greater_weight(x, y)))
    return _as_dtype(weight, _weight_dtype(x, y))


@nondifferentiable
@dispatches(first_two_operands)
def extremum_weights(a, ans, axis=None, keepdims=False):
    """Where a max/min reduction of ``a`` is attained, weighted 1/k among k tied elements."""
    hit = a == expand_reduced(ans, a, axis, keepdims)
    return _as_dtype(hit / np.sum(hit, axis=axis, keepdims=True), _weight_dtype(a))


def _weight_dtype(*values) -> np.dtype:
    """The float dtype of the values (float32 stays float32): weights never promote g."""
    return np.result_type(*[v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype
                             for v in values], np.float32)


def _as_dtype(x, dtype):
    """``np.asarray(x, dtype)`` that keeps another library's array lazy (dask)."""
    if rt.is_foreign_array(x):
        return x.astype(dtype, copy=False)
    return np.asarray(x, dtype=dtype)


def conj_sign(x):
    """The derivative of ``|x|``: ``sign(x)`` for reals, ``conj(x) / |x|`` for complex x
    (paired as ``Re(c dx)``), 0 at 0."""
    if np.iscomplexobj(x):
        return np.conj(x) / np.where(x == 0, 1.0, np.abs(x))
    return np.sign(x)


@nondifferentiable
def cast_to(g, dtype=None):
    """The derivative ``g`` of a value a numpy call computed in ``dtype`` (``np.sum(x,
    dtype=int)``, ``np.full(3, v, dtype=int)``): zero when that dtype is an integer or
    boolean one (the value was truncated, which is locally constant), else ``g``. Called
    without ``dtype``, the inliner writes ``g`` alone (``identity_when_defaulted``)."""
    if dtype is None or np.dtype(dtype).kind in "fc":
        return g
    return g * 0.0


# the inliner drops a call of this helper that passes only its first argument (the rest at
# their defaults): generated code for the common np.sum(x) stays np.sum's
cast_to.identity_when_defaulted = True


def float_dtype_weight(dtype) -> float:
    """1.0 when casting to ``dtype`` keeps a gradient (float/complex or unchanged), else 0.0."""
    if dtype is None:
        return 1.0
    return 1.0 if np.dtype(dtype).kind in "fc" else 0.0


# --------------------------------------------------------------------------- containers

def like_sequence(seq, items):
    """``items`` in a container of the same kind as ``seq`` (tuple, named tuple, an array's
    rows stacked back into an array, else list)."""
    if isinstance(seq, np.ndarray):
        return np.stack(items) if len(items) else np.zeros_like(seq)
    if isinstance(seq, tuple):
        return type(seq)(*items) if hasattr(seq, "_fields") else tuple(items)
    return list(items)


def items_adjoint(xs, g):
    """The adjoint of ``xs`` from the adjoints ``g`` of its items, as ``list(xs)`` lists
    them: rows stacked back for an array, the same kind of container otherwise."""
    if rt.is_zero(g) or isinstance(xs, dict):  # a dict's keys carry no gradient
        return rt.ZERO
    items = [rt.densify(gi, xi) for gi, xi in zip(g, rt.as_list(xs))]
    if isinstance(xs, np.ndarray):
        return np.stack(items)
    return like_sequence(xs, items)
