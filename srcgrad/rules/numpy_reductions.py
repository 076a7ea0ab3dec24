"""Rules of numpy's reductions: sum, mean, prod, max/min, var/std, norm, cumsum, cumprod,
average.

All take ``axis`` (None, int, negative, tuple) and ``keepdims``. Unsupported keywords
(``where=``, ``initial=``, ``mean=``, ``correction=``) raise a TypeError from the rule.

* max/min: tied extrema share the gradient evenly.
* prod, cumprod: exact first derivatives with zeros in the input; second derivatives are
  exact only away from zeros.
* norm: vector norms of any order ``p != 0`` and ``inf``/``-inf``; matrix norms ``None``,
  ``'fro'``, ``1``, ``-1``, ``inf``, ``-inf``, and through the SVD ``2``, ``-2``, ``'nuc'``
  (not differentiable where the largest, or smallest, singular value is repeated, nor
  ``'nuc'`` where one is zero). The gradient at the zero vector is NaN.
* average: ``weights`` are constants, ``returned=True`` is not supported.
"""
import numpy as np

from ._helpers import (cast_to, expand_reduced, expand_to, extremum_weights, normalize_axes,
                       reduced_count)
from .domains import draw
from .numpy_linalg import spectral_norm_partials
from .registry import defrule, nondifferentiable
from ..errors import UnsupportedFeatureError

# --------------------------------------------------------------------------- sum, mean


# (cast_to: a sum computed in an integer dtype, np.sum(x, dtype=int), has no derivative)
def sum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (expand_to(cast_to(g, dtype), a, axis, keepdims),)


def sum_jvp(da, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (cast_to(np.sum(da, axis=axis, keepdims=keepdims), dtype),)


def mean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (expand_to(cast_to(g, dtype), a, axis, keepdims) / reduced_count(a, ans),)


def mean_jvp(da, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (cast_to(np.mean(da, axis=axis, keepdims=keepdims), dtype),)


# --------------------------------------------------------------------------- prod

def prod_partials(a, axis=None):
    """d prod(a) / d a_i, the product of the other elements, also where ``a`` has zeros."""
    zero = a == 0
    nonzero_a = np.where(zero, 1.0, a)
    product = np.prod(nonzero_a, axis=axis, keepdims=True)
    zeros = np.sum(zero, axis=axis, keepdims=True)
    # With one zero only that element has a nonzero partial; with two or more, none does.
    return np.where(zero, np.where(zeros == 1, product, 0.0),
                    np.where(zeros == 0, product / nonzero_a, 0.0))


def prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (expand_reduced(cast_to(g, dtype), a, axis, keepdims) * prod_partials(a, axis),)


def prod_jvp(da, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return (cast_to(np.sum(da * prod_partials(a, axis), axis=axis, keepdims=keepdims), dtype),)


# --------------------------------------------------------------------------- max, min

def extremum_vjp(g, ans, a, axis=None, out=None, keepdims=False):
    # Shared by max and min: the gradient goes where a equals the result, split among ties.
    return (expand_reduced(g, a, axis, keepdims) * extremum_weights(a, ans, axis, keepdims),)


def extremum_jvp(da, ans, a, axis=None, out=None, keepdims=False):
    return (np.sum(da * extremum_weights(a, ans, axis, keepdims), axis=axis, keepdims=keepdims),)


# --------------------------------------------------------------------------- var, std

def var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return (expand_reduced(g, a, axis, keepdims) * 2.0 * (a - np.mean(a, axis=axis, keepdims=True))
            / (reduced_count(a, ans) - ddof),)


def var_jvp(da, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return (np.sum(da * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims)
            * 2.0 / (reduced_count(a, ans) - ddof),)


def std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    # Where the std is 0 (one element, or all equal) the gradient is taken as 0, not NaN.
    return (expand_reduced(g, a, axis, keepdims) * (a - np.mean(a, axis=axis, keepdims=True))
            / ((reduced_count(a, ans) - ddof) * nonzero_or_one(expand_reduced(ans, a, axis,
                                                                              keepdims))),)


def std_jvp(da, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return (np.sum(da * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims)
            / ((reduced_count(a, ans) - ddof) * nonzero_or_one(ans)),)


def nonzero_or_one(x):
    """``x`` with zeros replaced by ones: a safe denominator where the numerator is 0 too."""
    return np.where(x == 0, 1.0, x)


# --------------------------------------------------------------------------- norm

def _is_matrix_norm(x, ord, axis) -> bool:
    if axis is None:
        return ord is not None and np.ndim(x) == 2
    return isinstance(axis, tuple) and len(axis) == 2


def norm_partials(x, ans, ord=None, axis=None, keepdims=False):
    """d norm(x) / d x_i, shaped like ``x`` (see the module docstring for supported orders)."""
    r = expand_reduced(ans, x, axis, keepdims)
    if _is_matrix_norm(x, ord, axis):
        return _matrix_norm_partials(x, ans, ord, (0, 1) if axis is None else axis, keepdims)
    if ord is None or ord == 2:
        return x / r
    if ord in (np.inf, -np.inf):
        return np.sign(x) * extremum_weights(np.abs(x), ans, axis, keepdims)
    if ord == 0:  # counts nonzeros: piecewise constant
        return 0.0 * x
    return np.sign(x) * (np.abs(x) / r) ** (ord - 1)


def _matrix_norm_partials(x, ans, ord, axis, keepdims):
    if ord is None or ord == "fro":
        return x / expand_reduced(ans, x, axis, keepdims)
    if ord in (1, -1):  # largest/smallest column sum of |x|
        summed = axis[0]
    elif ord in (np.inf, -np.inf):  # largest/smallest row sum of |x|
        summed = axis[1]
    elif ord in (2, -2, "nuc"):  # through the singular values
        return spectral_norm_partials(x, ord, axis)
    else:
        raise UnsupportedFeatureError(f"the derivative of np.linalg.norm with ord={ord!r} is "
                                      f"not implemented; use ord='fro' or compute it from an "
                                      f"SVD")
    sums = np.sum(np.abs(x), axis=summed, keepdims=True)
    return np.sign(x) * extremum_weights(sums, ans, axis, keepdims)


def norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    return (expand_reduced(g, x, axis, keepdims) * norm_partials(x, ans, ord, axis, keepdims),)


def norm_jvp(dx, ans, x, ord=None, axis=None, keepdims=False):
    return (np.sum(dx * norm_partials(x, ans, ord, axis, keepdims), axis=axis, keepdims=keepdims),)


# --------------------------------------------------------------------------- cumsum, average

def flip_vjp(g, ans, m, axis=None):
    return (np.flip(g, axis),)


def flip_jvp(dm, ans, m, axis=None):
    return (np.flip(dm, axis),)


def cumsum_vjp(g, ans, a, axis=None, dtype=None, out=None):
    # The adjoint of a running sum is the running sum from the end; axis=None flattens.
    return (np.reshape(np.flip(np.cumsum(np.flip(cast_to(g, dtype), axis), axis), axis),
                       np.shape(a)),)


def cumsum_jvp(da, ans, a, axis=None, dtype=None, out=None):
    return (cast_to(np.cumsum(da, axis=axis), dtype),)


def reverse_cumsum(v, axis):
    """``out[i] = sum(v[i:])`` along ``axis``."""
    return np.flip(np.cumsum(np.flip(v, axis), axis), axis)


def cumprod_lanes(a, axis=None):
    """``(a, axis)`` with ``axis=None`` read as numpy does: over ``a`` flattened."""
    if axis is None:
        return np.ravel(a), 0
    return a, axis


def cumprod_zeros(a, axis):
    """Where each lane's first zero is, where the elements before it are, and the running
    product with that zero read as one: ``d cumprod(a)[k] / d a[z]`` for the first zero z."""
    zero = a == 0
    seen = np.cumsum(zero, axis)
    first = zero & (seen == 1)
    before = seen == 0
    return first, before, np.cumprod(np.where(first, 1.0, a), axis)


def cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    # d y[k] / d a[i] = prod(a[j] for j <= k, j != i): before a lane's first zero that is
    # y[k] / a[i]; at the first zero, the product with that zero read as one; after it, 0.
    lanes, ax = cumprod_lanes(a, axis)
    first, before, skipped = cumprod_zeros(lanes, ax)
    g = np.reshape(cast_to(g, dtype), np.shape(lanes))
    divided = reverse_cumsum(g * np.reshape(ans, np.shape(lanes)), ax) \
        / np.where(before, lanes, 1.0)
    ga = np.where(before, divided, np.where(first, reverse_cumsum(g * skipped, ax), 0.0))
    return (np.reshape(ga, np.shape(a)),)


def cumprod_jvp(da, ans, a, axis=None, dtype=None, out=None):
    lanes, ax = cumprod_lanes(a, axis)
    first, before, skipped = cumprod_zeros(lanes, ax)
    da = np.reshape(cast_to(da, dtype), np.shape(lanes))
    ratio = np.cumsum(np.where(before, da / np.where(before, lanes, 1.0), 0.0), ax)
    at_zero = np.cumsum(np.where(first, da, 0.0), ax) * skipped
    y = np.reshape(ans, np.shape(lanes))
    return (np.reshape(np.where(before, y * ratio, at_zero), np.shape(ans)),)


def average_weights(a, axis=None, weights=None):
    """Weights ``w`` broadcasting against ``a`` with ``average(a) == sum(a * w, axis)``."""
    if weights is None:
        count = 1
        for i in normalize_axes(axis, np.ndim(a)):
            count *= np.shape(a)[i]
        return np.ones(np.shape(a)) / count
    w = np.asarray(weights, dtype=float)
    if np.ndim(w) != np.ndim(a):  # 1-D weights along a single axis
        shape = [1] * np.ndim(a)
        shape[normalize_axes(axis, np.ndim(a))[0]] = np.size(w)
        w = np.reshape(w, shape)
    return w / np.sum(w * np.ones(np.shape(a)), axis=axis, keepdims=True)


def average_vjp(g, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:
        raise UnsupportedFeatureError("np.average(..., returned=True) is not differentiable")
    return (expand_reduced(g, a, axis, keepdims) * average_weights(a, axis, weights),)


def average_jvp(da, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    return (np.average(da, axis=axis, weights=weights, keepdims=keepdims),)


# --------------------------------------------------------------------------- domains

_AXES = [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}, {"axis": 1, "keepdims": True},
         {"keepdims": True}, {"axis": (2, 0), "keepdims": True}]


def reductions(low=-2.0, high=2.0, extra=({},)):
    """Reductions of a 3-D array over every kind of ``axis``, a vector, and scalars."""
    def domain(rng):
        points = []
        for more in extra:
            for kw in _AXES:
                points.append(((draw(rng, (3, 4, 2), low, high),), {**kw, **more}))
            points.append(((draw(rng, (5,), low, high),), {"axis": 0, **more}))
            points.append(((draw(rng, (5,), low, high),), dict(more)))
        points.append(((draw(rng, None, low, high),), {}))
        points.append(((draw(rng, (), low, high),), {}))
        return points
    return domain


def _prod_points(rng):
    # Magnitudes away from zero; zeros are checked separately (first order is exact there).
    points = reductions(0.5, 1.5)(rng)
    return [((a * np.where(rng.uniform(size=np.shape(a)) < 0.5, -1.0, 1.0),), kw)
            if np.ndim(a) else ((a,), kw) for (a,), kw in points]


def _norm_points(rng):
    def v(shape):
        x = draw(rng, shape)
        return np.where(np.abs(x) < 0.2, 0.5, x)
    points = [((v((5,)),), {}), ((v((5,)), 1), {}), ((v((5,)), np.inf), {}),
              ((v((5,)), -np.inf), {}), ((v((5,)), 3), {}), ((v((5,)), 0.5), {}),
              ((v((5,)), 2), {"keepdims": True}), ((v((3, 4)),), {}), ((v((3, 4)), "fro"), {}),
              ((v((3, 4)), 1), {}), ((v((3, 4)), -1), {}), ((v((3, 4)), np.inf), {}),
              ((v((3, 4)), -np.inf), {}), ((v((3, 4)),), {"axis": 1}),
              ((v((3, 4)),), {"axis": 0, "keepdims": True}), ((v((2, 3, 4)),), {}),
              ((v((2, 3, 4)), 1), {"axis": (2, 0)}), ((v((2, 3, 4)), np.inf), {"axis": (1, 2)}),
              ((v((2, 3, 4)), None), {"axis": (0, 1), "keepdims": True}),
              ((v((2, 3, 4)), 3), {"axis": -1}), ((v((2, 3, 4)), np.inf), {"axis": 1}),
              ((v((3, 4)), 2), {}), ((v((4, 3)), -2), {}), ((v((3, 4)), "nuc"), {}),
              ((v((2, 3, 4)), "nuc"), {"axis": (2, 0)}),
              ((v((2, 3, 4)), 2), {"axis": (1, 2), "keepdims": True})]
    return points


def _cumsum_points(rng):
    return [((draw(rng, (5,)),), {}), ((draw(rng, (3, 4)),), {}), ((draw(rng, (3, 4)), 0), {}),
            ((draw(rng, (3, 4)),), {"axis": -1}), ((draw(rng, None),), {})]


def _cumprod_points(rng):
    # Magnitudes away from zero, both signs; zeros are checked separately (first order is
    # exact there).
    def v(shape):
        return draw(rng, shape, 0.5, 1.5) * np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return [((v((5,)),), {}), ((v((3, 4)),), {}), ((v((3, 4)), 0), {}),
            ((v((2, 3, 4)),), {"axis": -1}), ((v((2, 3, 4)), 1), {}),
            ((draw(rng, None, 0.5, 1.5),), {})]


def _flip_points(rng):
    return [((draw(rng, (5,)),), {}), ((draw(rng, (3, 4)),), {}), ((draw(rng, (3, 4)), 0), {}),
            ((draw(rng, (2, 3, 4)),), {"axis": (0, 2)})]


def _average_points(rng):
    return [((draw(rng, (3, 4)),), {}), ((draw(rng, (3, 4)), 0), {}),
            ((draw(rng, (3, 4)),), {"axis": 1, "weights": draw(rng, (4,), 0.5, 2.0)}),
            ((draw(rng, (3, 4)),), {"weights": draw(rng, (3, 4), 0.5, 2.0)}),
            ((draw(rng, (3, 4)),), {"axis": 0, "weights": draw(rng, (3,), 0.5, 2.0),
                                    "keepdims": True}),
            ((draw(rng, (2, 3, 4)),), {"axis": (0, 2)})]


nondifferentiable(average_weights)

defrule(np.sum, sum_vjp, jvp=sum_jvp, domain=reductions(), linear=True)
defrule(np.mean, mean_vjp, jvp=mean_jvp, domain=reductions(), linear=True)
defrule(np.prod, prod_vjp, jvp=prod_jvp, domain=_prod_points)
for _fn in (np.max, np.amax, np.min, np.amin):
    defrule(_fn, extremum_vjp, jvp=extremum_jvp, domain=reductions())
del _fn
defrule(np.var, var_vjp, jvp=var_jvp, domain=reductions(extra=({}, {"ddof": 1})))
defrule(np.std, std_vjp, jvp=std_jvp, domain=reductions(extra=({}, {"ddof": 1})))
defrule(np.linalg.norm, norm_vjp, jvp=norm_jvp, domain=_norm_points, name="numpy.linalg.norm")
defrule(np.flip, flip_vjp, jvp=flip_jvp, domain=_flip_points, linear=True)
defrule(np.cumsum, cumsum_vjp, jvp=cumsum_jvp, domain=_cumsum_points, linear=True)
defrule(np.cumprod, cumprod_vjp, jvp=cumprod_jvp, domain=_cumprod_points)
defrule(np.average, average_vjp, jvp=average_jvp, domain=_average_points, linear=True)
